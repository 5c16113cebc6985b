"""The environment variables that keep ragas and DeepEval from contacting anything, set before
either library is imported.

Read from the libraries' source (ragas 0.4, DeepEval 4):

- ``RAGAS_DO_NOT_TRACK=true``: ragas posts a usage event to its tracking host after every
  scored sample unless this is ``true`` (``ragas._analytics.track``; read once and cached).
- ``DEEPEVAL_TELEMETRY_OPT_OUT=1``: DeepEval sends PostHog events for every metric and run
  unless this is set (``deepeval.telemetry``).
- ``DEEPEVAL_UPDATE_WARNING_OPT_IN=0``: with ``1``, ``import deepeval`` asks pypi.org for a newer
  release.

What stays, and is documented rather than changed (docs/integrations.md): ragas writes a random
user id to ``~/.local/share/ragas/uuid.json`` whenever a metric scores (tracking off or not;
nothing is sent); DeepEval writes its test runs under ``.deepeval/`` in the working directory
(``DEEPEVAL_CACHE_FOLDER`` moves it) and reads a ``.env`` there (``DEEPEVAL_DISABLE_DOTENV=1``
stops that); LangSmith tracing, when the user turned it on (``LANGSMITH_TRACING``), would send
ragas's callback runs, ours among them, to LangSmith.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

#: variable → the value that keeps the library off the network
OFFLINE_ENVIRONMENT: dict[str, str] = {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
}


def set_offline_environment() -> None:
    """Set :data:`OFFLINE_ENVIRONMENT` in ``os.environ``; a different value the user had set is
    replaced, with a warning (this integration promises no network)."""
    for name, value in OFFLINE_ENVIRONMENT.items():
        before = os.environ.get(name)
        if before is not None and before.strip().lower() != value:
            log.warning("%s=%s replaced by %s: the fact_reasoner metrics run offline", name, before, value)
        os.environ[name] = value


__all__ = ["OFFLINE_ENVIRONMENT", "set_offline_environment"]

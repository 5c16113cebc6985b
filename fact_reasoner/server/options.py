"""How the server admits, limits and batches requests: the ``serve`` command's settings, with
their defaults written here once (the command's flags take their defaults from these).

Plain dataclasses: the command's parser reads them without importing FastAPI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: how long the judge waits for the NLI pairs of other requests (``--batch-wait-ms``)
BATCH_WAIT_SECONDS = 0.005


@dataclass(frozen=True)
class ServerOptions:
    """How the server admits and guards requests (the ``serve`` command's flags)."""

    api_key: str | None = None
    cors_origins: tuple[str, ...] = ()
    max_body_bytes: int = 1_000_000
    workers: int = 4
    queue_size: int = 16
    deadline_seconds: float = 60.0
    drain_seconds: float = 30.0
    #: shown by ``/v1/info``
    extra_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    """What one request may ask for (larger records get 422 naming the limit)."""

    max_atoms: int = 200
    max_contexts: int = 100


__all__ = ["BATCH_WAIT_SECONDS", "Limits", "ServerOptions"]

"""A persistent SQLite cache of model calls, shared by every stage that asks a model.

One row per distinct call. The key is the SHA-256 of a canonical JSON of everything that can
change the answer: backend, model, prompt version (the stage's tag, e.g. ``nli-llm/v1``), the
messages and the generation parameters (temperature, seed, max tokens, schema, logprobs …).
The value is the backend's raw OpenAI-style response, so a hit replays exactly what the model
said, logprobs included. FR1/FR2/FR3 and the RAG metrics share the file: a pair judged once is
never judged again.

Counters (``hits``, ``misses``, ``writes``) live on the :class:`ModelCache` object; backends add
them to their own :meth:`stats`.

Sharing: any number of processes on one machine may use one file at once (WAL mode, a 30 s
busy timeout) — threads of a run, several runs, the Ray actors of one machine. SQLite's WAL
needs a local disk: on a network filesystem (NFS, SMB, Lustre …) several machines writing one
file can corrupt it, so each machine of a cluster keeps its own cache (the default
``~/.cache/fact_reasoner`` is per machine) and opening a cache on a network filesystem logs a
warning.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .hashing import json_sha256
from .sqlite_store import SQLiteStore

logger = logging.getLogger(__name__)

CACHE_FILE_NAME = "model_calls.sqlite"
#: filesystem types (as /proc/mounts names them) shared between machines over a network
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "lustre",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "fuse.sshfs",
        "9p",
        "gpfs",
        "beegfs",
        "afs",
    }
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def filesystem_type(path: str | Path) -> str | None:
    """The type of the filesystem holding ``path`` (``ext4``, ``nfs4`` …) from /proc/mounts;
    None where that cannot be read (not Linux)."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    target = Path(path).resolve()
    best: tuple[int, str] | None = None
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount_point = Path(fields[1].replace("\\040", " "))
        if (target == mount_point or mount_point in target.parents) and (
            best is None or len(str(mount_point)) > best[0]
        ):
            best = (len(str(mount_point)), fields[2])
    return best[1] if best else None


def cache_key(backend: str, model: str, prompt_version: str, request: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON ``{backend, model, prompt_version, request}``.

    ``request`` holds the messages and every generation parameter; keys are sorted so that the
    same call always gives the same key whatever the dict order.
    """
    return json_sha256({"backend": backend, "model": model, "prompt_version": prompt_version, "request": request})


class ModelCache:
    """Key → response store in one SQLite file, safe to share between threads and processes.

    ``path`` is a file, or ``None`` for an in-memory cache (tests, ``--no-cache`` runs that still
    want counters). WAL mode lets several processes read while one writes.
    """

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            kind = filesystem_type(self.path.parent)
            if kind in NETWORK_FILESYSTEMS:
                logger.warning(
                    "the model-call cache %s is on a network filesystem (%s): SQLite's WAL needs a local "
                    "disk, and several machines writing it can corrupt it; give each machine its own "
                    "--cache-dir on a local disk",
                    self.path,
                    kind,
                )
        self._store = SQLiteStore(self.path, [_SCHEMA])
        self._lock = threading.Lock()  # the counters'
        self.hits = 0
        self.misses = 0
        self.writes = 0

    @classmethod
    def in_dir(cls, cache_dir: str | Path) -> "ModelCache":
        """The cache file ``<cache_dir>/model_calls.sqlite``."""
        return cls(Path(cache_dir) / CACHE_FILE_NAME)

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._store.fetch_one("SELECT response FROM calls WHERE key = ?", (key,))
        with self._lock:
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return json.loads(row[0])

    def put(
        self,
        key: str,
        response: Mapping[str, Any],
        *,
        backend: str,
        model: str,
        prompt_version: str,
        request: Mapping[str, Any],
    ) -> None:
        self._store.write(
            "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                backend,
                model,
                prompt_version,
                json.dumps(request, sort_keys=True, ensure_ascii=False),
                json.dumps(response, ensure_ascii=False),
                time.time(),
            ),
        )
        with self._lock:
            self.writes += 1

    def __len__(self) -> int:
        return self._store.count("calls")

    def stats(self) -> dict[str, int]:
        return {"cache_hits": self.hits, "cache_misses": self.misses, "cache_writes": self.writes}

    def close(self) -> None:
        self._store.close()

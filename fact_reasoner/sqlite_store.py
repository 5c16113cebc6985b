"""One SQLite file shared by the threads of a process and by several processes.

Used by the model-call cache (:mod:`fact_reasoner.cache`) and the retrieval cache
(:mod:`fact_reasoner.retrieval.cache`): both are small key → JSON tables read and written by
every worker of a run, by several runs at once and by the Ray actors of one machine.

- **Processes**: WAL mode lets readers go on while one process writes; a writer that finds the
  file locked waits up to 30 s (``busy_timeout``) instead of failing at once.
- **Threads**: one connection per store, used under a lock, since a ``sqlite3`` connection is
  not safe to use from two threads at the same moment.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

#: seconds a writer waits for another process's lock before SQLite gives up
BUSY_TIMEOUT_SECONDS = 30.0


class SQLiteStore:
    """A SQLite connection in WAL mode behind a lock; every write is committed at once.

    ``path`` None: an in-memory database (tests, runs that want counters but no file), which
    has no WAL. ``tables``: ``CREATE TABLE IF NOT EXISTS`` statements run on opening.
    ``fast_commits``: ``synchronous = NORMAL``, a commit costs microseconds instead of an
    fsync; a committed row can then be lost to a power cut (never to a crash of the process),
    which suits a cache whose lost entry is only computed again.
    """

    def __init__(self, path: str | Path | None, tables: Sequence[str], *, fast_commits: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            str(self.path) if self.path is not None else ":memory:",
            timeout=BUSY_TIMEOUT_SECONDS,
            check_same_thread=False,  # the lock serialises the threads
        )
        if self.path is not None:
            self._connection.execute("PRAGMA journal_mode = WAL")
            if fast_commits:
                self._connection.execute("PRAGMA synchronous = NORMAL")
        for statement in tables:
            self._connection.execute(statement)
        self._connection.commit()

    def fetch_one(self, sql: str, parameters: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        with self._lock:
            row = self._connection.execute(sql, parameters).fetchone()
        return None if row is None else tuple(row)

    def write(self, sql: str, parameters: Sequence[Any] = ()) -> None:
        """One statement, committed."""
        with self._lock:
            self._connection.execute(sql, parameters)
            self._connection.commit()

    def write_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement over many rows, in one transaction (one commit for a batch)."""
        with self._lock:
            self._connection.executemany(sql, rows)
            self._connection.commit()

    def count(self, table: str) -> int:
        """Rows in ``table`` (a name from this module's callers, never user input)."""
        row = self.fetch_one(f"SELECT COUNT(*) FROM {table}")
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self._lock:
            self._connection.close()

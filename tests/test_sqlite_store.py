"""The SQLite store both caches use: one file shared by connections, threads and processes."""

import sqlite3
import subprocess
import sys
import threading

from fact_reasoner.cache import ModelCache
from fact_reasoner.retrieval.cache import RetrievalCache
from fact_reasoner.sqlite_store import SQLiteStore
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
TABLE = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def test_two_connections_see_each_others_writes_in_wal_mode(tmp_path):
    path = tmp_path / "sub" / "store.sqlite"  # the folder is made
    first = SQLiteStore(path, [TABLE])
    second = SQLiteStore(path, [TABLE])
    first.write("INSERT INTO kv VALUES (?, ?)", ("a", "1"))
    second.write_many("INSERT INTO kv VALUES (?, ?)", [("b", "2"), ("c", "3")])
    assert first.fetch_one("SELECT value FROM kv WHERE key = ?", ("c",)) == ("3",)
    assert second.fetch_one("SELECT value FROM kv WHERE key = ?", ("a",)) == ("1",)
    assert first.fetch_one("SELECT value FROM kv WHERE key = ?", ("z",)) is None
    assert first.count("kv") == second.count("kv") == 3
    assert first.fetch_one("PRAGMA journal_mode") == ("wal",)
    first.close()
    second.close()


def test_a_second_process_writes_while_this_one_holds_the_file_open(tmp_path):
    path = tmp_path / "store.sqlite"
    store = SQLiteStore(path, [TABLE], fast_commits=True)
    store.write("INSERT INTO kv VALUES (?, ?)", ("parent", "1"))
    child = (
        "import sys\n"
        "from fact_reasoner.sqlite_store import SQLiteStore\n"
        f"store = SQLiteStore(sys.argv[1], [{TABLE!r}])\n"
        "assert store.fetch_one('SELECT value FROM kv WHERE key = ?', ('parent',)) == ('1',)\n"
        "store.write_many('INSERT INTO kv VALUES (?, ?)', [(f'child{i}', str(i)) for i in range(50)])\n"
        "store.close()\n"
    )
    subprocess.run([sys.executable, "-c", child, str(path)], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    assert store.count("kv") == 51
    assert store.fetch_one("SELECT value FROM kv WHERE key = ?", ("child49",)) == ("49",)
    store.close()


def test_threads_share_one_store(tmp_path):
    store = SQLiteStore(tmp_path / "store.sqlite", [TABLE])

    def write(worker: int) -> None:
        for i in range(40):
            store.write("INSERT INTO kv VALUES (?, ?)", (f"{worker}-{i}", "x"))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count("kv") == 160
    store.close()


def test_in_memory_store_has_no_file():
    store = SQLiteStore(None, [TABLE])
    store.write("INSERT INTO kv VALUES (?, ?)", ("a", "1"))
    assert store.path is None and store.count("kv") == 1
    store.close()


def test_both_caches_keep_their_file_layout(tmp_path):
    """Existing cache files must stay readable: the same tables and columns as before."""
    ModelCache(tmp_path / "calls.sqlite").close()
    RetrievalCache(tmp_path / "retrieval.sqlite").close()
    with sqlite3.connect(tmp_path / "calls.sqlite") as connection:
        columns = [row[1] for row in connection.execute("PRAGMA table_info(calls)")]
        assert columns == ["key", "backend", "model", "prompt_version", "request", "response", "created"]
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with sqlite3.connect(tmp_path / "retrieval.sqlite") as connection:
        tables = sorted(row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'"))
        assert tables == ["responses", "retrieval"]

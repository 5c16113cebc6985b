"""What the server tests share: a real uvicorn server on a free loopback port (in a thread), the
shipped cross-encoder, gated judges that hold a request in flight until the test lets it go, and
the comparison of rows that leaves out what measures a run (times, counters)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fact_reasoner.settings.config import PipelineConfig

#: fields of a row that measure the run (seconds, how many calls were cached), not its result
MEASURED = ("timings", "counters", "seconds")

EXAMPLE = Path(__file__).resolve().parents[2] / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A row without its measurements (``timings``, ``counters``, ``seconds``, the engine's
    ``seconds``): what must be the same, bit for bit, wherever the row was made."""
    out = {key: value for key, value in row.items() if key not in MEASURED}
    if isinstance(out.get("engine"), dict):
        out["engine"] = {key: value for key, value in out["engine"].items() if key != "seconds"}
    return out


def example_records(relations: bool = False) -> list[dict[str, Any]]:
    """The records of the bundled example (atoms and contexts supplied), without their
    precomputed relations unless ``relations``: the judge then judges every pair."""
    records = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    if not relations:
        for record in records:
            record.pop("relations", None)
    return records


def small_records(count: int) -> list[dict[str, Any]]:
    """``count`` different records of 3 atoms and 2 passages (fast to judge)."""
    facts = [
        ("Marie Curie", "physicist", "Warsaw", "1867"),
        ("Albert Einstein", "physicist", "Ulm", "1879"),
        ("Ada Lovelace", "mathematician", "London", "1815"),
        ("Alan Turing", "mathematician", "London", "1912"),
        ("Lise Meitner", "physicist", "Vienna", "1878"),
        ("Niels Bohr", "physicist", "Copenhagen", "1885"),
        ("Emmy Noether", "mathematician", "Erlangen", "1882"),
        ("Rosalind Franklin", "chemist", "London", "1920"),
    ]
    records = []
    for i in range(count):
        name, job, city, year = facts[i % len(facts)]
        wrong = facts[(i + 3) % len(facts)][2]
        records.append(
            {
                "input": f"Tell me about {name}. ({i})",
                "output": f"{name} was a {job}. {name} was born in {wrong}. {name} was born in {year}.",
                "atoms": [
                    {"id": "a0", "text": f"{name} was a {job}."},
                    {"id": "a1", "text": f"{name} was born in {wrong}."},
                    {"id": "a2", "text": f"{name} was born in {year}."},
                ],
                "contexts": [
                    {"id": "c0", "text": f"{name} was a {job} born in {city} in {year}."},
                    {"id": "c1", "text": f"{name} is remembered as one of the great {job}s of the age."},
                ],
            }
        )
    return records


def server_config(**settings: Any) -> PipelineConfig:
    """The server's settings in tests: the cross-encoder (unless ``nli`` names another judge), no
    persistent cache."""
    return PipelineConfig(**({"nli": "cross-encoder", "use_cache": False} | settings))


_JUDGE: Any = None


def shipped_judge() -> Any:
    """The shipped cross-encoder (one instance for the whole test session)."""
    global _JUDGE
    if _JUDGE is None:
        from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

        _JUDGE = CrossEncoderNLI()
    return _JUDGE


class GatedJudge:
    """The real judge, which judges only once ``gate`` is open: a request stays in flight for
    as long as a test wants. ``entered`` counts the calls that reached the gate."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = backend.name
        self.identity = backend.identity
        self.items_per_run = getattr(backend, "items_per_run", None)
        self.gate = threading.Event()
        self.entered = 0
        self._lock = threading.Lock()

    def judge(self, pairs: Any) -> Any:
        with self._lock:
            self.entered += 1
        if not self.gate.wait(120):
            raise TimeoutError("the test never opened the gate")
        return self.backend.judge(pairs)


def wait_until(condition: Any, what: str, timeout: float = 60.0) -> None:
    """Poll ``condition()`` until it is true (the outcome, not the time, is what is tested)."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


@contextmanager
def running_server(service: Any, options: Any = None) -> Iterator[tuple[str, Any]]:
    """``service`` served by uvicorn on a free port of 127.0.0.1, in a thread: yields the base
    URL and the app; stops the server afterwards."""
    from fact_reasoner.server.app import create_app
    from fact_reasoner.server.options import ServerOptions
    from fact_reasoner.server.run import bind, make_server

    options = options or ServerOptions()
    app = create_app(service, options)
    server = make_server(app, options.drain_seconds)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, "the server to start")
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(30)
        app.state.pool.close()
        sock.close()

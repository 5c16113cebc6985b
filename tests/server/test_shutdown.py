"""SIGTERM with requests in flight: a real ``fact-reasoner serve`` process (the command's own
serving code, with the shipped cross-encoder held at a gate until the test opens it) finishes
the requests in flight, refuses new ones, and exits 0; and the command's safety checks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from tests.helpers import REPO_ROOT, require_extra

require_extra("serve", "embeddings")

import httpx

from .serving import small_records, wait_until

#: the `serve` command, as `fact-reasoner serve` runs it, but with a judge that waits for a file
SERVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from fact_reasoner.commands import configure_logging
    from fact_reasoner.commands.serve import Serve, serve
    from fact_reasoner.interrupts import stop_on_signals
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from fact_reasoner.server.run import bind

    gate = Path(sys.argv[1])

    class FileGatedJudge:
        def __init__(self):
            self.backend = CrossEncoderNLI()
            self.name, self.identity, self.items_per_run = "cross-encoder", self.backend.identity, 1

        def judge(self, pairs):
            while not gate.exists():
                time.sleep(0.02)
            return self.backend.judge(pairs)

    configure_logging(quiet=False)
    command = Serve()
    args, parser = command.parse(["--port", "0", "--nli", "cross-encoder", "--no-cache", "--drain-seconds", sys.argv[2], "--llm-at-first-use"])
    with stop_on_signals():  # as fact_reasoner.commands.main runs every command
        status = serve(args, command.settings(args, parser), bind("127.0.0.1", 0), None, nli_backend=FileGatedJudge())
    sys.exit(status)
    """
)


def _start(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """A server process and its URL, read from its "serving on" line."""
    process = subprocess.Popen(command, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    for line in process.stderr:  # type: ignore[union-attr]
        lines.append(line)
        found = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
        if found:
            return process, f"http://127.0.0.1:{found.group(1)}"
    process.wait(60)
    raise AssertionError("the server did not start: " + "".join(lines))


def test_sigterm_finishes_the_requests_in_flight_and_refuses_new_ones(tmp_path):
    gate = tmp_path / "open"
    env = {**os.environ, "FACT_REASONER_CACHE": str(tmp_path / "cache")}
    process, url = _start([sys.executable, "-c", SERVER, str(gate), "60"], env)
    try:
        answers: list[httpx.Response] = []

        def ask(record: dict) -> None:
            with httpx.Client(base_url=url, timeout=120) as client:
                answers.append(client.post("/v1/assess", json=record))

        threads = [threading.Thread(target=ask, args=(r,)) for r in small_records(2)]
        for thread in threads:
            thread.start()
        with httpx.Client(base_url=url, timeout=30) as client:
            wait_until(lambda: client.get("/v1/info").json()["server"]["in_flight"] == 2, "two requests in flight")
        process.send_signal(signal.SIGTERM)

        def refused() -> bool:  # a new request: no connection any more, or 503 while draining
            try:
                with httpx.Client(base_url=url, timeout=10) as client:
                    return client.post("/v1/assess", json=small_records(1)[0]).status_code == 503
            except httpx.TransportError:
                return True

        wait_until(refused, "new requests to be refused")
        gate.touch()
        for thread in threads:
            thread.join(120)
        assert sorted(a.status_code for a in answers) == [200, 200]
        assert all(a.json()["num_atoms"] == 3 for a in answers)
        rest = process.stderr.read()  # type: ignore[union-attr]
        assert process.wait(60) == 0, rest
        assert "stopping: finishing 2 request(s) in flight" in rest
        assert "stopped: " in rest and "abandoned" not in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_requests_past_the_drain_limit_are_abandoned_and_the_server_still_ends(tmp_path):
    gate = tmp_path / "never"  # the judge never answers
    env = {**os.environ, "FACT_REASONER_CACHE": str(tmp_path / "cache")}
    process, url = _start([sys.executable, "-c", SERVER, str(gate), "1"], env)
    try:
        answers: list[object] = []

        def ask() -> None:
            try:
                with httpx.Client(base_url=url, timeout=120) as client:
                    answers.append(client.post("/v1/assess", json=small_records(1)[0]).status_code)
            except httpx.TransportError as error:
                answers.append(type(error).__name__)

        thread = threading.Thread(target=ask)
        thread.start()
        with httpx.Client(base_url=url, timeout=30) as client:
            wait_until(lambda: client.get("/v1/info").json()["server"]["in_flight"] == 1, "a request in flight")
        process.send_signal(signal.SIGTERM)
        thread.join(120)
        rest = process.stderr.read()  # type: ignore[union-attr]
        assert process.wait(60) == 0, rest
        assert answers and answers[0] != 200  # no row: the connection ended without one
        assert "1 request(s) abandoned past the drain limit" in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "serve", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "FACT_REASONER_API_KEY"},
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--host", "0.0.0.0"], "is not a loopback address"),
        (["--host", "example.org"], "is not a loopback address"),
        (["--api-key", "k", "--no-auth"], "not both"),
        (["--store", "x", "--port", "-1"], "argument --port: must be ≥ 0, got -1"),
    ],
)
def test_unsafe_starts_are_refused_before_listening(args, message):
    done = _serve(*args)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.startswith("error: ")


def test_help_names_the_endpoints_and_the_safety_defaults():
    done = _serve("--help")
    assert done.returncode == 0
    assert "--api-key" in done.stdout and "--host" in done.stdout and "/v1/assess" in done.stdout
    full = _serve("--help-all").stdout
    assert "--max-body-bytes" in full and "--deadline" in full and "--cors-origin" in full


def test_the_command_serves_refuses_to_install_a_model_and_ends_on_sigterm(tmp_path):
    """`fact-reasoner serve` itself, end to end: a record to atomize on a machine without the
    language model is refused naming the stage (no request installs a model), a record with
    atoms is assessed, and SIGTERM ends the process with status 0."""
    env = {k: v for k, v in os.environ.items() if k != "FACT_REASONER_NO_INSTALL"}
    env.update(FACT_REASONER_CACHE=str(tmp_path / "cache"), FACT_REASONER_MODELS=str(tmp_path / "no-models"))
    process, url = _start(
        [sys.executable, "-m", "fact_reasoner", "serve", "--port", "0", "--nli", "cross-encoder", "--no-cache"], env
    )
    try:
        with httpx.Client(base_url=url, timeout=120) as client:
            record = small_records(1)[0]
            assert client.post("/v1/assess", json=record).json()["num_atoms"] == 3
            record.pop("atoms")
            refused = client.post("/v1/assess", json=record)
            assert refused.status_code in (500, 503)
            error = refused.json()["error"]
            assert error["stage"] == "atomize" and "needs the packages" in error["message"], error
        assert not (tmp_path / "no-models").exists() or not any((tmp_path / "no-models").iterdir())
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()  # type: ignore[union-attr]
        assert process.wait(60) == 0, rest
        # the refused one is counted apart from the answered one (issue #60 item 4)
        assert "stopped: 2 request(s): 1 answered, 1 refused" in rest or "2 request(s): 1 answered, 1 failed" in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

"""How long Ctrl-C takes to stop a dataset run, and what the run kept (not a test; prints a
table).

    .venv-dev/bin/python -m scripts.measure_interrupt                       # this checkout
    .venv-dev/bin/python -m scripts.measure_interrupt --code /tmp/before    # another checkout's code

Two runs of ``fact-reasoner`` in a process of their own, each sent one SIGINT while a model
call is in flight:

- ``http``: ``--backend openai --nli llm`` against a real HTTP server (in this process) that
  answers every call about records 1 and 2 and holds the calls about record 3 without an answer.
  SIGINT goes once the server holds such a call (``--llm-timeout`` bounds how long a process
  that waits for the call can take);
- ``local``: the embedded model (``--backend local``, Qwen2.5-Coder-1.5B, ``--nli llm``) on
  records without atoms, a fresh call cache; SIGINT goes once the first record is written and
  ``--settle`` more seconds have passed (the second record is then inside one of its calls);
- ``load``: the quick start's run (the embedded model atomizes the example), a fresh call cache;
  SIGINT goes ``--settle`` seconds after the run says it is loading the model, so inside the load
  (one call into llama.cpp that holds the GIL for seconds; issue #60 item 6).

Reported: seconds from SIGINT to the end of the process, its exit status, the records in the
output, and the load average at the signal. ``--code`` puts another checkout first on the
child's ``PYTHONPATH`` (``git archive`` of the commit to compare), to measure before and after
on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"
QUICK_START = ROOT / "fact_reasoner" / "examples" / "short_answer.jsonl"


def marked_records(path: Path, n: int = 3) -> Path:
    """``n`` records with atoms and contexts but no relations (NLI asks the model), written to
    ``path``; the atoms of record i say "(record i)", so a server can tell the records apart."""
    rows = []
    for i in range(n):
        row = json.loads(EXAMPLE.read_text().splitlines()[i % 2])
        row.pop("relations", None)
        row["atoms"] = [dict(a, text=f"{a['text']} (record {i})") for a in row["atoms"][:2]]
        row["contexts"] = row["contexts"][:2]
        for atom in row["atoms"]:
            atom.pop("contexts", None)
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _records_for_local(folder: Path) -> Path:
    row = json.loads(QUICK_START.read_text().splitlines()[0])
    rows = [dict(row, input=f"{row['input']} ({i})") for i in range(3)]
    path = folder / "local.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _interrupt(command: list[str], code: Path, ready: Any, output: Path) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(code))
    process = subprocess.Popen(command, cwd=code, stderr=subprocess.PIPE, text=True, env=env, bufsize=1)
    try:
        ready(process)
        load = os.getloadavg()[0]
        sent = time.perf_counter()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=900)
        seconds = time.perf_counter() - sent
    finally:
        if process.poll() is None:
            process.kill()
    kept = len([line for line in output.read_text().splitlines() if line.strip()]) if output.exists() else 0
    last = [line for line in err.splitlines() if line.startswith(("interrupted", "error"))]
    return {"seconds": seconds, "status": process.returncode, "kept": kept, "load": load, "said": last[-1:] or [""]}


def measure_http(code: Path, folder: Path, timeout: float) -> dict[str, Any]:
    from fact_reasoner.llm.testing import ScriptedServer

    holding, release = threading.Event(), threading.Event()

    def answer(body: dict) -> str:
        if "(record 2)" in json.dumps(body) and not release.is_set():
            holding.set()
            release.wait(timeout * 3)
        return "entailment"

    source = marked_records(folder / "http.jsonl")
    out = folder / "http-out"
    with ScriptedServer([answer]) as server:
        command = [sys.executable, "-m", "fact_reasoner", "--input-file", str(source), "--output-dir", str(out)]
        command += ["--engine", "brute-force", "--nli", "llm", "--backend", "openai", "--model", "m"]
        command += ["--base-url", server.base_url, "--llm-retries", "0", "--llm-timeout", str(timeout), "--no-cache"]
        command += ["--quiet"]

        def ready(process: subprocess.Popen) -> None:
            while not holding.wait(0.1):
                if process.poll() is not None:
                    raise RuntimeError("the run ended before the server held a call")

        try:
            return _interrupt(command, code, ready, out / "http.fr3.jsonl") | {"command": command}
        finally:
            release.set()


def measure_local(code: Path, folder: Path, settle: float) -> dict[str, Any]:
    source = _records_for_local(folder)
    out = folder / "local-out"
    output = out / "local.fr3.jsonl"
    command = [sys.executable, "-m", "fact_reasoner", "--input-file", str(source), "--output-dir", str(out)]
    command += ["--nli", "llm", "--backend", "local", "--cache-dir", str(folder / "cache"), "--quiet"]

    def ready(process: subprocess.Popen) -> None:
        while not (output.exists() and output.read_text().strip()):
            if process.poll() is not None:
                raise RuntimeError("the run ended before its first record")
            time.sleep(0.2)
        time.sleep(settle)

    return _interrupt(command, code, ready, output) | {"command": command}


def measure_load(code: Path, folder: Path, settle: float) -> dict[str, Any]:
    out = folder / "load-out"
    command = [sys.executable, "-m", "fact_reasoner", "--version", "3", "--input-file", str(QUICK_START)]
    command += ["--output-dir", str(out), "--cache-dir", str(folder / "cache")]
    said: list[str] = []

    def ready(process: subprocess.Popen) -> None:
        assert process.stderr is not None
        for line in process.stderr:  # the stderr read here is given back to _interrupt below
            said.append(line)
            if "loading local model" in line:
                time.sleep(settle)
                return
        raise RuntimeError("the run ended before it loaded the model")

    result = _interrupt(command, code, ready, out / "short_answer.fr3.jsonl")
    return result | {"command": command}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--code", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    p.add_argument("--only", choices=("http", "local", "load"), help="one scenario only")
    p.add_argument("--llm-timeout", type=float, default=60.0, help="http: the client's timeout (default 60 s)")
    p.add_argument(
        "--settle",
        type=float,
        help="local: seconds after the first record (default 3); load: after the loading line (default 0.5)",
    )
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fr-interrupt-") as tmp:
        for name in ("http", "local", "load"):
            if (args.only and args.only != name) or (name == "load" and args.only != "load"):
                continue  # load: only when asked for (the other two are the issue #35 table)
            folder = Path(tmp) / name
            folder.mkdir()
            if name == "http":
                result = measure_http(args.code, folder, args.llm_timeout)
            elif name == "local":
                result = measure_local(args.code, folder, 3.0 if args.settle is None else args.settle)
            else:
                result = measure_load(args.code, folder, 0.5 if args.settle is None else args.settle)
            rows.append((name, result))
            print(f"{name}: {result['seconds']:.2f} s, status {result['status']}: {result['said'][0]}", file=sys.stderr)
    print(f"code: {args.code}; cores: {os.cpu_count()}")
    print()
    print("| run | SIGINT → exit (s) | exit status | records kept | load avg at SIGINT |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['seconds']:.2f} | {r['status']} | {r['kept']} | {r['load']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

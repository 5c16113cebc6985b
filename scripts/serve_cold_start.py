"""``fact-reasoner serve`` from a cold start: when it says it is ready, and what its first request gets.

    .venv-dev/bin/python -m scripts.serve_cold_start [--baseline REF] [--deadline 60] [--tries 3]

For the current checkout (and ``--baseline``, checked out into a temporary git worktree), each in
a new process with the model installed and a fresh cache directory (no model-call cache, no saved
prompt prefixes): starts ``fact-reasoner serve --port 0`` with the default settings, polls
``GET /healthz`` every half second until it answers 200, then sends the quick start's record
without its atoms (it needs the language model) and, while the answer is a 504, the same request
again, at most ``--tries`` times. Printed per code: seconds from the process's start to the first
``/healthz`` answer and to its first 200, what ``/healthz`` said meanwhile, and each attempt's
status, seconds and error message; the 1-minute load average beside each.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORD = {
    "input": "Question: Who was Marie Curie?",
    "topic": "Marie Curie",
    "output": "Marie Curie was a physicist who was born in Warsaw. She discovered penicillin.",
    "contexts": [
        {"id": "c0", "title": "Marie Curie", "text": "Marie Sklodowska Curie (1867-1934) was a Polish and naturalised-"
         "French physicist and chemist who conducted pioneering research on radioactivity. She was born in Warsaw."},
        {"id": "c1", "title": "Penicillin", "text": "Penicillin was discovered in 1928 by the Scottish physician "
         "Alexander Fleming."},
    ],
}  # fmt: skip


def cold_start(code: Path, models: Path, deadline: float, tries: int) -> dict[str, Any]:
    """One server from a cold start (module docstring); what it said and when."""
    import httpx

    cache = Path(tempfile.mkdtemp(prefix="fr-serve-cold-"))
    (cache / "models").symlink_to(models)
    env = dict(os.environ, FACT_REASONER_CACHE=str(cache), FACT_REASONER_MODELS=str(models), PYTHONPATH=str(code))
    command = [sys.executable, "-m", "fact_reasoner", "serve", "--port", "0", "--deadline", f"{deadline:g}"]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=code, env=env, stderr=subprocess.PIPE, text=True)
    out: dict[str, Any] = {"load": os.getloadavg()[0], "health": [], "attempts": []}
    try:
        url = None
        for line in process.stderr:  # type: ignore[union-attr]
            found = re.search(r"serving on (http://127\.0\.0\.1:\d+)/", line)
            if found:
                url = found.group(1)
                break
        if url is None:
            raise SystemExit(f"{code}: the server did not start")
        threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()  # type: ignore[union-attr]
        with httpx.Client(base_url=url, timeout=deadline + 60) as client:
            while True:
                health = client.get("/healthz")
                seen = (health.status_code, health.json().get("status"))
                if not out["health"] or out["health"][-1][1:] != seen:
                    out["health"].append((round(time.perf_counter() - started, 1), *seen))
                if health.status_code == 200:
                    out["ready"] = time.perf_counter() - started
                    break
                time.sleep(0.5)
            for _ in range(tries):
                load = os.getloadavg()[0]
                asked = time.perf_counter()
                response = client.post("/v1/assess", json=RECORD)
                body = response.json()
                out["attempts"].append(
                    {
                        "status": response.status_code,
                        "seconds": round(time.perf_counter() - asked, 1),
                        "load": load,
                        "retry_after": response.headers.get("Retry-After"),
                        "message": (body.get("error") or {}).get("message"),
                        "atoms": len(body.get("atoms") or []),
                        "timings": body.get("timings"),
                    }
                )
                if response.status_code != 504:
                    break
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(cache, ignore_errors=True)
    out["first_answer"] = out["health"][0][0] if out["health"] else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="git ref of the version to compare with")
    parser.add_argument("--deadline", type=float, default=60.0, help="serve --deadline (default: 60, serve's own)")
    parser.add_argument("--tries", type=int, default=3, help="sends of the same request while it gets 504")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache" / "fact_reasoner" / "models")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fr-serve-cold-code-"))
    codes = [("current", ROOT)]
    if args.baseline:
        baseline = work / "baseline"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(baseline), args.baseline], cwd=ROOT, check=True)
        codes.insert(0, ("baseline", baseline))
    results = {}
    try:
        for label, code in codes:
            results[label] = result = cold_start(code, args.models, args.deadline, args.tries)
            print(
                f"{label}: load {result['load']:.1f}; /healthz {result['health']}; ready after {result['ready']:.1f} s"
            )
            for i, attempt in enumerate(result["attempts"], 1):
                print(f"  request {i}: {attempt['status']} after {attempt['seconds']} s (load {attempt['load']:.1f}); "
                      f"Retry-After {attempt['retry_after']}; {attempt['message'] or str(attempt['atoms']) + ' atoms'}",
                      flush=True)  # fmt: skip
    finally:
        if args.baseline:
            subprocess.run(["git", "worktree", "remove", "--force", str(work / "baseline")], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

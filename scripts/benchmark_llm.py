"""How long the embedded LLM default takes, cold, against an earlier version in the same run.

    .venv/bin/python -m scripts.benchmark_llm --baseline <git ref> \
        [--input fact_reasoner/examples/short_answer.jsonl] [--args "--version 3"] [--repeats 1]

For the current checkout and for ``--baseline`` (checked out into a temporary git worktree),
each in a new process with the model already installed:

- ``first``: a fresh cache directory — no model-call cache, no saved prompt-prefix states;
- ``again``: the same cache directory with the model-call cache deleted — a new input, but the
  prefix states a first run saved are there (what every later run of a user sees).

Prints wall seconds, seconds per stage (atomize, revise, retrieve, nli), and, where the version
records them, per stage: model calls, prompt tokens computed, prompt tokens reused from the
server's prompt cache, tokens generated; then the ratio baseline / current. The 1-minute load
average is printed beside each run: compare runs only when nothing else is using the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("atomizer", "reviser", "nli_llm")


def run_once(code_dir: Path, cache: Path, input_file: Path, extra: list[str], out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, FACT_REASONER_CACHE=str(cache), PYTHONPATH=str(code_dir), HF_HUB_OFFLINE="1")
    command = [
        sys.executable,
        "-m",
        "fact_reasoner",
        "--input-file",
        str(input_file),
        "--output-dir",
        str(out),
        "--quiet",
        *extra,
    ]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=code_dir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{code_dir}: exit {done.returncode}\n{done.stderr[-2000:]}")
    rows = [
        json.loads(line)
        for path in out.glob("*.jsonl")
        if not path.name.endswith(".errors.jsonl")
        for line in path.read_text().splitlines()
        if line.strip()
    ]
    timings: dict[str, float] = {}
    counters: dict[str, float] = {}
    for row in rows:
        for key, value in row.get("timings", {}).items():
            timings[key] = timings.get(key, 0.0) + value
        for key, value in row.get("counters", {}).items():
            if isinstance(value, (int, float)):
                counters[key] = counters.get(key, 0.0) + value
    return {"wall": wall, "load": load, "timings": timings, "counters": counters, "records": len(rows)}


def describe(label: str, result: dict) -> str:
    t, c = result["timings"], result["counters"]
    stages = " ".join(f"{k} {t[k]:5.1f}" for k in ("atomize", "revise", "retrieve", "nli") if k in t)
    parts = [f"{label:18s} wall {result['wall']:6.1f} s  (load {result['load']:.1f})  {stages}"]
    for stage in STAGES:
        if f"llm_{stage}_calls" in c:
            parts.append(
                f"{'':18s}   {stage:9s} calls {c[f'llm_{stage}_calls']:3.0f}  prompt computed "
                f"{c[f'llm_{stage}_prompt_tokens']:5.0f}  reused {c[f'llm_{stage}_cached_prompt_tokens']:5.0f}  "
                f"generated {c[f'llm_{stage}_generated_tokens']:4.0f}"
            )
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="git ref of the version to compare with")
    parser.add_argument("--input", type=Path, default=ROOT / "fact_reasoner" / "examples" / "short_answer.jsonl")
    parser.add_argument("--args", default="--version 3", help="extra fact-reasoner arguments (quoted)")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path.home() / ".cache" / "fact_reasoner" / "models",
        help="where the installed model lives (linked into each fresh cache directory)",
    )
    args = parser.parse_args()
    if not (args.models / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").is_file():
        raise SystemExit(
            f"the model is not installed in {args.models}: run python -m scripts.prepare_local_model first"
        )
    extra = shlex.split(args.args)
    os.environ["FACT_REASONER_MODELS"] = str(args.models)  # the model store, whatever --cache-dir
    work = Path(tempfile.mkdtemp(prefix="fr-bench-llm-"))
    baseline_dir = work / "baseline"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(baseline_dir), args.baseline], cwd=ROOT, check=True)
    results = {}
    try:
        for label, code in (("baseline", baseline_dir), ("current", ROOT)):
            cache = work / f"cache-{label}"
            cache.mkdir()
            (cache / "models").symlink_to(args.models)
            first = run_once(code, cache, args.input.resolve(), extra, work / "out")
            for sqlite in cache.glob("model_calls.sqlite*"):
                sqlite.unlink()
            again = run_once(code, cache, args.input.resolve(), extra, work / "out")
            results[label] = (first, again)
            print(describe(f"{label} first", first), flush=True)
            print(describe(f"{label} again", again), flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline_dir)], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)
    (b1, b2), (c1, c2) = results["baseline"], results["current"]
    print(
        f"speed-up, first run: {b1['wall'] / c1['wall']:.1f}x ({b1['wall']:.1f} s -> {c1['wall']:.1f} s); "
        f"later runs: {b2['wall'] / c2['wall']:.1f}x ({b2['wall']:.1f} s -> {c2['wall']:.1f} s)"
    )


if __name__ == "__main__":
    main()

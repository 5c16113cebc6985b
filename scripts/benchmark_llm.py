"""How long the embedded LLM default takes, cold, against an earlier version in the same run.

    .venv-dev/bin/python -m scripts.benchmark_llm --baseline <git ref> [--case quick-start paragraph] \
        [--args "--version 3"] [--repeats 1] [--json out.json]
    .venv-dev/bin/python -m scripts.benchmark_llm --threads-check [--repeats 2]

Cases (each one record, its passages supplied, so nothing is retrieved):

- ``quick-start``: ``fact_reasoner/examples/short_answer.jsonl``, the README's first command;
- ``paragraph``: a four-sentence answer about Albert Einstein with two passages (written for
  this benchmark, :data:`PARAGRAPH`), the size of answer a user tries next;
- ``--input FILE``: any input file instead.

For the current checkout and for ``--baseline`` (checked out into a temporary git worktree),
each in a new process with the model already installed:

- ``first``: a fresh cache directory — no model-call cache, no saved prompt-prefix states
  (what a user sees the first time);
- ``again``: the same cache directory with the model-call cache deleted — a new input, but the
  prefix states a first run saved are there (what every later run of a user sees).

Printed per run: wall seconds of the whole command (process start to exit: imports, loading
the model, every stage), start-up (wall less the record's stage seconds), seconds per stage
(atomize, revise, nli, …) and, per LLM stage where the version records them, where the time
went: calls, prompt tokens computed and seconds spent on them, prompt tokens reused from the
server's prompt cache, tokens generated and seconds spent generating; then atoms (made,
revised, skipped by the reviser, ungrounded) and the ratio baseline / current. The 1-minute
load average of the machine is printed beside each run: a busy CPU slows every number here, so
compare runs of one invocation only, and quote the load with any time.

``--threads-check`` asks the model for one atomizer reply (a 14-word sentence: about 300
prompt tokens, 30 generated), each in a new process, with prompt/generation threads 2/2, 2/1
and 1/1 in turn, then with 1/1 and the JSON schema without its ``maxItems`` and without any
schema (``--repeats`` rounds), and prints wall and CPU seconds, prompt and generation seconds,
milliseconds per generated token and the load: on a busy machine two generating threads wait
for each other (:func:`fact_reasoner.llm.local.generation_threads_for`); the grammar that
enforces the schema is compared with none.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("atomizer", "reviser", "nli_llm")
TIMED = ("atomize", "revise", "retrieve", "nli", "infer")

#: the four-sentence answer (the issue's kind of paragraph), with two passages
PARAGRAPH = {
    "input": "Who was Albert Einstein?",
    "output": (
        "Albert Einstein was a German-born theoretical physicist. He was born in Ulm in 1879. "
        "He developed the theory of relativity, one of the two pillars of modern physics. "
        "He received the Nobel Prize in Physics in 1921 and died in Princeton in 1955."
    ),
    "topic": "Albert Einstein",
    "contexts": [
        {
            "id": "c0",
            "title": "Albert Einstein",
            "text": "Albert Einstein (born in Ulm in 1879) was a German-born theoretical physicist who "
            "developed the theory of relativity.",
        },
        {
            "id": "c1",
            "title": "Albert Einstein",
            "text": "Einstein received the 1921 Nobel Prize in Physics. He died in Princeton, New Jersey, in 1955.",
        },
    ],
}
CASES = {"quick-start": ROOT / "fact_reasoner" / "examples" / "short_answer.jsonl", "paragraph": PARAGRAPH}


def run_once(code_dir: Path, cache: Path, input_file: Path, extra: list[str], out: Path) -> dict[str, Any]:
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
    atoms = {
        "judged": sum(len(row.get("atoms") or []) for row in rows),
        "ungrounded": sum(len(row.get("ungrounded_atoms") or []) for row in rows),
        "texts": [a["text"] for row in rows for a in row.get("atoms") or []],
    }
    return {
        "wall": wall,
        "load": load,
        "timings": timings,
        "counters": counters,
        "records": len(rows),
        "atoms": atoms,
        "factuality_score": [row.get("factuality_score") for row in rows],
    }


def describe(label: str, result: dict[str, Any]) -> str:
    t, c = result["timings"], result["counters"]
    stages = " ".join(f"{k} {t[k]:5.1f}" for k in TIMED if k in t)
    startup = result["wall"] - t.get("total", 0.0)
    parts = [
        f"{label:24s} wall {result['wall']:6.1f} s  (load {result['load']:.1f})  start-up {startup:5.1f}  {stages}"
    ]
    for stage in STAGES:
        if f"llm_{stage}_calls" not in c:
            continue
        line = (
            f"{'':24s}   {stage:9s} calls {c[f'llm_{stage}_calls']:3.0f}  prompt computed "
            f"{c[f'llm_{stage}_prompt_tokens']:5.0f}"
        )
        if f"llm_{stage}_prompt_seconds" in c:
            line += f" ({c[f'llm_{stage}_prompt_seconds']:5.1f} s)"
        line += f"  reused {c[f'llm_{stage}_cached_prompt_tokens']:5.0f}  generated {c[f'llm_{stage}_generated_tokens']:4.0f}"
        if f"llm_{stage}_generation_seconds" in c:
            line += f" ({c[f'llm_{stage}_generation_seconds']:5.1f} s)"
        parts.append(line)
    atoms = result["atoms"]
    parts.append(
        f"{'':24s}   atoms judged {atoms['judged']}, ungrounded {atoms['ungrounded']}, "
        f"revised {c.get('reviser_atoms', 0):.0f} (skipped {c.get('reviser_skipped', 0):.0f}); "
        f"factuality_score {result['factuality_score']}"
    )
    return "\n".join(parts)


#: one atomizer call, timed, in this process: ``python -c THREADS_CHECK threads generation``
THREADS_CHECK = """
import os, resource, sys, tempfile, time
from pathlib import Path
from fact_reasoner.atoms import atomizer
from fact_reasoner.llm.base import ChatRequest
from fact_reasoner.llm.local import LocalLLM
threads, generation, schema = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
llm = LocalLLM(None, cache_dir=Path(tempfile.mkdtemp()), cache=None, threads=threads,
               generation_threads=generation, keep_prefix_states=False)
llm.server
sentence = "Albert Einstein was a German-born theoretical physicist who developed the theory of relativity."
bounded = atomizer.atoms_schema(atomizer.max_atoms(sentence, "v3"))
unbounded = {**bounded, "properties": {"atoms": {"type": "array", "items": {"type": "string"}}}}
json_schema = {"bounded": bounded, "unbounded": unbounded, "none": None}[schema]
request = ChatRequest.of(atomizer.build_messages("v3", sentence), "atomizer/v3", max_tokens=400, json_schema=json_schema)
before, load, start = resource.getrusage(resource.RUSAGE_SELF), os.getloadavg()[0], time.perf_counter()
timings = llm._complete(request.payload(llm.model), "atomizer/v3")["timings"]
wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
print(f"threads {threads}/{generation}, schema {schema:9s}: wall {wall:6.1f} s, CPU {cpu:6.1f} s; prompt "
      f"{timings['prompt_n']} tokens {timings['prompt_ms'] / 1000:5.1f} s, generated {timings['predicted_n']} tokens "
      f"{timings['predicted_ms'] / 1000:5.1f} s ({timings['predicted_per_token_ms']:.0f} ms/token) (load {load:.1f})",
      flush=True)
"""


def threads_check(repeats: int) -> None:
    """``--threads-check`` (module docstring)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(repeats):
        for threads, generation, schema in (
            (2, 2, "bounded"),
            (2, 1, "bounded"),
            (1, 1, "bounded"),
            (1, 1, "unbounded"),
            (1, 1, "none"),
        ):
            command = [sys.executable, "-c", THREADS_CHECK, str(threads), str(generation), schema]
            subprocess.run(command, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="git ref of the version to compare with")
    parser.add_argument(
        "--threads-check",
        action="store_true",
        help="time one atomizer reply with 2/2, 2/1 and 1/1 threads, and without the JSON schema",
    )
    parser.add_argument("--case", nargs="+", choices=sorted(CASES), default=["quick-start", "paragraph"])
    parser.add_argument("--input", type=Path, default=None, help="an input file instead of the cases")
    parser.add_argument("--args", default="--version 3", help="extra fact-reasoner arguments (quoted)")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each kind; the median wall is compared")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's figures here")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path.home() / ".cache" / "fact_reasoner" / "models",
        help="where the installed model lives (linked into each fresh cache directory)",
    )
    args = parser.parse_args()
    if args.threads_check:
        threads_check(args.repeats)
        return
    if args.baseline is None:
        parser.error("--baseline is required (or --threads-check)")
    if not (args.models / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").is_file():
        raise SystemExit(
            f"the model is not installed in {args.models}: run python -m scripts.prepare_local_model first"
        )
    extra = shlex.split(args.args)
    os.environ["FACT_REASONER_MODELS"] = str(args.models)  # the model store, whatever --cache-dir
    work = Path(tempfile.mkdtemp(prefix="fr-bench-llm-"))
    inputs: dict[str, Path] = {}
    if args.input is not None:
        inputs[args.input.stem] = args.input.resolve()
    else:
        for name in args.case:
            case = CASES[name]
            if isinstance(case, Path):
                inputs[name] = case
            else:
                inputs[name] = work / f"{name}.jsonl"
                inputs[name].write_text(json.dumps(case) + "\n")
    baseline_dir = work / "baseline"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(baseline_dir), args.baseline], cwd=ROOT, check=True)
    print(f"{os.cpu_count()} CPU(s); baseline {args.baseline}; fact-reasoner {' '.join(extra)}", flush=True)
    figures: list[dict[str, Any]] = []
    try:
        for case, input_file in inputs.items():
            walls: dict[tuple[str, str], list[float]] = {}
            for repeat in range(args.repeats):
                for label, code in (("baseline", baseline_dir), ("current", ROOT)):
                    cache = work / f"cache-{case}-{label}-{repeat}"
                    cache.mkdir()
                    (cache / "models").symlink_to(args.models)
                    first = run_once(code, cache, input_file, extra, work / "out")
                    for sqlite in cache.glob("model_calls.sqlite*"):
                        sqlite.unlink()
                    again = run_once(code, cache, input_file, extra, work / "out")
                    for kind, result in (("first", first), ("again", again)):
                        walls.setdefault((label, kind), []).append(result["wall"])
                        figures.append({"case": case, "code": label, "kind": kind, "repeat": repeat, **result})
                        print(describe(f"{case} {label} {kind}", result), flush=True)
            for kind in ("first", "again"):
                before = statistics.median(walls[("baseline", kind)])
                after = statistics.median(walls[("current", kind)])
                print(f"{case}, {kind} run: {before / after:.1f}x ({before:.1f} s -> {after:.1f} s, median wall)")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(baseline_dir)], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

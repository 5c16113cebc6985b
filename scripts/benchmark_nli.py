"""Pairs per second of each NLI judge, side by side in one run, each in a cold process.

    .venv-dev/bin/python -m scripts.benchmark_nli [--pairs 320] [--threads 2] \
        [--judge cross-encoder --judge cross-encoder:runs/nli/int8 --judge align --judge llm]

The pairs are real (atom, passage) pairs: the first ``--pairs`` of FActScore's ChatGPT atoms with
their BM25 passages (``../shared/data/factscore_bios_dev/passages_bm25_ChatGPT_dev.jsonl``, or
``--passages FILE`` in that format) — what FR2 judges on a biography.

For each judge, a new Python process (nothing loaded, nothing memoised, no NLI cache):

- ``load_s``: building the backend and judging one unrelated pair (model load, session start);
- ``pairs_per_s``: the ``--pairs`` pairs judged in calls of ``--batch`` pairs, as the engine
  sends them; ``pairs_per_cpu_s`` the same pairs over the CPU time of the process (all its
  threads): what a judge costs the machine, less moved than the wall clock by what else runs;
- ``windows``: how many (window, claim) items the cross-encoder ran (long passages are cut).

Judges: ``cross-encoder`` (the shipped model), ``cross-encoder:DIR`` (another model folder, e.g.
an int8 export), ``align``, ``llm`` (the embedded LLM judge; it is about a hundred times slower,
so it judges only ``--llm-pairs`` pairs). A judge that cannot be set up is printed with its
reason, never with a number. The 1-minute load average is printed: compare judges only from one
run on an otherwise idle machine; ``ratio`` is pairs/s over the first judge's.

Before and after a change, in one run: ``--baseline DIR`` names another checkout (say a
``git worktree`` of the commit before it); each judge then runs there too, in its own cold
process with that checkout's code, and the rows say which (``code``: ``baseline`` or ``this``).
``--repeat N`` runs every row N times, interleaved, and reports the median of each number (the
rows' order rotates between rounds, so that a burst of load does not fall on one row).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PASSAGES = ROOT.parent / "shared" / "data" / "factscore_bios_dev" / "passages_bm25_ChatGPT_dev.jsonl"
DEFAULT_JUDGES = ("cross-encoder", "align", "llm")


def load_pairs(path: Path, n: int) -> list[tuple[str, str]]:
    """The first ``n`` (passage, atom) pairs of a FActScore BM25 passages file."""
    pairs: list[tuple[str, str]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for passage in row["passages"]:
                pairs.append((passage["text"].replace("<s>", "").replace("</s>", " ").strip(), row["sent"]))
                if len(pairs) >= n:
                    return pairs
    return pairs


def make_backend(spec: str, threads: int):
    """The bare model backend a judge spec names (no pair cache in front)."""
    from fact_reasoner.nli.factory import make_model_nli
    from fact_reasoner.settings.config import PipelineConfig

    kind, _, folder = spec.partition(":")
    models = {"nli": kind, "threads": threads} | ({"nli_model": folder} if folder else {})
    # use_cache off: the LLM judge's language model would answer pairs seen before from the
    # model-call cache, which times the cache, not the judge
    return make_model_nli(PipelineConfig(models=models, cache={"use_cache": False}))


def worker(spec: str, pairs_file: Path, batch: int, threads: int) -> dict:
    """Runs in the cold child process: load, then judge every pair."""
    pairs = [tuple(p) for p in json.loads(pairs_file.read_text())]
    started = time.perf_counter()
    backend = make_backend(spec, threads)
    backend.judge([("The sky is blue.", "The sky has a colour.")])
    load_s = time.perf_counter() - started
    windows_before = getattr(backend, "windows_scored", 0)
    started, cpu_started = time.perf_counter(), time.process_time()
    judged = []
    for start in range(0, len(pairs), batch):
        judged += backend.judge(pairs[start : start + batch])
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    failed = sum(j.failed for j in judged)
    if failed:
        raise RuntimeError(f"{failed} of {len(judged)} pairs failed")
    return {
        "judge": spec,
        "pairs": len(pairs),
        "load_s": round(load_s, 2),
        "judge_s": round(seconds, 2),
        "pairs_per_s": round(len(pairs) / seconds, 2),
        "pairs_per_cpu_s": round(len(pairs) / cpu_seconds, 2),
        "windows": getattr(backend, "windows_scored", 0) - windows_before or None,
    }


def run_cold(spec: str, pairs: list[tuple[str, str]], batch: int, threads: int, root: Path = ROOT) -> dict:
    """One judge in a new process: this script's worker (the same measurement for every
    checkout) with the ``fact_reasoner`` of the checkout ``root``."""
    with tempfile.TemporaryDirectory() as tmp:
        pairs_file = Path(tmp) / "pairs.json"
        pairs_file.write_text(json.dumps(pairs))
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(root))
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", spec, "--pairs-file", str(pairs_file)]
        command += ["--batch", str(batch), "--threads", str(threads)]
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)])[-1]
        return {"judge": spec, "error": reason}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", action="append", help=f"repeatable (default: {', '.join(DEFAULT_JUDGES)})")
    parser.add_argument("--pairs", type=int, default=320, help="pairs per judge (default 320)")
    parser.add_argument("--llm-pairs", type=int, default=16, help="pairs for the LLM judge (default 16)")
    parser.add_argument("--batch", type=int, default=32, help="pairs per judge call (default 32)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of each judge (default 2)")
    parser.add_argument("--passages", type=Path, default=DEFAULT_PASSAGES)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--baseline", type=Path, help="another checkout: each judge also runs with its code")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row, interleaved; medians (default 1)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pairs-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.pairs_file, args.batch, args.threads)))
        return
    if not args.passages.is_file():
        parser.error(f"no passages file at {args.passages} (give --passages)")
    if args.baseline is not None and not (args.baseline / "scripts" / "benchmark_nli.py").is_file():
        parser.error(f"--baseline {args.baseline} is not a checkout of this project")
    pairs = load_pairs(args.passages, args.pairs)
    codes = [("baseline", args.baseline.resolve())] if args.baseline is not None else []
    codes.append(("this", ROOT))
    plan = [(spec, code, root) for spec in args.judge or DEFAULT_JUDGES for code, root in codes]
    runs: dict[int, list[dict]] = {i: [] for i in range(len(plan))}
    for round_ in range(max(1, args.repeat)):
        for step in range(len(plan)):
            i = (step + round_) % len(plan)
            spec, code, root = plan[i]
            n = args.llm_pairs if spec.split(":")[0] == "llm" else args.pairs
            row = run_cold(spec, pairs[:n], args.batch, args.threads, root) | {"code": code}
            row["load_average_1min"] = round(os.getloadavg()[0], 2)
            runs[i].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    rows = [median_row(runs[i]) for i in range(len(plan))]
    print_table(rows, with_code=bool(args.baseline))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


#: the numbers of a row that are a median over its runs
_MEASURED = ("load_s", "judge_s", "pairs_per_s", "pairs_per_cpu_s", "load_average_1min")


def median_row(runs: list[dict]) -> dict:
    """One row from the runs of a (judge, code): each measured number's median, ``runs`` their
    count; a row whose every run failed keeps the first error."""
    done = [r for r in runs if "error" not in r]
    if not done:
        return runs[0]
    row = dict(done[0]) | {key: round(statistics.median(r[key] for r in done), 2) for key in _MEASURED}
    return row | {"runs": len(done)}


def print_table(rows: list[dict], with_code: bool) -> None:
    """The rows as a table; ``ratio``: pairs/s (and pairs per CPU-second) over the first row's."""
    first = next((r for r in rows if "pairs_per_s" in r), None)
    code = f" {'code':<8}" if with_code else ""
    print(
        f"{'judge':<42}{code} {'pairs':>6} {'load s':>7} {'pairs/s':>8} {'ratio':>6} {'pairs/cpu-s':>11}"
        f" {'ratio':>6} {'windows':>8} {'load avg':>8}"
    )
    for r in rows:
        label = f"{r['judge']:<42}" + (f" {r.get('code', ''):<8}" if with_code else "")
        if "error" in r:
            print(f"{label} not run: {r['error']}")
            continue
        ratio = r["pairs_per_s"] / first["pairs_per_s"] if first else float("nan")
        cpu_ratio = r["pairs_per_cpu_s"] / first["pairs_per_cpu_s"] if first else float("nan")
        windows = r["windows"] if r["windows"] is not None else "-"
        print(
            f"{label} {r['pairs']:>6} {r['load_s']:>7} {r['pairs_per_s']:>8} {ratio:>6.2f} {r['pairs_per_cpu_s']:>11}"
            f" {cpu_ratio:>6.2f} {windows:>8} {r['load_average_1min']:>8}"
        )


if __name__ == "__main__":
    main()

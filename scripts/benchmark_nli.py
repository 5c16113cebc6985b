"""Pairs per second of each NLI judge, side by side in one run, each in a cold process.

    .venv-dev/bin/python -m scripts.benchmark_nli [--pairs 320] [--threads 2] \
        [--judge cross-encoder --judge cross-encoder:runs/nli/int8 --judge align --judge llm]

The pairs are real (atom, passage) pairs: the first ``--pairs`` of FActScore's ChatGPT atoms with
their BM25 passages (``../shared/data/factscore_bios_dev/passages_bm25_ChatGPT_dev.jsonl``, or
``--passages FILE`` in that format) — what FR2 judges on a biography.

For each judge, a new Python process (nothing loaded, nothing memoised, no NLI cache):

- ``load_s``: building the backend and judging one unrelated pair (model load, session start);
- ``pairs_per_s``: the ``--pairs`` pairs judged in calls of ``--batch`` pairs, as the engine
  sends them;
- ``windows``: how many (window, claim) items the cross-encoder ran (long passages are cut).

Judges: ``cross-encoder`` (the shipped model), ``cross-encoder:DIR`` (another model folder, e.g.
an int8 export), ``align``, ``llm`` (the embedded LLM judge; it is about a hundred times slower,
so it judges only ``--llm-pairs`` pairs). A judge that cannot be set up is printed with its
reason, never with a number. The 1-minute load average is printed: compare judges only from one
run on an otherwise idle machine; ``ratio`` is pairs/s over the first judge's.
"""

from __future__ import annotations

import argparse
import json
import os
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
    started = time.perf_counter()
    judged = []
    for start in range(0, len(pairs), batch):
        judged += backend.judge(pairs[start : start + batch])
    seconds = time.perf_counter() - started
    failed = sum(j.failed for j in judged)
    if failed:
        raise RuntimeError(f"{failed} of {len(judged)} pairs failed")
    return {
        "judge": spec,
        "pairs": len(pairs),
        "load_s": round(load_s, 2),
        "judge_s": round(seconds, 2),
        "pairs_per_s": round(len(pairs) / seconds, 2),
        "windows": getattr(backend, "windows_scored", 0) - windows_before or None,
    }


def run_cold(spec: str, pairs: list[tuple[str, str]], batch: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        pairs_file = Path(tmp) / "pairs.json"
        pairs_file.write_text(json.dumps(pairs))
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))
        command = [sys.executable, "-m", "scripts.benchmark_nli", "--worker", spec, "--pairs-file", str(pairs_file)]
        command += ["--batch", str(batch), "--threads", str(threads)]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
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
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--pairs-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.pairs_file, args.batch, args.threads)))
        return
    if not args.passages.is_file():
        parser.error(f"no passages file at {args.passages} (give --passages)")
    pairs = load_pairs(args.passages, args.pairs)
    rows = []
    for spec in args.judge or DEFAULT_JUDGES:
        n = args.llm_pairs if spec.split(":")[0] == "llm" else args.pairs
        row = run_cold(spec, pairs[:n], args.batch, args.threads)
        row["load_average_1min"] = round(os.getloadavg()[0], 2)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    first = next((r["pairs_per_s"] for r in rows if "pairs_per_s" in r), None)
    print(f"{'judge':<42} {'pairs':>6} {'load s':>7} {'pairs/s':>8} {'ratio':>6} {'windows':>8} {'load avg':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['judge']:<42} not run: {r['error']}")
            continue
        ratio = r["pairs_per_s"] / first if first else float("nan")
        windows = r["windows"] if r["windows"] is not None else "-"
        print(
            f"{r['judge']:<42} {r['pairs']:>6} {r['load_s']:>7} {r['pairs_per_s']:>8} {ratio:>6.2f} {windows:>8}"
            f" {r['load_average_1min']:>8}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

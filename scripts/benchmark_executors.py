"""Benchmark of the executors: records/s of the local run and of Ray with 1 and 2 workers
(not a test; prints a table).

    D=../shared/data/factscore_bios_dev
    .venv-dev/bin/python -m experiments.prepare_factscore --generations $D/ChatGPT.jsonl \\
        --passages $D/passages_bm25_ChatGPT_dev.jsonl --out runs/bios.jsonl
    .venv-dev/bin/python -m scripts.benchmark_executors runs/bios.jsonl --limit 40     # FR2, --nli align

The workload is the real one: each configuration assesses the same records (FR2, the fast
``align`` NLI, the native engine) with an empty model-call cache of its own, so every NLI pair
is judged, and in fresh processes — the local run in a process of its own, each Ray run with a
local Ray instance and actors of its own — so the embedder is loaded and its memo empty.

Reported per configuration:

- ``start s``: Ray only — ``ray.init`` plus the actors' start (:meth:`RayExecutor.warm_up`);
- ``run s``: from the first record sent to the last result back (models load in it, as they do
  in the local run); with ``--repeats R`` the configurations run R rounds in rotation and the
  fastest run of each is kept (every run's seconds are printed beside it);
- ``rec/s`` = records / run s; ``busy rec/s`` per worker (records over its own busy seconds);
- ``records per worker``: how the scheduler spread the records (a worker given none counts 0)
  and the spread, the largest share over an even share (1.00: even; 2.00 with two workers: one
  did everything). The spread depends on the load and on which actor asks first: it is measured
  here, and the tests assert only what a user relies on (each record once, the same results);
- ``scaling`` = rec/s of 2 workers / rec/s of 1 worker;
- ``overhead ms/rec`` = (run s of 1 Ray worker − run s of the local run) / records: what Ray adds
  per record (messages, pickling, the driver's round trips) with the same threads and work.
  ``--overhead-records N`` also times a near-empty workload (the bundled records with their
  precomputed relations, N copies), where that cost is all there is.

Results must be the same in every configuration: the largest marginal difference from the local
run is printed (it is 0 with align). The load average is printed beside each row: on a machine
shared with other work the numbers are not a clean measurement of scaling.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from fact_reasoner.executors import Executor, LocalExecutor
from fact_reasoner.io import NumberedRecord, read_records
from fact_reasoner.runner import AssessJob
from fact_reasoner.scores import median_num_atoms
from fact_reasoner.settings.config import ExecutionOptions, PipelineConfig

ROOT = Path(__file__).resolve().parents[1]

EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def load(path: Path, limit: int | None) -> list[NumberedRecord]:
    records = [r for r in read_records(path) if isinstance(r, NumberedRecord)]
    return records[:limit] if limit else records


def run_one(executor: Executor, job: AssessJob, records: list[NumberedRecord]) -> dict[str, Any]:
    """One configuration: start-up (Ray), run, per-worker rates, the rows."""
    start = 0.0
    warm_up = getattr(executor, "warm_up", None)
    if callable(warm_up):
        start = warm_up(job)
    began = time.perf_counter()
    rows: dict[str, dict] = {}
    for outcome in executor.map(job, records, local_state=None):
        if outcome.error is not None:
            raise RuntimeError(f"record {outcome.index} failed: {outcome.error}")
        rows[records[outcome.index].key] = outcome.value  # type: ignore[assignment]
    seconds = time.perf_counter() - began
    return {
        "start": start,
        "run": seconds,
        "rate": len(records) / seconds,
        "workers": executor.worker_summary(),
        "rows": rows,
        "load": os.getloadavg()[0],
    }


def _run_local_here(job: AssessJob, records: list[NumberedRecord]) -> dict[str, Any]:
    return run_one(LocalExecutor(), job, records)


def run_local(job: AssessJob, records: list[NumberedRecord]) -> dict[str, Any]:
    """The local run in a fresh process, as a CLI run is: nothing loaded or memoised before it
    (the sentence embedder keeps a process-wide memo of the texts it embedded)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_run_local_here, job, records).result()


def max_difference(rows: dict[str, dict], reference: dict[str, dict]) -> float:
    worst = 0.0
    for key, row in rows.items():
        want = {m["variable"]: m["probabilities"][1] for m in reference[key]["marginals"]}
        for m in row["marginals"]:
            worst = max(worst, abs(m["probabilities"][1] - want[m["variable"]]))
    return worst


def benchmark(
    records: list[NumberedRecord], config: PipelineConfig, workers: list[int], batch_size: int, repeats: int
) -> list[dict]:
    """Local, then Ray with each number of workers, ``repeats`` rounds in rotation (so a change
    of load hits every configuration); each run with a fresh cache directory. Per configuration
    the fastest run is kept (the least disturbed one), with every run's seconds beside it."""
    median = median_num_atoms([len(r.record.atoms) for r in records if r.record.atoms is not None])
    configurations = [("local", None)] + [(f"ray x{n}", n) for n in workers]
    best: dict[str, dict] = {}
    for round_ in range(repeats):
        for name, count in configurations:
            with tempfile.TemporaryDirectory(prefix="fr-bench-cache-") as cache:
                job = AssessJob(config.with_options(cache_dir=cache), "median", median)
                load_before = os.getloadavg()[0]
                if count is None:
                    result = run_local(job, records)
                else:
                    from fact_reasoner.executors.ray_executor import RayExecutor

                    with RayExecutor(ExecutionOptions(executor="ray", workers=count, batch_size=batch_size)) as ray:
                        result = run_one(ray, job, records)
            result.update(name=name, workers_n=count, load_before=load_before)
            runs = best[name]["runs"] if name in best else []
            runs.append(round(result["run"], 2))
            if name not in best or result["run"] < best[name]["run"]:
                best[name] = result
            best[name]["runs"] = runs
            print(f"  round {round_ + 1} {name}: {result['run']:.1f} s (load {load_before:.2f})", file=sys.stderr)
    return [best[name] for name, _ in configurations]


def records_per_worker(workers: dict[str, dict], count: int) -> list[int]:
    """Records each worker did, most first; a worker that got none (absent from the summary,
    which lists the workers that returned something) counts 0."""
    done = sorted((w["records"] for w in workers.values()), reverse=True)
    return done + [0] * max(0, count - len(done))


def spread(counts: list[int]) -> float:
    """The largest share of the records over an even share: 1.0 is an even spread, ``len(counts)``
    means one worker did everything."""
    total = sum(counts)
    return max(counts) / (total / len(counts)) if total else 0.0


def table(title: str, results: list[dict], n: int) -> str:
    local = results[0]
    by_workers = {r["workers_n"]: r for r in results}
    lines = [
        f"### {title}: {n} records",
        "",
        "| executor | start s | run s (every run) | rec/s | busy rec/s per worker | records per worker (spread) "
        "| max abs diff P vs local | load avg (before → after) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        busy = ", ".join(
            f"{w['records_per_second']:.2f}" if w["records_per_second"] else "-" for w in r["workers"].values()
        )
        counts = records_per_worker(r["workers"], r["workers_n"] or 1)
        lines.append(
            f"| {r['name']} | {r['start']:.1f} | {r['run']:.2f} ({', '.join(map(str, r['runs']))}) | {r['rate']:.2f} | {busy} | "
            f"{', '.join(map(str, counts))} ({spread(counts):.2f}) | "
            f"{max_difference(r['rows'], local['rows']):.1e} | {r['load_before']:.2f} → {r['load']:.2f} |"
        )
    lines.append("")
    if 1 in by_workers and 2 in by_workers:
        lines.append(f"scaling 2 workers / 1 worker: {by_workers[2]['rate'] / by_workers[1]['rate']:.2f}×")
    if 1 in by_workers:
        overhead = (by_workers[1]["run"] - local["run"]) / n * 1000
        lines.append(f"overhead of Ray, 1 worker vs local: {overhead:+.1f} ms per record")
    lines.append(f"cores: {os.cpu_count()}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help="prepared biographies (experiments/prepare_factscore.py)")
    p.add_argument("--limit", type=int, default=40, help="records to assess (default: %(default)s)")
    p.add_argument("--version", type=int, default=2, choices=(1, 2, 3), help="FR version (default: %(default)s)")
    p.add_argument("--nli", default="align", help="NLI backend (default: %(default)s)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Ray worker counts (default: 1 2)")
    p.add_argument("--batch-size", type=int, default=1, help="records per Ray batch (default: %(default)s)")
    p.add_argument("--overhead-records", type=int, default=0, help="also time N copies of the bundled records")
    p.add_argument("--repeats", type=int, default=1, help="rounds over the configurations; the fastest run is kept")
    p.add_argument("--json", type=Path, help="also write the numbers (without the rows) here")
    args = p.parse_args(argv)

    import logging

    logging.basicConfig(level=logging.WARNING)
    records = load(args.input, args.limit)
    config = PipelineConfig(version=args.version, nli=args.nli)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    sections = [("real NLI", records, config)]
    if args.overhead_records:
        rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
            for i in range(args.overhead_records):
                handle.write(json.dumps(dict(rows[i % 2], input=f"{rows[i % 2]['input']} #{i}")) + "\n")
        sections.append(
            ("near-empty (precomputed relations)", load(Path(handle.name), None), PipelineConfig(version=3))
        )
    report: dict[str, Any] = {}
    for title, items, section_config in sections:
        print(f"{title} …", file=sys.stderr)
        results = benchmark(items, section_config, args.workers, args.batch_size, args.repeats)
        print(
            table(f"{title}, FR{section_config.graph.version}, --nli {section_config.models.nli}", results, len(items))
        )
        print()
        report[title] = [{k: v for k, v in r.items() if k != "rows"} for r in results]
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run FR1, FR2, FR3 and the graph-free baselines over a prepared file, against gold labels.

One command, one NLI backend, one output JSONL per assessor::

    python -m experiments.run_biographies runs/factscore/chatgpt_dev.jsonl \\
        --nli cross-encoder --nli-model PATH --out-dir runs/factscore/out \\
        --tables experiments/results/chatgpt_dev_cross-encoder

writes ``<out-dir>/<stem>.<tag>.{fr1,factscore,vote,fr2,fr3}.jsonl`` (``tag`` = ``--tag`` or
the NLI backend name; ``--assessors factscore-pipeline veriscore factverify`` adds the baseline
pipelines of :mod:`fact_reasoner.pipelines` on the same gold atoms and contexts, judged by
``--pipeline-judge llm|nli``, with their LLM calls per biography in ``run.json``), ``<stem>.<tag>.run.json`` (wall time, NLI pairs, backend calls and
cache hits per assessor: this invocation's under ``assessors``, every invocation's under
``sessions`` and their sums under ``totals``; rewritten after each record), with ``--tables
PREFIX`` the Markdown/CSV tables of ``experiments/tables.py``, and with ``--report FILE.html``
the HTML report (context texts from the input file).

Resumable: records already in an output file are skipped (the file must hold results of the
same settings, else use ``--overwrite``). NLI results are cached per (premise, hypothesis)
text pair in a SQLite file (``<cache-dir>/model_calls.sqlite``, shared with the model-call
cache, keys distinct), keyed by the backend's identity, so a rerun, or adding FR3 after FR2,
only asks the NLI model about pairs it has never seen. FR1's pairs are a subset of FR2's, and
FR2's of FR3's; the baselines use FR1's pairs. Assessors run in the order FR1, baselines, FR2,
FR3 so the cheap ones finish first.

``--nli precomputed`` uses the ``relations`` that records carry (no model, no cache).

``--atoms own`` runs the path a user runs: the gold atoms are set aside and the pipeline's
atomizer and reviser make the atoms from the response (FR2 and FR3 only: FR1 relates an atom to
the passages retrieved for its gold atom); the model calls go through the same cache. The rows
then carry no gold labels: :mod:`experiments.eval_end_to_end` compares them with the gold atoms
of the input file. The default output tag gains ``-own-atoms``.

``--executor ray`` spreads each assessor's records over Ray actors (``--workers``,
``--batch-size``, ``--ray-address``); every actor holds its own NLI backend, engine and
FactReasoner per version (:class:`BiographyJob`), and reports the NLI calls and cache hits of
each record, so ``run.json`` adds up the same way. Rows are written as they come back.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from experiments import baselines as baseline_module
from fact_reasoner.errors import FactReasonerError, RecordFailed, SetupError
from fact_reasoner.executors import Job, describe_error, make_executor
from fact_reasoner.interrupts import stop_on_signals
from fact_reasoner.io import NumberedRecord, read_records
from fact_reasoner.nli import PrecomputedNLI
from fact_reasoner.runner import DatasetJob, run_dataset
from fact_reasoner.schema import InputRecord
from fact_reasoner.settings.cli_options import add_config_arguments, config_from_args
from fact_reasoner.settings.config import PipelineConfig
from fact_reasoner.stages import Stages

ASSESSORS = ("fr1", "factscore", "vote", "fr2", "fr3", "factscore-pipeline", "veriscore", "factverify")
#: the assessors that run a baseline pipeline of :mod:`fact_reasoner.pipelines`, and which one
PIPELINE_ASSESSORS = {"factscore-pipeline": "factscore", "veriscore": "veriscore", "factverify": "factverify"}
#: the assessors run when --assessors is not given (the pipelines ask a model per atom: named only)
DEFAULT_ASSESSORS = ("fr1", "factscore", "vote", "fr2", "fr3")
#: where the atoms come from (--atoms): the records' gold atoms, or the pipeline's atomizer
ATOM_SOURCES = ("given", "own")
#: the assessors that can run on the pipeline's own atoms (FR1 needs each atom's own passages)
OWN_ATOM_ASSESSORS = ("fr2", "fr3")


class CountingNLI:
    """Counts the pairs looked up in a precomputed backend (no cache needed there)."""

    def __init__(self) -> None:
        self.requested = 0
        self.hits = 0
        self.backend_pairs = 0
        self.seconds = 0.0


NLI_COUNTERS = ("requested", "hits", "backend_pairs", "seconds")


def _nli_counts(nli: Any) -> dict[str, float]:
    return {name: getattr(nli, name) for name in NLI_COUNTERS}


class RunnerState:
    """A worker's stages: one NLI backend (the model behind the pair cache, or the counter of a
    precomputed run) shared by every assessor, one engine, one FactReasoner per FR version."""

    def __init__(self, config: PipelineConfig, precomputed: bool) -> None:
        self.config = config
        self.precomputed = precomputed
        # the pipeline's NLI stage: the model behind the pair cache (keyed by the backend's
        # identity, so a retrained model or another prompt gets new keys)
        self.nli: Any = CountingNLI() if precomputed else Stages(config).nli()
        self.name = "precomputed" if precomputed else self.nli.name
        self._fr: dict[int, Any] = {}
        self._pipelines: dict[str, Any] = {}
        self._engine: Any = None

    def pipeline(self, assessor: str) -> Any:
        """The baseline pipeline of a pipeline assessor (None for the others), sharing the NLI
        backend (and its pair cache) with the FR assessors."""
        name = PIPELINE_ASSESSORS.get(assessor)
        if name is None:
            return None
        if name not in self._pipelines:
            from fact_reasoner.pipelines import make_pipeline

            self._pipelines[name] = make_pipeline(
                self.config.with_options(pipeline=name), nli=None if self.precomputed else self.nli
            )
        return self._pipelines[name]

    def fr(self, assessor: str) -> Any:
        """The FactReasoner of an FR assessor (None for a baseline); one engine for every version."""
        if not assessor.startswith("fr") or assessor in PIPELINE_ASSESSORS:
            return None
        version = int(assessor[2])
        if version not in self._fr:
            from fact_reasoner.reasoner import FactReasoner

            fr = FactReasoner(
                self.config.with_options(version=version),
                nli=None if self.precomputed else self.nli,
                engine=self._engine,
            )
            self._engine = fr.engine
            self._fr[version] = fr
        return self._fr[version]


@dataclass(frozen=True)
class BiographyJob(Job[tuple[str, NumberedRecord], tuple[dict[str, Any], dict[str, float]]]):
    """One assessor on one record, as any worker does it: the output row and the NLI counts
    (pairs requested, cache hits, backend pairs and seconds) that record cost."""

    config: PipelineConfig
    median: float | None
    precomputed: bool

    def setup(self, config: PipelineConfig) -> RunnerState:
        return RunnerState(config, self.precomputed)

    def run(self, state: RunnerState, item: tuple[str, NumberedRecord]) -> tuple[dict[str, Any], dict[str, float]]:
        assessor, record = item
        before = _nli_counts(state.nli)
        pipeline = state.pipeline(assessor)
        if pipeline is not None:
            result = pipeline.assess(record.record, k="median", dataset_median_atoms=self.median, record_key=record.key)
            if self.precomputed:
                state.nli.requested += result.counters.get("pipeline_nli_pairs", 0)
            row = result.model_dump(mode="json")
        else:
            row = _assess(assessor, state.fr(assessor), record, state.nli, self.median, self.precomputed)
        after = _nli_counts(state.nli)
        return row, {name: after[name] - before[name] for name in NLI_COUNTERS}


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, PipelineConfig]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help="prepared input records (experiments/prepare_factscore.py)")
    p.add_argument("--out-dir", type=Path, default=Path("runs/biographies"), help="where result JSONL files go")
    p.add_argument("--tag", help="name of this run in file names (default: the NLI backend name)")
    p.add_argument(
        "--assessors",
        nargs="+",
        choices=ASSESSORS,
        default=list(DEFAULT_ASSESSORS),
        help="which assessors to run (default: fr1 factscore vote fr2 fr3). The baseline pipelines "
        "(fact_reasoner.pipelines, run on the record's gold atoms and contexts, judged by "
        "--pipeline-judge): factscore-pipeline (FActScore's 'True or False?'), veriscore (VeriScore's "
        "supported/unsupported; --veriscore-claims given: the gold atoms), factverify (SAFE: "
        "--factverify-steps LLM-written queries over the record's contexts, then a rating)",
    )
    p.add_argument(
        "--atoms",
        choices=ATOM_SOURCES,
        default="given",
        help="given: judge the records' gold atoms (default); own: set them aside and let the pipeline "
        "atomize and revise the response (fr2, fr3 only; experiments/eval_end_to_end.py compares with gold)",
    )
    p.add_argument("--limit", type=int, help="only the first N records")
    p.add_argument("--overwrite", action="store_true", help="start the output files afresh")
    p.add_argument("--tables", type=Path, metavar="PREFIX", help="also write PREFIX.md and PREFIX.csv")
    p.add_argument("--report", type=Path, metavar="HTML", help="also write the HTML report of all outputs")
    p.add_argument("--quiet", action="store_true")
    # The pipeline's settings; the FR version is per assessor and K is the dataset median here.
    # From the scores group: --skip-uncheckable, --checkworthy, --abstention, --gamma (FR rows only).
    add_config_arguments(
        p,
        groups=("pipeline", "graph", "scores", "engine", "models", "cache", "execution"),
        exclude=("version", "k", "pipeline"),
    )
    # Prepared files usually carry no relations: this runner judges with the records' relations
    # only when asked, and otherwise needs --nli (llm, align, cross-encoder).
    p.set_defaults(nli="precomputed")
    args = p.parse_args(argv)
    return args, config_from_args(args, p, k="median")


def read_prepared(path: Path, limit: int | None = None) -> list[NumberedRecord] | None:
    """The first ``limit`` records of a prepared file (all without a limit), or None after
    printing every line that could not be read (one ``error:`` line each)."""
    items = list(read_records(path))
    bad = [i for i in items if not isinstance(i, NumberedRecord)]
    for error in bad:
        print(f"error: {error}", file=sys.stderr)
    if bad:
        return None
    records = [i for i in items if isinstance(i, NumberedRecord)]
    return records[:limit] if limit is not None else records


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "run"


def own_atoms(records: list[NumberedRecord]) -> list[NumberedRecord]:
    """The records with their atoms set aside (``--atoms own``): the pipeline atomizes them."""
    return [replace(r, record=r.record.model_copy(update={"atoms": None})) for r in records]


def _settings(assessor: str, config: PipelineConfig, nli_name: str, atoms: str = "given") -> dict[str, Any]:
    """The settings an assessor's results depend on (derived from the config); ``atoms`` is
    written only when it is ``own`` (rows on the given atoms read as before)."""
    if atoms != "given":
        return _settings(assessor, config, nli_name) | {"atoms": atoms}
    if assessor in PIPELINE_ASSESSORS:
        settings = config.with_options(pipeline=PIPELINE_ASSESSORS[assessor]).settings()
        return {"pipeline": settings["pipeline"], "models": settings["models"], "scores": settings["scores"]} | {
            "nli_backend": nli_name,
            "assessor": assessor,
        }
    if assessor.startswith("fr"):
        # the FR rows keep the settings they had before --pipeline existed, so they still resume
        settings = config.with_options(version=int(assessor[2])).settings()
        settings.pop("pipeline", None)
        return settings | {"nli_backend": nli_name}
    return {"models": config.settings()["models"], "nli_backend": nli_name, "assessor": assessor}


@dataclass(kw_only=True)
class AssessorRun(DatasetJob):
    """One assessor over the records, as :func:`fact_reasoner.runner.run_dataset` runs it: the
    rows carry the assessor's settings, name and the record's ``cat``; after each record the
    assessor's counts (done, failed, NLI pairs and cache hits, a pipeline's LLM calls) are
    written to ``run.json``, so a killed run still accounts for its work."""

    records: list[NumberedRecord]
    assessor: str
    pipeline: PipelineConfig
    executor: Any
    state: RunnerState
    job: BiographyJob
    row_settings: dict[str, Any]
    report: dict[str, Any]
    report_path: Path
    used: dict[str, float] = field(default_factory=lambda: dict.fromkeys(NLI_COUNTERS, 0.0))
    llm: dict[str, int] = field(default_factory=lambda: {"calls": 0, "cache_hits": 0, "records": 0})
    started: float = field(default_factory=time.perf_counter)
    tried: int = 0
    failures: int = 0
    skipped: int = 0

    noun = "bio"
    elsewhere = "--tag"

    @property
    def config(self) -> PipelineConfig:
        return self.pipeline

    def read(self) -> list[Any]:
        return list(self.records)

    def settings(self) -> dict[str, Any]:
        return self.row_settings

    def make_executor(self) -> Any:
        return self.executor

    def release_executor(self, executor: Any) -> None:
        pass  # shared by every assessor: closed once they are all done

    def progress_label(self) -> str:
        return self.assessor

    def worker_job(self, items: Any) -> BiographyJob:
        return self.job

    def local_state(self) -> RunnerState:
        return self.state

    def work_items(self, items: Any) -> list[Any]:
        self.skipped = len(self.records) - len(items)  # the records still to do are the items
        return [(self.assessor, record) for record in items]

    def row(self, item: Any, value: Any) -> dict[str, Any]:
        if value is None:
            raise RecordFailed("no result")
        row, counts = value
        for name in NLI_COUNTERS:
            self.used[name] += counts[name]
        counters = row.get("counters") or {}
        self.llm["calls"] += int(counters.get("pipeline_llm_calls", 0))
        self.llm["cache_hits"] += int(counters.get("llm_cache_hits", 0))
        self.llm["records"] += 1
        row["settings"] = self.row_settings
        row["assessor"] = row.get("assessor") or assessor_name(self.assessor, row)
        row["cat"] = (item.record.model_extra or {}).get("cat")
        row["source_line"] = item.line
        return row  # type: ignore[no-any-return]

    def failure_message(self, item: Any, error: BaseException) -> str:
        return f"{self.assessor}: {describe_error(error)}"

    def after_item(self, item: Any, row: dict[str, Any] | None, failure: Any) -> None:
        self.tried += 1
        self.failures += failure is not None
        self.stats()  # on disk after every record

    def postfix(self) -> dict[str, Any]:
        return {"nli_calls": int(self.used["backend_pairs"]), "cache_hits": int(self.used["hits"])}

    def stats(self) -> dict[str, Any]:
        """This assessor's counts so far, written into ``run.json``."""
        stats: dict[str, Any] = {
            "done_now": self.tried - self.failures,
            "skipped_already_done": self.skipped,
            "failed": self.failures,
            "seconds": round(time.perf_counter() - self.started, 3),
            "nli_pairs_requested": int(self.used["requested"]),
            "nli_cache_hits": int(self.used["hits"]),
            "nli_backend_calls": int(self.used["backend_pairs"]),
            "nli_backend_seconds": round(self.used["seconds"], 3),
            "output": str(self.output_file),
        }
        if self.assessor in PIPELINE_ASSESSORS:
            stats["llm_calls"] = self.llm["calls"]
            stats["llm_cache_hits"] = self.llm["cache_hits"]
            records = self.llm["records"]
            stats["llm_calls_per_record"] = round(self.llm["calls"] / records, 2) if records else None
        self.report["sessions"][-1]["assessors"][self.assessor] = stats
        _write_run_report(self.report_path, self.report)
        return stats


def run(args: argparse.Namespace, config: PipelineConfig) -> int:
    """Every assessor in turn over the records, each through the one dataset runner
    (:func:`fact_reasoner.runner.run_dataset`); then the tables and the report."""
    records = read_prepared(args.input, args.limit)
    if records is None:
        return 2
    if args.atoms == "own":
        wrong = [a for a in args.assessors if a not in OWN_ATOM_ASSESSORS]
        if wrong:
            print(
                f"error: --atoms own runs {', '.join(OWN_ATOM_ASSESSORS)} only, not {', '.join(wrong)}", file=sys.stderr
            )
            return 2
    missing_atoms = [r for r in records if r.record.atoms is None]
    if missing_atoms:
        print(
            f"error: {missing_atoms[0].path}:{missing_atoms[0].line}: record has no atoms; prepare the file first",
            file=sys.stderr,
        )
        return 2
    median = statistics.median(len(r.record.atoms or []) for r in records) if records else None
    if args.atoms == "own":
        records, median = own_atoms(records), None  # K: max(n // 2, 1) of the atoms made

    precomputed = config.models.nli_choice.model is None
    state = RunnerState(config, precomputed)  # this process's stages (the local executor's)
    nli_name = state.name
    try:
        # the folder holding the experiments package: Ray workers import this module's job by name
        executor = make_executor(config.execution, code_paths=[Path(__file__).resolve().parents[1]])
    except SetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    job = BiographyJob(config, median, precomputed)
    tag = _slug(args.tag or (nli_name if args.atoms == "given" else f"{nli_name}-{args.atoms}-atoms"))
    stem = args.input.name.removesuffix(".jsonl").removesuffix(".json")
    args.out_dir.mkdir(parents=True, exist_ok=True)

    report_path = args.out_dir / f"{stem}.{tag}.run.json"
    session: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "finished": False,
        "interrupted": False,
        "assessors": {},
    }
    sessions = _earlier_sessions(report_path, overwrite=args.overwrite) + [session]
    report: dict[str, Any] = {
        "input": str(args.input),
        "tag": tag,
        "nli": nli_name,
        "records": len(records),
        "median_atoms": median,
        "assessors": session["assessors"],
        "totals": {},
        "sessions": sessions,
    }
    outputs: list[Path] = []
    interrupted = False
    try:
        with stop_on_signals():  # Ctrl-C or SIGTERM between two assessors too
            for assessor in args.assessors:
                out_path = args.out_dir / f"{stem}.{tag}.{assessor}.jsonl"
                outputs.append(out_path)
                run_job = AssessorRun(
                    input_file=args.input,
                    output_file=out_path,
                    overwrite=args.overwrite,
                    progress=not args.quiet,
                    records=records,
                    assessor=assessor,
                    pipeline=config,
                    executor=executor,
                    state=state,
                    job=job,
                    row_settings=_settings(assessor, config, nli_name, args.atoms),
                    report=report,
                    report_path=report_path,
                )
                done = run_dataset(run_job)  # other settings in the output: FactReasonerError
                stats = run_job.stats()
                if done.stopped_by is not None:
                    print(f"error: {done.stopped_by}", file=sys.stderr)
                    return 2
                if done.interrupted:
                    interrupted = True
                    break
                stats["approximate_inference_records"] = sum(
                    not (r.get("engine") or {}).get("exact", True) for r in done.rows
                )
                if not args.quiet:
                    print(f"{assessor}: {json.dumps(stats)}", file=sys.stderr)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        executor.close()
    report["interrupted"] = session["interrupted"] = interrupted
    session["finished"] = not interrupted
    _write_run_report(report_path, report)
    if interrupted:
        again = shlex.join([sys.executable, "-m", "experiments.run_biographies", *(args.argv or [])])
        print(f"interrupted: finished records are kept; rerun to resume: {again}", file=sys.stderr)
        return 130
    failed = sum(s["failed"] for s in report["assessors"].values())
    existing = [p for p in outputs if p.exists()]
    from experiments import tables

    markdown = tables.write_tables(existing, args.tables) if args.tables else tables.render(existing)
    if args.report:
        from fact_reasoner.report import build_report

        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(build_report(existing, args.input, f"{stem} · NLI {nli_name}"), encoding="utf-8")
    if not args.quiet:
        print(markdown)
        print(f"run summary: {report_path}", file=sys.stderr)
    if failed:
        print(f"{failed} record(s) failed (see the errors above); rerun to retry them", file=sys.stderr)
        return 1
    return 0


def assessor_name(assessor: str, row: dict[str, Any]) -> str:
    """The assessor's name in the tables: ``FR2``; a pipeline with its judge and, for VeriScore,
    where its claims came from (``VeriScore (llm, given atoms)``)."""
    if assessor not in PIPELINE_ASSESSORS:
        return assessor.upper()
    title = {"factscore-pipeline": "FActScore-pipeline", "veriscore": "VeriScore", "factverify": "FactVerify"}[assessor]
    details = [str(row.get("judge"))]
    if assessor == "veriscore":
        details.append("given atoms" if row.get("claims_source") == "given" else "own claims")
    return f"{title} ({', '.join(details)})"


SUMMED_STATS = (
    "done_now",
    "failed",
    "seconds",
    "nli_pairs_requested",
    "nli_cache_hits",
    "nli_backend_calls",
    "nli_backend_seconds",
    "llm_calls",
    "llm_cache_hits",
)


def _earlier_sessions(path: Path, *, overwrite: bool) -> list[dict[str, Any]]:
    """The sessions recorded in an earlier ``run.json`` of the same outputs (none after ``--overwrite``)."""
    if overwrite or not path.exists():
        return []
    try:
        earlier = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return []
    sessions = earlier.get("sessions")
    if sessions is None and earlier.get("assessors"):  # written before sessions were recorded
        sessions = [
            {
                "finished": not earlier.get("interrupted"),
                "interrupted": bool(earlier.get("interrupted")),
                "assessors": earlier["assessors"],
            }
        ]
    return [s for s in sessions or [] if isinstance(s, dict)]


def run_totals(sessions: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per assessor, each of ``SUMMED_STATS`` summed over every session (a resumed run's whole cost)."""
    totals: dict[str, dict[str, float]] = {}
    for session in sessions:
        for assessor, stats in (session.get("assessors") or {}).items():
            into = totals.setdefault(assessor, dict.fromkeys(SUMMED_STATS, 0))
            for key in SUMMED_STATS:
                into[key] = round(into[key] + (stats.get(key) or 0), 3)
    return totals


def _write_run_report(path: Path, report: dict[str, Any]) -> None:
    report["totals"] = run_totals(report["sessions"])
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(report, indent=1) + "\n")
    partial.replace(path)  # never a half-written summary, even when killed mid-write


def _assess(assessor: str, fr, item: NumberedRecord, nli, median: float | None, precomputed: bool) -> dict[str, Any]:
    record: InputRecord = item.record
    if fr is not None:
        result = fr.assess(record, k="median", dataset_median_atoms=median, record_key=item.key)
        if precomputed:
            nli.requested += result.counters.get("nli_pairs", 0)
        return result.model_dump(mode="json")
    backend: Any = nli
    if precomputed:
        texts = {a.id: a.text for a in record.atoms or []} | {c.id: c.text for c in record.contexts or []}
        backend = PrecomputedNLI(record.relations or [], texts)
    rows = baseline_module.assess_baselines(
        record, backend, [assessor], k="median", dataset_median_atoms=median, record_key=item.key
    )
    if precomputed:
        nli.requested += rows[assessor]["counters"]["nli_pairs"]
    return rows[assessor]


def main(argv: list[str] | None = None) -> int:
    from fact_reasoner.commands import configure_logging

    args, config = parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    configure_logging(quiet=args.quiet)
    try:
        return run(args, config)
    except (FactReasonerError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

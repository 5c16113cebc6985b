"""``fact-reasoner [assess]``: the factuality of a dataset of responses, or of one response."""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path
from typing import Any

from .. import runner
from ..errors import InputError
from ..io import NumberedRecord, dumps_line, read_contexts
from ..report.terminal import SHOW_AT_MOST
from ..runner.jobs import ignored_top_k, k_beyond_atoms, threads_beyond_cores
from ..settings.cli_options import path_argument, positive_int
from .base import Command, CommandParser, figure, finish_run, input_problems, output_problems, results_line

log = logging.getLogger(__name__)

DESCRIPTION = """\
Assess the factuality of long-form responses with FactReasoner's factor graphs: each atom
(claim) of a response gets P(true), and the response its factual precision, R@K and F1@K.

Each input record (JSONL, or IBM's JSON files) has `input` (the question) and `output` (the
response), and optionally `atoms`, `contexts` and precomputed NLI `relations`. Whatever a record
lacks is produced by the pipeline: atomize -> revise -> retrieve -> NLI. The graph is FR1, FR2
or FR3 (--version); the posterior P(atom is true) of each atom gives S (> 0.5) or NS, the
factual precision, R@K, F1@K and entropy, and agreement with gold labels when atoms carry them.
--pipeline factscore|veriscore|factverify runs a baseline instead (FActScore, VeriScore, SAFE)
on the same atoms, retrievers and models, writing the same rows.

Output: one JSON line per record, written as soon as the record is done; rerunning the same
command skips records already written, so an interrupted run resumes where it stopped.
"""

EPILOG = """\
examples:
  fact-reasoner --version 3 --input-file fact_reasoner/examples/bios_with_relations.jsonl --output-dir out
  fact-reasoner --version 2 --input_file data.jsonl --output_dir out --engine pgmpy --paper-tables
  fact-reasoner --input-file data.jsonl --graph paper   # the paper's graph: Table 1, every relation, context prior 0.99
  fact-reasoner --pipeline factscore --pipeline-judge nli --input-file fact_reasoner/examples/bios_with_relations.jsonl
  fact-reasoner --query "Who was Marie Curie?" --response "Marie Curie was a physicist." --contexts ctx.jsonl
  fact-reasoner --input-file data.jsonl --nli cross-encoder --fail-under 0.8   # CI gate: exit 3 below 0.8
  fact-reasoner --input-file data.jsonl --nli cross-encoder --print-config > run.toml; fact-reasoner --config run.toml
exit status: 0 done, 1 a record failed, 2 the run could not be done, 3 the --fail-under gate failed,
  130 interrupted (Ctrl-C: finished records are kept; a second Ctrl-C ends at once)
other commands: fact-reasoner correct --help | ragas --help | index --help | report --help
"""

#: what ``fact-reasoner --fail-under METRIC=X`` can gate on: per-record fields of the output
GATE_METRICS = ("factuality_score", "f1_k", "recall_k")

#: the per-record figures of the summary, in the order printed
SUMMARY_KEYS = (
    "num_records",
    "num_atoms",
    "k",
    "mean_factuality_score",
    "mean_f1_k",
    "mean_gold_factuality_score",
    "mae_factuality_score",
    "atom_accuracy",
    "atom_balanced_accuracy",
    "atom_f1_supported",
    "atom_brier_score",
    "atom_ece",
    "num_abstained",
    "respond_ratio",
    "num_uncheckable_atoms",
    "num_ungrounded_atoms",
    "num_unresolved_atoms",
    "num_fragment_atoms",
    "failed_records",
    "seconds",
)


def add_dataset_arguments(parser: CommandParser, *, verb: str, outputs: str) -> argparse._ArgumentGroup:
    """The input and output flags of a command that goes through a dataset of records."""
    data = parser.add_argument_group("input and output")
    data.add_argument(
        "--input-file", "--input_file", type=path_argument, metavar="FILE", help="JSONL (or JSON) records"
    )
    output_dir = data.add_argument(
        "--output-dir",
        "--output_dir",
        type=path_argument,
        default=runner.DEFAULT_OUTPUT_DIR,
        metavar="DIR",
        help=f"directory for {outputs}, .summary.json and .errors.jsonl (default: %(default)s)",
    )
    output_dir.brief = "where the results go (default: %(default)s)"  # type: ignore[attr-defined]
    data.add_argument(
        "--output-file", "--output_file", type=path_argument, metavar="FILE", help="write results here instead"
    )
    data.add_argument("--dataset-name", "--dataset_name", help="a label stored in the summary")
    data.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    data.add_argument("--limit", type=positive_int, metavar="N", help=f"{verb} at most this many records (≥ 1)")
    data.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    return data


#: the means of the summary, and the count of rows each is over
MEANS = {
    "mean_factuality_score": "num_scored_records",
    "mean_f1_k": "num_scored_records",
    "mean_gold_factuality_score": "num_gold_records",
    "mae_factuality_score": "num_gold_records",
}


def summary_figure(summary: dict[str, Any], key: str) -> str:
    """A figure of the summary as printed: a mean with the number of records it is over, K with
    why (the rows' ``k_reason``), and "—" with the reason where nothing was computed (never
    ``nan``)."""
    value = summary[key]
    if key == "k" and summary.get("k_reasons"):  # why these K (--k median may fall back)
        return f"{figure(value)} ({'; '.join(summary['k_reasons'])})"
    over = MEANS.get(key)
    if isinstance(value, float) and math.isnan(value):
        return "— (no record scored)" if over else "— (not computable here)"
    if over:
        return f"{figure(value)} (over {summary.get(over, 0)} record(s))"
    return figure(value)


def judge_lines(summary: dict[str, Any]) -> list[str]:
    """A panel's judges beside the panel: ``  judge cross-encoder alone    precision 0.7000 · MAE
    0.1200 · balanced accuracy 0.7700`` (the last two with gold labels); none for one judge."""
    lines = []
    for name, figures in (summary.get("by_judge") or {}).items():
        shown = [
            f"{label} {figure(figures[key])}"
            for key, label in (
                ("mean_factuality_score", "precision"),
                ("mae_factuality_score", "MAE"),
                ("atom_balanced_accuracy", "balanced accuracy"),
            )
            if figures.get(key) is not None
        ]
        lines.append(f"  {'judge ' + name + ' alone':28s} " + " · ".join(shown))
    return lines


def summary_lines(report: runner.RunReport, judge: str | None = None) -> list[str]:
    """The assessment summary: the results file, the judge and graph, the claims by verdict, the
    dataset's figures (a mean with the records it is over), the workers (Ray), and where the
    failures are listed."""
    from ..report.terminal import settings_line, verdict_counts_line

    summary = report.summary
    if summary is None:
        return []
    if not report.rows:  # nothing to summarise: no row of figures that were never computed
        failed = [f"  failed: listed above and in {report.errors_file}"] if report.failures else []
        return [results_line(report), *failed]
    lines = [results_line(report)]
    setting = settings_line(report.rows, judge)
    if setting:
        lines.append(f"  {setting}")
    if (summary.get("claims") or {}).get("total"):
        lines.append(f"  {verdict_counts_line(summary['claims'])}")
    filtered = conformal_summary(report.rows)
    if filtered:
        lines.append(f"  {filtered}")
    lines += [f"  {key:28s} {summary_figure(summary, key)}" for key in SUMMARY_KEYS if summary.get(key) is not None]
    lines += judge_lines(summary)
    if summary.get("executor") != "local":
        for name, worker in (summary.get("workers") or {}).items():
            rate = worker.get("records_per_second")
            lines.append(
                f"  worker {name:21s} {worker['records']} record(s), "
                f"{'-' if rate is None else f'{rate:.3g}'} record(s)/s busy (pid {worker.get('pid', '?')} "
                f"on {worker.get('node', '?')})"
            )
    if report.failures:
        lines.append(f"  failed: listed above and in {report.errors_file}")
    return lines


def conformal_summary(rows: Any) -> str | None:
    """``conformal filter (response, alpha 0.1, plain): kept 40 of 300 claims (13.3%) in 9
    records`` for rows made with ``--conformal``; None for others."""
    filtered = [row["conformal"] for row in rows if isinstance(row.get("conformal"), dict)]
    if not filtered:
        return None
    first = filtered[0]
    kept = sum(int(f.get("num_kept") or 0) for f in filtered)
    total = sum(int(f.get("num_claims") or 0) for f in filtered)
    share = f" ({kept / total:.1%})" if total else ""
    return (
        f"conformal filter ({first.get('guarantee')}, alpha {first.get('alpha')}, {first.get('method')}): kept {kept} "
        f"of {total} claims{share} in {len(filtered)} record(s); the guarantee is in each row's conformal.statement"
    )


def gate_scores(rows: Any) -> dict[str, list[tuple[str, Any]]]:
    """Each gated metric's value per record, the record named by line, topic and key."""
    return {metric: [(_row_id(row), row.get(metric)) for row in rows] for metric in GATE_METRICS}


def _row_id(row: dict[str, Any]) -> str:
    """How the gate names a record: its input line, topic (or question) and key."""
    about = row.get("topic") or " ".join(str(row.get("input") or "").split())[:60]
    return f"line {row.get('source_line')}: {about} [{str(row.get('record_key', ''))[:12]}]"


class Assess(Command):
    name = "assess"
    summary = "assess a dataset or one response (the default command)"
    description = DESCRIPTION
    epilog = EPILOG
    usage = (
        "fact-reasoner [assess] --input-file FILE [options]\n"
        "       fact-reasoner [assess] --response TEXT [--query TEXT] [--contexts FILE] [options]"
    )
    basic = (
        "input_file",
        "output_dir",
        "query",
        "response",
        "contexts",
        "version",
        "graph_preset",
        "nli",
        "engine",
        "k",
        "service_type",
        "top_k",
        "backend",
        "model",
        "cache_dir",
        "use_cache",
        "overwrite",
        "quiet",
    )
    settings_groups = ("pipeline", "graph", "scores", "engine", "models", "retrieval", "cache", "execution", "gate")

    @property
    def prog(self) -> str:
        return "fact-reasoner"

    def add_arguments(self, parser: CommandParser) -> None:
        data = add_dataset_arguments(parser, verb="assess", outputs="<input>.fr<version>.jsonl")
        data.add_argument(
            "--show",
            action="store_true",
            help=f"print every record's claims with their verdicts after the run (done anyway for up to "
            f"{SHOW_AT_MOST} records; never with --quiet)",
        )
        data.add_argument(
            "--export-uai",
            type=path_argument,
            metavar="DIR",
            help="write each record's model as .uai (+ evidence, variable map) to DIR and run no inference",
        )
        single = parser.add_argument_group("single response (instead of --input-file)")
        single.add_argument("--query", metavar="TEXT", help="the question / prompt")
        single.add_argument("--response", metavar="TEXT", help="the response to assess")
        single.add_argument("--topic", help="optional subject of the response")
        single.add_argument(
            "--contexts", type=path_argument, metavar="FILE", help="JSONL or JSON list of {id?, title?, text} evidence"
        )

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        if (args.input_file is None) == (args.response is None):
            parser.error("give either --input-file, or --response (with --query) for a single response")
        config = self.settings(args, parser)
        problems = input_problems("--input-file", args.input_file) + output_problems("--output-file", args.output_file)
        if args.output_file is None:
            problems += output_problems("--output-dir", args.output_dir, directory=True)
        if args.contexts is not None and not args.contexts.is_file():
            problems.append(f"argument --contexts: {args.contexts} is not a file")
        for problem in problems:
            parser.error(problem)
        unknown = sorted(set(config.gate.fail_under) - set(GATE_METRICS))
        if unknown:
            parser.error(f"argument --fail-under: {', '.join(unknown)} is not one of {', '.join(GATE_METRICS)}")
        if config.gate.fail_under and args.input_file is None:
            parser.error("argument --fail-under: needs --input-file (a dataset run)")
        if args.export_uai and config.pipeline.name != "factreasoner":
            parser.error(
                f"--export-uai writes FactReasoner's factor graphs; --pipeline {config.pipeline.name} builds none"
            )
        from ..pipelines import make_pipeline

        assessor = make_pipeline(config)
        if args.response is not None:
            return run_single(args, assessor)
        if args.export_uai:
            return export_models(args, assessor)
        job = runner.AssessDataset(
            assessor=assessor,
            input_file=args.input_file,
            output_file=args.output_file
            or runner.default_output_file(args.input_file, args.output_dir, config.graph.version, config.pipeline.name),
            dataset_name=args.dataset_name,
            overwrite=args.overwrite,
            limit=args.limit,
            progress=not args.quiet,
        )
        report = runner.run_dataset(job)
        if not args.quiet and report.rows and (args.show or len(report.rows) <= SHOW_AT_MOST):
            show_claims(report, args.input_file)
        judge = assessor.stages.judge_description() if hasattr(assessor, "stages") else None
        return finish_run(
            report,
            quiet=args.quiet,
            argv=args.argv,
            summary_lines=lambda done: summary_lines(done, judge),
            thresholds=config.gate.fail_under,
            gate_scores=gate_scores,
        )


def show_claims(report: runner.RunReport, input_file: Path) -> None:
    """Each record's claims on stdout: verdict, posterior, the passage that decided it
    (:mod:`fact_reasoner.report.terminal`)."""
    from ..report.page import ContextTexts
    from ..report.terminal import claim_lines

    texts = ContextTexts.from_input(input_file)
    for row in report.rows:
        retrieved = {str(c.get("id")): c.get("text") for c in row.get("contexts") or [] if isinstance(c, dict)}
        key = str(row.get("record_key", ""))

        def text(context_id: str, key: str = key, retrieved: dict = retrieved) -> str | None:
            found = texts.get(key, context_id)
            return found["text"] if found else retrieved.get(context_id)

        for line in claim_lines(row, text):
            print(line)
    sys.stdout.flush()


def export_models(args: argparse.Namespace, assessor: Any) -> int:
    """``--export-uai DIR`` (:func:`fact_reasoner.runner.export_models`): the files written, one
    record per line on stdout; 1 when a record could not be read or built."""
    exported = runner.export_models(assessor, args.input_file, args.export_uai)
    if not args.quiet:
        for written in exported.files:
            print(" ".join(str(p) for p in written))
    return 1 if exported.failures else 0


def run_single(args: argparse.Namespace, assessor: Any) -> int:
    """``--response``: one record assessed by the same service a server uses
    (:class:`~fact_reasoner.runner.RecordService`), its row on stdout (or ``--output-file``)."""
    from pydantic import ValidationError

    from ..io import describe_validation_error
    from ..schema import InputRecord

    contexts = read_contexts(args.contexts) if args.contexts else None
    try:
        record = InputRecord(input=args.query or "", output=args.response, topic=args.topic, contexts=contexts)
    except ValidationError as error:  # an empty --response: nothing to assess
        raise InputError(f"--response: {describe_validation_error(error)}") from None
    assessor.preflight([record])
    for note in (ignored_top_k(assessor.config, [record]), threads_beyond_cores(assessor.config)):
        if note:
            log.warning("warning: %s", note)
    job = SingleResponse(assessor=assessor, input_file=Path("--response"), output_file=Path("-"))
    # no resume key: the row carries the record's own key (InputRecord.record_key)
    item = NumberedRecord("--response", 0, "", record)
    row = runner.RecordService(job).row(item)
    note = k_beyond_atoms(assessor.config.scores.k, [row.get("num_atoms")])
    if note:
        log.warning("warning: %s", note)
    line = dumps_line(row)
    if args.output_file:
        args.output_file.parent.mkdir(parents=True, exist_ok=True)
        args.output_file.write_text(line)
    else:
        sys.stdout.write(line)
    return 0


class SingleResponse(runner.AssessDataset):
    """One response from the command line: K as the settings say (``median`` is the response's
    own number of atoms), the record's own key, no input line."""

    def worker_job(self, items: Any) -> Any:
        return runner.AssessJob(self.config, None, None)

    def row(self, item: Any, value: Any) -> dict[str, Any]:
        return value


__all__ = ["Assess", "GATE_METRICS", "SingleResponse", "add_dataset_arguments", "gate_scores", "summary_lines"]

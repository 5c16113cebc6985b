"""Command line: ``python -m fact_reasoner`` / ``fact-reasoner``.

The default command assesses a dataset (or one response) and writes one JSON line per record.
Other commands (``index``, ``ragas``, ``report``, ``correct``) are contributed by their modules through a
``register(subparsers)`` function, so each lives beside the stage it belongs to.

This module only parses arguments and prints: the dataset run itself is
:func:`fact_reasoner.runner.run_dataset`, whose :class:`~fact_reasoner.runner.RunReport` is
printed here. Any project error (:class:`~fact_reasoner.errors.FactReasonerError`) that ends a
command is caught once, in :func:`main`, and printed as one line ``error: <message>``; the exit
status is the error's ``exit_code``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import runner
from .cli_options import add_config_arguments, config_from_args
from .cli_options import positive_int as _positive_int
from .errors import FactReasonerError, InputError, SetupError
from .gate import GATE_FAILED, evaluate_gate
from .io import RecordError, dumps_line, read_contexts
from .scores import describe_k

#: Sub-commands contributed by other modules: name -> module with ``register(subparsers)``.
PLUGIN_COMMANDS = {
    "index": "fact_reasoner.retrieval.cli",
    "ragas": "fact_reasoner.metrics.cli",
    "report": "fact_reasoner.report",
    "correct": "fact_reasoner.corrector_cli",
}

DESCRIPTION = """\
Assess the factuality of long-form responses with FactReasoner's factor graphs.

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
  fact-reasoner --version 2 --input_file data.jsonl --output_dir out --engine pgmpy --use_priors
  fact-reasoner --pipeline factscore --pipeline-judge nli --input-file fact_reasoner/examples/bios_with_relations.jsonl
  fact-reasoner --query "Who was Marie Curie?" --response "Marie Curie was a physicist." --contexts ctx.jsonl
  fact-reasoner --input-file data.jsonl --nli cross-encoder --fail-under 0.8   # CI gate: exit 3 below 0.8
exit status: 0 done, 1 a record failed, 2 the run could not be done, 3 the --fail-under gate failed,
  130 interrupted
other commands: fact-reasoner index --help | ragas --help | report --help | correct --help
"""


def build_assess_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The assessment command's parser: its own input/output flags, then one flag per setting."""
    p = parser or argparse.ArgumentParser(
        prog="fact-reasoner",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = p.add_argument_group("input and output")
    data.add_argument("--input-file", "--input_file", type=Path, help="JSONL (or JSON) records to assess")
    data.add_argument(
        "--output-dir",
        "--output_dir",
        type=Path,
        default=Path("fact_reasoner_output"),
        help="directory for <input>.fr<version>.jsonl, .summary.json and .errors.jsonl (default: %(default)s)",
    )
    data.add_argument("--output-file", "--output_file", type=Path, help="write results here instead")
    data.add_argument("--dataset-name", "--dataset_name", help="a label stored in the summary")
    data.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    data.add_argument("--limit", type=_positive_int, help="assess at most this many records (≥ 1)")
    data.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    data.add_argument(
        "--export-uai",
        type=Path,
        metavar="DIR",
        help="write each record's model as .uai (+ evidence, variable map) to DIR and run no inference",
    )

    single = p.add_argument_group("single response (instead of --input-file)")
    single.add_argument("--query", help="the question / prompt")
    single.add_argument("--response", help="the response to assess")
    single.add_argument("--topic", help="optional subject of the response")
    single.add_argument("--contexts", type=Path, help="JSONL or JSON list of {id?, title?, text} evidence")

    add_config_arguments(p)
    return p


def run_dataset(args: argparse.Namespace, assessor) -> int:
    """The dataset run (:func:`fact_reasoner.runner.run_dataset`) with the command's options,
    its report printed on stderr. Exit status: 0 every record done, 1 some record failed or
    could not be read, 2 the run stopped (a stage could not be set up, the server was down),
    3 the ``--fail-under`` gate failed (:mod:`fact_reasoner.gate`), 130 interrupted (Ctrl-C,
    SIGTERM)."""
    if args.export_uai:
        return export_models(args, assessor)
    report = runner.run_dataset(
        assessor,
        args.input_file,
        output_dir=args.output_dir,
        output_file=args.output_file,
        dataset_name=args.dataset_name,
        overwrite=args.overwrite,
        limit=args.limit,
        progress=not args.quiet,
    )
    if said_stopped(report):
        return 2
    if not args.quiet and report.summary is not None:
        _print_summary(report.summary, report.failures, report.output_file)
    if said_interrupted(report):
        return 130
    status = 1 if report.failures else 0
    thresholds = assessor.config.gate.fail_under
    if thresholds:
        gate = evaluate_gate(
            thresholds,
            {metric: [(_row_id(row), row.get(metric)) for row in report.rows] for metric in thresholds},
            [str(failure) for failure in report.failures],
        )
        for line in gate.lines:
            print(line, file=sys.stderr)
        if gate.below_threshold:
            return GATE_FAILED
    return status


#: what ``fact-reasoner --fail-under METRIC=X`` can gate on: per-record fields of the output
GATE_METRICS = ("factuality_score", "f1_k", "recall_k")


def _row_id(row: dict[str, Any]) -> str:
    """How the gate names a record: its input line, topic (or question) and key."""
    about = row.get("topic") or " ".join(str(row.get("input") or "").split())[:60]
    return f"line {row.get('source_line')}: {about} [{str(row.get('record_key', ''))[:12]}]"


def _fmt(value: Any) -> str:
    if isinstance(value, list):  # the K values the records were scored with
        return describe_k(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def said_stopped(report: runner.RunReport) -> bool:
    """Print why a dataset run stopped, and what it kept; True when it did stop."""
    if report.stopped_by is None:
        return False
    print(f"error: {report.stopped_by}", file=sys.stderr)
    print(
        f"stopped: {report.kept} record(s) kept in {report.output_file}; fix the cause and rerun to resume",
        file=sys.stderr,
    )
    return True


def said_interrupted(report: runner.RunReport) -> bool:
    """Print what an interrupted dataset run kept; True when it was interrupted."""
    if not report.interrupted:
        return False
    print(f"interrupted: {report.kept} record(s) kept in {report.output_file}; rerun to resume", file=sys.stderr)
    return True


def _print_summary(summary: dict[str, Any], failures: Sequence[RecordError], out_path: Path) -> None:
    keys = [
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
        "records_without_contexts",
        "num_abstained",
        "respond_ratio",
        "num_uncheckable_atoms",
        "num_ungrounded_atoms",
        "num_unresolved_atoms",
        "failed_records",
        "seconds",
    ]
    print(f"results: {out_path}", file=sys.stderr)
    for key in keys:
        if summary.get(key) is not None:
            print(f"  {key:28s} {_fmt(summary[key])}", file=sys.stderr)
    if summary.get("executor") != "local":
        for name, worker in (summary.get("workers") or {}).items():
            rate = worker.get("records_per_second")
            print(
                f"  worker {name:21s} {worker['records']} record(s), "
                f"{'-' if rate is None else f'{rate:.3g}'} record(s)/s busy (pid {worker.get('pid', '?')} "
                f"on {worker.get('node', '?')})",
                file=sys.stderr,
            )
    for failure in failures[:10]:
        print(f"  failed: {failure}", file=sys.stderr)


def export_models(args: argparse.Namespace, assessor) -> int:
    """``--export-uai DIR`` (:func:`fact_reasoner.runner.export_models`): the files written, one
    record per line on stdout; 1 when a record could not be read or built."""
    exported = runner.export_models(assessor, args.input_file, args.export_uai)
    if not args.quiet:
        for written in exported.files:
            print(" ".join(str(p) for p in written))
    return 1 if exported.failures else 0


def run_single(args: argparse.Namespace, assessor) -> int:
    from pydantic import ValidationError

    from .io import describe_validation_error
    from .schema import InputRecord

    contexts = read_contexts(args.contexts) if args.contexts else None
    try:
        record = InputRecord(input=args.query or "", output=args.response, topic=args.topic, contexts=contexts)
    except ValidationError as error:  # an empty --response: nothing to assess
        raise InputError(
            f"--response: {describe_validation_error(error).replace('record: Value error, ', '')}"
        ) from None
    assessor.preflight([record])
    result = assessor.assess(record)
    line = dumps_line(result.model_dump(mode="json"))
    if args.output_file:
        args.output_file.parent.mkdir(parents=True, exist_ok=True)
        args.output_file.write_text(line)
    else:
        sys.stdout.write(line)
    return 0


def assess_main(argv: list[str]) -> int:
    parser = build_assess_parser()
    args = parser.parse_args(argv)
    if (args.input_file is None) == (args.response is None):
        parser.error("give either --input-file, or --response (with --query) for a single response")
    config = config_from_args(args, parser)
    for problem in _path_problems(args):
        parser.error(problem)
    unknown = sorted(set(config.gate.fail_under) - set(GATE_METRICS))
    if unknown:
        parser.error(f"argument --fail-under: {', '.join(unknown)} is not one of {', '.join(GATE_METRICS)}")
    if config.gate.fail_under and args.input_file is None:
        parser.error("argument --fail-under: needs --input-file (a dataset run)")
    if args.export_uai and config.pipeline.name != "factreasoner":
        parser.error(f"--export-uai writes FactReasoner's factor graphs; --pipeline {config.pipeline.name} builds none")
    from .pipelines import make_pipeline

    assessor = make_pipeline(config)
    if args.response is not None:
        return run_single(args, assessor)
    return run_dataset(args, assessor)


def _path_problems(args: argparse.Namespace) -> list[str]:
    """Paths that cannot work, found before anything runs (one line each, argparse style)."""
    problems = []
    if args.input_file is not None and args.input_file.is_dir():
        problems.append(f"argument --input-file: {args.input_file} is a directory, not a file")
    if args.output_file is not None and args.output_file.is_dir():
        problems.append(f"argument --output-file: {args.output_file} is a directory, not a file")
    output = args.output_file if args.output_file is not None else args.output_dir / "x"
    parent = next((p for p in output.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        flag = "--output-file" if args.output_file is not None else "--output-dir"
        problems.append(f"argument {flag}: {parent} is a file, not a directory")
    if args.contexts is not None and not args.contexts.is_file():
        problems.append(f"argument --contexts: {args.contexts} is not a file")
    return problems


def configure_logging(quiet: bool) -> None:
    """Library messages (model installation, loading) go to stderr, one line each; stdout stays
    for results (a single-response run prints its JSON there).

    The dataset run's own messages (``fact_reasoner.runner``: ``error: file:line: …``,
    ``resuming: …``) are the command's output lines: they keep their own prefix and are written
    above the progress bar instead of through it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[fact_reasoner] %(message)s"))
    handler.addFilter(lambda record: not record.name.startswith(runner.__name__))
    run_handler = _AboveProgressBar()
    run_handler.addFilter(lambda record: record.name.startswith(runner.__name__))
    root = logging.getLogger("fact_reasoner")
    root.handlers[:] = [handler, run_handler]
    root.setLevel(logging.WARNING if quiet else logging.INFO)


class _AboveProgressBar(logging.Handler):
    """Writes each message as its own line on the current stderr, above a progress bar if one
    is shown (``tqdm.write``)."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm import tqdm

        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # a logging handler must never raise into the run
            self.handleError(record)


def main(argv: list[str] | None = None) -> int:
    """``fact-reasoner [command] …``: the exit status. A project error
    (:class:`~fact_reasoner.errors.FactReasonerError`) ends the command with one line,
    ``error: <message>``, and the error's ``exit_code`` (2, or 1 for a failed record)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    configure_logging(quiet="--quiet" in argv)
    try:
        if argv and argv[0] in PLUGIN_COMMANDS:
            try:
                module = importlib.import_module(PLUGIN_COMMANDS[argv[0]])
            except ImportError as error:
                raise SetupError(f"`{argv[0]}` needs optional parts that are not installed: {error}") from error
            parser = argparse.ArgumentParser(prog="fact-reasoner")
            module.register(parser.add_subparsers(dest="command", required=True))
            args = parser.parse_args(argv)
            return int(args.func(args) or 0)
        if argv and argv[0] == "assess":
            argv = argv[1:]
        return assess_main(argv)
    except FactReasonerError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Command line: ``python -m fact_reasoner`` / ``fact-reasoner``.

The default command assesses a dataset (or one response) and writes one JSON line per record.
Other commands (``index``, ``ragas``, ``report``) are contributed by their modules through a
``register(subparsers)`` function, so each lives beside the stage it belongs to.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cli_options import add_config_arguments, config_from_args
from .cli_options import positive_int as _positive_int
from .config import PipelineConfig
from .errors import OutputLocked, RecordFailed, SetupError
from .executors import Job, describe_error, make_executor
from .inference import InferenceError
from .io import NumberedRecord, OutputError, RecordError, ResultWriter, dumps_line, read_records
from .io import write_errors as _write_errors
from .scores import describe_k, median_num_atoms, summarize_rows

#: Sub-commands contributed by other modules: name -> module with ``register(subparsers)``.
PLUGIN_COMMANDS = {
    "index": "fact_reasoner.retrieval.cli",
    "ragas": "fact_reasoner.metrics.cli",
    "report": "fact_reasoner.report",
}

DESCRIPTION = """\
Assess the factuality of long-form responses with FactReasoner's factor graphs.

Each input record (JSONL, or IBM's JSON files) has `input` (the question) and `output` (the
response), and optionally `atoms`, `contexts` and precomputed NLI `relations`. Whatever a record
lacks is produced by the pipeline: atomize -> revise -> retrieve -> NLI. The graph is FR1, FR2
or FR3 (--version); the posterior P(atom is true) of each atom gives S (> 0.5) or NS, the
factual precision, R@K, F1@K and entropy, and agreement with gold labels when atoms carry them.

Output: one JSON line per record, written as soon as the record is done; rerunning the same
command skips records already written, so an interrupted run resumes where it stopped.
"""

EPILOG = """\
examples:
  fact-reasoner --version 3 --input-file fact_reasoner/examples/bios_with_relations.jsonl --output-dir out
  fact-reasoner --version 2 --input_file data.jsonl --output_dir out --engine pgmpy --use_priors
  fact-reasoner --query "Who was Marie Curie?" --response "Marie Curie was a physicist." --contexts ctx.jsonl
other commands: fact-reasoner index --help | ragas --help | report --help
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


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop after the current write, keep everything written."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def output_path(args: argparse.Namespace, version: int) -> Path:
    if args.output_file:
        return args.output_file
    stem = args.input_file.name
    for suffix in (".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return args.output_dir / f"{stem}.fr{version}.jsonl"


def run_dataset(args: argparse.Namespace, assessor) -> int:
    from tqdm import tqdm

    from .progress import progress_bar

    out_path = output_path(args, assessor.config.graph.version)
    errors_path = out_path.with_suffix(".errors.jsonl")
    summary_path = out_path.with_suffix(".summary.json")
    if args.export_uai:
        return export_models(args, assessor)

    records = list(read_records(args.input_file))
    input_keys = {r.key for r in records if isinstance(r, NumberedRecord)}
    if args.limit is not None:
        records = records[: args.limit]
    valid = [r for r in records if isinstance(r, NumberedRecord)]
    bad = [r for r in records if isinstance(r, RecordError)]
    atom_counts = [len(r.record.atoms) for r in valid if r.record.atoms is not None]
    median = median_num_atoms(atom_counts)
    settings = assessor.settings()
    # Everything the records will need is checked now, once: a missing package, a bad engine
    # option or a missing merlin binary stops the run before any record.
    try:
        assessor.stages.preflight(
            atomize=any(r.record.atoms is None for r in valid),
            retrieve=any(r.record.contexts is None for r in valid),
            judge=any(_needs_model_nli(assessor.config, r.record) for r in valid),
        )
        executor = make_executor(assessor.config.execution)
    except (SetupError, InferenceError, ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    try:
        writer = ResultWriter(out_path, overwrite=args.overwrite)
    except (OutputLocked, OutputError) as error:
        executor.close()
        print(f"error: {error}", file=sys.stderr)
        return 2
    previous = {json.dumps(row.get("settings"), sort_keys=True) for row in writer.done.values()}
    if previous and previous != {json.dumps(settings, sort_keys=True)}:
        writer.close()
        executor.close()
        other = json.loads(sorted(previous)[0])
        print(
            f"error: {out_path} holds results made with other settings "
            f"({settings_difference(other, settings)}); use --overwrite, or another --output-dir / --output-file",
            file=sys.stderr,
        )
        return 2
    if writer.repaired and not args.quiet:
        print(f"note: removed a torn last line from {out_path} (an interrupted write)", file=sys.stderr)

    failures: list[RecordError] = list(bad)
    for unreadable in bad:
        print(f"error: {unreadable}", file=sys.stderr)
    todo = [r for r in valid if r.key not in writer]
    skipped = len(valid) - len(todo)
    if skipped and not args.quiet:
        print(f"resuming: {skipped} record(s) already in {out_path}", file=sys.stderr)

    k_rule = assessor.config.scores.k
    if k_rule == "median" and median is None:
        k_rule = "half"  # atoms are produced per record: no dataset median is known in advance
    job = AssessJob(assessor.config, k_rule, median)
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    stop_error: Exception | None = None
    succeeded = 0
    start = time.perf_counter()
    try:
        with progress_bar(len(todo), unit="record", quiet=args.quiet) as bar:
            # results come back as they complete (in input order with the local executor)
            for outcome in executor.map(job, todo, local_state=assessor):
                item = todo[outcome.index]
                problem = outcome.error
                if problem is None:
                    row: dict[str, Any] = outcome.value  # type: ignore[assignment]
                    row["source_line"] = item.line
                    writer.write(row)
                    succeeded += 1
                elif isinstance(problem, SetupError):
                    stop_error = problem
                    break
                elif isinstance(problem, RecordFailed):
                    failures.append(RecordError(item.path, item.line, str(problem)))
                    tqdm.write(f"error: {failures[-1]}", file=sys.stderr)
                    if problem.unreachable and succeeded == 0:
                        # a server down from the start: every record would wait through the
                        # same retries; stop now with one message
                        stop_error = problem
                        break
                else:  # one bad record must not stop the dataset
                    failure = RecordError(item.path, item.line, describe_error(problem))
                    failures.append(failure)
                    tqdm.write(f"error: {failure}", file=sys.stderr)
                bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:  # the executor itself could not run (no Ray worker started)
        stop_error = error
    finally:
        writer.close()
        executor.close()
        signal.signal(signal.SIGTERM, previous_handler)

    _write_errors(errors_path, failures)
    if stop_error is not None:
        print(f"error: {stop_error}", file=sys.stderr)
        print(
            f"stopped: {len(writer.done)} record(s) kept in {out_path}; fix the cause and rerun to resume",
            file=sys.stderr,
        )
        return 2
    # the records of this input only: a record edited since an earlier run has a new key, and
    # its old result (still in the file) no longer describes it
    current = [writer.done[r.key] for r in valid if r.key in writer.done]
    stale = len(set(writer.done) - input_keys)
    if stale and not args.quiet:
        print(
            f"note: {stale} result(s) in {out_path} belong to records no longer in the input (left out of the summary)",
            file=sys.stderr,
        )
    summary = _dataset_summary(current)
    summary.update(
        input_file=str(args.input_file),
        output_file=str(out_path),
        dataset_name=args.dataset_name,
        settings=settings,
        failed_records=len(failures),
        interrupted=interrupted,
        seconds=time.perf_counter() - start,
        executor=executor.name,
        workers=executor.worker_summary(),
    )
    summary_path.write_text(dumps_line(summary))
    if not args.quiet:
        _print_summary(summary, failures, out_path)
    if interrupted:
        print(f"interrupted: {len(writer.done)} record(s) kept in {out_path}; rerun to resume", file=sys.stderr)
        return 130
    return 1 if failures else 0


def settings_difference(before: Any, now: Any, limit: int = 6) -> str:
    """The settings that differ, as ``group.field: <before> in the file, <now> now`` (at most
    ``limit`` of them, then how many more)."""

    def flat(value: Any, prefix: str = "") -> dict[str, Any]:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                out |= flat(item, f"{prefix}{key}.")
            return out
        return {prefix.rstrip("."): value}

    old, new = flat(before), flat(now)
    changes = [
        f"{key}: {json.dumps(old.get(key))} in the file, {json.dumps(new.get(key))} now"
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    ]
    more = f"; {len(changes) - limit} more" if len(changes) > limit else ""
    return "; ".join(changes[:limit]) + more


def _needs_model_nli(config: Any, record: Any) -> bool:
    """Whether a record will ask the NLI model (not only its own relations)."""
    if config.models.nli == "precomputed":
        return False
    return not (config.models.nli == "auto" and record.relations is not None)


@dataclass(frozen=True)
class AssessJob(Job[NumberedRecord, dict[str, Any]]):
    """The assessment of one record, as any worker does it: the output row of
    :meth:`FactReasoner.assess <fact_reasoner.pipeline.FactReasoner.assess>` with the run's K rule
    and dataset median. Picklable: a Ray actor builds its own ``FactReasoner`` from ``config``."""

    config: PipelineConfig
    k: int | str
    median: float | None

    def setup(self, config: PipelineConfig) -> Any:
        from .pipeline import FactReasoner

        return FactReasoner(config)

    def run(self, state: Any, item: NumberedRecord) -> dict[str, Any]:
        result = state.assess(item.record, k=self.k, dataset_median_atoms=self.median, record_key=item.key)
        return result.model_dump(mode="json")


def _dataset_summary(rows) -> dict[str, Any]:
    """The one dataset summary (:func:`~fact_reasoner.scores.summarize_rows`) of the written rows."""
    rows = list(rows)
    out = summarize_rows(rows).as_dict()
    out["engines"] = sorted({row["engine"]["algorithm"] for row in rows})
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, list):  # the K values the records were scored with
        return describe_k(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def _print_summary(summary: dict[str, Any], failures: list[RecordError], out_path: Path) -> None:
    keys = [
        "num_records",
        "num_atoms",
        "k",
        "mean_factuality_score",
        "mean_f1_k",
        "mean_gold_factuality_score",
        "mae_factuality_score",
        "atom_accuracy",
        "atom_f1_supported",
        "atom_brier_score",
        "atom_ece",
        "records_without_contexts",
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
    """``--export-uai DIR``: write every record's model as UAI files, run no inference."""
    from merlin_bridge.uai import export_graph

    args.export_uai.mkdir(parents=True, exist_ok=True)
    status = 0
    for item in read_records(args.input_file):
        if isinstance(item, RecordError):
            print(f"error: {item}", file=sys.stderr)
            status = 1
            continue
        try:
            built, _, _ = assessor.build(item.record)
        except Exception as error:
            print(f"error: {item.path}:{item.line}: {type(error).__name__}: {error}", file=sys.stderr)
            status = 1
            continue
        stem = args.export_uai / f"line{item.line:05d}.fr{assessor.config.graph.version}"
        written = export_graph(built.graph, stem)
        if not args.quiet:
            print(" ".join(str(p) for p in written))
    return status


def _read_contexts(path: Path) -> list[Any]:
    """``--contexts``: a JSON list or JSONL of ``{id?, title?, text}``; errors name file:line."""
    from pydantic import ValidationError

    from .io import describe_validation_error
    from .schema import Context

    text = path.read_text(encoding="utf-8-sig")
    if path.suffix == ".json":
        try:
            numbered = list(enumerate(json.loads(text), start=1))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{error.lineno}: invalid JSON: {error.msg}") from None
    else:
        numbered = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    numbered.append((number, json.loads(line)))
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: invalid JSON at column {error.colno}: {error.msg}") from None
    contexts = []
    for i, (number, row) in enumerate(numbered):
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object with a `text`")
        try:
            contexts.append(Context.model_validate({"id": row.get("id", f"c{i}"), **row}))
        except ValidationError as error:
            raise ValueError(f"{path}:{number}: {describe_validation_error(error)}") from None
    return contexts


def run_single(args: argparse.Namespace, assessor) -> int:
    from pydantic import ValidationError

    from .io import describe_validation_error
    from .schema import InputRecord

    contexts = None
    if args.contexts:
        try:
            contexts = _read_contexts(args.contexts)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        record = InputRecord(input=args.query or "", output=args.response, topic=args.topic, contexts=contexts)
    except ValidationError as error:  # an empty --response: nothing to assess
        print(
            f"error: --response: {describe_validation_error(error).replace('record: Value error, ', '')}",
            file=sys.stderr,
        )
        return 2
    assessor.stages.preflight(atomize=True, retrieve=contexts is None, judge=True)
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
    from .pipeline import FactReasoner

    assessor = FactReasoner(config)
    if args.response is not None:
        try:
            return run_single(args, assessor)
        except (SetupError, InferenceError, OutputError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except RecordFailed as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    try:
        return run_dataset(args, assessor)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


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
    for results (a single-response run prints its JSON there)."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[fact_reasoner] %(message)s"))
    root = logging.getLogger("fact_reasoner")
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING if quiet else logging.INFO)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    configure_logging(quiet="--quiet" in argv)
    if argv and argv[0] in PLUGIN_COMMANDS:
        try:
            module = importlib.import_module(PLUGIN_COMMANDS[argv[0]])
        except ImportError as error:
            print(f"error: `{argv[0]}` needs optional parts that are not installed: {error}", file=sys.stderr)
            return 2
        parser = argparse.ArgumentParser(prog="fact-reasoner")
        module.register(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    if argv and argv[0] == "assess":
        argv = argv[1:]
    return assess_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

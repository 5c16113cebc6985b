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
from pathlib import Path
from typing import Any

from .cli_options import add_config_arguments, config_from_args
from .errors import SetupError
from .io import NumberedRecord, RecordError, ResultWriter, dumps_line, read_records
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
        "--output-dir", "--output_dir", type=Path, default=Path("fact_reasoner_output"),
        help="directory for <input>.fr<version>.jsonl, .summary.json and .errors.jsonl "
        "(default: %(default)s)",
    )
    data.add_argument("--output-file", "--output_file", type=Path, help="write results here instead")
    data.add_argument("--dataset-name", "--dataset_name", help="a label stored in the summary")
    data.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    data.add_argument("--limit", type=int, help="assess at most this many records")
    data.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    data.add_argument("--export-uai", type=Path, metavar="DIR",
                      help="write each record's model as .uai (+ evidence, variable map) to DIR and run no inference")

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
    if args.limit is not None:
        records = records[: args.limit]
    valid = [r for r in records if isinstance(r, NumberedRecord)]
    bad = [r for r in records if isinstance(r, RecordError)]
    atom_counts = [len(r.record.atoms) for r in valid if r.record.atoms is not None]
    median = median_num_atoms(atom_counts)
    settings = assessor.settings()

    writer = ResultWriter(out_path, overwrite=args.overwrite)
    previous = {json.dumps(row.get("settings"), sort_keys=True) for row in writer.done.values()}
    if previous and previous != {json.dumps(settings, sort_keys=True)}:
        writer.close()
        print(
            f"error: {out_path} holds results made with other settings ({sorted(previous)[0]}); "
            "use --overwrite, or another --output-dir / --output-file",
            file=sys.stderr,
        )
        return 2
    if writer.repaired and not args.quiet:
        print(f"note: removed a torn last line from {out_path} (an interrupted write)", file=sys.stderr)

    failures: list[RecordError] = list(bad)
    for error in bad:
        print(f"error: {error}", file=sys.stderr)
    todo = [r for r in valid if r.key not in writer]
    skipped = len(valid) - len(todo)
    if skipped and not args.quiet:
        print(f"resuming: {skipped} record(s) already in {out_path}", file=sys.stderr)

    k_rule = assessor.config.scores.k
    if k_rule == "median" and median is None:
        k_rule = "half"  # atoms are produced per record: no dataset median is known in advance
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    setup_error: SetupError | None = None
    start = time.perf_counter()
    try:
        with progress_bar(len(todo), unit="record", quiet=args.quiet) as bar:
            for item in todo:
                try:
                    result = _assess_one(assessor, item, k_rule, median)
                except (KeyboardInterrupt, SetupError):
                    raise
                except Exception as error:  # one bad record must not stop the dataset
                    failure = RecordError(item.path, item.line, f"{type(error).__name__}: {error}")
                    failures.append(failure)
                    tqdm.write(f"error: {failure}", file=sys.stderr)
                else:
                    row = result.model_dump(mode="json")
                    row["source_line"] = item.line
                    writer.write(row)
                bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:
        setup_error = error
    finally:
        writer.close()
        signal.signal(signal.SIGTERM, previous_handler)

    if setup_error is not None:
        print(f"error: {setup_error}", file=sys.stderr)
        print(f"stopped: {len(writer.done)} record(s) kept in {out_path}", file=sys.stderr)
        return 2
    if failures:
        with open(errors_path, "w", encoding="utf-8") as handle:
            for failure in failures:
                handle.write(dumps_line({"path": failure.path, "line": failure.line, "message": failure.message}))
    summary = _dataset_summary(writer.done.values())
    summary.update(
        input_file=str(args.input_file),
        output_file=str(out_path),
        dataset_name=args.dataset_name,
        settings=settings,
        failed_records=len(failures),
        interrupted=interrupted,
        seconds=time.perf_counter() - start,
    )
    summary_path.write_text(dumps_line(summary))
    if not args.quiet:
        _print_summary(summary, failures, out_path)
    if interrupted:
        print(f"interrupted: {len(writer.done)} record(s) kept in {out_path}; rerun to resume", file=sys.stderr)
        return 130
    return 1 if failures else 0


def _assess_one(assessor, item: NumberedRecord, k_rule, median):
    return assessor.assess(item.record, k=k_rule, dataset_median_atoms=median, record_key=item.key)


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
        "num_records", "num_atoms", "k", "mean_factuality_score", "mean_f1_k",
        "mean_gold_factuality_score", "mae_factuality_score", "atom_accuracy",
        "atom_f1_supported", "atom_brier_score", "atom_ece", "failed_records", "seconds",
    ]
    print(f"results: {out_path}", file=sys.stderr)
    for key in keys:
        if summary.get(key) is not None:
            print(f"  {key:28s} {_fmt(summary[key])}", file=sys.stderr)
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


def run_single(args: argparse.Namespace, assessor) -> int:
    from .schema import Context, InputRecord

    contexts = None
    if args.contexts:
        rows = json.loads(args.contexts.read_text()) if args.contexts.suffix == ".json" else [
            json.loads(line) for line in args.contexts.read_text().splitlines() if line.strip()
        ]
        contexts = [
            Context.model_validate({"id": row.get("id", f"c{i}"), **row}) for i, row in enumerate(rows)
        ]
    record = InputRecord(input=args.query or "", output=args.response, topic=args.topic, contexts=contexts)
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
    from .pipeline import FactReasoner

    assessor = FactReasoner(config)
    if args.response is not None:
        try:
            return run_single(args, assessor)
        except SetupError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    try:
        return run_dataset(args, assessor)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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

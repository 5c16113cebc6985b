"""``fact-reasoner ragas``: RAGAS-style metrics over a JSONL / JSON / CSV file of samples."""

from __future__ import annotations

import argparse
import math
import signal
import sys
from pathlib import Path
from typing import Any

from ..cli_options import positive_int
from .evaluation import available_metrics, column_names, make_metric

DEFAULT_METRICS = "faithfulness,factual_correctness,context_precision,context_recall,answer_relevance,ragas_score"

DESCRIPTION = """\
Compute RAG metrics on FactReasoner's atoms, NLI relations and FR2 factor graphs.

Each sample (a JSONL line, an element of a JSON list, or a CSV row) has a question
(question/query/user_input), a response (response/actual_output/answer), optionally a
reference (reference/expected_output/ground_truth) and retrieved contexts
(retrieved_contexts/retrieved_content/contexts/retrieval_context: strings or {text} objects,
or a JSON list in a CSV cell; CSV cells NaN/nan/None/null are missing values).

Every sample is checked first: a bad one (no response, none of the known fields, invalid
JSON, not UTF-8) is reported as file:line and skipped, the others are computed, and the exit
status is 1. --fail-under METRIC=X (repeatable) makes it a CI gate: exit 3 when a metric's mean
is below X (the lowest samples are listed); failed samples fail the gate too. Results are written and fsynced sample by sample; rerunning the same command
resumes (Ctrl-C keeps what was written). A sample whose metric could not be computed (a
model call failed) is reported and retried by the next run, never written with a score.
"""


def register(subparsers) -> None:
    """Add the ``ragas`` sub-command to ``fact-reasoner``."""
    from ..cli_options import add_config_arguments

    p = subparsers.add_parser(
        "ragas",
        help="RAG metrics (faithfulness, factual correctness, …) on the same atoms and graphs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--input-file", "--input_file", type=Path, required=True, help=".jsonl, .json or .csv samples")
    p.add_argument(
        "--metrics",
        default=DEFAULT_METRICS,
        help="comma-separated: faithfulness, factual_correctness, context_precision, context_recall, "
        "answer_relevance, ragas_score, factual_accuracy, semantic_similarity, bert_score, "
        "answer_classification (default: %(default)s)",
    )
    p.add_argument(
        "--output",
        "--output-file",
        type=Path,
        help="JSONL results, resumed on rerun (default: <input>.ragas.jsonl); failures: <output>.errors.jsonl",
    )
    p.add_argument("--csv", type=Path, help="also write the per-sample score table as CSV")
    p.add_argument("--limit", type=positive_int, help="evaluate at most this many samples (≥ 1)")
    p.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
    p.add_argument(
        "--atomizer",
        default="auto",
        choices=("auto", "llm", "sentence"),
        help="claims from the LLM atomizer, or one per sentence (default: auto = llm if available)",
    )
    p.add_argument("--strict", action="store_true", help="faithfulness: NO_EVIDENCE scores -1 instead of 0")
    p.add_argument("--binary", action="store_true", help="faithfulness: supported/total instead of verdict weights")
    p.add_argument(
        "--no-claims-score",
        type=float,
        default=float("nan"),
        help="faithfulness of a response without claims (default NaN; axion uses 1.0)",
    )
    p.add_argument("--fc-mode", default="F1", choices=("F1", "PRECISION", "RECALL"), help="factual correctness mode")
    p.add_argument("--beta", type=float, default=1.0, help="factual correctness F-beta (default 1)")
    p.add_argument("--context-precision-mode", default="average_precision", choices=("average_precision", "mean"))
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    # The pipeline's own settings, minus the FR version: the metrics always build FR2 graphs.
    add_config_arguments(p, groups=("graph", "engine", "models", "cache", "execution", "gate"), exclude=("version",))
    p.set_defaults(func=run, parser=p)


def build_metrics(args: argparse.Namespace) -> list:
    params: dict[str, dict[str, Any]] = {
        "faithfulness": {
            "strict_mode": args.strict,
            "weighted": not args.binary,
            "no_claims_score": args.no_claims_score,
        },
        "factual_correctness": {"mode": args.fc_mode, "beta": args.beta},
        "context_precision": {"mode": args.context_precision_mode},
    }
    metrics = []
    for name in (n.strip() for n in args.metrics.split(",") if n.strip()):
        metric = make_metric(name)
        metrics.append(make_metric(name, **params.get(metric.name, {})))
    return metrics


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: stop after the current sample, keep everything written."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise _Terminated()


def output_path(args: argparse.Namespace) -> Path:
    """``--output``, or ``<input stem>.ragas.jsonl`` beside the input."""
    return args.output or args.input_file.with_name(args.input_file.stem + ".ragas.jsonl")


def argument_problems(args: argparse.Namespace) -> list[str]:
    """What cannot work, found before anything runs (one line each, argparse style)."""
    problems = []
    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    if not names:
        problems.append(f"argument --metrics: no metric named; choose from {', '.join(available_metrics())}")
    for name in names:
        try:
            make_metric(name)
        except ValueError as error:
            problems.append(f"argument --metrics: {error}")
    gated = sorted(set(getattr(args, "fail_under", None) or {}))
    if gated and not problems:
        columns = column_names([make_metric(name) for name in names])
        unknown = [name for name in gated if name not in columns]
        if unknown:
            problems.append(
                f"argument --fail-under: {', '.join(unknown)} is not a metric of this run; give METRIC=X "
                f"with METRIC one of {', '.join(columns)}"
            )
    if args.input_file.is_dir():
        problems.append(f"argument --input-file: {args.input_file} is a directory, not a file")
    for flag, path in (("--output", output_path(args)), ("--csv", args.csv)):
        if path is None:
            continue
        if path.is_dir():
            problems.append(f"argument {flag}: {path} is a directory, not a file")
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            problems.append(f"argument {flag}: {parent} is a file, not a directory")
    return problems


def run(args: argparse.Namespace) -> int:
    """Run ``fact-reasoner ragas``: check the arguments and every sample, compute the metrics
    sample by sample into the output (resuming it), report bad samples as ``file:line``.

    What prevents the run (an input that cannot be read, a missing extra, an output that cannot
    be used or holds other settings) raises a :class:`~fact_reasoner.errors.FactReasonerError`
    before any sample is computed; ``fact-reasoner``'s ``main`` prints it as one line."""
    from tqdm import tqdm

    from ..cli_options import config_from_args
    from ..errors import SetupError
    from ..executors import make_executor
    from ..io import InOrderWriter, RecordError, write_errors
    from ..progress import progress_bar
    from ..runner import open_results
    from .context import MetricContext
    from .evaluation import iter_evaluations
    from .sample import NumberedSample, read_samples

    for problem in argument_problems(args):
        args.parser.error(problem)
    metrics = build_metrics(args)
    config = config_from_args(args, args.parser, version=2)
    out_path = output_path(args)
    context = MetricContext(config, atomizer=args.atomizer)
    context.preflight(metrics)  # the extras each metric needs, before any sample
    rows = list(read_samples(args.input_file, needs_response=any(m.needs_response for m in metrics)))
    executor = make_executor(config.execution)  # --executor ray without ray: say what to install
    if args.limit is not None:
        rows = rows[: args.limit]
    valid = [r for r in rows if isinstance(r, NumberedSample)]
    failures: list[RecordError] = [r for r in rows if isinstance(r, RecordError)]
    settings = {
        "pipeline": config.settings(),
        "atomizer": args.atomizer,
        "metrics": {name: m.key for name, m in zip(column_names(metrics), metrics)},
    }
    writer = open_results(
        out_path,
        settings,
        overwrite=args.overwrite,
        executor=executor,
        elsewhere="--output",
        key_field="sample_key",
        normalise=_with_default_pipeline,
    )
    if writer.repaired and not args.quiet:
        print(f"note: removed a torn last line from {out_path} (an interrupted write)", file=sys.stderr)
    for failure in failures:
        print(f"error: {failure}", file=sys.stderr)
    todo = [r for r in valid if r.key not in writer]
    if len(todo) < len(valid) and not args.quiet:
        print(f"resuming: {len(valid) - len(todo)} sample(s) already in {out_path}", file=sys.stderr)

    names = column_names(metrics)
    items = [(position, item.sample) for position, item in enumerate(todo)]
    previous_handler = signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    stop_error: Exception | None = None
    notes: list[str] = []
    in_order = InOrderWriter(writer)  # Ray workers finish out of order; the file keeps the input's
    try:
        with progress_bar(len(todo), desc="ragas", unit="sample", quiet=args.quiet or not todo) as bar:
            for position, evaluation, worker_notes in iter_evaluations(items, metrics, context, executor):
                item = todo[position]
                notes += [note for note in worker_notes if note not in notes]
                if evaluation.errors:  # not written: reported, and tried again by the next run
                    reasons = "; ".join(f"{name}: {error}" for name, error in evaluation.errors.items())
                    failures.append(RecordError(item.path, item.line, f"not computed: {reasons}"))
                    tqdm.write(f"error: {failures[-1]}", file=sys.stderr)
                    in_order.put(position, None)
                else:
                    row = evaluation.row()
                    row.pop("index")
                    in_order.put(
                        position, {"sample_key": item.key, "source_line": item.line, **row, "settings": settings}
                    )
                bar.update(1)
    except KeyboardInterrupt:
        interrupted = True
    except SetupError as error:  # a stage that cannot be set up, or no Ray worker started
        stop_error = error
    finally:
        in_order.flush()
        writer.close()
        executor.close()
        signal.signal(signal.SIGTERM, previous_handler)
    write_errors(out_path.with_suffix(".errors.jsonl"), failures)
    current = [writer.done[r.key] for r in valid if r.key in writer.done]
    if args.csv:
        rows_table(current, names).to_csv(args.csv, index=False)
    if stop_error is not None:
        print(f"error: {stop_error}", file=sys.stderr)
        print(
            f"stopped: {len(current)} sample(s) kept in {out_path}; fix the cause and rerun to resume", file=sys.stderr
        )
        return 2
    if not args.quiet:
        _print_summary(current, names, failures, notes, out_path)
    if interrupted:
        print(f"interrupted: {len(current)} sample(s) kept in {out_path}; rerun to resume", file=sys.stderr)
        return 130
    status = 1 if failures else 0
    thresholds = config.gate.fail_under
    if thresholds:
        from ..gate import GATE_FAILED, evaluate_gate

        gate = evaluate_gate(
            thresholds,
            {
                name: [(f"line {row.get('source_line')}", row["metrics"][name]["score"]) for row in current]
                for name in thresholds
            },
            [str(failure) for failure in failures],
        )
        for line in gate.lines:
            print(line, file=sys.stderr)
        if gate.below_threshold:
            return GATE_FAILED
    return status


def rows_table(rows: list[dict[str, Any]], names: list[str]):
    """The per-sample score table of written rows: ``source_line``, ``question``, one column per
    metric score (empty for NaN) and its grade / label, ``seconds``."""
    import pandas as pd

    table = []
    for row in rows:
        entry: dict[str, Any] = {"source_line": row.get("source_line"), "question": row.get("question")}
        for name in names:
            result = row["metrics"][name]
            entry[name] = math.nan if result["score"] is None else result["score"]
            for extra in ("grade", "label"):
                if result.get(extra) is not None:
                    entry[f"{name}_{extra}"] = result[extra]
        entry["seconds"] = row.get("seconds")
        table.append(entry)
    return pd.DataFrame(table, columns=None if table else ["source_line", "question", *names, "seconds"])


def _print_summary(
    rows: list[dict[str, Any]], names: list[str], failures: list, notes: list[str], out_path: Path
) -> None:
    print(f"results: {out_path}", file=sys.stderr)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for name in names:
        scores = [row["metrics"][name]["score"] for row in rows]
        values = [v for v in scores if v is not None]
        mean = f"{sum(values) / len(values):.4f}" if values else "nan"
        print(f"  {name:24s} mean {mean}  scored {len(values)}  nan {len(scores) - len(values)}", file=sys.stderr)
    print(f"  samples {len(rows)}  failed {len(failures)}", file=sys.stderr)
    for failure in failures[:10]:
        print(f"  failed: {failure}", file=sys.stderr)


__all__ = ["argument_problems", "register", "rows_table", "run"]


def _with_default_pipeline(settings: Any) -> Any:
    """A row written before ``--pipeline`` existed: its FactReasoner settings with the pipeline
    named (:func:`fact_reasoner.runner.with_default_pipeline`), so it still resumes."""
    from ..runner import with_default_pipeline

    if isinstance(settings, dict) and isinstance(settings.get("pipeline"), dict):
        return settings | {"pipeline": with_default_pipeline(settings["pipeline"])}
    return settings

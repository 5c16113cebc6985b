"""``fact-reasoner ragas``: RAGAS-style metrics over a JSONL / JSON / CSV file of samples."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

DEFAULT_METRICS = "faithfulness,factual_correctness,context_precision,context_recall,answer_relevance,ragas_score"

DESCRIPTION = """\
Compute RAG metrics on FactReasoner's atoms, NLI relations and FR2 factor graphs.

Each sample (a JSONL line, an element of a JSON list, or a CSV row) has a question
(question/query/user_input), a response (response/actual_output/answer), optionally a
reference (reference/expected_output/ground_truth) and retrieved contexts
(retrieved_contexts/retrieved_content/contexts/retrieval_context: strings or {text} objects,
or a JSON list in a CSV cell). Every sample gives one output line, errors included.
"""


def read_samples(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``.jsonl``, ``.json`` (list, or one object) or ``.csv`` file."""
    if not path.exists():
        raise FileNotFoundError(f"input file {path} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".csv":
        import pandas as pd

        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        return [dict(row) for row in frame.to_dict(orient="records")]
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        value = json.loads(text)
        return value if isinstance(value, list) else [value]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                rows.append({"_invalid_line": number, "_error": str(error)})
    return rows


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
    p.add_argument("--output", "--output-file", type=Path, help="JSONL results (default: <input>.ragas.jsonl)")
    p.add_argument("--csv", type=Path, help="also write the per-sample score table as CSV")
    p.add_argument("--limit", type=int, help="evaluate at most this many samples")
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
    add_config_arguments(p, groups=("graph", "engine", "models", "cache", "execution"), exclude=("version",))
    p.set_defaults(func=run, parser=p)


def build_metrics(args: argparse.Namespace) -> list:
    from .evaluation import make_metric

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


def run(args: argparse.Namespace) -> int:
    """Run ``fact-reasoner ragas``: evaluate the samples, write the results, print a summary."""
    from ..cli_options import config_from_args
    from ..errors import SetupError
    from ..executors import make_executor
    from .context import MetricContext
    from .evaluation import evaluate

    try:
        metrics = build_metrics(args)
        config = config_from_args(args, args.parser, version=2)
        samples = read_samples(args.input_file)
        executor = make_executor(config.execution)  # --executor ray without ray: say what to install
    except (ValueError, FileNotFoundError, SetupError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.limit is not None:
        samples = samples[: args.limit]
    output = args.output or args.input_file.with_name(args.input_file.stem + ".ragas.jsonl")
    context = MetricContext(config, atomizer=args.atomizer)
    try:
        with executor:
            result = evaluate(
                samples, metrics, context=context, progress=not args.quiet, output=output, executor=executor
            )
    except SetupError as error:  # no Ray worker could start
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.csv:
        result.to_dataframe().to_csv(args.csv, index=False)
    if not args.quiet:
        summary = result.summary()
        print(f"results: {output}", file=sys.stderr)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        for name in result.metric_names:
            entry = summary[name]
            mean = "nan" if math.isnan(entry["mean"]) else f"{entry['mean']:.4f}"
            extra = "".join(f" {k}={v}" for k, v in entry.items() if k in ("counts", "grades"))
            print(f"  {name:24s} mean {mean}  scored {entry['scored']}  nan {entry['nan']}{extra}", file=sys.stderr)
        print(f"  seconds/sample {summary['seconds_per_sample']:.2f}  errors {summary['num_errors']}", file=sys.stderr)
        for failure in result.errors[:10]:
            print(f"  error: sample {failure['index']} {failure['metric']}: {failure['error']}", file=sys.stderr)
    return 1 if result.errors else 0


__all__ = ["read_samples", "register", "run"]

"""``fact-reasoner ragas``: RAGAS-style metrics over a JSONL / JSON / CSV file of samples.

The run is :func:`fact_reasoner.runner.run_dataset` with :class:`RagasDataset`: each sample is
scored by every metric on a worker (:class:`~fact_reasoner.metrics.evaluation.SampleJob`),
written in sample order, resumed on rerun.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from .. import runner
from ..metrics.faithfulness import MODES as FAITHFULNESS_MODES
from ..runner.jobs import DEFAULT_METRICS, RagasDataset
from ..settings.cli_options import number, path_argument, positive_int
from ..settings.fields import Probability, Weight
from .base import Command, CommandParser, finish_run, output_problems, results_line

#: the non-answers the summary lists one by one (the rest are counted)
SHOW_NOT_ANSWERABLE = 5


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

A response that answers nothing (no words, "I don't know" or another refusal, or only words of
the question) is not scored: its row says `not_answerable` with the reason, every metric that
judges the answer is null with that reason, and the summary lists it; the retrieval metrics
are computed as usual. A metric that needs a reference (factual correctness, context recall,
context precision, the similarities) is null without one, with the reason.
"""

EPILOG = """\
example:
  fact-reasoner ragas --input-file fact_reasoner/examples/rag_samples.jsonl \\
      --metrics faithfulness,factual_correctness,context_precision,context_recall --nli cross-encoder \\
      --atomizer sentence --output rag.jsonl --csv rag.csv
exit status: 0 done, 1 a sample failed, 2 the run could not be done, 3 the gate failed, 130 interrupted
"""


def build_metrics(args: argparse.Namespace) -> list[Any]:
    """The metrics ``--metrics`` names, each with the options its flags set."""
    from ..metrics.base import make_metric

    params: dict[str, dict[str, Any]] = {
        "faithfulness": {
            "strict_mode": args.strict,
            "weighted": not args.binary,
            "no_claims_score": args.no_claims_score,
            "mode": args.faithfulness_mode,
        },
        "factual_correctness": {"mode": args.fc_mode, "beta": args.beta},
        "context_precision": {"mode": args.context_precision_mode},
    }
    metrics = []
    for name in (n.strip() for n in args.metrics.split(",") if n.strip()):
        metric = make_metric(name)
        metrics.append(make_metric(name, **params.get(metric.name, {})))
    return metrics


def output_path(args: argparse.Namespace) -> Path:
    """``--output``, or ``<input stem>.ragas.jsonl`` beside the input."""
    return args.output or args.input_file.with_name(args.input_file.stem + ".ragas.jsonl")


def argument_problems(args: argparse.Namespace) -> list[str]:
    """What cannot work, found before anything runs (one line each, argparse style)."""
    from ..metrics.base import make_metric
    from ..metrics.catalog import available_metrics
    from ..metrics.evaluation import column_names

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
    problems += output_problems("--output", output_path(args)) + output_problems("--csv", args.csv)
    return problems


def rows_table(rows: list[dict[str, Any]], names: list[str]) -> Any:
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


class Ragas(Command):
    name = "ragas"
    summary = "RAG metrics (faithfulness, factual correctness, …) on the same atoms and graphs"
    description = DESCRIPTION
    epilog = EPILOG
    usage = "fact-reasoner ragas --input-file FILE [--metrics NAME,…] [options]"
    basic = (
        "input_file",
        "metrics",
        "output",
        "csv",
        "atomizer",
        "nli",
        "backend",
        "model",
        "cache_dir",
        "overwrite",
        "quiet",
    )
    # The pipeline's own settings, minus the FR version: the metrics always build FR2 graphs.
    settings_groups = ("graph", "engine", "models", "cache", "execution", "gate")
    settings_excluded = ("version",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--input-file",
            "--input_file",
            type=path_argument,
            required=True,
            metavar="FILE",
            help=".jsonl, .json or .csv samples",
        )
        metrics = parser.add_argument(
            "--metrics",
            default=DEFAULT_METRICS,
            help="comma-separated: faithfulness, factual_correctness, context_precision, context_recall, "
            "answer_relevance, ragas_score, factual_accuracy, semantic_similarity, bert_score, "
            "answer_classification (default: %(default)s)",
        )
        metrics.brief = f"comma-separated metric names (default: {DEFAULT_METRICS.replace(',', ', ')})"  # type: ignore[attr-defined]
        parser.add_argument(
            "--output",
            "--output-file",
            type=path_argument,
            metavar="FILE",
            help="JSONL results, resumed on rerun (default: <input>.ragas.jsonl); failures go beside it, its "
            "last suffix replaced: out.jsonl -> out.errors.jsonl, a.out.jsonl -> a.out.errors.jsonl",
        )
        parser.add_argument(
            "--csv", type=path_argument, metavar="FILE", help="also write the per-sample score table as CSV"
        )
        parser.add_argument("--limit", type=positive_int, metavar="N", help="evaluate at most this many samples (≥ 1)")
        parser.add_argument("--overwrite", action="store_true", help="start over instead of resuming")
        parser.add_argument(
            "--atomizer",
            default="auto",
            choices=("auto", "llm", "sentence"),
            help="claims from the LLM atomizer, or one per sentence (default: auto = llm if available)",
        )
        parser.add_argument(
            "--faithfulness-mode",
            type=str.upper,
            default="GRANULAR",
            choices=FAITHFULNESS_MODES,
            help="faithfulness: GRANULAR, per claim (the mean of their verdicts' weights), or HOLISTIC, the "
            "response judged as a whole against the contexts together, one verdict, one weight "
            "(docs/rag-metrics.md) (default: %(default)s)",
        )
        parser.add_argument("--strict", action="store_true", help="faithfulness: NO_EVIDENCE scores -1 instead of 0")
        parser.add_argument(
            "--binary", action="store_true", help="faithfulness: supported/total instead of verdict weights"
        )
        parser.add_argument(
            "--no-claims-score",
            type=number(Probability),
            default=float("nan"),
            metavar="X",
            help="faithfulness of a response without claims, in [0, 1] (default: none, the score is null with "
            "the reason; axion uses 1.0)",
        )
        parser.add_argument(
            "--fc-mode", default="F1", choices=("F1", "PRECISION", "RECALL"), help="factual correctness mode"
        )
        parser.add_argument(
            "--beta", type=number(Weight), default=1.0, metavar="X", help="factual correctness F-beta, > 0 (default 1)"
        )
        parser.add_argument(
            "--context-precision-mode", default="average_precision", choices=("average_precision", "mean")
        )
        parser.add_argument("--quiet", action="store_true", help="no progress bar or summary")

    def fixed_settings(self, args: argparse.Namespace) -> dict[str, Any]:
        return {"version": 2}

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        """Check the arguments and every sample, compute the metrics sample by sample into the
        output (resuming it), report bad samples as ``file:line``.

        What prevents the run (an input that cannot be read, a missing extra, an output that
        cannot be used or holds other settings) raises a
        :class:`~fact_reasoner.errors.FactReasonerError` before any sample is computed."""
        from ..metrics.context import MetricContext

        for problem in argument_problems(args):
            parser.error(problem)
        metrics = build_metrics(args)
        config = self.settings(args, parser)
        context = MetricContext(config, atomizer=args.atomizer)
        context.preflight(metrics)  # the extras each metric needs, before any sample
        job = RagasDataset(
            input_file=args.input_file,
            output_file=output_path(args),
            overwrite=args.overwrite,
            limit=args.limit,
            progress=not args.quiet,
            pipeline=config,
            context=context,
            metrics=metrics,
            atomizer=args.atomizer,
            needs_response=any(m.needs_response for m in metrics),
        )
        report = runner.run_dataset(job)
        if args.csv:
            rows_table(list(report.rows), job.names).to_csv(args.csv, index=False)

        def summary_lines(report: runner.RunReport) -> list[str]:
            return ragas_summary(list(report.rows), job.names, report, job.worker_notes)

        return finish_run(
            report,
            noun="sample",
            quiet=args.quiet,
            argv=args.argv,
            summary_lines=summary_lines,
            thresholds=config.gate.fail_under,
            gate_scores=lambda rows: {
                name: [(f"line {row.get('source_line')}", row["metrics"][name]["score"]) for row in rows]
                for name in config.gate.fail_under
            },
        )


def judge_means(rows: list[dict[str, Any]], metric: str) -> dict[str, tuple[float | None, int]]:
    """With a panel of judges: the metric's mean with each judge alone and how many samples it
    is over — those the panel scored and the judge did too (``metrics.<name>.by_judge``)."""
    scores: dict[str, list[float]] = {}
    for row in rows:
        for judge, score in (row["metrics"][metric].get("by_judge") or {}).items():
            scores.setdefault(judge, [])
            if score is not None:
                scores[judge].append(score)
    return {judge: (sum(values) / len(values) if values else None, len(values)) for judge, values in scores.items()}


def ragas_summary(
    rows: list[dict[str, Any]], names: list[str], report: runner.RunReport, notes: list[str]
) -> list[str]:
    """Each metric's mean, how many samples it scored, and where the failures are listed."""
    lines = [results_line(report, "sample")]
    lines += [f"note: {note}" for note in notes]
    for name in names:
        scores = [row["metrics"][name]["score"] for row in rows]
        values = [v for v in scores if v is not None]
        mean = f"{sum(values) / len(values):.4f}" if values else "— (none scored)"
        lines.append(f"  {name:24s} mean {mean}  scored {len(values)}  not scored {len(scores) - len(values)}")
        for judge, (judge_mean, scored) in judge_means(rows, name).items():
            shown = "— (none scored)" if judge_mean is None else f"{judge_mean:.4f}  scored {scored}"
            lines.append(f"    {'judge ' + judge + ' alone':22s} mean {shown}")
    unanswered = [row for row in rows if row.get("not_answerable")]
    lines.append(f"  samples {len(rows)}  not answerable {len(unanswered)}  failed {len(report.failures)}")
    for row in unanswered[:SHOW_NOT_ANSWERABLE]:
        lines.append(f"  not answerable: line {row.get('source_line')}: {row['not_answerable']} (not scored)")
    if len(unanswered) > SHOW_NOT_ANSWERABLE:
        lines.append(f"  … and {len(unanswered) - SHOW_NOT_ANSWERABLE} more (the rows' not_answerable)")
    if report.failures:
        lines.append(f"  failed: listed above and in {report.errors_file}")
    return lines


__all__ = ["Ragas", "RagasDataset", "argument_problems", "build_metrics", "output_path", "rows_table"]

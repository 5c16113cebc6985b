"""Batch evaluation: every metric on every sample, with errors recorded per sample and metric.

``evaluate(samples, metrics)`` never drops a row: a sample that cannot be read, or a metric
that raises, gives NaN with the error as the reason (``errors`` lists them). Results go to
JSONL (:meth:`EvaluationResult.to_jsonl`) and to a pandas DataFrame (:meth:`to_dataframe`).

The samples run through an executor (:mod:`fact_reasoner.executors`): in this process by
default, or on Ray actors that each build their own :class:`~.context.MetricContext` from the
config (:class:`SampleJob`). Either way the rows are written in sample order.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SetupError
from ..executors import Executor, Job, LocalExecutor, describe_error
from ..json_safe import json_safe
from .answerable import non_answer
from .base import Metric, as_sample, make_metric
from .classification import AnswerClassification
from .context import MetricContext
from .results import MetricResult
from .sample import RagSample

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import PipelineConfig


@dataclass
class SampleEvaluation:
    index: int
    sample: RagSample | None
    results: dict[str, MetricResult]
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    #: with a panel of judges: ``{metric: {judge: score}}``, each judge alone (:func:`_by_judge`)
    by_judge: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """One JSON-able line: the sample's fields, ``not_answerable`` (why the response answers
        nothing, when it does not: :func:`~fact_reasoner.metrics.answerable.non_answer`; the
        metrics that judge the answer are then NaN), each metric's full result, errors, time."""
        sample = self.sample.model_dump(exclude_none=True) if self.sample else {}
        unanswered = non_answer(self.sample.response, self.sample.question) if self.sample else None
        return {
            "index": self.index,
            **sample,
            **({"not_answerable": unanswered} if unanswered is not None else {}),
            "metrics": {
                name: r.model_dump(mode="json") | ({"by_judge": self.by_judge[name]} if name in self.by_judge else {})
                for name, r in self.results.items()
            },
            "errors": self.errors,
            "seconds": self.seconds,
        }


@dataclass
class EvaluationResult:
    samples: list[SampleEvaluation]
    metric_names: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [{"index": s.index, "metric": m, "error": e} for s in self.samples for m, e in s.errors.items()]

    def scores(self, name: str) -> list[float]:
        return [s.results[name].score for s in self.samples]

    def to_dataframe(self):
        """One row per sample: ``index``, ``question``, one column per metric score, ``errors``."""
        import pandas as pd

        rows = []
        for s in self.samples:
            row: dict[str, Any] = {"index": s.index, "question": s.sample.question if s.sample else None}
            for name, result in s.results.items():
                row[name] = result.score
                for extra in ("grade", "label"):
                    if getattr(result, extra, None) is not None:
                        row[f"{name}_{extra}"] = getattr(result, extra)
            row["errors"] = "; ".join(f"{k}: {v}" for k, v in s.errors.items()) or None
            row["seconds"] = s.seconds
            rows.append(row)
        return pd.DataFrame(rows)

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            for s in self.samples:
                handle.write(json.dumps(json_safe(s.row()), ensure_ascii=False) + "\n")
        return path

    def summary(self) -> dict[str, Any]:
        """Mean of each metric over samples where it is not NaN, counts, and label counts."""
        out: dict[str, Any] = {"num_samples": len(self.samples), "num_errors": len(self.errors)}
        for name in self.metric_names:
            values = [v for v in self.scores(name) if not math.isnan(v)]
            out[name] = {
                "mean": sum(values) / len(values) if values else float("nan"),
                "scored": len(values),
                "nan": len(self.samples) - len(values),
            }
            labels = [s.results[name] for s in self.samples if hasattr(s.results[name], "label")]
            if labels:
                out[name]["counts"] = AnswerClassification.counts(labels)
            grades = [getattr(s.results[name], "grade", None) for s in self.samples]
            if any(grades):
                out[name]["grades"] = {g: grades.count(g) for g in "ABCDE"}
        seconds = [s.seconds for s in self.samples]
        out["seconds_per_sample"] = sum(seconds) / len(seconds) if seconds else float("nan")
        return out


def column_names(metrics: Sequence[Metric]) -> list[str]:
    """One column name per metric: its name, then `name_2`, `name_3` … for repeats."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for metric in metrics:
        count = seen.get(metric.name, 0)
        seen[metric.name] = count + 1
        names.append(metric.name if count == 0 else f"{metric.name}_{count + 1}")
    return names


def _evaluate_sample(
    index: int, raw: Any, names: list[str], metric_objects: list[Metric], context: MetricContext
) -> SampleEvaluation:
    """One row: every metric of one sample; an unreadable sample or a failing metric gives NaN."""
    start = time.perf_counter()
    try:
        sample = as_sample(raw)
    except Exception as error:  # unreadable sample: still one row, every metric NaN
        message = f"invalid sample: {type(error).__name__}: {error}"
        return SampleEvaluation(
            index,
            None,
            {n: MetricResult.nan(m.name, message) for n, m in zip(names, metric_objects)},
            {"sample": message},
        )
    results: dict[str, MetricResult] = {}
    errors: dict[str, str] = {}
    for name, metric in zip(names, metric_objects):
        try:
            results[name] = context.result(metric, sample)
        except SetupError:
            raise  # a stage that cannot be set up: every sample would fail the same way
        except Exception as error:  # one failing metric must not lose the others
            message = f"{type(error).__name__}: {error}"
            errors[name] = message
            results[name] = MetricResult.failure(metric.name, f"error: {message}")
            continue
        if results[name].is_failure:  # computed as a failure (a model call, a component)
            errors[name] = results[name].reason or "failed"
    by_judge = _by_judge(sample, names, metric_objects, context, results, errors)
    return SampleEvaluation(index, sample, results, errors, time.perf_counter() - start, by_judge)


def _by_judge(
    sample: RagSample,
    names: list[str],
    metric_objects: list[Metric],
    context: MetricContext,
    results: dict[str, Any],
    errors: dict[str, str],
) -> dict[str, dict[str, float | None]]:
    """With a panel of judges: each NLI metric's score with each judge alone
    (:meth:`MetricContext.judge_view`), ``{metric: {judge: score}}``; a metric the panel could
    not score, or a judge could not, has None there, and why is added to ``errors``
    (``"faithfulness (align alone)"``)."""
    judges = context.judge_names
    out: dict[str, dict[str, float | None]] = {}
    if not judges:
        return out
    for name, metric in zip(names, metric_objects):
        if "nli" not in metric.needs() or results[name].is_failure:
            continue
        scores: dict[str, float | None] = {}
        for judge in judges:
            try:
                result = context.judge_view(judge).result(metric, sample)
            except SetupError:
                raise
            except Exception as error:  # the panel's score stands; this judge's is not known, and says why
                scores[judge] = None
                errors[f"{name} ({judge} alone)"] = f"{type(error).__name__}: {error}"
                continue
            if result.is_failure:
                errors[f"{name} ({judge} alone)"] = result.reason or "failed"
            scores[judge] = None if result.is_failure else result.score
        out[name] = scores
    return out


@dataclass(frozen=True)
class SampleJob(Job[tuple[int, Any], tuple[SampleEvaluation, tuple[str, ...]]]):
    """Every metric on one sample, as any worker does it: the sample's row and the context's
    notes so far. Picklable: a Ray actor builds its own :class:`MetricContext` (stages, memos)
    from ``config`` and the atomizer's name."""

    config: "PipelineConfig"
    atomizer: str
    names: tuple[str, ...]
    metrics: tuple[Metric, ...]

    def setup(self, config: "PipelineConfig") -> MetricContext:
        return MetricContext(config, atomizer=self.atomizer)

    def run(self, state: MetricContext, item: tuple[int, Any]) -> tuple[SampleEvaluation, tuple[str, ...]]:
        index, raw = item
        evaluation = _evaluate_sample(index, raw, list(self.names), list(self.metrics), state)
        return evaluation, tuple(state.notes)


def evaluate(
    samples: Iterable[RagSample | dict],
    metrics: Sequence[Metric | str],
    *,
    context: MetricContext | None = None,
    progress: bool = True,
    output: str | Path | None = None,
    executor: Executor | None = None,
) -> EvaluationResult:
    """Score every sample with every metric; atoms, NLI judgements and graphs are shared.

    ``metrics`` are :class:`Metric` objects or names. ``output`` also writes the JSONL.
    ``executor`` (default: this process) runs the samples; an executor other than the local one
    builds each worker's context from ``context.config`` and its atomizer's name, so stages
    injected into ``context`` are used only locally.

    A stage that cannot be set up (:class:`~fact_reasoner.errors.SetupError`) stops the
    evaluation: every sample would fail the same way.
    """
    from ..progress import progress_bar

    metric_objects = [make_metric(m) if isinstance(m, str) else m for m in metrics]
    if not metric_objects:
        raise ValueError("no metrics to compute")
    context = context or MetricContext()
    executor = executor or LocalExecutor()
    items = list(enumerate(samples))
    evaluations: list[SampleEvaluation] = []
    notes = list(context.notes)
    with progress_bar(len(items), desc="ragas", unit="sample", quiet=not progress) as bar:
        for _, evaluation, worker_notes in iter_evaluations(items, metric_objects, context, executor):
            notes += [note for note in worker_notes if note not in notes]
            evaluations.append(evaluation)
            bar.update(1)
    context.forget_results()
    evaluations.sort(key=lambda e: e.index)
    result = EvaluationResult(evaluations, column_names(metric_objects), notes)
    if output is not None:
        result.to_jsonl(output)
    return result


def iter_evaluations(
    items: Sequence[tuple[int, Any]],
    metrics: Sequence[Metric],
    context: MetricContext,
    executor: Executor,
) -> Iterator[tuple[int, SampleEvaluation, tuple[str, ...]]]:
    """Every metric on each ``(index, sample)`` of ``items``, as the executor finishes them
    (in order with the local one): ``(position in items, evaluation, notes so far)``.

    A sample whose worker was lost gives a row of failures; a stage that cannot be set up
    raises :class:`~fact_reasoner.errors.SetupError`.
    """
    names = column_names(metrics)
    choice = context.atomizer_choice
    if not isinstance(executor, LocalExecutor) and not isinstance(choice, str):
        raise ValueError("workers build their own atomizer: give it by name (auto, llm or sentence)")
    job = SampleJob(context.config, choice if isinstance(choice, str) else "auto", tuple(names), tuple(metrics))
    for outcome in executor.map(job, items, local_state=context):
        index, raw = items[outcome.index]
        if outcome.value is not None:
            evaluation, notes = outcome.value
        elif isinstance(outcome.error, SetupError):
            raise outcome.error
        else:  # the worker holding it was lost: still one row, every metric a failure
            problem = outcome.error or RuntimeError("no result")
            evaluation, notes = _failed_sample(index, raw, names, metrics, describe_error(problem)), ()
        yield outcome.index, evaluation, tuple(notes)


def _failed_sample(index: int, raw: Any, names: list[str], metrics: Sequence[Metric], message: str) -> SampleEvaluation:
    try:
        sample: RagSample | None = as_sample(raw)
    except Exception:
        sample = None
    return SampleEvaluation(
        index,
        sample,
        {n: MetricResult.failure(m.name, f"error: {message}") for n, m in zip(names, metrics)},
        {"sample": message},
    )


__all__ = [
    "EvaluationResult",
    "SampleEvaluation",
    "SampleJob",
    "evaluate",
    "iter_evaluations",
]

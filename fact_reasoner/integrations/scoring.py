"""One sample scored as ``fact-reasoner ragas`` scores a line of its input file: the core that
the ragas and DeepEval metrics share.

:class:`SampleScorer` runs the command's own code on the sample: a
:class:`~fact_reasoner.runner.jobs.RagasDataset` job made into a row by
:class:`~fact_reasoner.runner.RecordService` (what ``fact-reasoner serve`` does with a request),
so the score, its reason and the per-claim verdicts are the row the command would write for the
same sample and settings. A sample the metric cannot score (no retrieved contexts, no
reference, a response without claims, a non-answer, a model call that failed) raises
:class:`SampleNotScored` with the reason: the libraries would otherwise receive a NaN, or a 0
that was never computed.

One scorer per (settings, atomizer) is shared by every metric of a process
(:func:`shared_scorer`): the NLI judgements and FR2 graphs a sample's faithfulness computed are
reused by its context precision, as in one run of the command.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import FactReasonerError, RecordFailed
from ..metrics.base import Metric, as_sample, make_metric
from ..metrics.context import MetricContext
from ..metrics.sample import NumberedSample, RagSample
from ..runner.jobs import RagasDataset
from ..runner.service import RecordService
from ..settings.config import PipelineConfig

logger = logging.getLogger(__name__)

#: the verdicts of a claim that counts as supported, faithfulness's and factual correctness's
SUPPORTED = frozenset({"FULLY_SUPPORTED", "PARTIALLY_SUPPORTED", "SUPPORTED"})


class SampleNotScored(FactReasonerError, ValueError):
    """The metric cannot score this sample; the message says why (what the command's row
    gives as the metric's ``reason`` with a null score, or the failure it reports)."""


@dataclass(frozen=True)
class Scored:
    """A metric's score of one sample, with the command's result behind it.

    ``details`` are the per-claim verdicts (:class:`~fact_reasoner.metrics.results.ClaimDetail`
    as dicts: ``claim``, ``verdict``, ``probability``, ``context``, ``reason``, ``source``);
    ``result`` is the whole result of the row (``verdict_counts``, ``precision`` …)."""

    metric: str
    score: float
    reason: str | None
    details: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    def unsupported_claims(self, source: str = "response") -> list[str]:
        """The claims of ``source`` (``response`` or ``reference``) whose verdict is not a
        supported one (no evidence, contradicted, not supported, unjudged)."""
        return [d["claim"] for d in self.details if d.get("source") == source and d["verdict"] not in SUPPORTED]

    def verdicts(self) -> list[dict[str, Any]]:
        """``claim``, ``verdict``, ``probability`` and ``source`` of every claim: what a trace keeps."""
        keys = ("claim", "verdict", "probability", "source")
        return [{key: d.get(key) for key in keys} for d in self.details]


def pipeline_config(config: PipelineConfig | Mapping[str, Any] | None) -> PipelineConfig:
    """The settings the command would run with: ``config`` as given (a
    :class:`PipelineConfig`, or a mapping of its settings, ``{"nli": "align"}``). The RAG
    metrics' graph is FR2 whatever ``version`` says: :class:`~fact_reasoner.metrics.context.MetricContext`
    decides that, for the command and for these metrics alike."""
    if config is None:
        return PipelineConfig()
    if isinstance(config, PipelineConfig):
        return config
    return PipelineConfig.model_validate(dict(config))


class SampleScorer:
    """The stages of one (settings, atomizer) loaded once, and samples scored one at a time into
    the row ``fact-reasoner ragas`` writes (``--atomizer`` is ``atomizer``; the settings those of
    its flags)."""

    def __init__(self, config: PipelineConfig | Mapping[str, Any] | None = None, atomizer: str = "auto") -> None:
        self.config = pipeline_config(config)
        self.atomizer = atomizer
        self.context = MetricContext(self.config, atomizer=atomizer)
        self._lock = threading.Lock()
        self._checked: set[str] = set()
        self._said: set[str] = set()

    def row(self, metric: Metric, sample: RagSample | Mapping[str, Any]) -> dict[str, Any]:
        """The command's row of ``sample`` with ``metric`` alone; a metric that failed raises
        :class:`SampleNotScored`; a stage that cannot be set up raises its
        :class:`~fact_reasoner.errors.SetupError`."""
        checked = as_sample(dict(sample) if isinstance(sample, Mapping) else sample)
        with self._lock:  # one sample at a time: the context's memos are shared
            if metric.key not in self._checked:
                self.context.preflight([metric])  # a missing extra: said once, before any score
                self._checked.add(metric.key)
            job = RagasDataset(
                progress=False,
                pipeline=self.config,
                context=self.context,
                metrics=[metric],
                atomizer=self.atomizer,
                needs_response=metric.needs_response,
            )
            item = NumberedSample("<sample>", 1, "sample", checked)
            try:
                return RecordService(job, [item]).row(item)
            except RecordFailed as error:
                raise SampleNotScored(f"{metric.name}: {error}") from error
            finally:
                self.context.forget_results()  # the per-sample memo; atoms and NLI pairs stay
                self._say_notes()

    def _say_notes(self) -> None:
        """Log, once each, the context's notes (``atomizer="auto"`` falling back to one claim per
        sentence, and why): the command prints them in its summary, a library's user reads the log."""
        for note in self.context.notes:
            if note not in self._said:
                self._said.add(note)
                logger.warning("note: %s", note)

    def score(self, metric: Metric, sample: RagSample | Mapping[str, Any]) -> Scored:
        """``metric``'s score of ``sample``, as the command computes it; :class:`SampleNotScored`
        when the command would write no score (its reason in the message)."""
        result = self.row(metric, sample)["metrics"][metric.name]
        score = result.get("score")
        if score is None or (isinstance(score, float) and math.isnan(score)):
            raise SampleNotScored(f"{metric.name} cannot score this sample: {result.get('reason') or 'no score'}")
        return Scored(
            metric=metric.name,
            score=float(score),
            reason=result.get("reason"),
            details=list(result.get("details") or []),
            result=result,
        )


_SCORERS: dict[tuple[str, str], SampleScorer] = {}
_SCORERS_LOCK = threading.Lock()


def shared_scorer(config: PipelineConfig | Mapping[str, Any] | None = None, atomizer: str = "auto") -> SampleScorer:
    """The process's one :class:`SampleScorer` for these settings and atomizer (built on first use)."""
    settings = pipeline_config(config)
    key = (settings.model_dump_json(), atomizer)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            _SCORERS[key] = SampleScorer(settings, atomizer)
        return _SCORERS[key]


def command_metric(name: str, **params: Any) -> Metric:
    """The command's metric ``name`` with its parameters (what ``--metrics`` and its flags make:
    :func:`fact_reasoner.commands.ragas.build_metrics`)."""
    return make_metric(name, **params)


__all__ = [
    "SUPPORTED",
    "SampleNotScored",
    "SampleScorer",
    "Scored",
    "command_metric",
    "pipeline_config",
    "shared_scorer",
]

"""ragas metrics computed by this project: faithfulness, factual correctness, context precision
and context recall, offline (extra ``ragas``; docs/integrations.md).

Two forms, the same numbers:

- :class:`FRFaithfulness`, :class:`FRFactualCorrectness`, :class:`FRContextPrecision`,
  :class:`FRContextRecall`: ``@dataclass`` subclasses of ``ragas.metrics.base.SingleTurnMetric``,
  as ragas's own non-LLM metrics are, for ``ragas.evaluate(dataset, metrics=[…])`` and
  ``await metric.single_turn_ascore(sample)``. ragas gives them no LLM and no embeddings (it
  does that only for ``MetricWithLLM`` / ``MetricWithEmbeddings``). Each score's per-claim
  verdicts go into ragas's trace of the sample: ``result.traces[i][metric.name]["fr_verdicts"]``
  (``input``: the sample's fields; ``output``: ``claim``, ``verdict``, ``probability``,
  ``source`` per claim).
- :class:`FaithfulnessMetric` and the other three ``…Metric`` classes: the newer
  ``ragas.metrics.collections`` form (``metric.score(user_input=…, response=…,
  retrieved_contexts=…)`` → ``MetricResult`` with ``value``, ``reason`` and the verdicts in
  ``traces["output"]``).

Every score is the one ``fact-reasoner ragas`` writes for the same sample with the same
settings (:mod:`fact_reasoner.integrations.scoring`): ``atomizer`` is ``--atomizer``,
``config`` the settings of the other flags (a :class:`~fact_reasoner.settings.config.PipelineConfig`
or a mapping such as ``{"nli": "align"}``), and each metric's own parameters those of its
flags. A sample that cannot be scored raises
:class:`~fact_reasoner.integrations.scoring.SampleNotScored`; ``ragas.evaluate`` turns a raised
exception into NaN unless it is called with ``raise_exceptions=True``.

The score is computed in the calling thread (the work is CPU-bound): ragas's per-sample timeout
does not cut it short.
"""

from __future__ import annotations

from .offline import set_offline_environment

set_offline_environment()  # before ragas is imported: its tracking flag is read once

import math  # noqa: E402
import typing as t  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import ragas._analytics  # noqa: E402
from ragas.callbacks import ChainType, new_group  # noqa: E402
from ragas.metrics.base import MetricOutputType, MetricType, SingleTurnMetric  # noqa: E402
from ragas.metrics.collections.base import BaseMetric as CollectionsBaseMetric  # noqa: E402
from ragas.metrics.result import MetricResult  # noqa: E402

from ..errors import SetupError  # noqa: E402
from ..metrics.base import Metric  # noqa: E402
from ..settings.config import PipelineConfig  # noqa: E402
from .scoring import SampleNotScored, Scored, command_metric, shared_scorer  # noqa: E402

if not ragas._analytics.do_not_track():  # ragas was imported, and asked, before this module
    ragas._analytics.do_not_track.cache_clear()
    if not ragas._analytics.do_not_track():  # pragma: no cover - the variable was just set
        raise SetupError("ragas usage tracking is on; set RAGAS_DO_NOT_TRACK=true")

#: the name of the child run that carries a score's per-claim verdicts in ragas's traces
TRACE_NAME = "fr_verdicts"

_Config = PipelineConfig | Mapping[str, Any] | None


def _sample_fields(sample: Any) -> dict[str, Any]:
    """The fields of a ragas ``SingleTurnSample`` this project reads, under ragas's names."""
    return {
        "user_input": sample.user_input,
        "response": sample.response,
        "reference": sample.reference,
        "retrieved_contexts": sample.retrieved_contexts,
    }


@dataclass
class _FRSingleTurnMetric(SingleTurnMetric):
    """What the four metrics share: the command's metric (:meth:`command_metric`), scored by
    the process's shared scorer, the verdicts added to ragas's trace."""

    #: ``--atomizer``: ``auto`` (the embedded language model when it can be built, else one claim
    #: per sentence), ``llm`` or ``sentence``
    atomizer: str = "auto"
    #: the settings of the command's other flags (``{"nli": "align"}``, a ``PipelineConfig``)
    config: _Config = None
    output_type: MetricOutputType = MetricOutputType.CONTINUOUS

    def command_metric(self) -> Metric:  # pragma: no cover - every metric below has its own
        """The command's metric with this metric's parameters."""
        raise NotImplementedError

    def init(self, run_config: Any) -> None:
        """Nothing to set up from ragas's run config: the stages load on the first sample."""

    def score_sample(self, fields: Mapping[str, Any]) -> Scored:
        """The command's score of a sample given by its ragas field names."""
        return shared_scorer(self.config, self.atomizer).score(self.command_metric(), fields)

    async def _single_turn_ascore(self, sample: Any, callbacks: Any) -> float:
        fields = _sample_fields(sample)
        run, _ = new_group(
            TRACE_NAME, inputs={"data": fields}, callbacks=callbacks, metadata={"type": ChainType.RAGAS_PROMPT}
        )
        try:
            scored = self.score_sample(fields)
        except Exception as error:
            run.on_chain_error(error)
            raise
        run.on_chain_end({"output": {"score": scored.score, "reason": scored.reason, "claims": scored.verdicts()}})
        return scored.score

    async def _ascore(self, row: dict, callbacks: Any) -> float:  # the pre-0.2 entry point
        from ragas.dataset_schema import SingleTurnSample

        return await self._single_turn_ascore(SingleTurnSample(**row), callbacks)


def _columns(*names: str) -> t.Callable[[], dict[Any, set[str]]]:
    return lambda: {MetricType.SINGLE_TURN: set(names)}


@dataclass
class FRFaithfulness(_FRSingleTurnMetric):
    """Faithfulness of the response to the retrieved contexts (``fact-reasoner ragas --metrics
    faithfulness``): the verdict-weighted share of its claims the contexts support (``binary``:
    supported / judged, ragas's own form; ``strict``: no evidence scores −1;
    ``faithfulness_mode="HOLISTIC"``: the response judged as a whole, one verdict)."""

    name: str = "fr_faithfulness"
    _required_columns: dict[Any, set[str]] = field(
        default_factory=_columns("user_input:optional", "response", "retrieved_contexts")
    )
    strict: bool = False
    binary: bool = False
    #: the score of a response without claims; NaN (the default): such a sample is not scored
    no_claims_score: float = math.nan
    #: ``--faithfulness-mode``: ``GRANULAR`` (per claim) or ``HOLISTIC`` (the response as a whole:
    #: one verdict, one weight); not named ``mode``, which ragas would add to the column's name
    faithfulness_mode: str = "GRANULAR"

    def command_metric(self) -> Metric:
        return command_metric(
            "faithfulness",
            strict_mode=self.strict,
            weighted=not self.binary,
            no_claims_score=self.no_claims_score,
            mode=self.faithfulness_mode,
        )


@dataclass
class FRFactualCorrectness(_FRSingleTurnMetric):
    """Factual correctness of the response against the reference (``--metrics
    factual_correctness``): F-beta (``fc_mode="F1"``), precision or recall of the claims on both sides."""

    name: str = "fr_factual_correctness"
    _required_columns: dict[Any, set[str]] = field(
        default_factory=_columns("user_input:optional", "response", "reference")
    )
    #: ``--fc-mode``: ``F1``, ``PRECISION`` or ``RECALL`` (not named ``mode``: ragas would add
    #: ``(mode=…)`` to the metric's column name)
    fc_mode: str = "F1"
    beta: float = 1.0

    def command_metric(self) -> Metric:
        return command_metric("factual_correctness", mode=self.fc_mode, beta=self.beta)


@dataclass
class FRContextPrecision(_FRSingleTurnMetric):
    """Context precision (``--metrics context_precision``): are the retrieved contexts that
    support the reference ranked first (``context_precision_mode``: ``average_precision`` or ``mean``)."""

    name: str = "fr_context_precision"
    _required_columns: dict[Any, set[str]] = field(
        default_factory=_columns("user_input:optional", "retrieved_contexts", "reference")
    )
    #: ``--context-precision-mode``: ``average_precision`` or ``mean``
    context_precision_mode: str = "average_precision"

    def command_metric(self) -> Metric:
        return command_metric("context_precision", mode=self.context_precision_mode)


@dataclass
class FRContextRecall(_FRSingleTurnMetric):
    """Context recall (``--metrics context_recall``): the share of the reference's claims the
    retrieved contexts support."""

    name: str = "fr_context_recall"
    _required_columns: dict[Any, set[str]] = field(
        default_factory=_columns("user_input:optional", "retrieved_contexts", "reference")
    )

    def command_metric(self) -> Metric:
        return command_metric("context_recall")


class _FRCollectionsMetric(CollectionsBaseMetric):
    """The ``ragas.metrics.collections`` form of a :class:`_FRSingleTurnMetric`: ``ascore`` by
    keyword, a ``MetricResult`` with the verdicts in its traces."""

    single_turn: type[_FRSingleTurnMetric]

    def __init__(self, *, atomizer: str = "auto", config: _Config = None, **params: Any) -> None:
        self.metric = self.single_turn(atomizer=atomizer, config=config, **params)
        super().__init__(name=self.metric.name)

    async def ascore(
        self,
        user_input: str | None = None,
        response: str | None = None,
        retrieved_contexts: list[str] | None = None,
        reference: str | None = None,
    ) -> MetricResult:
        """The score of one sample (a :class:`SampleNotScored` when it has none)."""
        fields = {
            "user_input": user_input,
            "response": response,
            "reference": reference,
            "retrieved_contexts": retrieved_contexts,
        }
        scored = self.metric.score_sample(fields)
        return MetricResult(
            value=scored.score, reason=scored.reason, traces={"input": fields, "output": {"claims": scored.verdicts()}}
        )


class FaithfulnessMetric(_FRCollectionsMetric):
    """:class:`FRFaithfulness` in the ``ragas.metrics.collections`` form."""

    single_turn = FRFaithfulness


class FactualCorrectnessMetric(_FRCollectionsMetric):
    """:class:`FRFactualCorrectness` in the ``ragas.metrics.collections`` form."""

    single_turn = FRFactualCorrectness


class ContextPrecisionMetric(_FRCollectionsMetric):
    """:class:`FRContextPrecision` in the ``ragas.metrics.collections`` form."""

    single_turn = FRContextPrecision


class ContextRecallMetric(_FRCollectionsMetric):
    """:class:`FRContextRecall` in the ``ragas.metrics.collections`` form."""

    single_turn = FRContextRecall


__all__ = [
    "TRACE_NAME",
    "ContextPrecisionMetric",
    "ContextRecallMetric",
    "FRContextPrecision",
    "FRContextRecall",
    "FRFactualCorrectness",
    "FRFaithfulness",
    "FactualCorrectnessMetric",
    "FaithfulnessMetric",
    "SampleNotScored",
]

"""DeepEval metrics computed by this project, offline (extra ``deepeval``; docs/integrations.md).

- :class:`FRFaithfulnessMetric`: faithfulness of ``actual_output`` to ``retrieval_context``;
- :class:`FRFactualCorrectnessMetric`: factual correctness of ``actual_output`` against
  ``expected_output``.

Both are ``deepeval.metrics.BaseMetric`` subclasses with ``measure`` and ``a_measure``,
``threshold``, ``score``, ``success`` and a ``reason`` that names the claims that are not
supported, so they work in ``assert_test(test_case, [metric])`` and ``evaluate(test_cases,
[metric])``. ``retrieval_context`` items may be strings or DeepEval's context objects
(``RetrievedContextData``: its ``context`` is the text). The score is the one ``fact-reasoner
ragas`` writes for the same sample with the same settings
(:mod:`fact_reasoner.integrations.scoring`); the per-claim verdicts are ``metric.scored.details``
after a measure, and ``verbose_logs``. A test case that cannot be scored (no retrieval context,
no expected output, no claims) raises :class:`~fact_reasoner.integrations.scoring.SampleNotScored`
from ``measure``, which fails the test: it never passes on a score that was not computed.
"""

from __future__ import annotations

from .offline import set_offline_environment

set_offline_environment()  # before deepeval is imported: it reads its settings from the environment

import math  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from typing import Any  # noqa: E402

from deepeval.metrics import BaseMetric  # noqa: E402

from ..errors import SetupError  # noqa: E402
from ..metrics.base import Metric  # noqa: E402
from ..settings.config import PipelineConfig  # noqa: E402
from .scoring import SampleNotScored, Scored, command_metric, shared_scorer  # noqa: E402


def _telemetry_off() -> bool:
    from deepeval.telemetry import telemetry_opt_out

    return bool(telemetry_opt_out())


if not _telemetry_off():  # pragma: no cover - deepeval read its settings before this module set them
    raise SetupError(
        "DeepEval's telemetry is on: set DEEPEVAL_TELEMETRY_OPT_OUT=1 before deepeval is imported "
        "(or import fact_reasoner.integrations.deepeval first)"
    )

#: how many unsupported claims a reason quotes before it counts the rest
QUOTED_CLAIMS = 5


def context_texts(items: Any) -> list[str] | None:
    """The texts of a ``retrieval_context``: strings as they are, DeepEval's
    ``RetrievedContextData`` (any object with a string ``context``) by that text."""
    if items is None:
        return None
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(getattr(item, "context", None), str):
            texts.append(item.context)
        else:
            raise TypeError(f"a retrieval_context item must be a string or a context object, not {type(item).__name__}")
    return texts


def _quoted(claims: list[str]) -> str:
    shown = "; ".join(f"'{claim}'" for claim in claims[:QUOTED_CLAIMS])
    more = len(claims) - QUOTED_CLAIMS
    return shown + (f" and {more} more" if more > 0 else "")


class _FRMetric(BaseMetric):
    """What both metrics share: the command's metric scored by the process's shared scorer."""

    title = "FactReasoner metric"

    def __init__(
        self,
        threshold: float = 0.5,
        *,
        atomizer: str = "auto",
        config: PipelineConfig | Mapping[str, Any] | None = None,
        strict_mode: bool = False,
        async_mode: bool = True,
        include_reason: bool = True,
        verbose_mode: bool = False,
    ) -> None:
        self.threshold = 1.0 if strict_mode else threshold
        self.atomizer = atomizer
        self.config = config
        self.strict_mode = strict_mode
        self.async_mode = async_mode
        self.include_reason = include_reason
        self.verbose_mode = verbose_mode
        self.evaluation_model = "fact_reasoner (offline NLI + factor graph)"
        self.evaluation_cost = 0.0
        self.scored: Scored | None = None

    @property
    def __name__(self) -> str:  # DeepEval's name for the metric in its results
        return self.title

    def command_metric(self) -> Metric:  # pragma: no cover - every metric below has its own
        """The command's metric with this metric's parameters."""
        raise NotImplementedError

    def fields(self, test_case: Any) -> dict[str, Any]:
        """The sample of a test case, under this project's field names."""
        return {
            "question": test_case.input if isinstance(test_case.input, str) else None,
            "response": test_case.actual_output,
            "reference": test_case.expected_output,
            "retrieved_contexts": context_texts(test_case.retrieval_context),
        }

    def describe(self, scored: Scored) -> str:  # pragma: no cover - every metric below has its own
        """The reason: the score in words, naming the claims that are not supported."""
        raise NotImplementedError

    def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """Score the test case; :class:`SampleNotScored` (and ``error`` set) when it cannot be."""
        self.scored = None
        self.error = None
        try:
            scored = shared_scorer(self.config, self.atomizer).score(self.command_metric(), self.fields(test_case))
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
            self.score, self.success, self.reason = None, False, None
            raise
        self.scored = scored
        self.score = 0.0 if self.strict_mode and scored.score < self.threshold else scored.score
        self.reason = self.describe(scored) if self.include_reason else None
        self.success = self.is_successful()
        self.verbose_logs = "\n".join(
            f"{d['verdict']:20s} P={d['probability']:.3f}  [{d['source']}] {d['claim']}"
            if isinstance(d.get("probability"), float) and not math.isnan(d["probability"])
            else f"{d['verdict']:20s} P=?      [{d['source']}] {d['claim']}"
            for d in scored.details
        )
        return self.score

    async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float:
        """:meth:`measure`, in the calling thread (the work is CPU-bound)."""
        return self.measure(test_case, *args, **kwargs)

    def is_successful(self) -> bool:
        """Scored, and the score at least ``threshold``."""
        self.success = self.error is None and self.score is not None and self.score >= self.threshold
        return self.success


class FRFaithfulnessMetric(_FRMetric):
    """Faithfulness of ``actual_output`` to ``retrieval_context`` (``fact-reasoner ragas
    --metrics faithfulness``): the verdict-weighted share of its claims the contexts support
    (``binary=True``: supported / judged claims; ``strict_no_evidence``: no evidence scores −1).
    ``faithfulness_mode="HOLISTIC"``: the output judged as a whole, one verdict, one weight.
    ``strict_mode`` is DeepEval's: threshold 1, a score below it is 0."""

    title = "FR Faithfulness"

    def __init__(
        self,
        threshold: float = 0.5,
        *,
        binary: bool = False,
        strict_no_evidence: bool = False,
        faithfulness_mode: str = "GRANULAR",
        **options: Any,
    ) -> None:
        super().__init__(threshold, **options)
        self.binary = binary
        self.strict_no_evidence = strict_no_evidence
        self.faithfulness_mode = faithfulness_mode

    def command_metric(self) -> Metric:
        return command_metric(
            "faithfulness", strict_mode=self.strict_no_evidence, weighted=not self.binary, mode=self.faithfulness_mode
        )

    def describe(self, scored: Scored) -> str:
        counts = scored.result.get("verdict_counts") or {}
        if scored.result.get("mode") == "HOLISTIC":  # one verdict on the output as a whole
            verdict = scored.result.get("verdict")
            text = f"the output as a whole is {verdict} by the retrieval context (holistic)"
            return f"{text}; {self.how_scored(scored.score, counts)}"
        total = scored.result.get("total_claims", len(scored.details))
        unsupported = scored.unsupported_claims("response")
        supported = total - len(unsupported)
        text = f"{supported} of {total} claims of the output are supported by the retrieval context"
        text += f" ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})" if counts else ""
        text += f"; {self.how_scored(scored.score, counts)}"
        return text + (f"; not supported: {_quoted(unsupported)}" if unsupported else "")

    def how_scored(self, score: float, counts: Mapping[str, int]) -> str:
        """How the claims' verdicts make the score, with the weight of each verdict present (the
        command's weights: :func:`~fact_reasoner.metrics.faithfulness.resolve_verdict_scores`),
        so that "1 of 2 claims supported" beside a score of 0 reads right: a contradicted claim
        counts -1."""
        from ..metrics.faithfulness import Verdict, resolve_verdict_scores

        if self.binary:
            return f"score {score:g}: the supported share of the judged claims"
        weights = resolve_verdict_scores(self.strict_no_evidence, None)
        present = [Verdict(name) for name in sorted(counts) if name in Verdict.__members__ and Verdict(name) in weights]
        shown = ", ".join(f"{verdict.value} {weights[verdict]:g}" for verdict in present)
        said = {Verdict.CONTRADICTORY: "a contradicted claim", Verdict.NO_EVIDENCE: "a claim without evidence"}
        negative = [f"{said.get(v, v.value)} counts {weights[v]:g}" for v in present if weights[v] < 0]
        why = f": {', '.join(negative)}" if negative else ""
        return f"score {score:g}: the mean of the claims' weights ({shown}{why}), clamped to [0, 1]"


class FRFactualCorrectnessMetric(_FRMetric):
    """Factual correctness of ``actual_output`` against ``expected_output`` (``--metrics
    factual_correctness``): F-beta (``fc_mode="F1"``), precision or recall of the claims of both."""

    title = "FR Factual Correctness"

    def __init__(self, threshold: float = 0.5, *, fc_mode: str = "F1", beta: float = 1.0, **options: Any) -> None:
        super().__init__(threshold, **options)
        self.fc_mode = fc_mode
        self.beta = beta

    def command_metric(self) -> Metric:
        return command_metric("factual_correctness", mode=self.fc_mode, beta=self.beta)

    def describe(self, scored: Scored) -> str:
        precision, recall = scored.result.get("precision"), scored.result.get("recall")
        parts = [f"{scored.result.get('mode', self.fc_mode)} {scored.score:.3f}"]
        for label, value in (("precision", precision), ("recall", recall)):
            if isinstance(value, float) and not math.isnan(value):
                parts.append(f"{label} {value:.3f}")
        text = ", ".join(parts)
        extra = scored.unsupported_claims("response")
        missed = scored.unsupported_claims("reference")
        if extra:
            text += f"; claims of the output the expected output does not support: {_quoted(extra)}"
        if missed:
            text += f"; claims of the expected output the output does not support: {_quoted(missed)}"
        return text


__all__ = ["FRFactualCorrectnessMetric", "FRFaithfulnessMetric", "SampleNotScored", "context_texts"]

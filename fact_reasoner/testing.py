"""A pytest-friendly check for RAG applications: is a response supported by its contexts?

::

    from fact_reasoner.testing import assert_factual

    def test_answer_is_grounded():
        answer = my_rag_app("Where was Marie Curie born?")   # "Marie Curie was born in Warsaw."
        assert_factual(answer, ["Marie Curie was born in Warsaw in 1867."], min_precision=0.9)

:func:`assert_factual` assesses the response against the given contexts with the offline
stack (the shipped cross-encoder NLI unless ``nli=`` says otherwise; the atoms come from the
local LLM atomizer unless the test gives them) and raises :class:`AssertionError` listing the
atoms that are not supported when the factual precision is below ``min_precision``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .reasoner import FactReasoner
from .schema import Context, OutputRecord
from .settings.config import PipelineConfig

__all__ = ["assert_factual"]

#: the settings :func:`assert_factual` starts from: the shipped cross-encoder judges, FR2
DEFAULT_SETTINGS: dict[str, Any] = {"nli": "cross-encoder", "version": 2}


def assert_factual(
    response: str,
    contexts: Sequence[str | Mapping[str, Any] | Context],
    min_precision: float = 1.0,
    *,
    question: str = "",
    atoms: Sequence[str] | None = None,
    assessor: FactReasoner | None = None,
    config: PipelineConfig | None = None,
    **settings: Any,
) -> OutputRecord:
    """Assess ``response`` against ``contexts`` and fail the test when its factual precision
    (supported atoms / atoms) is below ``min_precision``; returns the assessment otherwise.

    ``contexts``: texts, ``{text, title?, id?}`` objects or :class:`~fact_reasoner.schema.Context`.
    ``atoms``: the claims to check, when the test knows them (no language model is needed then);
    otherwise the response is atomized by the LLM backend of the settings. The assessor is
    ``assessor``, else one built from ``config``, else from :data:`DEFAULT_SETTINGS` updated
    with ``settings`` (any setting by its flag name: ``version=3``, ``nli="align"`` …). A
    response with no atoms has no precision and fails.
    """
    if not 0.0 <= min_precision <= 1.0:
        raise ValueError(f"min_precision must be within [0, 1], got {min_precision}")
    if assessor is None:
        if config is None:
            config = PipelineConfig.model_validate(DEFAULT_SETTINGS | settings)
        elif settings:
            config = config.with_options(**settings)
        assessor = FactReasoner(config)
    elif config is not None or settings:
        raise ValueError("give either an assessor, or a config / settings to build one")
    record: dict[str, Any] = {
        "input": question,
        "output": response,
        "contexts": [dict(c) if isinstance(c, Mapping) else c for c in contexts],
    }
    if atoms is not None:
        record["atoms"] = [{"id": f"a{i}", "text": text} for i, text in enumerate(atoms)]
    result = assessor.assess(record)
    precision = result.factuality_score
    if precision is None or precision != precision:  # an abstention, or no atoms (NaN)
        why = "it abstained" if getattr(result, "abstained", False) else "it has no atoms"
        raise AssertionError(f"the response has no factual precision ({why}): {response!r}")
    if precision < min_precision:
        unsupported = [a for a in result.atoms if a.prediction.value == "NS" and getattr(a, "checkworthy", True)]
        listed = "\n".join(
            f"  - {a.text!r} (P(true) = {a.probability:.2f}"
            + (f"; {a.evidence[0].relation.value} by {a.evidence[0].context}" if a.evidence else "; no evidence")
            + ")"
            for a in unsupported
        )
        raise AssertionError(
            f"factual precision {precision:.2f} < {min_precision:.2f}: {len(unsupported)} of "
            f"{result.num_atoms} atom(s) not supported by the contexts:\n{listed}"
        )
    return result

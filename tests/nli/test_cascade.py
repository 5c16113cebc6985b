"""The cascade NLI backend: which pairs the fast judge keeps, which go to the second judge."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fact_reasoner.nli.base import NLIJudgement
from fact_reasoner.nli.cascade import CascadeNLI, is_uncertain


class ScriptedJudge:
    """Gives each pair the probabilities listed for its hypothesis and remembers what it was asked."""

    def __init__(self, name: str, answers: dict[str, dict[str, float] | None]) -> None:
        self.name = name
        self.identity = f"scripted:{name}"
        self.answers = answers
        self.asked: list[str] = []

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        self.asked += [h for _, h in pairs]
        out = []
        for _, hypothesis in pairs:
            answer = self.answers[hypothesis]
            out.append(
                NLIJudgement.failure("scripted failure") if answer is None else NLIJudgement.from_probabilities(answer)
            )
        return out


def p(e: float, c: float) -> dict[str, float]:
    return {"entailment": e, "neutral": 1 - e - c, "contradiction": c}


FAST = {
    "sure entailed": p(0.95, 0.01),
    "sure neutral": p(0.05, 0.03),
    "unsure entailed": p(0.6, 0.1),
    "unsure contradicted": p(0.1, 0.5),
    "fast failed": None,
}
SECOND = {
    "unsure entailed": p(0.1, 0.85),
    "unsure contradicted": p(0.02, 0.9),
    "fast failed": None,
    "sure entailed": p(0.0, 1.0),
    "sure neutral": p(0.9, 0.0),
}


def test_only_uncertain_and_failed_pairs_go_to_the_second_judge():
    fast, second = ScriptedJudge("fast", FAST), ScriptedJudge("second", SECOND)
    cascade = CascadeNLI(fast, second, band=(0.2, 0.8))
    hypotheses = list(FAST)
    results = cascade.judge([("premise", h) for h in hypotheses])
    assert second.asked == ["unsure entailed", "unsure contradicted", "fast failed"]
    by_h = dict(zip(hypotheses, results))
    assert by_h["sure entailed"].probabilities["entailment"] == pytest.approx(0.95)  # fast verdict kept
    assert by_h["sure neutral"].label.value == "neutral"
    assert by_h["unsure entailed"].label.value == "contradiction"  # the second judge's verdict
    assert by_h["unsure contradicted"].probabilities["contradiction"] == pytest.approx(0.9)
    # failed by both: failed, not the fast judge's (absent) verdict
    assert by_h["fast failed"].failed
    assert cascade.stats() == {"decided_by_fast": 2, "sent_to_second": 3}


def test_band_edges():
    fast, second = ScriptedJudge("fast", FAST), ScriptedJudge("second", SECOND)
    alone = CascadeNLI(fast, second, band=(0.5, 0.5))  # empty band: the fast judge decides all it can
    alone.judge([("premise", "unsure entailed"), ("premise", "sure neutral")])
    assert second.asked == []
    everything = CascadeNLI(fast, second, band=(0.0, 1.0))
    everything.judge([("premise", "sure entailed"), ("premise", "sure neutral")])
    assert second.asked == ["sure entailed", "sure neutral"]
    assert is_uncertain(NLIJudgement.from_probabilities(p(0.79, 0.0)), (0.2, 0.8))
    assert not is_uncertain(NLIJudgement.from_probabilities(p(0.81, 0.0)), (0.2, 0.8))


@pytest.mark.parametrize("band", [(0.8, 0.2), (-0.1, 0.5), (0.5, 1.2)])
def test_a_band_must_be_ordered_within_0_and_1(band):
    with pytest.raises(ValueError, match="band"):
        CascadeNLI(ScriptedJudge("a", {}), ScriptedJudge("b", {}), band=band)


def test_identity_names_both_judges_and_the_band():
    cascade = CascadeNLI(ScriptedJudge("a", {}), ScriptedJudge("b", {}), band=(0.1, 0.9))
    assert cascade.identity == "cascade:[scripted:a]:[scripted:b]:band=0.1,0.9"


def test_real_cascade_of_the_shipped_cross_encoder_and_align():
    pytest.importorskip("onnxruntime")
    from fact_reasoner.nli.align import make_align
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from fact_reasoner.settings.config import PipelineConfig

    fast = CrossEncoderNLI()
    try:
        second = make_align(PipelineConfig().models)
    except Exception as error:  # the align backend needs the retrieval extra's embedder
        pytest.skip(f"align unavailable: {error}")
    pairs = [
        ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in 1867."),
        ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Vienna."),
        ("The Seine flows through Paris.", "Marie Curie liked cycling."),
    ]
    fast_alone = fast.judge(pairs)
    cascade = CascadeNLI(fast, second, band=(0.2, 0.8))
    results = cascade.judge(pairs)
    sent = [is_uncertain(j, cascade.band) for j in fast_alone]
    assert cascade.stats()["sent_to_second"] == sum(sent)
    second_alone = second.judge([pair for pair, s in zip(pairs, sent) if s])
    expected = iter(second_alone)
    for result, fast_result, was_sent in zip(results, fast_alone, sent):
        reference = next(expected) if was_sent else fast_result
        assert result.probabilities == pytest.approx(reference.probabilities)


def test_cascade_from_the_config_and_its_start_up_check():
    pytest.importorskip("onnxruntime")
    from fact_reasoner.errors import StageUnavailable
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from fact_reasoner.nli.factory import NLI_BACKENDS, make_model_nli
    from fact_reasoner.settings.config import PipelineConfig
    from fact_reasoner.settings.registry import Extra
    from fact_reasoner.stages import Stages

    config = PipelineConfig(models={"nli": "cascade", "nli_cascade_second": "align", "nli_cascade_band": 0.25})
    backend = make_model_nli(config)
    assert isinstance(backend, CascadeNLI) and isinstance(backend.fast, CrossEncoderNLI)
    assert backend.second.name == "align" and backend.band == (0.25, 0.75)
    with pytest.raises(ValueError, match="nli_cascade_second"):
        PipelineConfig(models={"nli": "cascade", "nli_cascade_second": "cascade"})
    with pytest.raises(ValueError, match="nli_cascade_band"):
        PipelineConfig(models={"nli_cascade_band": 0.7})
    # a second judge whose package is missing stops the run at start-up, named
    NLI_BACKENDS.register("needs-missing", lambda models, llm: None, extras=(Extra("no_such_module_xyz", "nli"),))
    try:
        missing = PipelineConfig(models={"nli": "cascade", "nli_cascade_second": "needs-missing"})
        with pytest.raises(StageUnavailable, match="--nli-cascade-second needs-missing.*no_such_module_xyz"):
            Stages(missing).preflight(judge=True)
    finally:
        NLI_BACKENDS.unregister("needs-missing")

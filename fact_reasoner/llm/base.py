"""The chat-model protocol every stage talks to, and the shared machinery behind it.

A backend turns a :class:`ChatRequest` into a :class:`ChatResponse`. Both concrete backends
(``local``: llama.cpp in-process; ``openai``: any OpenAI-compatible HTTP endpoint) speak the
OpenAI chat-completions JSON, so :class:`ChatBackend` does everything but the transport:
building the payload, the persistent cache, ``n`` samples on servers that only give one,
a thread pool bounded by the backend's concurrency limit, and counters.

Statistics: :meth:`ChatBackend.stats` returns cumulative counters
(``llm_calls`` = calls that reached the model, ``cache_hits``, ``cache_misses``,
``llm_seconds``, ``prompt_tokens``, ``completion_tokens``, ``llm_errors``, ``http_retries``).
The pipeline takes a snapshot before a record and subtracts it afterwards
(:func:`stats_delta`) to put per-record numbers into the output's ``counters``/``timings``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..cache import ModelCache, cache_key
from ..errors import FactReasonerError

DEFAULT_SEED = 42


class LLMError(FactReasonerError, RuntimeError):
    """A model call that failed for good (after the backend's own retries): the model could not
    be asked. (A reply that cannot be parsed is not an ``LLMError``: the stage handles it.)

    ``unreachable``: the server could not be reached at all (connection refused, unknown host).
    """

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its log-probability and the top alternatives at that position."""

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    text: str
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None


@dataclass(frozen=True)
class ChatRequest:
    """One chat call.

    ``prompt_version`` is the stage's tag (``atomizer/v1``, ``nli-llm/v2`` …): part of the cache
    key, so a changed prompt never replays an old answer. ``json_schema`` asks for output that
    matches the schema (llama.cpp turns it into a grammar; OpenAI-style servers honour
    ``response_format``). ``n`` > 1 draws several samples; servers that give one choice per
    call are asked ``n`` times with seeds ``seed, seed+1, …``.
    """

    messages: tuple[tuple[str, str], ...]
    prompt_version: str
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = DEFAULT_SEED
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    n: int = 1
    stop: tuple[str, ...] = ()
    #: arguments for the server's chat template, as JSON (``chat_template_kwargs``: vLLM and
    #: llama.cpp's server pass them to the model's template; Granite Guardian's documents and
    #: criterion travel so); absent from the body when None, so other requests' keys are unchanged
    template_kwargs: str | None = None

    @staticmethod
    def of(
        messages: Sequence[tuple[str, str]] | Sequence[dict[str, str]], prompt_version: str, **kw: Any
    ) -> "ChatRequest":
        """Build from ``[(role, content)]`` or ``[{"role", "content"}]``."""
        pairs = tuple((m["role"], m["content"]) if isinstance(m, dict) else (m[0], m[1]) for m in messages)
        return ChatRequest(messages=pairs, prompt_version=prompt_version, **kw)

    def payload(self, model: str | None, *, seed: int | None = None) -> dict[str, Any]:
        """The OpenAI chat-completions body for one sample."""
        body: dict[str, Any] = {
            "messages": [{"role": r, "content": c} for r, c in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed if seed is None else seed,
        }
        if model:
            body["model"] = model
        if self.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": self.json_schema, "strict": True},
            }
        if self.logprobs:
            body["logprobs"] = True
            if self.top_logprobs:
                body["top_logprobs"] = self.top_logprobs
        if self.stop:
            body["stop"] = list(self.stop)
        if self.template_kwargs is not None:
            body["chat_template_kwargs"] = json.loads(self.template_kwargs)
        return body


@dataclass(frozen=True)
class ChatResponse:
    choices: tuple[Choice, ...]
    cached: bool = False
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.choices[0].text


@runtime_checkable
class LLMBackend(Protocol):
    """What stages need from a chat model."""

    name: str
    model: str
    supports_logprobs: bool

    def chat(self, request: ChatRequest) -> ChatResponse: ...

    def chat_many(
        self, requests: Sequence[ChatRequest], *, on_done: Callable[[int], None] | None = None
    ) -> list[ChatResponse | LLMError]: ...

    def stats(self) -> dict[str, float]: ...


def parse_choice(raw_choice: dict[str, Any]) -> Choice:
    """An OpenAI ``choices[i]`` object → :class:`Choice` (logprobs kept when present)."""
    message = raw_choice.get("message") or {}
    text = message.get("content")
    if text is None:
        text = raw_choice.get("text", "")
    logprobs = None
    content = (raw_choice.get("logprobs") or {}).get("content")
    if content:
        logprobs = tuple(
            TokenLogprob(
                token=item.get("token", ""),
                logprob=float(item.get("logprob", -math.inf)),
                top={t.get("token", ""): float(t.get("logprob", -math.inf)) for t in item.get("top_logprobs") or []},
            )
            for item in content
        )
    return Choice(text=text or "", finish_reason=raw_choice.get("finish_reason"), logprobs=logprobs)


def stats_delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    """Per-record counters: ``after - before`` for every numeric key."""
    return {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], (int, float))}


class ChatBackend:
    """Shared behaviour of the concrete backends; subclasses implement :meth:`_complete`.

    ``_complete(body, prompt_version)`` sends one OpenAI chat-completions body and returns the
    response JSON (``prompt_version`` names the stage, e.g. ``atomizer/v1``),
    or raises :class:`LLMError`. ``supports_n`` says whether the server returns ``n`` choices
    in one call (llama.cpp's server does not).
    """

    name = "base"
    supports_logprobs = True
    supports_n = False

    def __init__(self, model: str, *, cache: ModelCache | None, max_concurrency: int = 1):
        self.model = model
        self.cache = cache
        self.max_concurrency = max(1, int(max_concurrency))
        self._lock = threading.Lock()
        self._counters: dict[str, float] = {
            "llm_calls": 0,
            "llm_seconds": 0.0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "llm_errors": 0,
            "http_retries": 0,
        }

    # -- transport (subclasses) -------------------------------------------------------------
    def _complete(self, body: dict[str, Any], prompt_version: str = "") -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError

    # -- public API --------------------------------------------------------------------------
    def chat(self, request: ChatRequest) -> ChatResponse:
        if request.n < 1:
            raise ValueError("n must be >= 1")
        if request.n == 1 or self.supports_n:
            body = request.payload(self.model)
            if request.n > 1:
                body["n"] = request.n
            raw, cached = self._cached_complete(request.prompt_version, body)
            return self._to_response(raw, cached)
        # One choice per call: draw n samples with consecutive seeds, each cached on its own.
        choices: list[Choice] = []
        all_cached = True
        usage: dict[str, int] = {}
        for i in range(request.n):
            raw, cached = self._cached_complete(
                request.prompt_version, request.payload(self.model, seed=request.seed + i)
            )
            part = self._to_response(raw, cached)
            choices.extend(part.choices)
            all_cached &= cached
            for k, v in part.usage.items():
                usage[k] = usage.get(k, 0) + v
        return ChatResponse(tuple(choices), cached=all_cached, usage=usage)

    def chat_many(
        self, requests: Sequence[ChatRequest], *, on_done: Callable[[int], None] | None = None
    ) -> list[ChatResponse | LLMError]:
        """Answer many requests, at most ``max_concurrency`` at a time, in input order;
        ``on_done(i)`` is called as request ``i`` is answered (progress within a stage).

        A request that fails comes back as its :class:`LLMError` instead of raising, so one
        bad call does not lose the others.
        """

        def one(index: int, request: ChatRequest) -> ChatResponse | LLMError:
            try:
                return self.chat(request)
            except LLMError as error:
                return error
            finally:
                if on_done is not None:
                    on_done(index)

        if self.max_concurrency == 1 or len(requests) <= 1:
            return [one(i, r) for i, r in enumerate(requests)]
        with ThreadPoolExecutor(max_workers=self.max_concurrency) as pool:
            return list(pool.map(one, range(len(requests)), requests))

    def stats(self) -> dict[str, float]:
        with self._lock:
            out = dict(self._counters)
        if self.cache is not None:
            out.update(self.cache.stats())
        else:
            out.update({"cache_hits": 0, "cache_misses": 0, "cache_writes": 0})
        return out

    def load(self) -> None:
        """Load the model now rather than at the first call (``fact-reasoner serve`` at start);
        nothing to load for a model behind a server."""

    def prefill(self, request: ChatRequest) -> None:
        """Read ``request``'s prompt into the model's prompt cache without keeping a reply (no
        model-call cache): a later prompt that starts the same way reads only the rest. Nothing
        for a model behind a server."""

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()

    # -- internals ---------------------------------------------------------------------------
    def _count(self, key: str, amount: float = 1) -> None:
        with self._lock:
            self._counters[key] = self._counters.get(key, 0) + amount

    def _count_stage(self, prompt_version: str, timings: dict[str, Any], usage: dict[str, Any]) -> None:
        """Per stage (the prompt tag before ``/``: atomizer, reviser, nli-llm…): calls, prompt
        tokens computed and reused from the server's prompt cache, tokens generated, and the
        server's milliseconds for each — where the time of a cold run goes."""
        stage = prompt_version.split("/")[0].replace("-", "_")
        self._count(f"{stage}_calls")
        prefilled = timings.get("prompt_n", usage.get("prompt_tokens", 0))
        self._count(f"{stage}_prompt_tokens", int(prefilled or 0))
        self._count(f"{stage}_cached_prompt_tokens", int(timings.get("cache_n", 0) or 0))
        self._count(
            f"{stage}_generated_tokens", int(timings.get("predicted_n", usage.get("completion_tokens", 0)) or 0)
        )
        if timings:
            self._count(f"{stage}_prompt_seconds", float(timings.get("prompt_ms", 0.0)) / 1000)
            self._count(f"{stage}_generation_seconds", float(timings.get("predicted_ms", 0.0)) / 1000)

    def _cached_complete(self, prompt_version: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        key = cache_key(self.name, self.model, prompt_version, body)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit, True
        start = time.perf_counter()
        try:
            raw = self._complete(body, prompt_version)
        except LLMError:
            self._count("llm_errors")
            raise
        finally:
            self._count("llm_seconds", time.perf_counter() - start)
        self._count("llm_calls")
        if "error" in raw or not raw.get("choices"):
            self._count("llm_errors")
            raise LLMError(f"{self.name} returned no choices: {str(raw.get('error', raw))[:300]}")
        usage = raw.get("usage") or {}
        self._count("prompt_tokens", int(usage.get("prompt_tokens", 0) or 0))
        self._count("completion_tokens", int(usage.get("completion_tokens", 0) or 0))
        self._count_stage(prompt_version, raw.get("timings") or {}, usage)
        # Keep what a replay needs; drop ids and timings that differ on every call.
        kept = {"choices": raw["choices"], "usage": usage}
        if self.cache is not None:
            self.cache.put(key, kept, backend=self.name, model=self.model, prompt_version=prompt_version, request=body)
        return kept, False

    @staticmethod
    def _to_response(raw: dict[str, Any], cached: bool) -> ChatResponse:
        usage = {k: int(v) for k, v in (raw.get("usage") or {}).items() if isinstance(v, (int, float))}
        return ChatResponse(tuple(parse_choice(c) for c in raw["choices"]), cached=cached, usage=usage)


Factory = Callable[[], LLMBackend]

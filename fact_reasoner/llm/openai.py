"""The ``openai`` backend: any OpenAI-compatible chat-completions endpoint over HTTP.

Works with vLLM, Ollama (``/v1``), llama.cpp's ``llama-server``, LM Studio and OpenAI itself.

- Base URL: ``config.models.base_url``, else ``$FACT_REASONER_BASE_URL``, else ``$OPENAI_BASE_URL``,
  else ``https://api.openai.com/v1``. Requests go to ``<base URL>/chat/completions``, so give
  the URL that ends in ``/v1`` as OpenAI clients do.
- Model: ``config.models.model``, else ``$FACT_REASONER_MODEL``, else ``$OPENAI_MODEL``; required.
- API key: only from the environment (``$FACT_REASONER_API_KEY`` or ``$OPENAI_API_KEY``),
  never from a flag, so it never lands in shell history or output records. Local servers
  need none.
- Retries: on 408/409/429/5xx and on connection errors and timeouts, up to ``max_retries``
  times with exponential backoff and jitter (``backoff · 2^attempt``, capped at 30 s),
  honouring ``Retry-After``. Other 4xx fail at once: retrying a bad request cannot help.
- ``timeout`` seconds per request; at most ``max_concurrency`` requests in flight.
"""

from __future__ import annotations

import os
import random
import threading
import time
from typing import Any

import httpx

from ..cache import ModelCache
from ..errors import connect_reason as _connect_reason
from .base import ChatBackend, LLMError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def resolve_base_url(base_url: str | None) -> str:
    url = (
        base_url
        or os.environ.get("FACT_REASONER_BASE_URL")
        or os.environ.get("OPENAI_BASE_URL")
        or "https://api.openai.com/v1"
    )
    return url.rstrip("/")


def resolve_model(model: str | None) -> str:
    name = model or os.environ.get("FACT_REASONER_MODEL") or os.environ.get("OPENAI_MODEL")
    if not name:
        raise ValueError("the openai backend needs a model: --model NAME or $FACT_REASONER_MODEL")
    return name


class OpenAICompatibleLLM(ChatBackend):
    name = "openai"
    supports_logprobs = True  # most servers do; the NLI judge falls back to sampling if a reply has none
    supports_n = False  # many compatible servers ignore n; sample one at a time for the same result everywhere

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        cache: ModelCache | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_concurrency: int = 4,
        api_key: str | None = None,
    ):
        super().__init__(resolve_model(model), cache=cache, max_concurrency=max_concurrency)
        self.base_url = resolve_base_url(base_url)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        key = (
            api_key
            if api_key is not None
            else os.environ.get("FACT_REASONER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        )
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=self.max_concurrency),
        )
        self._slots = threading.BoundedSemaphore(self.max_concurrency)

    def _complete(self, body: dict[str, Any], prompt_version: str = "") -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        last_problem = "no attempt made"
        unreachable = False
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count("http_retries")
            with self._slots:
                try:
                    response = self._client.post(url, json=body)
                except httpx.ConnectError as error:
                    unreachable = True
                    last_problem = f"cannot reach {self.base_url}: {_connect_reason(error)}"
                    wait = self._wait(attempt, None)
                except (httpx.TimeoutException, httpx.TransportError) as error:
                    unreachable = False
                    last_problem = f"{type(error).__name__}: {error}"
                    wait = self._wait(attempt, None)
                else:
                    if response.status_code == 200:
                        try:
                            return response.json()
                        except ValueError as error:
                            raise LLMError(f"{url} returned invalid JSON: {response.text[:200]}") from error
                    unreachable = False
                    last_problem = f"HTTP {response.status_code}: {response.text[:300]}"
                    if response.status_code not in RETRY_STATUS:
                        raise LLMError(f"{url} → {last_problem}")
                    wait = self._wait(attempt, response.headers.get("retry-after"))
            if attempt < self.max_retries:
                time.sleep(wait)
        if unreachable:
            raise LLMError(f"{last_problem} (after {self.max_retries + 1} attempts)", unreachable=True)
        raise LLMError(f"{url} failed after {self.max_retries + 1} attempts; last: {last_problem}")

    def _wait(self, attempt: int, retry_after: str | None) -> float:
        """Backoff before the next attempt: ``Retry-After`` if the server sent seconds, else
        ``backoff · 2^attempt`` with ±25 % jitter, capped at 30 s."""
        if retry_after:
            try:
                return min(float(retry_after), 60.0)
            except ValueError:
                pass
        return min(self.backoff * (2**attempt), 30.0) * random.uniform(0.75, 1.25)

    def close(self) -> None:
        self._client.close()
        super().close()

"""The ``local`` backend: llama.cpp's server running in-process through ``xllamacpp``.

No separate server and no API key: the GGUF model is loaded into this process on the first
call (the model file is assembled on first use if needed, see :mod:`.models`). Requests go
straight to the server's chat-completions handler, which returns OpenAI-style JSON with
logprobs and honours JSON-schema output. The same server also listens on a free port of
127.0.0.1 (``listening_address``), which is how the ``openai`` backend is tested over real HTTP.

Defaults: temperature 0 and seed 42 (deterministic), threads = all cores, one request slot
(a CPU runs one sequence at a time best; raise ``parallel`` on bigger machines).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from ..cache import ModelCache
from .base import ChatBackend, LLMError
from .models import ModelUnavailable, resolve_local_model

logger = logging.getLogger(__name__)


class LocalLLM(ChatBackend):
    name = "local"
    supports_logprobs = True
    supports_n = False  # llama.cpp's server rejects n > 1

    def __init__(
        self,
        model: str | None = None,
        *,
        cache_dir: Path,
        cache: ModelCache | None = None,
        threads: int | None = None,
        context_size: int = 4096,
        parallel: int = 1,
        verbose: bool = False,
    ):
        self._requested_model = model
        self._cache_dir = Path(cache_dir)
        self.threads = threads or os.cpu_count() or 1
        self.context_size = context_size
        self.parallel = max(1, parallel)
        self.verbose = verbose
        self._server: Any = None
        self._load_lock = threading.Lock()
        # The model name is known without loading (it keys the cache); the file is resolved lazily.
        from .models import DEFAULT_LOCAL_MODEL

        name = model or os.environ.get("FACT_REASONER_MODEL") or DEFAULT_LOCAL_MODEL
        super().__init__(
            Path(name).stem if name.endswith(".gguf") else name, cache=cache, max_concurrency=self.parallel
        )

    @property
    def server(self) -> Any:
        """The xllamacpp server, started on first use."""
        if self._server is None:
            with self._load_lock:
                if self._server is None:
                    self._server = self._start()
        return self._server

    @property
    def listening_address(self) -> str:
        """``http://127.0.0.1:PORT`` of the in-process server (OpenAI API under ``/v1``)."""
        return self.server.listening_address

    def _start(self) -> Any:
        try:
            import xllamacpp
        except ImportError as missing:  # pragma: no cover - depends on the environment
            raise ModelUnavailable(
                "the local backend needs xllamacpp: pip install 'fact-reasoner-offline[llm]'"
            ) from missing
        _, path = resolve_local_model(self._requested_model, self._cache_dir)
        logger.info("loading local model %s (%d threads) …", path.name, self.threads)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.context_size * self.parallel
        params.n_parallel = self.parallel
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.warmup = False
        params.sampling.seed = 42
        params.verbosity = 3 if self.verbose else -1  # -1 silences llama.cpp's per-request log
        return xllamacpp.Server(params)

    def _complete(self, body: dict[str, Any]) -> dict[str, Any]:
        body = dict(body)
        body.pop("model", None)
        # Outside the try: a model that cannot be prepared or loaded is a set-up error that
        # must stop the run, not a per-call failure recorded as a neutral verdict.
        server = self.server
        try:
            result = server.handle_chat_completions(body)
        except LLMError:
            raise
        except Exception as error:  # the binding raises plain exceptions on bad requests
            raise LLMError(f"local model call failed: {error}") from error
        if not isinstance(result, dict):
            raise LLMError(f"local model returned {type(result).__name__}, not a JSON object")
        if "error" in result:
            raise LLMError(f"local model error: {result['error']}")
        return result

    def close(self) -> None:
        self._server = None  # the binding stops the server when the object is released
        super().close()

"""The ``local`` backend: llama.cpp's server running in-process through ``xllamacpp``.

No separate server and no API key: the GGUF model is loaded into this process on the first
call (the model file is assembled on first use if needed, see :mod:`.models`). Requests go
straight to the server's chat-completions handler, which returns OpenAI-style JSON with
logprobs and honours JSON-schema output. The same server also listens on a free port of
127.0.0.1 (``listening_address``), which is how the ``openai`` backend is tested over real HTTP.

Defaults: temperature 0 and seed 42 (deterministic); prompts are read with all cores, and
tokens are generated with all cores only on an idle machine (:func:`generation_threads_for`).

Where a cold run's time goes, and what this backend does about it (measured in
``scripts/benchmark_llm.py``): most of it is prefilling prompts, and each stage's prompt starts
with the same system text and worked examples.

- **One slot per stage.** llama.cpp reuses the longest prompt prefix a slot already holds. The
  atomizer, the reviser and the NLI judge each get their own slot (``id_slot``), so their calls
  no longer evict each other's prefix; other prompts share a fourth slot. Requests still run
  one at a time (a CPU runs one sequence best).
- **Prefix states kept on disk.** After a stage's first call of a process whose prompt was not
  already mostly cached, the slot's KV state is saved to ``<cache dir>/kv/<model>/<stage>.bin``
  (llama.cpp's slot save); the next process restores it at start-up, so it does not prefill
  the worked examples again. A stale state is harmless: llama.cpp reuses only the tokens it
  shares with the new prompt, and the state is saved again.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..cache import ModelCache
from ..interrupts import ends_at_once
from ..settings.registry import install_hint
from .base import ChatBackend, ChatRequest, LLMError
from .models import ModelUnavailable, resolve_local_model

logger = logging.getLogger(__name__)


def generation_threads_for(cores: int, load: float) -> int:
    """Threads that generate tokens, when ``--threads`` is not given: the cores no other
    process is using, g = max(1, cores − round(load)), ``load`` what other processes keep busy
    when the model is loaded (:func:`load_of_others`).

    Why: a generated token passes through every layer with the threads meeting at a barrier
    after each operation, so one thread waiting for a core holds up all of them: on a loaded
    machine one generating thread is several times faster than two. Reading a prompt is not
    slowed that way (a batch of tokens is worth splitting), so prompts keep every core. On an
    idle machine all cores generate faster, and g = cores. The measurements
    (``python -m scripts.benchmark_llm --threads-check``) are in ``docs/measurements.md``.

    >>> generation_threads_for(2, 0.1), generation_threads_for(2, 1.2), generation_threads_for(16, 3.0)
    (2, 1, 13)
    """
    return max(1, min(cores, cores - round(load)))


def load_of_others(window: float = 0.2) -> float:
    """How many cores other processes keep busy now: the CPU time the whole machine spent in a
    short ``window``, less this process's own, divided by the window (Linux ``/proc``); the
    1-minute load average elsewhere.

    Why not the load average: it trails a minute behind and counts this process itself — the
    imports and the judge's model it has just loaded, the ``pip install`` that finished a moment
    ago — so on an idle machine the quick start saw a load of 1.2–1.4 and generated with one
    thread of two (``docs/measurements.md``)."""
    try:
        before_all, before_self = _busy_ticks(), _own_ticks()
        time.sleep(window)
        after_all, after_self = _busy_ticks(), _own_ticks()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    ticks = os.sysconf("SC_CLK_TCK")
    others = (after_all - before_all) - (after_self - before_self)
    return max(0.0, others / ticks / window)


def _busy_ticks() -> int:
    """Clock ticks every core has spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    return sum(fields) - fields[3] - fields[4]


def _own_ticks() -> int:
    """Clock ticks this process has run (user + system, ``/proc/self/stat``)."""
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


#: the stages that get a slot of their own (prompt tags before the "/")
STAGE_SLOTS = ("atomizer", "reviser", "nli-llm")


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
        stage_slots: tuple[str, ...] = STAGE_SLOTS,
        keep_prefix_states: bool = True,
        generation_threads: int | None = None,
        verbose: bool = False,
    ):
        self._requested_model = model
        self._cache_dir = Path(cache_dir)
        cores = os.cpu_count() or 1
        # threads: what prompts are read with (and generation too, when given); generation
        # threads, when neither is given, follow the load (generation_threads_for)
        self.threads = threads or cores
        self._generation_threads = generation_threads or threads
        self.context_size = context_size
        self.stage_slots = tuple(stage_slots)
        # one slot per stage, and one for every other prompt
        self.parallel = len(self.stage_slots) + 1
        self.keep_prefix_states = keep_prefix_states
        self.verbose = verbose
        self._server: Any = None
        self._load_lock = threading.Lock()
        self._slot_lock = threading.Lock()
        self._stages_seen: set[str] = set()
        # The model name is known without loading (it keys the cache); the file is resolved lazily.
        from .models import DEFAULT_LOCAL_MODEL

        name = model or os.environ.get("FACT_REASONER_MODEL") or DEFAULT_LOCAL_MODEL
        # one request at a time: on a CPU, concurrent sequences only share the same cores
        super().__init__(Path(name).stem if name.endswith(".gguf") else name, cache=cache, max_concurrency=1)
        self.prefix_state_dir = self._cache_dir / "kv" / self.model

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
            raise ModelUnavailable(f"the local backend needs xllamacpp: {install_hint('llm')}") from missing
        _, path = resolve_local_model(self._requested_model)  # the model store, not the call cache
        generation = self._generation_threads or generation_threads_for(self.threads, load_of_others())
        logger.info("loading local model %s (%d threads, %d generating) …", path.name, self.threads, generation)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_ctx = self.context_size * self.parallel
        params.n_parallel = self.parallel
        params.cpuparams.n_threads = generation
        params.cpuparams_batch.n_threads = self.threads
        params.warmup = False
        params.sampling.seed = 42
        params.verbosity = 3 if self.verbose else -1  # -1 silences llama.cpp's per-request log
        if self.keep_prefix_states:
            self.prefix_state_dir.mkdir(parents=True, exist_ok=True)
            params.endpoint_slots = True
            # llama.cpp appends the file name to this path as is: the separator must be there
            params.slot_save_path = str(self.prefix_state_dir) + os.sep
        with ends_at_once():  # one call into C that holds the GIL for seconds: Ctrl-C ends the process at once
            server = xllamacpp.Server(params)
        if self.keep_prefix_states:
            for stage in self.stage_slots:
                self._slot_action(server, stage, "restore")
        return server

    def slot_of(self, prompt_version: str) -> int:
        """The slot a prompt runs in: its stage's own, else the shared last one."""
        stage = prompt_version.split("/")[0]
        return self.stage_slots.index(stage) if stage in self.stage_slots else len(self.stage_slots)

    def _slot_action(self, server: Any, stage: str, action: str) -> bool:
        """Save or restore a stage's slot state (``<stage>.bin`` in the prefix state folder)."""
        filename = f"{stage}.bin"
        if action == "restore" and not (self.prefix_state_dir / filename).is_file():
            return False
        try:
            import httpx

            response = httpx.post(
                f"{server.listening_address}/slots/{self.stage_slots.index(stage)}?action={action}",
                json={"filename": filename},
                timeout=60,
            )
        except Exception as error:  # an optimisation only: a failure costs time, not results
            logger.debug("could not %s the %s prefix state: %s", action, stage, error)
            return False
        if response.status_code != 200:
            logger.debug(
                "could not %s the %s prefix state: HTTP %s %s", action, stage, response.status_code, response.text[:200]
            )
            return False
        return True

    def _complete(self, body: dict[str, Any], prompt_version: str = "") -> dict[str, Any]:
        body = dict(body)
        body.pop("model", None)
        body["id_slot"] = self.slot_of(prompt_version)
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
        self._keep_prefix(server, prompt_version, result)
        return result

    def _keep_prefix(self, server: Any, prompt_version: str, result: dict[str, Any]) -> None:
        """After a stage's first call in this process: save its slot when the prompt had to be
        mostly prefilled (no state, or a stale one), so the next process starts from it."""
        stage = prompt_version.split("/")[0]
        if not self.keep_prefix_states or stage not in self.stage_slots:
            return
        with self._slot_lock:
            if stage in self._stages_seen:
                return
            self._stages_seen.add(stage)
        timings = result.get("timings") or {}
        reused, computed = int(timings.get("cache_n", 0) or 0), int(timings.get("prompt_n", 0) or 0)
        if reused < computed:
            self._slot_action(server, stage, "save")

    def load(self) -> None:
        """Load the model now (otherwise its first call does)."""
        self.server  # noqa: B018 - the property loads it

    def prefill(self, request: ChatRequest) -> None:
        """Read ``request``'s prompt into its stage's slot (one token generated, no call cached,
        no counter): the stage's next call reads only what follows the shared prefix, and a
        stage's first call of the process saves the slot for the next process."""
        body = request.payload(self.model) | {"max_tokens": 1}
        body.pop("response_format", None)  # the grammar is for replies, not for reading a prompt
        self._complete(body, request.prompt_version)

    def close(self) -> None:
        self._server = None  # the binding stops the server when the object is released
        super().close()

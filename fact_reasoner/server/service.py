"""What the server does with a request: the command line's job, one item at a time.

:class:`AssessmentService` builds the stages once, when the server starts: the judge (the NLI
model behind a :class:`~fact_reasoner.server.batching.MicroBatchNLI`), the inference engine,
and — only when a request needs one — the language model, the atomizer, the reviser, the
retriever and the sentence embedder. For each request it builds the same job the command line
builds (:class:`~fact_reasoner.runner.AssessDataset` for ``fact-reasoner``,
:class:`~fact_reasoner.runner.jobs.RagasDataset` for ``fact-reasoner ragas``) around those
shared stages and asks :class:`~fact_reasoner.runner.RecordService` for the row: the row a
dataset run writes for a one-line input file holding the request's body, with the same
``record_key`` / ``sample_key`` and ``source_line`` 1.

Each request gets its own NLI pair memo (a :class:`~fact_reasoner.nli.cache.CachedNLI` in front
of the shared batcher, reading and writing the persistent pair cache when caching is on), so
nothing grows with the number of requests and a row's NLI counters are its own. The shared
stages' cumulative counters are at ``GET /v1/info``.

A stage that fails gives an :class:`ApiError` naming the stage (``atomize``, ``revise``,
``retrieve``, ``nli``, ``infer``, ``metrics`` …), never a row.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import runner
from ..errors import ConformalError, FactReasonerError, NoEvidence, RecordFailed, SetupError
from ..io import NumberedRecord, describe_validation_error, numbered_keys
from ..nli.base import describe_judge
from ..nli.cache import CachedNLI
from ..nli.factory import NLI_BACKENDS
from ..settings.config import PipelineConfig
from ..stages import Stages
from ..version import __version__
from .batching import MicroBatchNLI
from .options import BATCH_WAIT_SECONDS, Limits
from .settings import RequestSetting, UnsafeSetting, apply_request_settings, request_settings

__all__ = ["ApiError", "AssessmentService"]

log = logging.getLogger(__name__)

#: the settings groups of each endpoint (those of its command) and the settings it fixes
ASSESS_GROUPS = ("pipeline", "graph", "scores", "engine", "models", "retrieval", "cache", "execution", "gate")
RAGAS_GROUPS = ("graph", "engine", "models", "cache", "execution", "gate")

#: where a request's item says it came from (its ``source_line`` is 1, as in a one-line file)
REQUEST_PATH = "request"


class ApiError(FactReasonerError):
    """A request that gets no row: the HTTP status, a short code, the message and any fields
    that name what went wrong (``setting``, ``limit``, ``stage``)."""

    def __init__(self, status: int, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields

    def body(self) -> dict[str, Any]:
        """The one shape of every error the server answers."""
        return {"error": {"status": self.status, "code": self.code, "message": self.message, **self.fields}}


# -- shared stages, and which stage failed ---------------------------------------------------------

#: the attribute a failing stage's exception carries, naming that stage
STAGE_ATTRIBUTE = "_fact_reasoner_stage"


class SharedStage:
    """A stage the server builds once (on first use, under a lock) and lends to every request.

    An exception raised by a call into it is tagged with the stage's name (the innermost stage
    that raised it), so the error response says which stage failed. Its cumulative ``stats``
    are not lent: a request's row counts its own work only."""

    def __init__(self, stage: str, build: Callable[[], Any]) -> None:
        self._stage = stage
        self._build = build
        self._target: Any = None
        self._lock = threading.Lock()

    def target(self) -> Any:
        if self._target is None:
            with self._lock:
                if self._target is None:
                    self._target = self._build()
        return self._target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "stats":
            raise AttributeError(name)
        value = getattr(self.target(), name)
        if not callable(value):
            return value
        stage = self._stage

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except BaseException as error:
                if getattr(error, STAGE_ATTRIBUTE, None) is None:
                    try:
                        setattr(error, STAGE_ATTRIBUTE, stage)
                    except AttributeError:  # an exception type without a __dict__
                        pass
                raise

        return call


def failed_stage(error: BaseException, default: str) -> str:
    """The stage an exception came from: its tag (:class:`SharedStage`), the NLI failure policy
    (``NLI: …`` from :func:`~fact_reasoner.stages.check_judged`), else ``default``."""
    tagged = getattr(error, STAGE_ATTRIBUTE, None)
    if tagged:
        return str(tagged)
    if isinstance(error, RecordFailed) and str(error).startswith(("NLI", "--nli")):
        return "nli"
    return default


def stage_error(error: BaseException, default: str) -> ApiError:
    """The error response of a request whose stage failed: 503 when the stage cannot be set up
    at all, 502 when a server it needs could not be reached, 500 otherwise."""
    stage = failed_stage(error, default)
    message = (
        f"{stage}: {type(error).__name__}: {error}" if not isinstance(error, RecordFailed) else f"{stage}: {error}"
    )
    if isinstance(error, NoEvidence):  # the request gave nothing to check against: its own error
        return ApiError(422, "no_evidence", f"{error.stage}: {error}", stage=error.stage)
    if isinstance(error, SetupError):
        return ApiError(503, "stage_unavailable", message, stage=stage)
    if isinstance(error, RecordFailed) and error.unreachable:
        return ApiError(502, "stage_unreachable", message, stage=stage)
    return ApiError(500, "stage_failed", message, stage=stage)


# -- the language model, loaded at start ------------------------------------------------------------

#: seconds a caller is told to wait while the language model loads (a poll, not an estimate)
LOADING_RETRY_SECONDS = 5


class LanguageModelLoad:
    """The language model made ready on a thread from the server's start (its prompts read):
    ``state`` is ``loading``, then ``ready`` or ``failed`` (``error`` says why; a request that
    needs the model then meets that error itself); ``seconds`` how long it took."""

    def __init__(self, load: Callable[[], None]) -> None:
        self.state = "loading"
        self.error: str | None = None
        self.seconds: float | None = None
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, args=(load,), name="fact-reasoner-load-llm", daemon=True)
        self._thread.start()

    @classmethod
    def failed(cls, error: BaseException) -> "LanguageModelLoad":
        """A load that failed before any thread started (the model could not be read)."""

        def fail() -> None:
            raise error

        return cls(fail)

    def _run(self, load: Callable[[], None]) -> None:
        try:
            load()
        except Exception as error:  # reported by /healthz and met again by the requests that need it
            self.error = f"{type(error).__name__}: {error}"
            self.state = "failed"
            log.warning("the language model could not be loaded: %s", self.error)
        else:
            self.state = "ready"
            log.info("the language model is ready (%.1f s)", time.monotonic() - self._started)
        finally:
            self.seconds = time.monotonic() - self._started

    def elapsed(self) -> float:
        return self.seconds if self.seconds is not None else time.monotonic() - self._started

    def retry_after(self) -> int:
        return LOADING_RETRY_SECONDS

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the load has ended (tests, and a server that must not answer before)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def describe(self) -> dict[str, Any]:
        """What ``/healthz`` says of it."""
        out: dict[str, Any] = {"state": self.state, "seconds": round(self.elapsed(), 1)}
        if self.error is not None:
            out["error"] = self.error
        return out


# -- the service ------------------------------------------------------------------------------------


class AssessmentService:
    """The stages of a server, loaded once, and the rows of its requests (module docstring).

    Parameters
    ----------
    config:
        The server's settings (a request may change only :func:`~.settings.request_settings`).
    limits:
        The largest record a request may send.
    nli_backend:
        A ready judge instead of the one ``config`` names (the bare model, without a cache).
    batch_wait_seconds, batch_max_pairs:
        The micro-batching window of the judge (:class:`MicroBatchNLI`).
    ragas_atomizer:
        ``auto``, ``llm`` or ``sentence``: how ``/v1/ragas`` splits texts into claims (as
        ``fact-reasoner ragas --atomizer``).
    load_language_model:
        Load the language model now, and read the atomizer's and reviser's instructions into its
        prompt cache on a thread (:class:`LanguageModelLoad`): the server listens meanwhile,
        ``/healthz`` and a request that needs the model answer 503 with ``Retry-After`` until it
        is ready. False: it loads at the first request that needs it.
    """

    def __init__(
        self,
        config: PipelineConfig,
        limits: Limits = Limits(),
        *,
        nli_backend: Any = None,
        batch_wait_seconds: float = BATCH_WAIT_SECONDS,
        batch_max_pairs: int = 512,
        ragas_atomizer: str = "auto",
        load_language_model: bool = False,
    ) -> None:
        self.config = config
        self.limits = limits
        self.ragas_atomizer = ragas_atomizer
        self.base = Stages(config)
        self.base.engine  # noqa: B018 - built now: a bad engine option stops the server at start
        if config.scores.conformal is not None:  # a filter fitted for other settings stops it too
            from ..conformal import load_filter

            loaded = load_filter(config.scores.conformal)
            loaded.filter.check(config.settings(), source=f"--conformal {loaded.path}")
        self.cache = None
        if config.cache.use_cache:
            from ..cache import ModelCache

            self.cache = ModelCache.in_dir(config.cache.cache_dir)
        self.judge_name: str | None = None
        self.judge_identity: str | None = None
        self.batcher: MicroBatchNLI | None = None
        if nli_backend is None and config.models.nli_choice.model is not None:
            from ..nli.factory import make_model_nli

            self.base.preflight(judge=True)
            nli_backend = make_model_nli(config, self.base.llm)  # loaded once, now
        if nli_backend is not None:
            self.batcher = MicroBatchNLI(nli_backend, wait_seconds=batch_wait_seconds, max_pairs=batch_max_pairs)
            self.judge_name = describe_judge(nli_backend)  # what a person calls it, not its cache identity
            self.judge_identity = self.batcher.identity
        self.stages = {
            "engine": SharedStage("infer", lambda: self.base.engine),
            "llm": SharedStage("llm", self.base.llm),
            "atomizer": SharedStage("atomize", self.base.atomizer),
            "reviser": SharedStage("revise", self.base.reviser),
            "retriever": SharedStage("retrieve", self.base.retriever),
            "embedder": SharedStage("embed", self.base.embedder),
        }
        self.assess_settings = request_settings(ASSESS_GROUPS)
        self.ragas_settings = request_settings(RAGAS_GROUPS, excluded=("version",))
        self._checked: set[tuple[bool, bool]] = set()
        self._notes: set[str] = set()
        self._check_lock = threading.Lock()
        self.judge_uses_llm = (
            nli_backend is not None
            and config.models.nli_choice.model is not None
            and any("llm" in NLI_BACKENDS.entry(member.name).uses for member in config.models.nli_choice.judges)
        )
        self.language_model: LanguageModelLoad | None = None
        if load_language_model:
            try:
                self._load_model()
            except Exception as error:  # reported by /healthz; a request that needs it meets it again
                self.language_model = LanguageModelLoad.failed(error)
            else:
                self.language_model = LanguageModelLoad(self._read_prompts)

    def _load_model(self) -> None:
        """The language model loaded now, before the server listens: llama.cpp holds Python's
        lock while it reads the model (measured: no other thread ran for the 19 s of a load at
        load average 11), so a server loading it on a thread could not answer meanwhile."""
        self.base.preflight(atomize=True)
        self.stages["llm"].target().load()

    def _read_prompts(self) -> None:
        """What :class:`LanguageModelLoad` runs on its thread while the server listens: the
        atomizer's and the reviser's instructions and worked examples read into the model's
        prompt cache (llama.cpp lets other threads run meanwhile), so that the first request
        reads only its own text."""
        self.stages["atomizer"].target().prefill_prompt()
        if self.config.models.revise:
            self.stages["reviser"].target().prefill_prompt()

    def refuse_while_loading(self, needs_language_model: bool) -> None:
        """503 ``loading`` with ``retry_after`` for a request that needs the language model while
        it loads; nothing otherwise (a load that failed lets the request meet its own error)."""
        load = self.language_model
        if needs_language_model and load is not None and load.state == "loading":
            raise ApiError(
                503,
                "loading",
                f"the language model is loading ({load.elapsed():.0f} s so far); retry after {load.retry_after()} s",
                stage="llm",
                retry_after=load.retry_after(),
            )

    def record_needs_language_model(self, item: NumberedRecord) -> bool:
        """Whether ``/v1/assess`` of this record asks the language model: its atoms are made here
        (atomize, revise), or the judge is the LLM judge."""
        return item.record.atoms is None or self.judge_uses_llm

    def sample_needs_language_model(self) -> bool:
        """Whether ``/v1/ragas`` may ask the language model: claims from the LLM atomizer, or the
        LLM judge."""
        return self.ragas_atomizer != "sentence" or self.judge_uses_llm

    def close(self, wait_seconds: float = 30.0) -> None:
        """Stop the batcher's thread (waiting at most ``wait_seconds`` for the batch in hand)."""
        if self.batcher is not None:
            self.batcher.close(wait_seconds)

    # -- what each request gets -----------------------------------------------------------------

    def _request_nli(self) -> CachedNLI | None:
        """The request's own pair memo in front of the shared batcher (and the persistent pair
        cache), under the judge's identity: the command line's cache keys."""
        if self.batcher is None:
            return None
        return CachedNLI(SharedStage("nli", lambda: self.batcher), self.cache, identity=self.batcher.identity)

    def _lent_stages(self) -> dict[str, Any]:
        nli = self._request_nli()
        return dict(self.stages, **({"nli": nli} if nli is not None else {}))

    def _check_stages(self, atomize: bool, retrieve: bool) -> None:
        """Before a request that needs the atomizer or the retriever: their packages (once)."""
        wanted = (atomize, retrieve and self.config.retrieval.service_type != "supplied")
        if wanted in self._checked or not any(wanted):
            return
        with self._check_lock:
            try:
                self.base.preflight(atomize=wanted[0], retrieve=wanted[1])
            except SetupError as error:
                stage = "atomize" if wanted[0] else "retrieve"
                raise ApiError(503, "stage_unavailable", f"{stage}: {error}", stage=stage) from None
            self._checked.add(wanted)

    def settings_for(self, values: Mapping[str, Any], allowed: list[RequestSetting], **fixed: Any) -> PipelineConfig:
        """The request's settings: the server's, with the values it may change."""
        try:
            config = apply_request_settings(self.config, values, allowed)
        except UnsafeSetting as error:
            raise ApiError(422, "setting_refused", str(error), setting=error.setting) from None
        return config.with_options(**fixed) if fixed else config

    # -- POST /v1/assess --------------------------------------------------------------------------

    def parse_record(self, raw: Any) -> NumberedRecord:
        """The request's record, checked as a line of an input file is, and against the limits."""
        from ..schema import InputRecord

        if not isinstance(raw, dict):
            raise ApiError(
                422, "invalid_record", f"expected a JSON object (one input record), got {type(raw).__name__}"
            )
        try:
            record = InputRecord.model_validate(raw)
        except ValidationError as error:
            raise ApiError(422, "invalid_record", describe_validation_error(error)) from None
        for name, items, limit in (
            ("max_atoms", record.atoms, self.limits.max_atoms),
            ("max_contexts", record.contexts, self.limits.max_contexts),
        ):
            if items is not None and len(items) > limit:
                what = name.removeprefix("max_")
                raise ApiError(
                    422,
                    "over_limit",
                    f"the record has {len(items)} {what}; this server takes at most {limit} ({name})",
                    limit=name,
                    value=limit,
                )
        return NumberedRecord(REQUEST_PATH, 1, numbered_keys()(raw), record)

    def assess(self, item: NumberedRecord, values: Mapping[str, Any]) -> dict[str, Any]:
        """The row of ``fact-reasoner --input-file`` for a one-line file holding the record,
        with the server's settings and the request's ``values``. Runs on a worker thread."""
        from ..pipelines import make_pipeline

        config = self.settings_for(values, self.assess_settings)
        record = item.record
        if config.models.nli_choice.model is None and record.relations is None and self.batcher is None:
            raise ApiError(
                422,
                "invalid_record",
                "this server judges with the records' own relations (--nli precomputed); the record has no `relations`",
            )
        self._check_stages(atomize=record.atoms is None, retrieve=record.contexts is None)
        try:
            assessor = make_pipeline(config, **self._lent_stages())
        except ConformalError as error:  # the request's settings are not those the filter was fitted for
            raise ApiError(422, "setting_refused", str(error), setting="conformal") from None
        job = runner.AssessDataset(assessor=assessor, progress=False)
        try:
            return runner.RecordService(job, [item]).row(item)
        except ApiError:
            raise
        except Exception as error:
            raise stage_error(error, "assess") from error

    # -- POST /v1/ragas ---------------------------------------------------------------------------

    def ragas_metrics(self, names: str | None) -> list[Any]:
        """The metrics a request names (comma-separated; default: the command's), with the
        command's default options."""
        from ..metrics.base import make_metric
        from ..runner.jobs import DEFAULT_METRICS

        wanted = [n.strip() for n in (names or DEFAULT_METRICS).split(",") if n.strip()]
        if not wanted:
            raise ApiError(422, "invalid_metrics", "no metric named")
        metrics = []
        for name in wanted:
            try:
                metrics.append(make_metric(name))
            except (ValueError, KeyError) as error:
                raise ApiError(422, "invalid_metrics", str(error), metric=name) from None
        return metrics

    def parse_sample(self, raw: Any, metrics: list[Any]) -> Any:
        """The request's sample, checked as a line of ``fact-reasoner ragas``'s input is."""
        from ..metrics.sample import NumberedSample, sample_from_row

        sample = sample_from_row(raw, needs_response=any(m.needs_response for m in metrics))
        if isinstance(sample, str):
            raise ApiError(422, "invalid_sample", sample)
        contexts = sample.retrieved_contexts or []
        if len(contexts) > self.limits.max_contexts:
            raise ApiError(
                422,
                "over_limit",
                f"the sample has {len(contexts)} contexts; this server takes at most "
                f"{self.limits.max_contexts} (max_contexts)",
                limit="max_contexts",
                value=self.limits.max_contexts,
            )
        return NumberedSample(REQUEST_PATH, 1, numbered_keys()(raw), sample)

    def ragas(self, item: Any, metrics: list[Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """The row of ``fact-reasoner ragas --input-file`` for a one-line file holding the sample.
        Runs on a worker thread."""
        from ..metrics.context import MetricContext
        from ..runner.jobs import RagasDataset

        config = self.settings_for(values, self.ragas_settings, version=2)
        lent = self._lent_stages()
        context = MetricContext(
            config,
            atomizer=self.ragas_atomizer,
            nli=lent.get("nli"),
            engine=lent["engine"],
            llm=lent["llm"],
            embedder=lent["embedder"],
            atom_cache=self.cache if self.ragas_atomizer != "sentence" else None,
        )
        try:
            context.preflight(metrics)
        except SetupError as error:
            raise ApiError(503, "stage_unavailable", f"metrics: {error}", stage="metrics") from None
        job = RagasDataset(
            progress=False,
            pipeline=config,
            context=context,
            metrics=metrics,
            atomizer=self.ragas_atomizer,
            needs_response=any(m.needs_response for m in metrics),
        )
        try:
            row = runner.RecordService(job, [item]).row(item)
        except RecordFailed as error:  # a metric that could not be computed: no scores at all
            raise ApiError(500, "stage_failed", str(error), stage="metrics") from error
        except Exception as error:
            raise stage_error(error, "metrics") from error
        for note in job.worker_notes:  # what `ragas` prints beside its summary (an atomizer that fell back …), once
            if note not in self._notes:
                self._notes.add(note)
                log.warning("note: %s", note)
        return row

    # -- GET /v1/info -------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """Version, judge, engine, the server's settings and those a request may change."""

        def listed(allowed: list[RequestSetting]) -> list[dict[str, Any]]:
            out = []
            for setting in allowed:
                group = getattr(self.config, setting.group)
                field = next(n for n, f in type(group).model_fields.items() if _dest(n, f) == setting.name)
                out.append(setting.as_dict(_plain(getattr(group, field))))
            return out

        return {
            "version": __version__,
            "pipeline": self.config.pipeline.name,
            "judge": self.judge_name or "the records' own relations (--nli precomputed)",
            "judge_identity": self.judge_identity,
            "engine": self.config.engine.name,
            "retrieval": self.config.retrieval.service_type,
            "settings": self.config.settings(),
            "request_settings": {"assess": listed(self.assess_settings), "ragas": listed(self.ragas_settings)},
            "limits": {"max_atoms": self.limits.max_atoms, "max_contexts": self.limits.max_contexts},
            "batcher": self.batcher.stats() if self.batcher is not None else None,
        }


def _dest(name: str, field: Any) -> str:
    from ..settings.fields import field_dest

    return field_dest(name, field)


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value

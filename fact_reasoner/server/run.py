"""Serving an application with uvicorn, and draining on SIGTERM or Ctrl-C.

uvicorn stops listening on the first SIGTERM or SIGINT and waits for the requests in flight for
up to ``drain_seconds`` (``timeout_graceful_shutdown``); the server made here also tells the
application (``app.state.drain()``), which then answers 503 to a new request on a connection
that is still open. A second signal ends the process at once.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

__all__ = ["bind", "is_loopback", "make_server"]

log = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only: ``localhost`` or an address in 127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one, read back with ``getsockname``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def make_server(app: Any, drain_seconds: float) -> Any:
    """A uvicorn server for ``app`` that starts the application's draining on a signal (its
    ``drained_by`` is then that signal). Run it with ``server.run(sockets=[bind(…)])``."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        drained_by: int | None = None

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.drained_by is None:
                self.drained_by = sig
                app.state.drain()
                log.info(
                    "stopping: finishing %d request(s) in flight (at most %g s), refusing new ones",
                    app.state.admission.busy,
                    drain_seconds,
                )
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app,
        log_config=None,  # the project's logging: one line per request, never a body
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(int(round(drain_seconds)), 1),
        server_header=False,
    )
    return DrainingServer(config)

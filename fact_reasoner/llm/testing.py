"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests of failure handling.

Real models rarely fail on cue; this server does. It is a real ``http.server`` speaking the
chat-completions protocol: each POST takes the next scripted step — an HTTP status to return
(429, 500, …), a delay in seconds (to trigger client timeouts), a reply text, or a function of
the request body that returns one of those (a reply chosen by what was asked, for callers that
send requests concurrently), or a whole response body (a dict, sent as it is: a server's own
reply with its log-probabilities) — and records the request body. When the script runs out, the last
step repeats.

    with ScriptedServer([429, 500, "entailment"]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, backoff=0.01)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union


@dataclass(frozen=True)
class Delay:
    seconds: float
    then: "str | int"


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "scripted",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


#: a step chosen from the request body (the OpenAI chat-completions JSON)
Route = Callable[[dict[str, Any]], Union[str, int, "Delay", dict[str, Any]]]


class ScriptedServer:
    def __init__(self, script: list["str | int | Delay | Route | dict[str, Any]"]):
        if not script:
            raise ValueError("the script needs at least one step")
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    step = owner.script[min(len(owner.requests), len(owner.script) - 1)]
                    owner.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                if callable(step):
                    step = step(body)
                if isinstance(step, Delay):
                    time.sleep(step.seconds)
                    step = step.then
                if isinstance(step, int):
                    payload = json.dumps({"error": {"code": step, "message": f"scripted {step}"}}).encode()
                    self.send_response(step)
                elif isinstance(step, dict):
                    payload = json.dumps(step).encode()
                    self.send_response(200)
                else:
                    payload = json.dumps(completion(step)).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

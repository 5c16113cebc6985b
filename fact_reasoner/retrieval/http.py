"""One HTTP client for the web services (``google``, ``wikipedia``): a good citizen of the web.

- **Timeouts**: a connect timeout and a read timeout on every request (``--web-timeout``).
- **Bounded concurrency per host**: at most ``per_host`` requests in flight to one host (host and
  port), whatever the number of threads, so a batch of atoms never floods a site.
- **Retries with backoff** on 429 and 5xx (and, for API calls, on timeouts and refused
  connections): ``backoff · 2^attempt`` with jitter, or the server's ``Retry-After`` (seconds or
  an HTTP date, capped at ``max_retry_after``). Other 4xx are final at once.
- **Pages are capped and checked**: a page larger than ``max_page_bytes`` (by its
  ``Content-Length`` or while streaming) is abandoned, and only HTML or plain text is accepted.
- **A descriptive User-Agent** (Wikipedia asks for one; ``$FACT_REASONER_USER_AGENT`` overrides it).

Secrets are passed per request in ``headers`` and never appear in messages, logs or counters:
errors name the URL (which carries no key) and the status only.
"""

from __future__ import annotations

import email.utils
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from ..errors import FactReasonerError, connect_reason
from ..version import __version__

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: a rejected API key: the service cannot be used at all
AUTH_STATUS = frozenset({401, 403})
#: content types whose text can be extracted
PAGE_TYPES = ("text/html", "application/xhtml+xml", "text/plain")


def user_agent() -> str:
    """The User-Agent sent with every request: names the tool and what it does."""
    default = (
        f"fact-reasoner-offline/{__version__} (factuality evidence retrieval; "
        f"+https://pypi.org/project/fact-reasoner-offline/) httpx/{httpx.__version__}"
    )
    return os.environ.get("FACT_REASONER_USER_AGENT") or default


@dataclass(frozen=True)
class WebSettings:
    """How the client behaves (the ``--web-*`` and ``--max-page-bytes`` settings)."""

    timeout: float = 20.0
    connect_timeout: float = 10.0
    retries: int = 3
    per_host: int = 8
    max_page_bytes: int = 5_000_000
    backoff: float = 0.5
    max_retry_after: float = 60.0


class HTTPFailure(FactReasonerError):
    """An API request that failed for good. ``unreachable``: the server could not be reached, or
    it rejected the key (every further request would fail the same way)."""

    def __init__(self, message: str, *, unreachable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.unreachable = unreachable
        self.status = status


@dataclass(frozen=True)
class Page:
    """A downloaded page, or why there is none (``status`` is ``ok`` or the reason)."""

    url: str
    status: str
    body: bytes = b""
    content_type: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class _TooLarge(FactReasonerError):
    """A page over ``max_page_bytes``: stops its download (caught within this module)."""


@dataclass(frozen=True)
class _TryAgain:
    """An attempt that failed for a passing reason. ``retry_after``: the server's header ("" or
    None when it sent none: the backoff applies); ``problem``: what went wrong (logged, and in the
    final error); ``page``: the page to return when no attempt is left (page downloads only)."""

    problem: str
    retry_after: str | None = None
    unreachable: bool = False
    page: Page | None = None


_Result = TypeVar("_Result")


class WebClient:
    """A thread-safe ``httpx.Client`` with the rules of the module docstring.

    ``counts`` holds this process's numbers: ``http_requests``, ``http_retries``.
    """

    def __init__(self, settings: WebSettings | None = None) -> None:
        self.settings = settings or WebSettings()
        s = self.settings
        self._client = httpx.Client(
            headers={"User-Agent": user_agent()},
            timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
            follow_redirects=True,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )
        self._hosts: dict[str, threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    # -- plumbing ----------------------------------------------------------------------------

    def _slot(self, url: str) -> threading.BoundedSemaphore:
        host = urlsplit(url).netloc.lower()
        with self._lock:
            if host not in self._hosts:
                self._hosts[host] = threading.BoundedSemaphore(self.settings.per_host)
            return self._hosts[host]

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def wait_before_retry(self, attempt: int, retry_after: str | None) -> float:
        """Seconds before retry ``attempt + 1``: ``Retry-After`` when the server sent one (seconds
        or an HTTP date), else ``backoff · 2^attempt`` with ±25 % jitter; capped."""
        cap = self.settings.max_retry_after
        if retry_after:
            value = retry_after.strip()
            try:
                return min(max(float(value), 0.0), cap)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(value)
                except (TypeError, ValueError):
                    when = None
                if when is not None:
                    return min(max(when.timestamp() - time.time(), 0.0), cap)
        return min(self.settings.backoff * (2**attempt), cap) * random.uniform(0.75, 1.25)

    def _with_retries(self, url: str, attempt_once: Callable[[], _Result | _TryAgain]) -> _Result | _TryAgain:
        """Runs ``attempt_once`` in a slot of the URL's host until it returns a result (or raises),
        at most ``1 + retries`` times, waiting :meth:`wait_before_retry` between attempts; the
        last :class:`_TryAgain` when every attempt asked for another. Counts requests and retries."""
        retries = self.settings.retries
        outcome: _Result | _TryAgain = _TryAgain("no attempt made")
        for attempt in range(retries + 1):
            if attempt:
                self._count("http_retries")
            with self._slot(url):
                self._count("http_requests")
                outcome = attempt_once()
            if not isinstance(outcome, _TryAgain):
                return outcome
            if attempt < retries:
                wait = self.wait_before_retry(attempt, outcome.retry_after)
                logger.debug("%s; retrying in %.2f s", outcome.problem, wait)
                time.sleep(wait)
        return outcome

    # -- API calls ----------------------------------------------------------------------------

    def request_json(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        service: str = "search",
    ) -> Any:
        """An API call whose answer is JSON, with retries; raises :class:`HTTPFailure`.

        Retried: 429/5xx, timeouts, refused connections. Final at once: 401/403 (a rejected
        key, marked ``unreachable`` since no request can succeed), other 4xx, invalid JSON.
        """

        def attempt_once() -> Any:
            try:
                response = self._client.request(method, url, json=json, params=params, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                return _TryAgain(f"cannot reach {url}: {connect_reason(error)}", unreachable=True)
            except httpx.TimeoutException:
                return _TryAgain(f"{service} at {url}: no answer within {self.settings.timeout:g} s")
            except httpx.TransportError as error:
                return _TryAgain(f"{service} at {url}: {type(error).__name__}: {error}")
            status = response.status_code
            if status == 200:
                try:
                    return response.json()
                except ValueError as error:
                    raise HTTPFailure(f"{service} at {url} answered with invalid JSON", status=status) from error
            problem = f"{service} at {url}: HTTP {status}{_error_detail(response)}"
            if status in AUTH_STATUS:
                raise HTTPFailure(f"{problem} (the API key was rejected)", unreachable=True, status=status)
            if status not in RETRY_STATUS:
                raise HTTPFailure(problem, status=status)
            return _TryAgain(problem, retry_after=response.headers.get("retry-after"))

        outcome = self._with_retries(url, attempt_once)
        if isinstance(outcome, _TryAgain):
            attempts = self.settings.retries + 1
            raise HTTPFailure(f"{outcome.problem} (after {attempts} attempts)", unreachable=outcome.unreachable)
        return outcome

    # -- pages ---------------------------------------------------------------------------------

    def fetch_page(self, url: str) -> Page:
        """Download a page within the size cap. Never raises for the page's own problems: the
        returned :class:`Page` says ``ok`` or why not (``timeout``, ``too_large``, ``not_html``,
        ``http_<status>``, ``unreachable``, ``error``). 429/5xx are retried like API calls;
        timeouts are not (a page that hangs once is given up, its snippet is used)."""
        if urlsplit(url).scheme not in ("http", "https"):
            return Page(url, "error", reason=f"not an http(s) link: {url}")

        def attempt_once() -> Page | _TryAgain:
            try:
                page, retry_after = self._download(url)
            except (httpx.ConnectError, httpx.ConnectTimeout) as error:
                return Page(url, "unreachable", reason=connect_reason(error))
            except httpx.TimeoutException:
                return Page(url, "timeout", reason=f"no answer within {self.settings.timeout:g} s")
            except httpx.TransportError as error:
                return Page(url, "error", reason=f"{type(error).__name__}: {error}")
            if page.ok or retry_after is None:
                return page
            return _TryAgain(f"{url}: {page.reason}", retry_after=retry_after, page=page)

        outcome = self._with_retries(url, attempt_once)
        if isinstance(outcome, _TryAgain):
            assert outcome.page is not None  # every page attempt that asks for another has one
            return outcome.page
        return outcome

    def _download(self, url: str) -> tuple[Page, str | None]:
        """One GET, streamed; returns the page and, when worth retrying, the Retry-After value
        ("" when the server sent none)."""
        cap = self.settings.max_page_bytes
        with self._client.stream("GET", url) as response:
            status = response.status_code
            if status != 200:
                retry = response.headers.get("retry-after", "") if status in RETRY_STATUS else None
                return Page(url, f"http_{status}", reason=f"HTTP {status}"), retry
            content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if content_type and content_type not in PAGE_TYPES:
                return Page(url, "not_html", content_type=content_type, reason=f"content type {content_type}"), None
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > cap:
                return Page(url, "too_large", reason=f"{int(declared)} bytes > {cap}"), None
            chunks: list[bytes] = []
            size = 0
            try:
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise _TooLarge()
                    chunks.append(chunk)
            except _TooLarge:
                return Page(url, "too_large", reason=f"more than {cap} bytes"), None
        return Page(url, "ok", body=b"".join(chunks), content_type=content_type or "text/html"), None

    def close(self) -> None:
        self._client.close()


def _error_detail(response: httpx.Response) -> str:
    """A short reason from an error body (``{"message": …}`` as Serper sends, or MediaWiki's
    ``{"error": {"info": …}}``); never the request's headers."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(body.get("error"), dict):
            message = body["error"].get("info") or body["error"].get("message") or message
        elif isinstance(body.get("error"), str):
            message = body["error"]
        if isinstance(message, str) and message.strip():
            return f": {message.strip()[:200]}"
    return ""

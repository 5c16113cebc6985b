"""Evidence from the web: ``--service-type google`` (a Serper-compatible search API), and what the
web services share (page text, passages, ranking, the response cache, the thread pool).

``google`` — for each distinct query of a record:

1. one search: ``POST --search-url`` (default Serper's) with ``{"q": query, "num": k}`` and the
   key from ``$SERPER_API_KEY`` in the ``X-API-KEY`` header; the answer's ``organic`` list gives
   ``title``, ``link`` and ``snippet`` of each hit;
2. each linked page is downloaded once (per process, and never again once in the response
   cache), its main text extracted with ``trafilatura`` (boilerplate, menus and ads removed),
   and cut into passages of whole sentences (``--passage-chars``);
3. the passages of the query's pages are ranked against the query with the project's BM25
   (:mod:`.bm25`) and the ``k`` best kept. Each keeps ``title``, ``link``, ``snippet`` and
   ``text``, as IBM's context format does.

A page that cannot be used (timeout, HTTP error, not HTML, over ``--max-page-bytes``, no text)
is replaced by its search snippet and counted (``retrieval_page_failures``,
``retrieval_snippet_fallbacks``); ``--no-fetch-pages`` uses the snippets only. A search that
cannot be made (server unreachable, key rejected, retries exhausted) fails the record
(:class:`~fact_reasoner.errors.RecordFailed`): an atom is never judged without evidence because
retrieval failed. A search that honestly finds nothing is not a failure; it is counted
(``retrieval_empty_searches``).

The key is read from the environment only and sent only in the request header: it is never part
of a cache key, a cached value, an identity, a message or an output.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import RecordFailed, SetupError
from .base import RetrievedContext
from .corpus import Document, chunk_document
from .http import HTTPFailure, Page, WebClient, WebSettings
from .options import DEFAULT_SEARCH_URL

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig
    from .cache import RetrievalCache

logger = logging.getLogger(__name__)

API_KEY_VARIABLE = "SERPER_API_KEY"
#: page failures that may not happen again (not cached, so a rerun tries the page again)
TRANSIENT = ("timeout", "unreachable", "error", "http_408", "http_425", "http_429")

T = TypeVar("T")
R = TypeVar("R")


# -- text and passages -------------------------------------------------------------------------


def extractor_version() -> str:
    """``trafilatura-<version>``: part of the cache keys of extracted pages."""
    try:
        import trafilatura
    except ImportError:  # pragma: no cover - checked by preflight
        return "trafilatura-missing"
    return f"trafilatura-{trafilatura.__version__}"


def extract_text(page: Page) -> str:
    """The main text of a downloaded page ("" if none): plain text as is; HTML through
    ``trafilatura.extract`` (recall-oriented, tables kept, comments dropped), else trafilatura's
    ``baseline`` for short pages its main extractor declines."""
    if page.content_type == "text/plain":
        return page.body.decode("utf-8", errors="replace").strip()
    import trafilatura

    text = trafilatura.extract(
        page.body,
        url=page.url,
        favor_recall=True,
        include_comments=False,
        include_tables=True,
        deduplicate=False,
    )
    if not text:
        _, text, _ = trafilatura.baseline(page.body)
    return (text or "").strip()


def cut_passages(text: str, title: str | None, chars: int) -> list[str]:
    """Passages of whole sentences of at most ``chars`` characters (no overlap); each line of an
    extracted text is a paragraph."""
    paragraphs = "\n\n".join(line.strip() for line in text.splitlines() if line.strip())
    if not paragraphs:
        return []
    return [chunk.text for chunk in chunk_document(Document(text=paragraphs, title=title), chars, 0)]


@dataclass(frozen=True)
class Candidate:
    """A passage that may become a context: its text, where it came from and how."""

    text: str
    title: str | None
    link: str | None
    snippet: str | None
    position: int
    page: str  # "ok", "snippet" (snippets only) or the reason the page could not be used

    @property
    def transient(self) -> bool:
        return self.page in TRANSIENT or self.page.startswith("http_5")

    def to_retrieved(self, source: str, score: float) -> RetrievedContext:
        metadata: dict[str, Any] = {"position": self.position, "page": self.page}
        if self.link:
            metadata["link"] = self.link
        if self.snippet:
            metadata["snippet"] = self.snippet
        if self.transient:
            metadata["transient"] = True
        digest = hashlib.sha256(f"{self.link or self.title}\x00{self.text}".encode()).hexdigest()[:32]
        return RetrievedContext(
            id=digest, text=self.text, title=self.title, score=score, source=source, metadata=metadata
        )


def rank(
    query: str, candidates: Sequence[Candidate], k: int, *, matching_only: bool = False
) -> list[tuple[Candidate, float]]:
    """The ``k`` candidates most relevant to ``query`` by BM25 (:class:`.bm25.BM25Index`), then
    — unless ``matching_only`` — the others in their search order to fill ``k``."""
    from .bm25 import BM25Index, tokenize

    if k <= 0 or not candidates:
        return []
    scored: list[tuple[int, float]] = []
    if tokenize(query) and any(tokenize(c.text) for c in candidates):
        records = [{"id": str(i), "text": c.text, "title": c.title} for i, c in enumerate(candidates)]
        scored = [(int(hit.id), hit.score) for hit in BM25Index.from_records(records).search(query, len(records))]
    order = list(scored)
    if not matching_only:
        seen = {i for i, _ in scored}
        order += [(i, 0.0) for i in range(len(candidates)) if i not in seen]
    return [(candidates[i], score) for i, score in order[:k]]


# -- what the web services share -------------------------------------------------------------


class ResponseStore:
    """Responses already received: this process's memory, and the persistent cache's
    ``responses`` table when the cache is on."""

    def __init__(self, cache: "RetrievalCache | None") -> None:
        self.cache = cache
        self._memory: dict[str, Any] = {}
        self._lock = threading.Lock()

    def key(self, *parts: Any) -> str:
        from .cache import RetrievalCache

        return RetrievalCache.response_key(*parts)

    def get(self, key: str) -> Any:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        value = self.cache.get_response(key) if self.cache is not None else None
        if value is not None:
            with self._lock:
                self._memory[key] = value
        return value

    def put(self, key: str, value: Any, *, persist: bool = True) -> None:
        with self._lock:
            self._memory[key] = value
        if persist and self.cache is not None:
            self.cache.put_response(key, value)


class WebService:
    """The common part of ``google`` and ``wikipedia``: one client, one thread pool, one response
    store, counters, and pages fetched once per URL."""

    source = "web"

    def __init__(self, client: WebClient, store: ResponseStore, passage_chars: int, workers: int = 32) -> None:
        self.client = client
        self.store = store
        self.passage_chars = passage_chars
        self._workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def keep_responses(self, cache: "RetrievalCache") -> None:
        """Keep the responses received in ``cache`` too (its ``responses`` table), not only in
        this process's memory (:func:`fact_reasoner.retrieval.make_retriever` calls it)."""
        self.store.cache = cache

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.counts[key] += n

    def map(self, function: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``function`` over ``items`` on the thread pool, results in order; the first error is
        raised after every call has finished (no request is left running)."""
        items = list(items)
        if len(items) <= 1:
            return [function(item) for item in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix=f"fact-reasoner-{self.source}")
            pool = self._pool
        futures = [pool.submit(function, item) for item in items]
        errors = [f.exception() for f in futures]
        for error in errors:
            if error is not None:
                raise error
        return [f.result() for f in futures]

    def page_text(self, url: str) -> dict[str, Any]:
        """``{"status", "text", "reason"}`` of a page: from the store, else downloaded once and
        extracted. Successes and lasting failures are stored; passing ones are retried next run."""
        key = self.store.key("page", url, self.client.settings.max_page_bytes, extractor_version())
        stored = self.store.get(key)
        if stored is not None:
            self.count("page_cache_hits")
            return stored
        page = self.client.fetch_page(url)
        self.count("pages_fetched")
        value: dict[str, Any] = {"status": page.status, "text": "", "reason": page.reason}
        if page.ok:
            try:
                value["text"] = extract_text(page)
            except Exception as error:  # a parser error on one page must not fail the record
                value.update(status="parse_error", reason=f"{type(error).__name__}: {error}")
            else:
                if not value["text"]:
                    value.update(status="no_text", reason="no main text found")
        if value["status"] != "ok":
            self.count("page_failures")
            self.count(f"page_failed_{value['status']}")
            logger.info("page %s not used (%s): its search snippet stands in", url, value["reason"])
        transient = value["status"] in TRANSIENT or value["status"].startswith("http_5")
        self.store.put(key, value, persist=not transient)
        return value

    def stats(self) -> dict[str, int]:
        with self._lock:
            counters = dict(self.counts)
        return counters | {k: v for k, v in self.client.counts.items()}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self.client.close()


def web_settings(config: "PipelineConfig") -> WebSettings:
    options = config.retrieval
    return WebSettings(
        timeout=options.web_timeout,
        connect_timeout=min(options.web_timeout, 10.0),
        retries=options.web_retries,
        per_host=options.web_concurrency,
        max_page_bytes=options.max_page_bytes,
    )


# -- google (Serper-compatible search) -------------------------------------------------------


@dataclass(frozen=True)
class SearchHit:
    title: str | None
    link: str
    snippet: str
    position: int


def parse_serper(answer: Any, url: str) -> list[SearchHit]:
    """The ``organic`` hits of a Serper answer (hits without a link are skipped). An answer that
    is an error message (``{"message": …}`` without ``organic``) raises :class:`HTTPFailure`."""
    if not isinstance(answer, dict):
        raise HTTPFailure(f"search at {url} answered with {type(answer).__name__}, not a JSON object")
    organic = answer.get("organic")
    if organic is None:
        message = answer.get("message") or answer.get("error")
        if message:
            raise HTTPFailure(f"search at {url}: {str(message)[:200]}")
        return []
    if not isinstance(organic, list):
        raise HTTPFailure(f"search at {url}: 'organic' is not a list")
    hits: list[SearchHit] = []
    for item in organic:
        if isinstance(item, dict) and isinstance(item.get("link"), str) and item["link"]:
            title, snippet = item.get("title"), item.get("snippet")
            hits.append(
                SearchHit(
                    title=title if isinstance(title, str) else None,
                    link=item["link"],
                    snippet=snippet if isinstance(snippet, str) else "",
                    position=len(hits) + 1,
                )
            )
    return hits


class GoogleSearchRetriever(WebService):
    """``--service-type google``: web search through a Serper-compatible API, then the linked
    pages' main text, cut into passages and ranked against the query (module docstring)."""

    source = "google"

    def __init__(
        self,
        *,
        search_url: str = DEFAULT_SEARCH_URL,
        api_key: str | None = None,
        client: WebClient | None = None,
        store: ResponseStore | None = None,
        fetch_pages: bool = True,
        passage_chars: int = 1000,
    ) -> None:
        super().__init__(client or WebClient(), store or ResponseStore(None), passage_chars)
        self.search_url = search_url
        self.fetch_pages = fetch_pages
        self._api_key = api_key

    def __repr__(self) -> str:  # never shows the key
        return f"GoogleSearchRetriever(search_url={self.search_url!r}, fetch_pages={self.fetch_pages})"

    @property
    def identity(self) -> str:
        pages = f"pages:{self.client.settings.max_page_bytes}:{extractor_version()}" if self.fetch_pages else "snippets"
        return f"google:v1:{self.search_url}:{pages}:passage={self.passage_chars}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        return self.retrieve_many([query], k, topic=topic)[0]

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, topic: str | None = None
    ) -> list[list[RetrievedContext]]:
        """Every query's ``k`` best passages: the searches in parallel (each distinct query once),
        then every linked page in parallel (each URL once)."""
        if k <= 0 or not queries:
            return [[] for _ in queries]
        distinct = list(dict.fromkeys(queries))
        hits = dict(zip(distinct, self.map(lambda q: self._search(q, k), distinct)))
        pages: dict[str, dict[str, Any]] = {}
        if self.fetch_pages:
            links = list(dict.fromkeys(h.link for found in hits.values() for h in found))
            pages = dict(zip(links, self.map(self.page_text, links)))
        answers = {query: self._passages(query, hits[query], pages, k) for query in distinct}
        return [answers[query] for query in queries]

    def _search(self, query: str, k: int) -> list[SearchHit]:
        key = self.store.key("serper", self.search_url, query, k)
        stored = self.store.get(key)
        if stored is not None:
            self.count("search_cache_hits")
            return [SearchHit(**hit) for hit in stored]
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["X-API-KEY"] = self._api_key
        try:
            answer = self.client.request_json(
                "POST", self.search_url, json={"q": query, "num": k}, headers=headers, service="google search"
            )
            found = parse_serper(answer, self.search_url)
        except HTTPFailure as failure:
            raise RecordFailed(f"retrieval: {failure}", unreachable=failure.unreachable) from None
        self.count("searches")
        if not found:
            self.count("empty_searches")
        self.store.put(key, [hit.__dict__ for hit in found])
        return found

    def _passages(
        self, query: str, hits: list[SearchHit], pages: dict[str, dict[str, Any]], k: int
    ) -> list[RetrievedContext]:
        candidates: list[Candidate] = []
        for hit in hits:
            page = pages.get(hit.link)
            if page is not None and page["status"] == "ok":
                for text in cut_passages(page["text"], hit.title, self.passage_chars):
                    candidates.append(Candidate(text, hit.title, hit.link, hit.snippet, hit.position, "ok"))
            elif hit.snippet.strip():
                status = "snippet" if page is None else page["status"]
                candidates.append(Candidate(hit.snippet, hit.title, hit.link, hit.snippet, hit.position, status))
        results = [c.to_retrieved(self.source, score) for c, score in rank(query, candidates, k)]
        self.count("snippet_fallbacks", sum(r.metadata["page"] not in ("ok", "snippet") for r in results))
        return results


def serper_key(config: "PipelineConfig") -> str | None:
    """``$SERPER_API_KEY``; required for Serper's own endpoint, optional for another
    ``--search-url`` (a proxy may add it)."""
    key = os.environ.get(API_KEY_VARIABLE, "").strip() or None
    if key is None and config.retrieval.search_url == DEFAULT_SEARCH_URL:
        raise SetupError(
            f"--service-type google needs a Serper API key in ${API_KEY_VARIABLE} "
            "(or --search-url URL of a compatible service or proxy)"
        )
    return key


def make_google(config: "PipelineConfig") -> GoogleSearchRetriever:
    if config.retrieval.topic_filter:
        raise SetupError(
            "--topic-filter does not apply to --service-type google (the web has no topics); "
            "use --topic-in-query to put the topic into each search"
        )
    options = config.retrieval
    return GoogleSearchRetriever(
        search_url=options.search_url,
        api_key=serper_key(config),
        client=WebClient(web_settings(config)),
        fetch_pages=options.fetch_pages,
        passage_chars=options.passage_chars,
    )

"""Evidence from Wikipedia: ``--service-type wikipedia`` (``langchain`` is an alias: IBM's
FactReasoner names its Wikipedia retriever after the LangChain wrapper it uses).

Through the MediaWiki Action API (``--wikipedia-url``, default English Wikipedia's ``api.php``):

1. search: ``action=query&list=search&srsearch=<query>&srlimit=<k>`` — the titles of the ``k``
   best articles (each distinct query once per record, never again once cached);
2. page text: ``action=query&prop=extracts|info&explaintext=1&redirects=1&titles=<title>`` —
   the article's plain text (TextExtracts) and its URL, one article per request (the API gives
   whole-article extracts one page at a time), each title fetched once;
3. the articles are cut into passages of whole sentences (``--passage-chars``) and ranked
   against the query with BM25.

Topic-aware: when the record has a ``topic``, its article comes first — its passages that match
the query are ranked before those of the searched articles. With ``--topic-filter`` only the
topic's article is used (no search at all), as FActScore does; a topic without an article gives
no passages and is counted (``retrieval_missing_topic_pages``).

Failures follow the ``google`` rules (:mod:`.web`): a search or article request that cannot be
made fails the record; an honest empty search is counted.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import RecordFailed
from .base import RetrievedContext
from .http import HTTPFailure, WebClient
from .options import DEFAULT_WIKIPEDIA_URL
from .web import Candidate, ResponseStore, WebService, cut_passages, rank, web_settings

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig

_MARKUP = re.compile(r"<[^>]+>")


def _plain(snippet: str) -> str:
    """A search snippet without the API's highlight markup (``<span class="searchmatch">``)."""
    return " ".join(html.unescape(_MARKUP.sub("", snippet)).split())


def _api_error(answer: Any, url: str) -> None:
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        error = answer["error"]
        raise HTTPFailure(f"wikipedia at {url}: {error.get('code', 'error')}: {str(error.get('info', ''))[:200]}")
    if not isinstance(answer, dict):
        raise HTTPFailure(f"wikipedia at {url} answered with {type(answer).__name__}, not a JSON object")


class WikipediaRetriever(WebService):
    """``--service-type wikipedia`` / ``langchain`` (module docstring)."""

    source = "wikipedia"
    #: the record's topic ranks its article first even without --topic-filter
    uses_about = True

    def __init__(
        self,
        *,
        api_url: str = DEFAULT_WIKIPEDIA_URL,
        client: WebClient | None = None,
        store: ResponseStore | None = None,
        passage_chars: int = 1000,
    ) -> None:
        super().__init__(client or WebClient(), store or ResponseStore(None), passage_chars)
        self.api_url = api_url

    @property
    def identity(self) -> str:
        return f"wikipedia:v1:{self.api_url}:passage={self.passage_chars}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        return self.retrieve_many([query], k, topic=topic)[0]

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, topic: str | None = None, about: str | None = None
    ) -> list[list[RetrievedContext]]:
        """``topic`` (the topic filter): that article only. ``about`` (the record's topic): that
        article's matching passages first, then the searched articles'."""
        if k <= 0 or not queries:
            return [[] for _ in queries]
        distinct = list(dict.fromkeys(queries))
        first = topic or about
        hits: dict[str, list[dict[str, Any]]] = {}
        if topic is None:
            hits = dict(zip(distinct, self.map(lambda q: self._search(q, k), distinct)))
        titles = list(
            dict.fromkeys(([first] if first else []) + [h["title"] for found in hits.values() for h in found])
        )
        articles = dict(zip(titles, self.map(self._article, titles)))
        if first and articles[first]["status"] != "ok":
            self.count("missing_topic_pages")
        answers = {q: self._rank(q, hits.get(q, []), articles, first, topic is not None, k) for q in distinct}
        return [answers[q] for q in queries]

    # -- requests ------------------------------------------------------------------------------

    def _get(self, params: dict[str, Any]) -> Any:
        query = {"format": "json", "formatversion": "2", "utf8": "1", **params}
        try:
            answer = self.client.request_json("GET", self.api_url, params=query, service="wikipedia")
            _api_error(answer, self.api_url)
        except HTTPFailure as failure:
            raise RecordFailed(f"retrieval: {failure}", unreachable=failure.unreachable) from None
        return answer

    def _search(self, query: str, k: int) -> list[dict[str, Any]]:
        key = self.store.key("mediawiki-search", self.api_url, query, k)
        stored = self.store.get(key)
        if stored is not None:
            self.count("search_cache_hits")
            return stored
        answer = self._get({"action": "query", "list": "search", "srsearch": query, "srlimit": k, "srprop": "snippet"})
        results = (answer.get("query") or {}).get("search") or []
        found = [
            {"title": r["title"], "snippet": _plain(str(r.get("snippet", "")))}
            for r in results
            if isinstance(r, dict) and isinstance(r.get("title"), str)
        ]
        self.count("searches")
        if not found:
            self.count("empty_searches")
        self.store.put(key, found)
        return found

    def _article(self, title: str) -> dict[str, Any]:
        """``{"status": "ok"|"missing", "title", "text", "link"}`` of an article (redirects followed)."""
        key = self.store.key("mediawiki-extract", self.api_url, title)
        stored = self.store.get(key)
        if stored is not None:
            self.count("page_cache_hits")
            return stored
        answer = self._get(
            {
                "action": "query",
                "prop": "extracts|info",
                "inprop": "url",
                "explaintext": "1",
                "exsectionformat": "plain",
                "redirects": "1",
                "titles": title,
            }
        )
        self.count("pages_fetched")
        pages = (answer.get("query") or {}).get("pages") or []
        page = pages[0] if pages and isinstance(pages[0], dict) else {}
        extract = page.get("extract")
        text = extract if isinstance(extract, str) else ""
        value = {
            "status": "ok" if text.strip() and not page.get("missing") else "missing",
            "title": page.get("title") or title,
            "text": text,
            "link": page.get("fullurl"),
        }
        self.store.put(key, value)
        return value

    # -- ranking -------------------------------------------------------------------------------

    def _candidates(self, article: dict[str, Any], snippet: str | None, position: int) -> list[Candidate]:
        if article["status"] == "ok":
            return [
                Candidate(text, article["title"], article["link"], snippet, position, "ok")
                for text in cut_passages(article["text"], article["title"], self.passage_chars)
            ]
        if snippet:
            return [Candidate(snippet, article["title"], article["link"], snippet, position, article["status"])]
        return []

    def _rank(
        self,
        query: str,
        hits: list[dict[str, Any]],
        articles: dict[str, dict[str, Any]],
        first: str | None,
        only_first: bool,
        k: int,
    ) -> list[RetrievedContext]:
        ranked: list[tuple[Candidate, float]] = []
        if first:
            ranked = rank(query, self._candidates(articles[first], None, 0), k, matching_only=not only_first)
        if not only_first:
            skip = {first, articles[first]["title"]} if first else set()
            others = [
                c
                for position, hit in enumerate(hits, start=1)
                if hit["title"] not in skip
                for c in self._candidates(articles[hit["title"]], hit["snippet"], position)
            ]
            ranked += rank(query, others, k - len(ranked))
        results = [c.to_retrieved(self.source, score) for c, score in ranked]
        self.count("snippet_fallbacks", sum(r.metadata["page"] != "ok" for r in results))
        return results


def make_wikipedia(config: "PipelineConfig") -> WikipediaRetriever:
    options = config.retrieval
    return WikipediaRetriever(
        api_url=options.wikipedia_url,
        client=WebClient(web_settings(config)),
        passage_chars=options.passage_chars,
    )

"""The settings the retrievers declare in their registrations (:mod:`fact_reasoner.retrieval`):
a store's directory and collection, the web services' endpoints, page limits and request
budget. They join the ``retrieval`` group of the configuration (``config.retrieval.top_k``
beside them), its flags and its settings."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..settings.fields import MAX_COUNT, CountOrZero, PathText, Seconds, Threads, option
from ..settings.registry import Option

__all__ = ["DEFAULT_SEARCH_URL", "DEFAULT_WIKIPEDIA_URL", "GOOGLE_OPTIONS", "STORE_OPTIONS", "WIKIPEDIA_OPTIONS"]

#: the web services' default endpoints (``--search-url``, ``--wikipedia-url``)
DEFAULT_SEARCH_URL = "https://google.serper.dev/search"
DEFAULT_WIKIPEDIA_URL = "https://en.wikipedia.org/w/api.php"

#: ``chroma``, ``bm25``, ``hybrid``: the store built by ``fact-reasoner index`` (after ``--top-k``)
STORE_OPTIONS = (
    Option(
        "store", PathText | None, option(None, "retrieval store directory (see `fact-reasoner index`)"), after="top_k"
    ),
    Option("collection", str | None, option(None, "collection name in the store (default: default)"), after="top_k"),
)

_PASSAGE_CHARS = Option(
    "passage_chars",
    Annotated[int, Field(ge=100, le=MAX_COUNT)],
    option(
        1000,
        "google, wikipedia: pages are cut into passages of whole sentences of at most this many characters",
    ),
)
_REQUEST_BUDGET = (
    Option(
        "web_concurrency",
        Threads,
        option(8, "google, wikipedia: requests in flight per host", affects_results=False),
    ),
    Option(
        "web_timeout",
        Seconds,
        option(20.0, "google, wikipedia: seconds to wait for an answer (connect and read)", affects_results=False),
    ),
    Option(
        "web_retries",
        CountOrZero,
        option(
            3,
            "google, wikipedia: retries of a request that got 429/5xx or (searches) no answer, with backoff "
            "honouring Retry-After",
            affects_results=False,
        ),
    ),
)

GOOGLE_OPTIONS = (
    Option(
        "search_url",
        str,
        option(
            DEFAULT_SEARCH_URL,
            "google: Serper-compatible search endpoint (POST {q, num}, key from $SERPER_API_KEY in "
            "X-API-KEY), e.g. a proxy or a compatible service",
            metavar="URL",
        ),
    ),
    Option(
        "fetch_pages",
        bool,
        option(
            True,
            "google: use the search snippets only, do not download the linked pages",
            flags=("--no-fetch-pages",),
        ),
    ),
    _PASSAGE_CHARS,
    Option(
        "max_page_bytes",
        Annotated[int, Field(ge=1000, le=MAX_COUNT)],
        option(5_000_000, "google: largest page downloaded; a larger one is replaced by its search snippet"),
    ),
    *_REQUEST_BUDGET,
)

WIKIPEDIA_OPTIONS = (
    Option(
        "wikipedia_url",
        str,
        option(DEFAULT_WIKIPEDIA_URL, "wikipedia: MediaWiki API endpoint (api.php)", metavar="URL"),
        after="search_url",  # where it stood when the group declared it
    ),
    _PASSAGE_CHARS,
    *_REQUEST_BUDGET,
)

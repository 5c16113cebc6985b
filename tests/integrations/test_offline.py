"""Offline by construction: nothing is contacted while the ragas and DeepEval metrics run end to
end (an audit hook sees every connect and name lookup, including those the libraries' telemetry
would swallow), and importing ``fact_reasoner`` imports neither library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.helpers import REPO_ROOT

#: the audit events of an outgoing connection or a name lookup (sys.addaudithook: they cannot be
#: removed once added, hence a subprocess)
HOOKED = (
    "socket.connect",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.gethostbyaddr",
)

SCRIPT = textwrap.dedent(
    """
    import atexit, json, os, sys
    attempts = []

    def report():  # registered first, so it runs after the libraries' own exit hooks (their flushes)
        print("ATTEMPTS " + json.dumps(attempts), flush=True)

    atexit.register(report)

    def hook(event, args):
        if event in HOOKED:
            attempts.append([event, repr(args)[:200]])
            raise OSError(f"network attempt: {event} {args!r}")

    sys.addaudithook(hook)
    # the integration must turn the telemetry off itself: the variables are not set here
    for name in ("RAGAS_DO_NOT_TRACK", "DEEPEVAL_TELEMETRY_OPT_OUT", "DEEPEVAL_UPDATE_WARNING_OPT_IN"):
        os.environ.pop(name, None)
    os.environ.pop("OPENAI_API_KEY", None)

    sample = {
        "user_input": "Where is the Eiffel Tower, and when was it completed?",
        "response": "The Eiffel Tower is in Paris. It was built in 1500.",
        "reference": "The Eiffel Tower is in Paris, France. It was completed in 1889.",
        "retrieved_contexts": [
            "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
            "Construction of the Eiffel Tower began in 1887 and was completed in 1889.",
        ],
    }
    from ragas import EvaluationDataset, evaluate
    from fact_reasoner.integrations import ragas as fr_ragas

    metrics = [fr_ragas.FRFaithfulness(atomizer="sentence"), fr_ragas.FRFactualCorrectness(atomizer="sentence"),
               fr_ragas.FRContextPrecision(atomizer="sentence"), fr_ragas.FRContextRecall(atomizer="sentence")]
    result = evaluate(EvaluationDataset.from_list([sample]), metrics=metrics, raise_exceptions=True, show_progress=False)
    print("RAGAS " + json.dumps({m.name: float(result.to_pandas()[m.name][0]) for m in metrics}), flush=True)

    from deepeval import assert_test, evaluate as deepeval_evaluate
    from deepeval.test_case import LLMTestCase
    from fact_reasoner.integrations.deepeval import FRFactualCorrectnessMetric, FRFaithfulnessMetric

    case = LLMTestCase(input=sample["user_input"], actual_output=sample["response"],
                       expected_output=sample["reference"], retrieval_context=sample["retrieved_contexts"])
    deepeval_evaluate([case], [FRFaithfulnessMetric(atomizer="sentence"), FRFactualCorrectnessMetric(atomizer="sentence")])
    try:
        assert_test(case, [FRFaithfulnessMetric(threshold=0.9, atomizer="sentence")])
    except AssertionError:
        print("DEEPEVAL assert_test failed as it should", flush=True)
    print("ENV " + json.dumps({k: os.environ.get(k) for k in ("RAGAS_DO_NOT_TRACK", "DEEPEVAL_TELEMETRY_OPT_OUT")}), flush=True)
    """
).replace("HOOKED", repr(HOOKED))


def test_nothing_is_contacted_while_both_libraries_run_the_metrics(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGAS_", "DEEPEVAL_"))}
    env["HOME"] = str(tmp_path / "home")  # ragas's user id file and DeepEval's home land here
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    attempts = json.loads(next(line for line in lines if line.startswith("ATTEMPTS "))[len("ATTEMPTS ") :])
    assert attempts == [], attempts
    scores = json.loads(next(line for line in lines if line.startswith("RAGAS "))[len("RAGAS ") :])
    assert set(scores) == {"fr_faithfulness", "fr_factual_correctness", "fr_context_precision", "fr_context_recall"}
    assert "DEEPEVAL assert_test failed as it should" in lines  # DeepEval ran the metric end to end
    env_seen = json.loads(next(line for line in lines if line.startswith("ENV "))[len("ENV ") :])
    assert env_seen == {"RAGAS_DO_NOT_TRACK": "true", "DEEPEVAL_TELEMETRY_OPT_OUT": "1"}


def test_the_hook_does_see_a_connection_attempt(tmp_path):
    """The same hook, on a lookup and a connect of this machine's own: it sees them (so an
    empty list above means none was made)."""
    script = SCRIPT.split("sample = {")[0] + textwrap.dedent(
        """
        import socket
        try:
            socket.getaddrinfo("localhost", 80)
        except OSError:
            pass
        try:
            socket.socket().connect(("127.0.0.1", 9))
        except OSError:
            pass
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    attempts = json.loads(done.stdout.split("ATTEMPTS ")[1])
    assert [event for event, _ in attempts] == ["socket.getaddrinfo", "socket.connect"]


def test_importing_fact_reasoner_imports_neither_library():
    code = (
        "import sys, fact_reasoner, fact_reasoner.metrics, fact_reasoner.commands.ragas, fact_reasoner.integrations\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('ragas', 'deepeval', 'langchain_core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_integration_sets_the_opt_outs_and_replaces_a_contrary_value(monkeypatch, caplog):
    from fact_reasoner.integrations.offline import OFFLINE_ENVIRONMENT, set_offline_environment

    monkeypatch.setenv("RAGAS_DO_NOT_TRACK", "false")
    monkeypatch.delenv("DEEPEVAL_TELEMETRY_OPT_OUT", raising=False)
    with caplog.at_level("WARNING"):
        set_offline_environment()
    assert {name: os.environ[name] for name in OFFLINE_ENVIRONMENT} == OFFLINE_ENVIRONMENT
    assert "RAGAS_DO_NOT_TRACK=false replaced by true" in caplog.text

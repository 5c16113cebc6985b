"""``fact-reasoner ragas`` held to the main command's standard (issue #28).

Real files, the real CLI (in this process through ``main``, or as a subprocess where the
process matters: exit status, Ctrl-C), the shipped ``align`` NLI model and the sentence
atomizer, so no LLM is needed; the one LLM failure comes from a real HTTP server that answers
with unreadable text (:class:`~fact_reasoner.llm.testing.ScriptedServer`).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fact_reasoner.cli import main
from fact_reasoner.inference import make_engine
from fact_reasoner.io import ResultWriter
from fact_reasoner.metrics import MetricContext, RagasScore, SentenceAtomizer
from fact_reasoner.nli import PrecomputedNLI
from tests.helpers import REPO_ROOT, HeldCall

ROOT = REPO_ROOT
QUESTION = "Where is the Eiffel Tower?"
REFERENCE = "The Eiffel Tower is in Paris."
CONTEXT = "The Eiffel Tower is in Paris, France."
GOOD = {"question": QUESTION, "response": REFERENCE, "reference": REFERENCE, "retrieved_contexts": [CONTEXT]}
RETRIEVAL_METRICS = "faithfulness,context_precision,context_recall"
OFFLINE = ["--nli", "align", "--atomizer", "sentence", "--no-cache", "--quiet"]


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def ragas(tmp_path: Path, input_file: Path, *extra: str, metrics: str = RETRIEVAL_METRICS) -> int:
    return main(
        ["ragas", "--input-file", str(input_file), "--output", str(tmp_path / "out.jsonl"), "--metrics", metrics]
        + OFFLINE
        + list(extra)
    )


def output_rows(tmp_path: Path) -> list[dict]:
    path = tmp_path / "out.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


# -- an empty answer is never a score -------------------------------------------------------


def test_empty_nan_or_missing_response_is_an_input_error_not_a_perfect_score(tmp_path):
    without = {k: v for k, v in GOOD.items() if k != "response"}
    source = write_jsonl(
        tmp_path / "s.jsonl",
        [
            {**GOOD, "response": ""},
            '{"question": "q", "response": NaN, "reference": "r", "retrieved_contexts": ["c"]}',
            without,
            GOOD,
        ],
    )
    result = run_cli(
        "ragas", "--input-file", str(source), "--output", str(tmp_path / "out.jsonl"), *OFFLINE,
        "--metrics", "faithfulness,context_precision,context_recall,ragas_score",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    for line in (1, 2, 3):
        assert f"{source}:{line}: " in result.stderr
    assert "a sample without a response cannot be scored" in result.stderr
    rows = output_rows(tmp_path)
    assert [r["source_line"] for r in rows] == [4]  # the others computed
    errors = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert [e["line"] for e in errors] == [1, 2, 3]


def test_ragas_score_of_a_sample_without_response_is_nan_in_the_python_api():
    context = MetricContext(atomizer=SentenceAtomizer(), nli=PrecomputedNLI([], {}), engine=make_engine("native"))
    result = RagasScore().score({**GOOD, "response": ""}, context)
    assert math.isnan(result.score) and "no response" in result.reason


# -- a failed component fails the composite --------------------------------------------------


def test_a_failed_component_makes_the_composite_nan_with_the_component_named(tmp_path):
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    with ScriptedServer(["this is not JSON"]) as server:
        status = ragas(
            tmp_path,
            source,
            "--backend",
            "openai",
            "--base-url",
            server.base_url,
            "--model",
            "scripted",
            metrics="faithfulness,context_precision,context_recall,answer_relevance,ragas_score",
        )
    assert status == 1
    assert output_rows(tmp_path) == []  # not written with a score: retried by the next run
    (error,) = [json.loads(x) for x in (tmp_path / "out.errors.jsonl").read_text().splitlines()]
    assert error["line"] == 1
    assert "ragas_score: not computed: component(s) failed: answer_relevance" in error["message"]


def test_the_composite_in_the_python_api_is_nan_when_a_component_raised():
    class BrokenLLM:
        name = "broken"

        def chat(self, request):
            raise RuntimeError("the model is not installed")

    context = MetricContext(
        atomizer=SentenceAtomizer(), nli=PrecomputedNLI([], {}), engine=make_engine("native"), llm=BrokenLLM()
    )
    result = RagasScore().score(GOOD, context)
    assert math.isnan(result.score) and result.is_failure
    assert "answer_relevance" in result.reason and "not installed" in result.reason


def test_a_missing_llm_extra_is_caught_at_start_up(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # what Python sees when it is not installed
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    status = ragas(tmp_path, source, metrics="faithfulness,answer_relevance,ragas_score")
    err = capsys.readouterr().err
    assert status == 2
    assert "answer_relevance" in err and "xllamacpp" in err and "[llm]" in err
    assert not (tmp_path / "out.jsonl").exists()  # nothing ran


def test_a_metric_extra_declared_on_its_registry_entry_is_checked_at_start_up(tmp_path, monkeypatch, capsys):
    """BERTScore's package is its METRICS entry's extra (no list of its own in the preflight)."""
    from fact_reasoner.metrics.catalog import METRICS
    from fact_reasoner.settings.registry import Extra

    entry = METRICS.entry("bert_score")
    assert [(e.module, e.extra) for e in entry.extras] == [("torch", "bertscore"), ("bert_score", "bertscore")]
    monkeypatch.setattr(entry, "extras", (Extra("no_such_module_for_bert_score", "bertscore"),))
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    status = ragas(tmp_path, source, metrics="context_precision,bert_score")
    err = capsys.readouterr().err
    assert status == 2
    assert (
        "bert_score needs the Python package 'no_such_module_for_bert_score': "
        "`pip install -e '.[bertscore]'` in this project's checkout" in err
    )
    assert not (tmp_path / "out.jsonl").exists()  # nothing ran


def test_a_metric_entry_start_up_check_runs_before_any_sample(tmp_path, monkeypatch, capsys):
    from fact_reasoner.errors import SetupError
    from fact_reasoner.metrics.catalog import METRICS

    def refuse(config):
        raise SetupError(f"context_precision cannot run with --engine {config.engine.name}")

    monkeypatch.setattr(METRICS.entry("context_precision"), "check", refuse)
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    assert ragas(tmp_path, source) == 2
    assert "error: context_precision cannot run with --engine native" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_answer_relevance_by_rubric_does_not_need_the_embedder(tmp_path, monkeypatch):
    """The embedder's extras on answer_relevance's entry are checked only when it embeds."""
    from fact_reasoner.errors import StageUnavailable
    from fact_reasoner.metrics import make_metric

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # the embedder's package, missing
    context = MetricContext(atomizer=SentenceAtomizer(), nli=PrecomputedNLI([], {}), llm=object(), atom_cache=None)
    context.preflight([make_metric("answer_relevance", method="rubric")])  # nothing to embed: fine
    with pytest.raises(StageUnavailable, match="answer_relevance: the sentence embedder needs .*onnxruntime"):
        context.preflight([make_metric("answer_relevance")])


# -- row by row, resumed exactly ------------------------------------------------------------


def test_rows_are_resumed_and_nothing_is_recomputed(tmp_path, capsys):
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD, {**GOOD, "question": "Which city?"}])
    assert ragas(tmp_path, source) == 0
    first = output_rows(tmp_path)
    assert [r["source_line"] for r in first] == [1, 2]
    write_jsonl(source, [GOOD, {**GOOD, "question": "Which city?"}, {**GOOD, "question": "Third?"}])
    capsys.readouterr()
    assert ragas(tmp_path, source, "--no-cache") == 0
    second = output_rows(tmp_path)
    assert second[:2] == first  # the same lines, untouched
    assert [r["source_line"] for r in second] == [1, 2, 3]
    # other settings: refused, nothing appended
    status = ragas(tmp_path, source, "--context-precision-mode", "mean")
    assert status == 2
    assert "other settings" in capsys.readouterr().err and output_rows(tmp_path) == second


def test_a_second_run_on_the_same_output_is_refused(tmp_path, capsys):
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    with ResultWriter(tmp_path / "out.jsonl", key_field="sample_key"):
        assert ragas(tmp_path, source) == 2
    assert "being written by another run" in capsys.readouterr().err


def test_ctrl_c_keeps_what_was_written_and_the_rerun_resumes(tmp_path):
    """SIGINT sent to a real subprocess while a real HTTP server holds the judge's call for the
    third sample: samples 1 and 2 are whole on disk, sample 3 can never finish on its own, so
    what the test sees does not depend on how fast the process runs or how it is scheduled."""
    from fact_reasoner.llm.testing import ScriptedServer

    rows = [
        {**GOOD, "question": f"Where is it? ({i})", "response": f"{REFERENCE} It was built in 18{i:02d} (sample {i})."}
        for i in range(1, 5)
    ]
    source = write_jsonl(tmp_path / "s.jsonl", rows)
    out = tmp_path / "out.jsonl"
    held = HeldCall("(sample 3)")  # the server holds the judge's call for sample 3

    with ScriptedServer([held]) as server:
        args = ["-m", "fact_reasoner", "ragas", "--input-file", str(source), "--output", str(out)]
        args += ["--metrics", "faithfulness", "--atomizer", "sentence", "--no-cache", "--quiet", "--nli", "llm"]
        args += ["--backend", "openai", "--model", "m", "--base-url", server.base_url, "--llm-retries", "0"]
        args += ["--llm-timeout", "600"]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        process = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE, text=True, env=env)
        err = held.interrupt(process)
        assert process.returncode == 130, err
        assert "Traceback" not in err
        kept = [json.loads(line) for line in out.read_text().splitlines()]
        assert [r["source_line"] for r in kept] == [1, 2]
        assert f"interrupted: 2 sample(s) kept in {out}; rerun to resume" in err

        again = run_cli(*args[2:])
    assert again.returncode == 0, again.stderr
    final = [json.loads(line) for line in out.read_text().splitlines()]
    assert final[:2] == kept  # nothing recomputed
    assert [r["source_line"] for r in final] == [1, 2, 3, 4]


# -- every input line checked ---------------------------------------------------------------


def test_bad_jsonl_lines_are_named_and_the_others_computed(tmp_path, capsys):
    source = write_jsonl(
        tmp_path / "s.jsonl",
        [GOOD, "{not json", {"title": "x", "body": "y"}, {**GOOD, "retrieved_contexts": 5}, [1, 2], GOOD],
    )
    assert ragas(tmp_path, source) == 1
    err = capsys.readouterr().err
    assert f"{source}:2: invalid JSON" in err
    assert f"{source}:3: none of the known fields" in err and "found: body, title" in err
    assert f"{source}:4: retrieved_contexts must be a list" in err
    assert f"{source}:5: expected a JSON object, got list" in err
    assert "not iterable" not in err and "sample 3" not in err
    assert all(line.startswith(("error:", "  ")) for line in err.splitlines())  # one line each
    assert [r["source_line"] for r in output_rows(tmp_path)] == [1, 6]


def test_a_line_that_is_not_utf8_is_named_and_the_others_run(tmp_path, capsys):
    source = tmp_path / "s.jsonl"
    source.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"response": "caf\xe9"}\n' + json.dumps(GOOD).encode())
    assert ragas(tmp_path, source) == 1
    assert f"{source}:2: not valid UTF-8" in capsys.readouterr().err
    assert [r["source_line"] for r in output_rows(tmp_path)] == [1, 3]


def test_csv_missing_cells_are_missing_values_not_text(tmp_path, capsys):
    source = tmp_path / "s.csv"
    source.write_text(
        "question,response,reference,retrieved_contexts\n"
        f'"{QUESTION}",NaN,"{REFERENCE}","{CONTEXT}"\n'
        f'"{QUESTION}","{REFERENCE}",nan,None\n'
        f'"{QUESTION}",None,"{REFERENCE}","{CONTEXT}"\n'
        f'"{QUESTION}","{REFERENCE}","{REFERENCE}","{CONTEXT}"\n'
    )
    from fact_reasoner.metrics.sample import read_samples

    samples = list(read_samples(source))
    assert [str(s) for s in samples[0:1]] == [
        f"{source}:2: `response` is empty (or NaN / None): a sample without a response cannot be scored"
    ]
    second = samples[1].sample
    assert second.reference is None and second.retrieved_contexts is None  # not "nan", not ["None"]
    assert ragas(tmp_path, source) == 1
    err = capsys.readouterr().err
    assert f"{source}:2: " in err and f"{source}:4: " in err
    rows = output_rows(tmp_path)
    assert [r["source_line"] for r in rows] == [3, 5]
    assert rows[0]["metrics"]["context_recall"]["score"] is None  # no reference: NaN, not 0


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("question,reference,retrieved_contexts", "no response column"),
        ("title,body", "none of the known columns"),
    ],
)
def test_a_csv_without_the_needed_columns_is_refused(tmp_path, capsys, header, message):
    source = tmp_path / "s.csv"
    source.write_text(f"{header}\n" + ",".join(["x"] * len(header.split(","))) + "\n")
    assert ragas(tmp_path, source) == 2
    err = capsys.readouterr().err
    assert f"{source}:1: " in err and message in err and not output_rows(tmp_path)


def test_empty_input_is_refused(tmp_path, capsys):
    source = tmp_path / "s.jsonl"
    source.write_text("\n")
    assert ragas(tmp_path, source) == 2
    assert "is empty" in capsys.readouterr().err


# -- arguments checked before anything runs -------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--limit", "0"], "argument --limit: must be ≥ 1, got 0"),
        (["--limit", "-3"], "argument --limit: must be ≥ 1, got -3"),
        (["--metrics", ""], "argument --metrics: no metric named"),
        (["--metrics", "faithfulness,relevancy"], "unknown metric 'relevancy'"),
        (["--csv", "{tmp}"], "argument --csv: {tmp} is a directory"),
        (["--output", "{tmp}"], "argument --output: {tmp} is a directory"),
        (["--output", "{tmp}/s.jsonl/out.jsonl"], "argument --output: {tmp}/s.jsonl is a file, not a directory"),
    ],
)
def test_arguments_are_checked_before_anything_runs(tmp_path, flags, message):
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD])
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    result = run_cli("ragas", "--input-file", str(source), "--nli", "align", "--atomizer", "sentence", *flags)
    assert result.returncode == 2
    assert message.replace("{tmp}", str(tmp_path)) in result.stderr
    error, more = result.stderr.strip().splitlines()  # the problem and where to read more, no usage
    assert "Traceback" not in result.stderr and error.startswith("error: argument --")
    assert more == "try 'fact-reasoner ragas --help' for the options"
    assert not (tmp_path / "s.ragas.jsonl").exists()


# -- a non-answer is reported, never scored (#44) --------------------------------------------


def test_a_non_answer_is_written_as_not_answerable_and_listed_in_the_summary(tmp_path, capsys):
    non_answers = ["...", "I don't know.", "Eiffel Tower?"]
    source = write_jsonl(tmp_path / "s.jsonl", [{**GOOD, "response": text} for text in non_answers] + [GOOD])
    metrics = "faithfulness,factual_correctness,context_recall,ragas_score,answer_classification"
    argv = ["ragas", "--input-file", str(source), "--output", str(tmp_path / "out.jsonl"), "--metrics", metrics]
    assert main([*argv, "--nli", "align", "--atomizer", "sentence", "--no-cache"]) == 0  # not a failure
    rows = output_rows(tmp_path)
    assert [row.get("not_answerable", "")[:24] for row in rows] == [
        "the response has no word",
        "the response declines to",
        "the response only repeat",
        "",
    ]
    for row in rows[:3]:
        for name in ("faithfulness", "factual_correctness", "ragas_score"):
            result = row["metrics"][name]
            assert result["score"] is None and result["reason"] == f"not answerable: {row['not_answerable']}", name
        assert row["metrics"]["answer_classification"]["label"] == "DON'T KNOW"
        # the contexts are judged as usual: the same recall as the answered sample's
        assert row["metrics"]["context_recall"]["score"] == rows[3]["metrics"]["context_recall"]["score"] is not None
    assert rows[3]["metrics"]["faithfulness"]["score"] is not None
    err = capsys.readouterr().err
    assert "  samples 4  not answerable 3  failed 0" in err
    assert "  not answerable: line 1: the response has no words ('...') (not scored)" in err
    assert re.search(r"\n  faithfulness +mean \d\.\d{4}  scored 1  not scored 3\n", err), err


def test_faithfulness_mode_holistic_judges_the_response_as_a_whole(tmp_path):
    """``--faithfulness-mode holistic``: one verdict, one weight, no atomizer; a rerun in the
    default mode into the same output is refused (other settings), one into another resumes."""
    two = dict(GOOD, response="The Eiffel Tower is in Paris. The Eiffel Tower is painted gold.")
    source = write_jsonl(tmp_path / "s.jsonl", [GOOD, two])
    assert ragas(tmp_path, source, "--faithfulness-mode", "holistic", metrics="faithfulness") == 0
    rows = output_rows(tmp_path)
    results = [row["metrics"]["faithfulness"] for row in rows]
    assert [r["mode"] for r in results] == ["HOLISTIC", "HOLISTIC"]
    assert [r["total_claims"] for r in results] == [1, 1] and [len(r["verdict_counts"]) for r in results] == [1, 1]
    assert [d["claim"] for d in results[1]["details"]] == [two["response"]]
    assert "mode='HOLISTIC'" in rows[0]["settings"]["metrics"]["faithfulness"]
    assert ragas(tmp_path, source, metrics="faithfulness") == 2  # the file holds holistic rows


def test_a_panels_ragas_run_gives_each_judge_alone_with_its_count(tmp_path, capsys):
    """``--nli cross-encoder,align``: each sample's ``by_judge`` is what a run with that judge
    alone scores, and the summary prints each judge's mean with how many samples it is over."""
    pytest.importorskip("onnxruntime")
    samples = write_jsonl(
        tmp_path / "in.jsonl",
        [GOOD, GOOD | {"response": "The Eiffel Tower is in Paris. It is in Berlin."}],
    )
    common = ["--atomizer", "sentence", "--no-cache", "--metrics", "faithfulness", "--input-file", str(samples)]
    assert main(["ragas", *common, "--nli", "cross-encoder,align", "--output", str(tmp_path / "panel.jsonl")]) == 0
    err = capsys.readouterr().err
    panel = [json.loads(line) for line in (tmp_path / "panel.jsonl").read_text().splitlines()]
    for judge in ("cross-encoder", "align"):
        assert main(["ragas", *common, "--nli", judge, "--output", str(tmp_path / f"{judge}.jsonl"), "--quiet"]) == 0
        alone = [json.loads(line) for line in (tmp_path / f"{judge}.jsonl").read_text().splitlines()]
        got = [row["metrics"]["faithfulness"]["by_judge"][judge] for row in panel]
        assert got == pytest.approx([row["metrics"]["faithfulness"]["score"] for row in alone])
        mean = sum(got) / len(got)
        assert re.search(rf"judge {judge} alone\s+mean {mean:.4f}  scored 2", err), err


def test_a_judge_alone_that_cannot_score_says_why_in_the_samples_errors():
    """The panel's score stands; the judge's is None and the sample's errors say why (it was once
    swallowed, and the judge's mean taken over the rest in silence)."""
    from types import SimpleNamespace

    from fact_reasoner.metrics.base import MetricResult
    from fact_reasoner.metrics.evaluation import _by_judge

    class Broken:
        def result(self, metric, sample):
            raise RuntimeError("a bug")

    context = SimpleNamespace(judge_names=["a", "b"], judge_view=lambda judge: Broken() if judge == "b" else good)
    good = SimpleNamespace(result=lambda metric, sample: MetricResult(name="faithfulness", score=0.5))
    metric = SimpleNamespace(needs=lambda: {"nli"})
    errors: dict[str, str] = {}
    panel = {"faithfulness": MetricResult(name="faithfulness", score=1.0)}
    scores = _by_judge(None, ["faithfulness"], [metric], context, panel, errors)
    assert scores == {"faithfulness": {"a": 0.5, "b": None}}
    assert errors == {"faithfulness (b alone)": "RuntimeError: a bug"}

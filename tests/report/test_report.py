"""The HTML report: content, escaping, and loading in a real headless browser (chromium)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import run_biographies as runner
from fact_reasoner.cli import main as cli_main
from fact_reasoner.report import build_report, colour
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"

EVIL_ATOM = 'Marie Curie <script>alert("x")</script> & "friends".'
EVIL_CONTEXT = '<img src=x onerror="alert(1)"> Curie was born on 7 November 1867 in Warsaw.'


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """All five assessors over the bundled example, with an atom and a context full of markup."""
    tmp = tmp_path_factory.mktemp("report")
    records = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    first = records[0]
    first["cat"] = ["very rare", "Europe"]
    first["atoms"][8]["text"] = EVIL_ATOM
    next(c for c in first["contexts"] if c["id"] == "c_a5_0")["text"] = EVIL_CONTEXT
    data = tmp / "bios.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp / "out"
    assert runner.main([str(data), "--out-dir", str(out), "--quiet"]) == 0
    return sorted(out.glob("*.jsonl")), data


def test_report_content_and_escaping(results: tuple[list[Path], Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report's plots need matplotlib")
    files, data = results
    target = tmp_path / "report.html"
    assert cli_main(["report", *map(str, files), "--input-file", str(data), "-o", str(target)]) == 0
    page = target.read_text()
    assert "<script" not in page and "<img src=x" not in page  # markup from the data is inert
    assert html.escape(EVIL_ATOM, quote=True) in page
    assert html.escape(EVIL_CONTEXT, quote=True)[:60] in page
    assert page.count('src="data:image/png;base64,') == 4  # plots are inline (the conformal curve the 4th)
    assert "http://" not in page and "https://" not in page  # nothing to fetch
    for name in ("FactScore", "NLI-vote", "FR1", "FR2", "FR3", "granite-8b", "very rare"):
        assert name in page
    # the contradicting context of "born in Vienna" is shown with its NLI probability
    assert re.search(r"contradiction 0\.94</span> <a href=\"#r0-ctx\d+\">c_a5_0</a>", page)
    assert colour(0.0) == "hsl(0, 70%, 80%)" and colour(1.0) == "hsl(120, 70%, 80%)"


def test_report_without_input_file_shows_ids(results: tuple[list[Path], Path]) -> None:
    files, _ = results
    page = build_report(files)
    assert "c_a5_0" in page and "Warsaw" not in page


def test_report_shows_what_the_rows_wrote(results: tuple[list[Path], Path]) -> None:
    files, _ = results
    page = build_report(files)
    fr1 = [
        json.loads(line) for line in next(f for f in files if f.name.endswith(".fr1.jsonl")).read_text().splitlines()
    ]
    for row in fr1:  # each response with its own precision, F1@K and K
        assert f"FR1 Pr {row['factuality_score']:.3f}, F1@{row['k']} {row['f1_k']:.3f}" in page
    # the summary table's F1@K is the mean of the written F1@K, its K the written K
    table = re.search(r"<td class=\"\">FR1</td><td class=\"\">all</td>(.*?)</tr>", page).group(1)
    cells = re.findall(r"<td class=\"num\">([^<]*)</td>", table)
    # bios, claims, gold atoms, K, …: claims are every atom judged, gold atoms the labelled ones
    assert cells[1] == str(sum(r["num_atoms"] for r in fr1)) and int(cells[2]) <= int(cells[1])
    assert cells[3] == ", ".join(str(k) for k in sorted({r["k"] for r in fr1}))
    assert cells[9] == f"{sum(r['f1_k'] for r in fr1) / len(fr1):.3f}"


def _load(browser: str, url: str, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp)


def _console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.mark.skipif(
    _chromium() is None,
    reason="chromium is not installed (apt-get install chromium); "
    "the report is checked in a real browser only where one exists",
)
def test_report_loads_in_headless_chromium(results: tuple[list[Path], Path], tmp_path: Path) -> None:
    browser = _chromium()
    # the harness itself sees console errors (so a clean run below means something)
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefined_function()</script></body></html>")
    seen = _load(browser, broken.as_uri(), tmp_path, "--dump-dom")
    assert any("undefined_function" in m for m in _console_messages(seen.stderr)), seen.stderr[-2000:]

    files, data = results
    target = tmp_path / "report.html"
    target.write_text(build_report(files, data))
    loaded = _load(browser, target.as_uri(), tmp_path, "--dump-dom")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert _console_messages(loaded.stderr) == []
    dom = loaded.stdout
    assert "<script" not in dom  # the escaped atom did not become an element
    atoms = [a["text"] for a in json.loads(data.read_text().splitlines()[0])["atoms"]]
    for text in atoms:
        assert html.escape(text, quote=False) in dom, text
    assert dom.count('class="atom"') == 9 + 5  # both responses' atoms are rows of the page


# -- issue #28: an empty results file, an --input-file that matches nothing ---------------------


def _report_cli(*args: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "report", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )


def test_an_empty_results_file_fails_with_a_clear_message(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = _report_cli(str(empty), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{empty}: no result rows" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_an_input_file_matching_none_of_the_results_fails(results: tuple[list[Path], Path], tmp_path: Path) -> None:
    files, data = results
    other = tmp_path / "other.jsonl"
    record = json.loads(EXAMPLE.read_text().splitlines()[0])
    record["input"] = "A question none of the results answered"
    other.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match="none of its records matches"):
        build_report(files, other)
    done = _report_cli(*map(str, files), "--input-file", str(other), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "none of its records matches" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_an_input_file_matching_some_results_warns(
    results: tuple[list[Path], Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files, data = results
    first = tmp_path / "first.jsonl"
    first.write_text(data.read_text().splitlines()[0] + "\n")
    with caplog.at_level("WARNING", logger="fact_reasoner.report.page"):
        build_report(files, first)
    assert any("have no record there" in r.getMessage() for r in caplog.records)


# -- issue #44: one bad line is named and the page is made of the others ------------------------


def test_a_bad_line_of_a_results_or_input_file_is_named_and_the_rest_is_reported(
    results: tuple[list[Path], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, data = results
    good = [line for line in files[0].read_text().splitlines() if line.strip()]
    broken = tmp_path / files[0].name
    broken.write_text("\n".join([good[0], '{"oops": "tab\there"}', "[1, 2]", *good[1:]]) + "\n")
    inputs = tmp_path / "bios.jsonl"
    inputs.write_text(data.read_text() + "not json\n")
    target = tmp_path / "r.html"
    status = cli_main(["report", str(broken), "--input-file", str(inputs), "-o", str(target)])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert err[:3] == [
        f"error: {broken}:2: invalid JSON at column 14: Invalid control character at",
        f"error: {broken}:3: not a result row (no 'atoms' list)",
        f"error: {inputs}:3: invalid JSON at column 1: Expecting value",
    ]
    assert err[-1] == "failed: 3 unreadable line(s), listed above; the page shows the others"
    page = target.read_text()
    assert "3 line(s) of these files could not be read and are left out" in page
    assert page.count('class="atom"') == 9 + 5  # both responses are on the page


def test_a_page_without_plots_says_so_in_the_terminal_too(results, tmp_path, capsys, monkeypatch) -> None:
    """Gold-labelled results without matplotlib: "Plots need matplotlib" was only inside the
    page. The terminal says it too, with the extra that installs it, and the page the same."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    files, source = results
    out = tmp_path / "report.html"
    assert cli_main(["report", *map(str, files), "--input-file", str(source), "-o", str(out)]) == 0
    said = "plots need matplotlib: `pip install -e '.[report]'` in this project's checkout"
    assert said in capsys.readouterr().err
    assert html.escape(said[0].upper() + said[1:]) in out.read_text(encoding="utf-8")


def test_the_report_marks_where_a_panels_judges_disagree(tmp_path: Path) -> None:
    """A row judged by a panel (``--nli cross-encoder@entailment,specialist@contradiction``): the
    passage its judges disagreed on says so, with each judge's verdict; one they agreed on not."""
    record = {
        "input": "Facts",
        "output": "x",
        "atoms": [
            {"id": "a0", "text": "The Great Wall of China is visible to the naked eye from the Moon."},
            {"id": "a1", "text": "Marie Curie was born in Warsaw."},
        ],
        "contexts": [
            {"id": "c0", "text": "The Great Wall of China is not visible to the naked eye from the Moon."},
            {"id": "c1", "text": "Marie Curie was born in Warsaw in 1867."},
        ],
    }
    data = tmp_path / "in.jsonl"
    data.write_text(json.dumps(record) + "\n")
    out = tmp_path / "out"
    nli = "cross-encoder@entailment,specialist@contradiction"
    assert cli_main(["--input-file", str(data), "--output-dir", str(out), "--nli", nli, "--no-cache", "--quiet"]) == 0
    (rows,) = out.glob("*.jsonl")
    row = json.loads(rows.read_text().splitlines()[0])
    page = build_report([rows], data)
    said = {
        e["context"]: e for atom in row["atoms"] for e in atom["evidence"]
    }  # the passages that became factors, with each judge's verdict
    assert said, row
    disagreements = re.findall(r'<span class="disagree">judges disagree: ([^<]*)</span>', page)
    expected = [
        " · ".join(
            f"{name}: {dict(entailment='entails', contradiction='contradicts', neutral='neutral')[v['relation']]} "
            f"{v['probability']:.2f}"
            for name, v in e["judges"].items()
        )
        for e in said.values()
        if e["agreed"] is False
    ]
    assert expected  # version 3 reads the negated passage as entailment, the specialist not
    # each judge's verdict, then how the panel's figure is made of them (issue #60 item 3)
    assert sorted(html.unescape(d).split("; the panel's ")[0] for d in disagreements) == sorted(expected)
    assert all("; the panel's P(" in html.unescape(d) for d in disagreements)

"""scripts/benchmark_nli's table: medians of repeated runs, rows of two checkouts, ratios."""

from __future__ import annotations

from scripts.benchmark_nli import median_row, print_table


def _run(pairs_per_s: float, cpu: float, load: float, code: str = "this") -> dict:
    return {
        "judge": "cross-encoder",
        "pairs": 320,
        "load_s": 0.5,
        "judge_s": 320 / pairs_per_s,
        "pairs_per_s": pairs_per_s,
        "pairs_per_cpu_s": cpu,
        "windows": 337,
        "code": code,
        "load_average_1min": load,
    }


def test_a_row_is_the_median_of_its_runs_and_a_failed_run_is_left_out():
    row = median_row(
        [_run(90, 100, 2.0), {"judge": "cross-encoder", "error": "boom"}, _run(60, 80, 5.0), _run(80, 95, 3.0)]
    )
    assert row["pairs_per_s"] == 80 and row["pairs_per_cpu_s"] == 95 and row["load_average_1min"] == 3.0
    assert row["runs"] == 3 and row["windows"] == 337
    assert median_row([{"judge": "x", "error": "boom"}]) == {"judge": "x", "error": "boom"}


def test_the_table_gives_each_checkout_and_the_ratios_to_the_first_row(capsys):
    print_table(
        [_run(50, 60, 2.0, "baseline"), _run(100, 90, 2.1), {"judge": "llm", "code": "this", "error": "no"}], True
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["judge", "code"] and "pairs/cpu-s" in lines[0]
    assert lines[1].split()[1] == "baseline" and lines[2].split()[1] == "this"
    assert lines[2].split()[4:8] == ["100", "2.00", "90", "1.50"]  # pairs/s, ratio, pairs/cpu-s, ratio
    assert lines[3].endswith("not run: no")

"""Judges and panels of judges against a baseline, by the ship rule of a default panel (issue #50).

    .venv-dev/bin/python -m experiments.panel_eval --work runs/panel_eval \
        --candidate v3=cross-encoder \
        --candidate specialist=cross-encoder=runs/gpu/eval/export \
        --candidate roles=cross-encoder@entailment,cross-encoder=runs/gpu/eval/export@contradiction

Each ``--candidate NAME=NLI`` is an ``--nli`` value (a judge or a panel); the first is the
baseline every other one is measured against (version 3 alone). Each candidate runs, one
subprocess a step, resumable (a step whose output exists is skipped; logs in ``--work``):

1. the held-out NLI sets (``experiments.nli_training.evaluate``: the 505 FActScore atoms of the
   14 held-out biographies, the WiCE held-out half, MNLI mismatched, SNLI test, FEVER dev;
   ``--max-pairs`` rows of each 3-way / 2-way set) and the paired bootstrap against the baseline;
2. the behavioural suite's held-out part (``experiments.behaviour --part heldout``), the judge
   alone and through the default graph;
3. FR2 on the 14 held-out biographies (``experiments.run_biographies``);
4. the quick start (``fact_reasoner --version 3`` on the bundled example, in a cold process, with
   the embedded atomizer: its seconds are the cold quick start's);
5. pairs per second of every candidate in one run (``scripts.benchmark_nli``, each in a cold
   process, the same pairs).

The judges' verdicts go through the model-call cache as a user's runs do (the user's cache, or
``--cache-dir``), so a panel reuses the verdicts its members gave alone, and a candidate measured
before by ``bundle evaluate`` costs little; the speed step and the quick start use no cache.

``summary.md`` checks the rule line by line for every candidate (:func:`ship_rule`):

- the quick start right ("Marie Curie discovered penicillin." NS, the other two S), and under
  12 s cold where the panel asks the embedded LLM judge;
- the suite's held-out part through the graph: no capability worse than the baseline's,
  negation ≥ 0.90, spurious contradictions ≤ 0.05;
- FR2 on the 14 held-out biographies: balanced accuracy ≥ the baseline's, MAE ≤ the baseline's
  + 0.01;
- the paired bootstrap of candidate − baseline (1,000 resamples, seed 13) reaching 0 or above on
  every held-out measure;
- pairs per second ≥ 0.5 × the baseline's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from experiments.nli_training.bundle import (
    BIOS_MAE_ALLOWANCE,
    QUICK_START,
    QUICK_START_EXPECTED,
    bios_measure,
    quick_start_verdicts,
    run_steps,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA_DIR = ROOT.parent / "shared" / "data"

#: the rule's numbers (issue #50, item 4); the quick start's record, its verdicts and the
#: biographies' MAE allowance are the version-4 rule's (experiments/nli_training/bundle.py)
NEGATION_AT_LEAST = 0.90
SPURIOUS_AT_MOST = 0.05
SPEED_SHARE = 0.5
QUICK_START_SECONDS_WITH_LLM = 12.0


def parse_candidate(text: str) -> tuple[str, str]:
    """``NAME=NLI`` → (name, the ``--nli`` value); the name is everything before the first ``=``."""
    name, sep, nli = text.partition("=")
    if not sep or not name or not nli:
        raise argparse.ArgumentTypeError(f"give NAME=NLI, not {text!r}")
    return name, nli


def candidate_steps(args: argparse.Namespace, name: str, nli: str) -> list[tuple[str, Path, list[str]]]:
    """(step, the output that marks it done, command) of one candidate."""
    py = [sys.executable, "-m"]
    work: Path = args.work
    cache = ["--cache-dir", str(args.cache_dir)] if args.cache_dir else []
    return [
        (
            f"held-out sets ({name})",
            work / f"heldout_{name}.json",
            py
            + ["experiments.nli_training.evaluate", "--mix", str(args.mix), "--nli", nli, "--cache"]
            + ["--max-pairs", str(args.max_pairs), "--skip-speed", "--out", str(work / f"heldout_{name}.json")],
        ),
        (
            f"behaviour suite, held-out part ({name})",
            work / f"behaviour_{name}.json",
            py
            + ["experiments.behaviour", "--nli", nli, "--part", "heldout", "--quiet"]
            + cache
            + ["--json", str(work / f"behaviour_{name}.json")],
        ),
        (
            f"held-out biographies ({name})",
            work / f"bios_{name}.csv",
            py
            + ["experiments.run_biographies", str(args.bios), "--nli", nli, "--assessors", "fr2", "--quiet"]
            + cache
            + ["--out-dir", str(work / f"bios_{name}"), "--tables", str(work / f"bios_{name}")],
        ),
        (
            f"quick start ({name})",
            work / f"quickstart_{name}" / "seconds.json",
            py + ["experiments.panel_eval", "quick-start", "--nli", nli, "--out", str(work / f"quickstart_{name}")],
        ),
    ]


def quick_start_main(argv: list[str]) -> None:
    """``panel_eval quick-start --nli NLI --out DIR``: the quick start in a cold process (no
    cache), its wall-clock seconds written to ``DIR/seconds.json``."""
    import subprocess

    parser = argparse.ArgumentParser(prog="panel_eval quick-start")
    parser.add_argument("--nli", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    command = [sys.executable, "-m", "fact_reasoner", "--version", "3", "--input-file", str(QUICK_START)]
    command += ["--output-dir", str(args.out), "--nli", args.nli, "--no-cache", "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the quick start failed (exit {done.returncode})")
    (args.out / "seconds.json").write_text(json.dumps({"seconds": round(seconds, 2), "nli": args.nli}) + "\n")


def quick_start(work: Path, name: str) -> tuple[dict[str, str] | None, float | None]:
    """``({atom text: S/NS}, cold seconds)`` of a candidate's quick start (None: not run)."""
    timing = work / f"quickstart_{name}" / "seconds.json"
    verdicts = quick_start_verdicts(work, name)
    if verdicts is None:
        return None, None
    return verdicts, json.loads(timing.read_text())["seconds"] if timing.is_file() else None


def bios_fr2(work: Path, name: str) -> dict[str, float] | None:
    """FR2's balanced accuracy and MAE on the held-out biographies (``experiments/tables.py``'s CSV)."""
    accuracy = bios_measure(work, name, "FR2", "balanced_accuracy")
    mae = bios_measure(work, name, "FR2", "mae")
    return None if accuracy is None or mae is None else {"balanced_accuracy": accuracy, "mae": mae}


def behaviour(work: Path, name: str) -> dict[str, Any] | None:
    source = work / f"behaviour_{name}.json"
    return json.loads(source.read_text()) if source.is_file() else None


def ship_rule(
    candidate: dict[str, Any], baseline: dict[str, Any], uses_llm: bool
) -> list[tuple[str, bool | None, str]]:
    """The rule's lines for one candidate against the baseline: ``(line, met, what was
    measured)``; ``met`` None where a measure is missing (the rule is then not met).

    ``candidate`` and ``baseline`` hold ``quick_start`` (verdicts, seconds), ``graph`` (the
    suite's held-out part through the graph: capability → accuracy, and ``spurious``), ``bios``
    (FR2 balanced accuracy and MAE), ``bootstrap`` (rows of ``evaluate compare``) and
    ``pairs_per_s``.
    """
    lines: list[tuple[str, bool | None, str]] = []
    verdicts, seconds = candidate.get("quick_start") or (None, None)
    if verdicts is None:
        lines.append(("quick start right", None, "not run"))
    else:
        right = all(verdicts.get(atom) == wanted for atom, wanted in QUICK_START_EXPECTED.items())
        shown = ", ".join(f"{atom.split()[-1].rstrip('.')} {verdicts.get(atom, '—')}" for atom in QUICK_START_EXPECTED)
        lines.append(("quick start right", right, shown))
    if uses_llm:
        fast = seconds is not None and seconds < QUICK_START_SECONDS_WITH_LLM
        lines.append((f"quick start < {QUICK_START_SECONDS_WITH_LLM:g} s cold (LLM judge)", fast, f"{seconds} s"))
    graph, base_graph = candidate.get("graph"), baseline.get("graph")
    if graph is None or base_graph is None:
        lines.append(("suite through the graph", None, "not measured"))
    else:
        worse = [
            f"{capability} {graph['capabilities'][capability]:.3f} < {value:.3f}"
            for capability, value in base_graph["capabilities"].items()
            if graph["capabilities"].get(capability, -1.0) < value
        ]
        lines.append(("no capability worse than the baseline's", not worse, "; ".join(worse) or "none worse"))
        negation = graph["capabilities"].get("negation")
        lines.append(
            (f"negation ≥ {NEGATION_AT_LEAST}", negation is not None and negation >= NEGATION_AT_LEAST, f"{negation}")
        )
        spurious = graph.get("spurious")
        lines.append(
            (
                f"spurious contradictions ≤ {SPURIOUS_AT_MOST}",
                spurious is not None and spurious <= SPURIOUS_AT_MOST,
                f"{spurious}",
            )
        )
    bios, base_bios = candidate.get("bios"), baseline.get("bios")
    if bios is None or base_bios is None:
        lines.append(("FR2 on the 14 held-out biographies", None, "not measured"))
    else:
        ok = (
            bios["balanced_accuracy"] >= base_bios["balanced_accuracy"]
            and bios["mae"] <= base_bios["mae"] + BIOS_MAE_ALLOWANCE
        )
        lines.append(
            (
                f"FR2 biographies: balanced accuracy ≥ baseline, MAE ≤ baseline + {BIOS_MAE_ALLOWANCE}",
                ok,
                f"{bios['balanced_accuracy']:.4f} / {bios['mae']:.4f} against "
                f"{base_bios['balanced_accuracy']:.4f} / {base_bios['mae']:.4f}",
            )
        )
    rows = candidate.get("bootstrap")
    if rows is None:
        lines.append(("held-out sets not worse beyond chance", None, "not measured"))
    else:
        worse_sets = [f"{r['set']} {r['measure']} {r['difference']:+.4f}" for r in rows if not r["not_worse"]]
        lines.append(("held-out sets not worse beyond chance", not worse_sets, "; ".join(worse_sets) or "none worse"))
    rate, base_rate = candidate.get("pairs_per_s"), baseline.get("pairs_per_s")
    if rate is None or base_rate is None:
        lines.append((f"pairs/s ≥ {SPEED_SHARE} × baseline", None, "not measured"))
    else:
        lines.append(
            (
                f"pairs/s ≥ {SPEED_SHARE} × baseline",
                rate >= SPEED_SHARE * base_rate,
                f"{rate:.1f} against {base_rate:.1f} ({rate / base_rate:.2f}×)",
            )
        )
    return lines


def measured(work: Path, name: str, speeds: dict[str, float]) -> dict[str, Any]:
    """What the steps wrote for one candidate, in the shape :func:`ship_rule` reads."""
    suite = behaviour(work, name)
    graph = None
    if suite is not None:
        held = suite["parts"]["heldout"]
        graph = {
            "capabilities": {c: r["accuracy"] for c, r in held["capabilities"].items()},
            "spurious": held["spurious_contradiction"],
        }
    bootstrap = work / f"bootstrap_{name}.json"
    return {
        "quick_start": quick_start(work, name),
        "graph": graph,
        "bios": bios_fr2(work, name),
        "bootstrap": json.loads(bootstrap.read_text()) if bootstrap.is_file() else None,
        "pairs_per_s": speeds.get(name),
    }


def summarise(work: Path, candidates: list[tuple[str, str]]) -> str:
    """Every candidate beside the baseline (the first), and the rule checked line by line."""
    speeds: dict[str, float] = {}
    speed_file = work / "speed.json"
    load = None
    if speed_file.is_file():
        by_spec = {row["judge"]: row for row in json.loads(speed_file.read_text())}
        speeds = {
            name: by_spec[nli]["pairs_per_s"] for name, nli in candidates if "pairs_per_s" in by_spec.get(nli, {})
        }
        load = [row.get("load_average_1min") for row in by_spec.values()]
    results = {name: measured(work, name, speeds) for name, _ in candidates}
    base_name = candidates[0][0]
    lines = [f"# Judges and panels against {base_name} ({work})", ""]
    lines += ["| candidate | --nli |", "|---|---|"] + [f"| {name} | `{nli}` |" for name, nli in candidates] + [""]
    # the suite through the graph, every candidate side by side
    capabilities = list((results[base_name]["graph"] or {}).get("capabilities", {}))
    if capabilities:
        lines += ["## The behavioural suite's held-out part, through the default graph", ""]
        lines += ["| capability | " + " | ".join(n for n, _ in candidates) + " |"]
        lines += ["|---|" + "---:|" * len(candidates)]
        for capability in capabilities:
            cells = [
                f"{(results[n]['graph'] or {}).get('capabilities', {}).get(capability, float('nan')):.3f}"
                for n, _ in candidates
            ]
            lines.append(f"| {capability} | " + " | ".join(cells) + " |")
        cells = [f"{(results[n]['graph'] or {}).get('spurious', float('nan')):.3f}" for n, _ in candidates]
        lines += ["| spurious contradictions | " + " | ".join(cells) + " |", ""]
    lines += ["## FR2 on the 14 held-out biographies, and speed", ""]
    lines += ["| candidate | balanced accuracy | MAE of precision | pairs/s |", "|---|---:|---:|---:|"]
    for name, _ in candidates:
        bios = results[name]["bios"] or {}
        rate = results[name]["pairs_per_s"]
        lines.append(
            f"| {name} | {bios.get('balanced_accuracy', float('nan')):.4f} | {bios.get('mae', float('nan')):.4f} | "
            f"{'—' if rate is None else f'{rate:.1f}'} |"
        )
    if load is not None:
        lines += ["", f"(speed: one run, each judge in a cold process; 1-minute load average after each: {load})"]
    lines.append("")
    for name, nli in candidates[1:]:
        rule = ship_rule(results[name], results[base_name], uses_llm=_uses_llm(nli))
        met = all(ok for _, ok, _ in rule)
        lines += [f"## {name} against {base_name}: {'MET' if met else 'NOT MET'}", "", "| line | met | measured |"]
        lines += ["|---|---|---|"] + [
            f"| {line} | {'yes' if ok else ('**no**' if ok is False else '**not measured**')} | {what} |"
            for line, ok, what in rule
        ]
        if results[name]["bootstrap"]:
            from experiments.nli_training.evaluate import compare_markdown

            lines += ["", compare_markdown(results[name]["bootstrap"], name, base_name)]
        lines.append("")
    return "\n".join(lines) + "\n"


def _uses_llm(nli: str) -> bool:
    from fact_reasoner.settings.fields import member_names

    return "llm" in member_names(nli)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["quick-start"]:
        return quick_start_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="outputs and logs (a rerun resumes)")
    parser.add_argument(
        "--candidate",
        type=parse_candidate,
        action="append",
        required=True,
        metavar="NAME=NLI",
        help="a judge or panel as --nli names it; the first is the baseline (repeatable)",
    )
    parser.add_argument("--mix", type=Path, default=ROOT / "runs" / "nli" / "mix.json", help="the training mix")
    parser.add_argument(
        "--bios", type=Path, default=ROOT / "runs" / "bios_heldout.jsonl", help="prepared held-out bios"
    )
    parser.add_argument("--max-pairs", type=int, default=2000, help="rows of each 3-way / 2-way set (2000)")
    parser.add_argument(
        "--cache-dir", type=Path, help="the model-call cache (default: the user's, shared with other runs)"
    )
    parser.add_argument("--summary-only", action="store_true", help="only write summary.md from what is there")
    args = parser.parse_args(argv)

    if len(args.candidate) < 2:
        parser.error("give a baseline and at least one candidate")
    if not args.summary_only:
        if not args.bios.is_file():
            parser.error(f"{args.bios} is missing: `bundle evaluate` prepares it (experiments.prepare_factscore)")
        base_name = args.candidate[0][0]
        steps: list[tuple[str, Path, list[str]]] = []
        for name, nli in args.candidate:
            steps += candidate_steps(args, name, nli)
        for name, _ in args.candidate[1:]:
            steps.append(
                (
                    f"paired bootstrap ({name})",
                    args.work / f"bootstrap_{name}.json",
                    [sys.executable, "-m", "experiments.nli_training.evaluate", "compare"]
                    + [str(args.work / f"heldout_{name}.json"), str(args.work / f"heldout_{base_name}.json")]
                    + ["--names", f"{name},{base_name}", "--json", str(args.work / f"bootstrap_{name}.json")],
                )
            )
        speed = [sys.executable, "-m", "scripts.benchmark_nli", "--json", str(args.work / "speed.json")]
        for _, nli in args.candidate:
            speed += ["--judge", nli]
        steps.append(("pairs per second", args.work / "speed.json", speed))
        run_steps(steps, args.work)
    summary = summarise(args.work, args.candidate)
    (args.work / "summary.md").write_text(summary)
    print(summary)


if __name__ == "__main__":  # pragma: no cover
    main()

"""The relation screen against the ship rule of issue 58, in one run.

    .venv-dev/bin/python -m experiments.screen_eval --work runs/screen_eval \
        [--candidate sentence="--entailments sentence --contradictions sentence"] [--only STEP …]

The baseline is the default judge (version 3) with the word rules (``--entailments same-subject
--contradictions same-attribute``); each ``--candidate NAME="FLAGS"`` is a set of graph and judge
flags (``--entailments sentence``, ``--nli cross-encoder@entailment,specialist@contradiction`` …).
Every step writes its JSON into ``--work`` and is skipped when that file exists (delete it to
rerun); ``summary.md`` checks the rule line by line:

1. ``yardstick`` — the new user's 27 claims (``../shared/data/new_user_claims.jsonl``, atoms and
   passages supplied; never used to choose a rule): how many verdicts match the gold label (≥ 25);
2. ``behaviour`` — the behavioural suite's held-out part through the graph
   (``experiments.behaviour --part heldout``): someone_else ≥ 0.85, role_swap ≥ 0.80,
   substitution ≥ 0.90, hedged ≥ 0.80, negation ≥ 0.90, paraphrase ≥ 0.97, word_for_word ≥ 0.98;
3. ``heldout`` — FR2 on the 14 held-out biographies (``runs/bios_heldout.jsonl``): balanced
   accuracy ≥ the baseline's, MAE ≤ the baseline's + 0.005;
4. ``dev33`` — FR2 on the 33 development biographies (``runs/bios_dev33.jsonl``): false
   entailments (gold NS predicted S) ≤ 70, gold-S atoms the baseline got right and the
   candidate does not ≤ 15;
5. ``bootstrap`` — the held-out NLI sets (the 505 FActScore atoms, WiCE, FEVER, MNLI, SNLI:
   ``experiments.nli_training.evaluate`` through :class:`ScreenedNLI`, each pair screened as the
   graph would screen it) against the baseline: the paired bootstrap's 95 % interval of candidate
   − baseline reaches 0 or above on every measure;
6. ``speed`` — pairs per second of judging and screening, candidate against baseline in one
   process, alternating, the same pairs (≥ 0.5×).

The judge's verdicts come from the model-call cache after their first computation, as a user's
runs do; the speed step uses none.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data"
YARDSTICK = DATA / "new_user_claims.jsonl"
BASELINE_FLAGS = "--entailments same-subject --contradictions same-attribute"
STEPS = ("yardstick", "behaviour", "heldout", "dev33", "bootstrap", "speed")

#: the rule's numbers (issue 58)
YARDSTICK_AT_LEAST = 25
BEHAVIOUR_AT_LEAST = {
    "someone_else": 0.85,
    "role_swap": 0.80,
    "substitution": 0.90,
    "hedged": 0.80,
    "negation": 0.90,
    "paraphrase": 0.97,
    "word_for_word": 0.98,
}
MAE_ALLOWANCE = 0.005
DEV_FALSE_ENTAILMENTS_AT_MOST = 70
DEV_LOST_AT_MOST = 15
SPEED_SHARE = 0.5


class ScreenedNLI:
    """A judge whose every verdict is screened as the graph screens an atom–passage relation (the
    pair's hypothesis the one atom, its premise the one passage): a relation the screen sets aside
    reads as neutral (its entailment mass moved to neutral), one it turns as a contradiction with
    P(C) = P(E) + P(C). What the evaluation sets then measure is the judge and the screen together."""

    def __init__(self, inner: Any, options: Any) -> None:
        self.inner = inner
        self.options = options
        self.name = f"{getattr(inner, 'name', 'judge')}+screen"
        self.identity = (
            f"{getattr(inner, 'identity', self.name)}+screen({options.entailments},{options.contradictions})"
        )

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        return [self._screened(pair, j) for pair, j in zip(pairs, self.inner.judge(pairs))]

    def _screened(self, pair: tuple[str, str], judgement: Any) -> Any:
        from fact_reasoner.graph.build import plan_graph
        from fact_reasoner.nli.base import NLIJudgement
        from fact_reasoner.schema import Atom, Context, Relation, RelationType
        from fact_reasoner.screening import screen_relations

        if judgement.failed or judgement.label not in (RelationType.ENTAILMENT, RelationType.CONTRADICTION):
            return judgement
        premise, hypothesis = pair
        plan = plan_graph([Atom(id="a", text=hypothesis)], [Context(id="c", text=premise)], 2)
        relation = Relation.model_construct(
            source="c",
            target="a",
            relation=judgement.label,
            probability=judgement.probability,
            probabilities=judgement.probabilities or None,
            failed=False,
            judge=None,
            sentence=None,
        )
        screened = screen_relations(plan, [relation], self.options.model_copy(update={"version": 2})).relations[0]
        probabilities = dict(judgement.probabilities or {judgement.label.value: judgement.probability})
        if screened.relation == RelationType.NEUTRAL:
            moved = probabilities.pop(judgement.label.value, 0.0)
            probabilities[judgement.label.value] = 0.0
            probabilities["neutral"] = probabilities.get("neutral", 0.0) + moved
        elif screened.relation != judgement.label or screened.probability != judgement.probability:
            probabilities = {"entailment": 0.0, "neutral": 1.0 - screened.probability}
            probabilities[screened.relation.value] = screened.probability
        return NLIJudgement.from_probabilities(probabilities)


def run(command: list[str], log: Path) -> None:
    """Run one step's command, its output in ``log``; stop on failure."""
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    if done.returncode not in (0, 1):  # behaviour exits 1 when a threshold is missed
        raise SystemExit(f"error: {' '.join(command)} failed ({done.returncode}); see {log}")


def yardstick_step(flags: str, out: Path) -> dict[str, Any]:
    """The new user's claims through the main command with ``flags``: verdicts against gold."""
    folder = out.with_suffix("")
    command = [sys.executable, "-m", "fact_reasoner", "--version", "3", "--input-file", str(YARDSTICK)]
    command += ["--output-dir", str(folder), "--overwrite", "--quiet", *shlex.split(flags)]
    run(command, out.with_suffix(".log"))
    rows = [json.loads(line) for line in (folder / "new_user_claims.fr3.jsonl").open(encoding="utf-8")]
    verdicts = [
        {"claim": a["text"], "gold": a.get("label"), "prediction": a["prediction"], "probability": a["probability"]}
        for row in rows
        for a in row["atoms"]
    ]
    return {"right": sum(v["gold"] == v["prediction"] for v in verdicts), "of": len(verdicts), "verdicts": verdicts}


def behaviour_step(flags: str, out: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "experiments.behaviour", "--nli", "cross-encoder", "--part", "heldout", "--quiet"]
    command += [*shlex.split(flags), "--json", str(out.with_suffix(".items.json"))]
    run(command, out.with_suffix(".log"))
    report = json.loads(out.with_suffix(".items.json").read_text(encoding="utf-8"))
    accuracy = {name: row["accuracy"] for name, row in report["parts"]["heldout"]["capabilities"].items()}
    return {"accuracy": accuracy, "spurious_contradiction": report["parts"]["heldout"].get("spurious_contradiction")}


def biographies_step(flags: str, records: Path, baseline: Path | None) -> dict[str, Any]:
    """FR2 on prepared biographies with ``flags`` (in this process: the screen's ablation
    harness), measured against gold and, where given, the baseline's rows."""
    from experiments.screen_ablation import config_from_flags, measures, predictions

    records_read = [json.loads(line) for line in records.open(encoding="utf-8") if line.strip()]
    rows = predictions(records_read, config_from_flags(["--version", "2", *shlex.split(flags)]))
    before = json.loads(baseline.read_text(encoding="utf-8"))["rows"] if baseline else None
    return measures(rows, before) | {"rows": rows}


def bootstrap_step(flags: str, out: Path, mix: Path) -> dict[str, Any]:
    command = [sys.executable, "-m", "experiments.nli_training.evaluate", "--mix", str(mix), "--skip-speed"]
    command += ["--screen-flags", flags, "--out", str(out.with_suffix(".sets.json"))]
    run(command, out.with_suffix(".log"))
    return json.loads(out.with_suffix(".sets.json").read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.screen_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "screen_eval")
    parser.add_argument(
        "--candidate",
        action="append",
        default=[],
        help='NAME="FLAGS" (repeatable; default: sentence="--entailments sentence --contradictions sentence")',
    )
    parser.add_argument("--only", action="append", choices=STEPS, help="run only these steps")
    parser.add_argument("--mix", type=Path, default=ROOT / "runs" / "nli" / "mix.json")
    parser.add_argument("--heldout", type=Path, default=ROOT / "runs" / "bios_heldout.jsonl")
    parser.add_argument("--dev", type=Path, default=ROOT / "runs" / "bios_dev33.jsonl")
    parser.add_argument("--speed-pairs", type=int, default=2000)
    args = parser.parse_args(argv)
    candidates = [("baseline", BASELINE_FLAGS)]
    for text in args.candidate or ["sentence=--entailments sentence --contradictions sentence"]:
        name, _, flags = text.partition("=")
        candidates.append((name, flags))
    args.work.mkdir(parents=True, exist_ok=True)
    steps = args.only or list(STEPS)
    results: dict[str, dict[str, Any]] = {}
    for name, flags in candidates:
        results[name] = {}
        for step in steps:
            if step == "speed":
                continue
            out = args.work / f"{step}_{name}.json"
            if not out.is_file():
                print(f"{step} ({name}) …", flush=True)
                started = time.perf_counter()
                if step == "yardstick":
                    result = yardstick_step(flags, out)
                elif step == "behaviour":
                    result = behaviour_step(flags, out)
                elif step == "bootstrap":
                    result = bootstrap_step(flags, out, args.mix)
                else:
                    records = args.heldout if step == "heldout" else args.dev
                    base = None if name == "baseline" else args.work / f"{step}_baseline.json"
                    result = biographies_step(flags, records, base)
                result["seconds"] = round(time.perf_counter() - started, 1)
                out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
            results[name][step] = json.loads(out.read_text(encoding="utf-8"))
    if "speed" in steps:
        out = args.work / "speed.json"
        if not out.is_file():
            print("speed …", flush=True)
            out.write_text(json.dumps(speed(candidates, args.heldout, args.speed_pairs), indent=1), encoding="utf-8")
        results["speed"] = json.loads(out.read_text(encoding="utf-8"))
    summary = render(results, candidates, args.work)
    (args.work / "summary.md").write_text(summary, encoding="utf-8")
    print(summary)
    return 0


def speed(candidates: list[tuple[str, str]], records: Path, n: int) -> dict[str, Any]:
    """Pairs per second of judging and screening the same atom–passage pairs, each candidate's
    judge and screen built fresh (no call cache), the candidates alternating over three rounds;
    the median round counts. Screening covers what the graph's screen does per pair: read the
    atom and the passage (parsed once per text, as in a record) and check the relations the
    judge gave."""
    import os
    import statistics

    from experiments.screen_ablation import config_from_flags
    from fact_reasoner.graph.build import plan_graph
    from fact_reasoner.nli.factory import make_nli
    from fact_reasoner.schema import Atom, Context
    from fact_reasoner.stages import judge_plan, screen_relations

    rows = [json.loads(line) for line in records.open(encoding="utf-8") if line.strip()]
    plans = []
    total = 0
    for row in rows:
        atoms = [Atom(id=a["id"], text=a["text"]) for a in row["atoms"]]
        contexts = [Context(**c) for c in row["contexts"]]
        plan = plan_graph(atoms, contexts, 2)
        plans.append(plan)
        total += len(plan.pairs)
        if total >= n:
            break
    seconds: dict[str, list[float]] = {name: [] for name, _ in candidates}
    for _ in range(3):
        for name, flags in candidates:
            config = config_from_flags(["--version", "2", "--no-cache", *shlex.split(flags)])
            backend = make_nli(config)
            backend.judge([("A warm-up premise.", "A warm-up claim.")])  # the model's load is not timed
            from fact_reasoner.screening.reading import read_claim, read_passage

            read_claim.cache_clear()
            read_passage.cache_clear()
            started = time.perf_counter()
            for plan in plans:
                judged = judge_plan(plan, backend)
                screen_relations(plan, judged.relations, config.graph)
            seconds[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "pairs": total,
        "load_average": os.getloadavg()[0],
        "pairs_per_second": {name: round(total / median[name], 1) for name in median},
        "seconds": seconds,
    }


def _mark(ok: bool) -> str:
    return "met" if ok else "**not met**"


def render(results: dict[str, Any], candidates: list[tuple[str, str]], work: Path) -> str:
    base = results["baseline"]
    lines = [
        "# The relation screen against the ship rule (issue 58)",
        "",
        f"`python -m experiments.screen_eval --work {work}`; baseline = version 3 with `{BASELINE_FLAGS}`.",
        "",
    ]
    speed_result = results.get("speed", {})
    header = "| line | rule | " + " | ".join(name for name, _ in candidates) + " |"
    lines += [header, "|---|---|" + "---|" * len(candidates)]

    def row(label: str, rule: str, values: list[str]) -> None:
        lines.append(f"| {label} | {rule} | " + " | ".join(values) + " |")

    if "yardstick" in base:
        row(
            "new user's claims right",
            f"≥ {YARDSTICK_AT_LEAST} of 27",
            [
                f"{r['yardstick']['right']} of {r['yardstick']['of']} {_mark(r['yardstick']['right'] >= YARDSTICK_AT_LEAST)}"
                for name, _ in candidates
                for r in [results[name]]
            ],
        )
    if "behaviour" in base:
        for capability, bar in BEHAVIOUR_AT_LEAST.items():
            row(
                f"behaviour {capability}",
                f"≥ {bar}",
                [
                    f"{results[name]['behaviour']['accuracy'].get(capability, float('nan')):.3f} "
                    + _mark(results[name]["behaviour"]["accuracy"].get(capability, 0) >= bar)
                    for name, _ in candidates
                ],
            )
    if "heldout" in base:
        b = base["heldout"]
        row(
            "FR2 held-out 14: BA",
            "≥ baseline",
            [
                f"{results[n]['heldout']['balanced_accuracy']:.4f} "
                + _mark(results[n]["heldout"]["balanced_accuracy"] >= b["balanced_accuracy"])
                for n, _ in candidates
            ],
        )
        row(
            "FR2 held-out 14: MAE",
            f"≤ baseline + {MAE_ALLOWANCE}",
            [
                f"{results[n]['heldout']['mae']:.4f} " + _mark(results[n]["heldout"]["mae"] <= b["mae"] + MAE_ALLOWANCE)
                for n, _ in candidates
            ],
        )
    if "dev33" in base:
        row(
            "FR2 dev 33: false entailments",
            f"≤ {DEV_FALSE_ENTAILMENTS_AT_MOST}",
            [
                f"{results[n]['dev33']['false_entailments']} "
                + _mark(results[n]["dev33"]["false_entailments"] <= DEV_FALSE_ENTAILMENTS_AT_MOST)
                for n, _ in candidates
            ],
        )
        row(
            "FR2 dev 33: gold S newly lost",
            f"≤ {DEV_LOST_AT_MOST}",
            [
                f"{results[n]['dev33'].get('gold_s_lost', 0)} "
                + _mark(results[n]["dev33"].get("gold_s_lost", 0) <= DEV_LOST_AT_MOST)
                for n, _ in candidates
            ],
        )
    if "bootstrap" in base:
        from experiments.nli_training.evaluate import compare

        for name, _ in candidates[1:]:
            comparison = compare(results[name]["bootstrap"], base["bootstrap"])
            worse = [c for c in comparison if c["high"] < 0]
            lines.append(
                f"| bootstrap {name} − baseline | interval reaches 0 | "
                + "; ".join(
                    f"{c['set']} {c['measure']} {c['difference']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
                    for c in comparison
                )
                + f" {_mark(not worse)} |"
            )
    if speed_result:
        pps = speed_result["pairs_per_second"]
        row(
            "pairs per second (judge + screen)",
            f"≥ {SPEED_SHARE}× baseline",
            [
                f"{pps[n]} ({pps[n] / pps['baseline']:.2f}×) " + _mark(pps[n] >= SPEED_SHARE * pps["baseline"])
                for n, _ in candidates
            ],
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

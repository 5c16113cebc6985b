"""Conformal filtering measured on answers the judge never saw (issue #61).

    .venv-dev/bin/python -m experiments.conformal_eval --work runs/conformal

One command, resumable: each step whose output exists is skipped.

1. **prepare** the 14 held-out FActScore topics (``factscore_heldout_topics`` of
   ``experiments/behaviour_suite.json``: the topics the shipped judges were not trained on) for
   the three generators, ChatGPT, InstructGPT and PerplexityAI: the gold S/NS atoms, and for
   each atom the project's BM25 passages over the topic's Wikipedia passages
   (``experiments.prepare_factscore --retriever bm25``; one evidence pipeline for all three, since
   only ChatGPT's atoms come with FActScore's passages) → ``<work>/heldout14_all.jsonl`` (42
   responses, each with its ``generator``);
2. **assess** them with FR2 for each scorer (``experiments.run_biographies --assessors fr2``):
   version 3 alone (``--nli cross-encoder``) and the roles panel (``--nli
   cross-encoder@entailment,specialist@contradiction``) → ``<work>/out/heldout14_all.<tag>.fr2.jsonl``;
3. **measure** (:func:`measure`): on the 42 responses' gold atoms, for each scorer, guarantee
   (``response``, ``claims``), method (plain; adaptive for ``response``) and α ∈ {0.05, 0.1, 0.2}:
   ``--splits`` random half/half splits (21 calibration answers, 21 test answers; seed
   ``--seed``), the filter fitted on the calibration half and applied to the test half
   (:mod:`fact_reasoner.conformal.evaluation`): the realised error against α and the retention of
   true claims; the realised error per generator (the guarantee is marginal over the pooled
   answers, not per generator); plain against adaptive at equal realised error (each method's
   curve over a grid of α, the plain retention interpolated at the adaptive's realised error);
4. **example**: one test answer filtered by the real commands — ``fact-reasoner conformal`` on
   the calibration half of the first split, then ``fact-reasoner --conformal`` on the answer — its
   claims before and after with the stated guarantee;
5. **write** ``--out`` (Markdown: the tables, the command lines, the example) and its numbers as
   JSON beside it.

When the posteriors change (a new judge, a new stage between the judge and the graph), remove
``<work>/out`` (or give another ``--work``) and run the same command again.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fact_reasoner.conformal.calibration import calibration_answers
from fact_reasoner.conformal.evaluation import Evaluation, fitted_thresholds, outcome, random_splits
from fact_reasoner.conformal.maths import Claims

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA_DIR = ROOT.parent / "shared" / "data"
GENERATORS = ("ChatGPT", "InstructGPT", "PerplexityAI")
#: the held-out topics: those no shipped judge was trained on
TOPICS_FILE = HERE / "behaviour_suite.json"
TOPICS_KEY = "factscore_heldout_topics"
#: the scores measured: tag → the --nli value whose FR2 posteriors are the claim scores
SCORERS = {"v3": "cross-encoder", "roles": "cross-encoder@entailment,specialist@contradiction"}
PREPARED = "heldout14_all.jsonl"
ALPHAS = (0.05, 0.1, 0.2)
#: (guarantee, method) measured; the adaptive method exists for the response guarantee only
KINDS = (("response", "plain"), ("response", "adaptive"), ("claims", "plain"))
#: the α grid of the equal-error comparison of plain and adaptive
GRID = (0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3)
RESULTS = HERE / "results" / "conformal_2026-11-29.md"


def prepare(work: Path, data_dir: Path = DATA_DIR) -> Path:
    """The 42 held-out responses with gold atoms and BM25 passages, one file (see module doc)."""
    from experiments import prepare_factscore as prep

    out = work / PREPARED
    if out.exists():
        return out
    factscore = data_dir / "factscore_bios_dev"
    corpus = json.loads((factscore / "topic_passages_dev.json").read_text(encoding="utf-8"))
    retriever = prep.TopicBM25(corpus)
    topics = prep.read_topics(TOPICS_FILE, TOPICS_KEY)
    records = []
    for generator in GENERATORS:
        prepared, stats = prep.prepare(factscore / f"{generator}.jsonl", retriever=retriever, topics=topics)
        print(f"{generator}: {json.dumps(stats.as_dict())}", file=sys.stderr)
        records += [{**record, "generator": generator} for record in prepared]
    work.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.replace(out)
    return out


def rows_file(work: Path, tag: str) -> Path:
    """FR2's rows of one scorer."""
    return work / "out" / f"{PREPARED.removesuffix('.jsonl')}.{tag}.fr2.jsonl"


def assess(work: Path, prepared: Path, scorers: dict[str, str]) -> None:
    """FR2 over the prepared responses for each scorer (run_biographies resumes what is done)."""
    for tag, nli in scorers.items():
        command = [sys.executable, "-m", "experiments.run_biographies", str(prepared), "--nli", nli]
        command += ["--assessors", "fr2", "--tag", tag, "--out-dir", str(work / "out"), "--quiet"]
        print(f"- FR2 with {tag}: {' '.join(command)}", file=sys.stderr, flush=True)
        log = work / f"assess_{tag}.log"
        with open(log, "w") as handle:
            status = subprocess.run(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT).returncode
        if status != 0:
            raise SystemExit(f"FR2 with {tag} failed (exit {status}); {log}:\n{log.read_text()[-2000:]}")


@dataclass(frozen=True)
class Answer:
    """One assessed response: its gold-labelled claims, its generator and topic, and its row."""

    claims: Claims
    generator: str
    topic: str
    row: dict[str, Any]


def load_answers(work: Path, tag: str) -> list[Answer]:
    """FR2's rows of a scorer as answers, in the prepared file's order (42 of them)."""
    prepared = [json.loads(line) for line in (work / PREPARED).read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in rows_file(work, tag).read_text(encoding="utf-8").splitlines() if line]
    rows.sort(key=lambda row: row["source_line"])
    if [row["source_line"] for row in rows] != list(range(1, len(prepared) + 1)):
        raise SystemExit(f"{rows_file(work, tag)}: not every prepared response was assessed; run again to finish")
    answers = calibration_answers([(f"{rows_file(work, tag)}:{i + 1}", row) for i, row in enumerate(rows)])
    return [Answer(a.claims, prepared[i]["generator"], prepared[i]["topic"], rows[i]) for i, a in enumerate(answers)]


@dataclass
class Measured:
    """One (scorer, guarantee, method, α) over the splits."""

    scorer: str
    guarantee: str
    method: str
    alpha: float
    evaluation: Evaluation
    by_generator: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        e = self.evaluation
        return {
            "scorer": self.scorer,
            "guarantee": self.guarantee,
            "method": self.method,
            "alpha": self.alpha,
            "splits": len(e.outcomes),
            "calibration_answers": e.calibration_size,
            "error": e.error,
            "error_sd": e.error_sd,
            "splits_over_alpha": e.over_alpha,
            "retention": e.retention,
            "retention_sd": e.retention_sd,
            "kept_share": e.kept_share,
            "error_by_generator": self.by_generator,
            "seconds": round(self.seconds, 1),
        }


def run_splits(
    answers: Sequence[Answer], alpha: float, guarantee: str, method: str, splits: int, seed: int
) -> tuple[Evaluation, dict[str, float]]:
    """The filter over random half/half splits (:mod:`fact_reasoner.conformal.evaluation`), and
    the realised error of the test answers of each generator (pooled over splits)."""
    outcomes = []
    errors: dict[str, list[float]] = {g: [] for g in GENERATORS}
    for calibration_ids, test_ids in random_splits(len(answers), splits, seed):
        calibration = [answers[i].claims for i in calibration_ids]
        test = [answers[i] for i in test_ids]
        thresholds = fitted_thresholds(calibration, [a.claims for a in test], alpha, guarantee, method)
        outcomes.append(outcome([a.claims for a in test], thresholds, guarantee))
        for answer, tau in zip(test, thresholds):
            errors[answer.generator].append(outcome([answer.claims], [tau], guarantee).error)
    by_generator = {g: sum(v) / len(v) for g, v in errors.items() if v}
    return Evaluation(alpha, guarantee, method, outcomes, len(answers) // 2), by_generator


def measure(work: Path, scorers: Sequence[str], splits: int, seed: int, grid_splits: int) -> dict[str, Any]:
    """Every (scorer, guarantee, method, α) of :data:`KINDS` × :data:`ALPHAS`, and the equal-error
    comparison of plain and adaptive over :data:`GRID`."""
    measured: list[Measured] = []
    curves: dict[str, dict[str, list[dict[str, float]]]] = {}
    for tag in scorers:
        answers = load_answers(work, tag)
        for guarantee, method in KINDS:
            for alpha in ALPHAS:
                started = time.perf_counter()
                evaluation, by_generator = run_splits(answers, alpha, guarantee, method, splits, seed)
                done = Measured(tag, guarantee, method, alpha, evaluation, by_generator, time.perf_counter() - started)
                print(f"  {tag} {guarantee} {method} alpha {alpha}: {json.dumps(done.as_dict())}", file=sys.stderr)
                measured.append(done)
        curves[tag] = {}
        for method in ("plain", "adaptive"):
            points = []
            for alpha in GRID:
                evaluation, _ = run_splits(answers, alpha, "response", method, grid_splits, seed)
                points.append({"alpha": alpha, "error": evaluation.error, "retention": evaluation.retention})
            curves[tag][method] = points
    return {
        "measured": [m.as_dict() for m in measured],
        "curves": curves,
        "splits": splits,
        "grid_splits": grid_splits,
        "seed": seed,
    }


def interpolate(points: Sequence[dict[str, float]], error: float) -> float | None:
    """The retention of a curve at a realised error (linear between the two grid points around
    it, the curve's points sorted by error); None outside the curve's range."""
    ordered = sorted(points, key=lambda p: p["error"])
    for low, high in zip(ordered, ordered[1:]):
        if low["error"] <= error <= high["error"]:
            if high["error"] == low["error"]:
                return max(low["retention"], high["retention"])
            share = (error - low["error"]) / (high["error"] - low["error"])
            return low["retention"] + share * (high["retention"] - low["retention"])
    return None


def example(work: Path, answers: Sequence[Answer], alpha: float, seed: int) -> dict[str, Any]:
    """One answer of the first split's test half, filtered by the real commands (module doc):
    a filter of each guarantee at ``alpha``, fitted on the calibration half."""
    calibration_ids, test_ids = random_splits(len(answers), 1, seed)[0]
    folder = work / "example"
    folder.mkdir(parents=True, exist_ok=True)
    rows = folder / "calibration_rows.jsonl"
    rows.write_text("".join(json.dumps(answers[i].row) + "\n" for i in calibration_ids), encoding="utf-8")
    # the test answer whose number of claims is the median of the test half's
    chosen = sorted(test_ids, key=lambda i: (len(answers[i].claims.scores), i))[len(test_ids) // 2]
    prepared = (work / PREPARED).read_text(encoding="utf-8").splitlines()
    record = folder / "answer.jsonl"
    record.write_text(prepared[chosen] + "\n", encoding="utf-8")
    labels = {a["id"]: a.get("label") for a in json.loads(prepared[chosen])["atoms"]}
    out: dict[str, Any] = {"topic": None, "generator": answers[chosen].generator, "alpha": alpha, "filters": {}}
    for guarantee in ("response", "claims"):
        filter_file = folder / f"conformal_{guarantee}_{alpha}.json"
        fit = [sys.executable, "-m", "fact_reasoner", "conformal", "--gold", _here(rows), "--alpha", str(alpha)]
        fit += ["--guarantee", guarantee, "--output", _here(filter_file)]
        fitted = subprocess.run(fit, cwd=ROOT, capture_output=True, text=True)
        if fitted.returncode != 0:
            raise SystemExit(f"fact-reasoner conformal failed: {fitted.stderr}")
        output = folder / f"answer.{guarantee}.fr2.jsonl"
        apply = [sys.executable, "-m", "fact_reasoner", "--version", "2", "--nli", SCORERS["v3"], "--input-file"]
        apply += [_here(record), "--output-file", _here(output), "--overwrite", "--conformal", _here(filter_file)]
        applied = subprocess.run(apply, cwd=ROOT, capture_output=True, text=True)
        if applied.returncode != 0:
            raise SystemExit(f"fact-reasoner --conformal failed: {applied.stderr}")
        row = json.loads(output.read_text(encoding="utf-8").splitlines()[0])
        out["topic"], out["output"] = row.get("topic"), row.get("output")
        out["claims"] = [
            {"text": a["text"], "posterior": a["probability"], "gold": labels.get(a["id"])} for a in row["atoms"]
        ]
        out["filters"][guarantee] = {
            "fit_command": _shown_command(fit),
            "fit_output": fitted.stderr.strip().replace(str(ROOT) + "/", ""),
            "apply_command": _shown_command(apply),
            "conformal": row["conformal"],
            "kept": [a["kept"] for a in row["atoms"]],
        }
    return out


def _here(path: Path) -> str:
    """A path as the commands are given it: relative to the repository (they run there), so the
    rows and the results name no machine's folders."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _shown_command(command: Sequence[str]) -> str:
    shown = ["python" if part == sys.executable else part for part in command]
    return " ".join(shlex.quote(str(Path(p).relative_to(ROOT)) if p.startswith(str(ROOT)) else p) for p in shown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "conformal", help="prepared data, rows, logs")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="the shared data folder")
    parser.add_argument("--scorers", nargs="+", choices=sorted(SCORERS), default=list(SCORERS))
    parser.add_argument("--splits", type=int, default=200, help="random half/half splits per measure (default 200)")
    parser.add_argument("--grid-splits", type=int, default=100, help="splits per alpha of the equal-error curves")
    parser.add_argument("--seed", type=int, default=0, help="seed of the splits (default 0)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the Markdown results (JSON numbers beside it)")
    args = parser.parse_args(argv)
    prepared = prepare(args.work, args.data_dir)
    assess(args.work, prepared, {tag: SCORERS[tag] for tag in args.scorers})
    print("- measuring", file=sys.stderr, flush=True)
    numbers = measure(args.work, args.scorers, args.splits, args.seed, args.grid_splits)
    print("- the example answer", file=sys.stderr, flush=True)
    numbers["example"] = example(args.work, load_answers(args.work, args.scorers[0]), 0.2, args.seed)
    numbers["data"] = describe_data(args.work)
    numbers["command"] = _shown_command([sys.executable, "-m", "experiments.conformal_eval", *(argv or sys.argv[1:])])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(numbers, indent=1) + "\n", encoding="utf-8")
    args.out.write_text(render(numbers), encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}", file=sys.stderr)
    return 0


def describe_data(work: Path) -> list[dict[str, Any]]:
    """Per generator: responses, gold claims, false claims, responses without a false claim."""
    prepared = [json.loads(line) for line in (work / PREPARED).read_text(encoding="utf-8").splitlines()]
    out = []
    for generator in GENERATORS:
        records = [r for r in prepared if r["generator"] == generator]
        labels = [[a["label"] for a in r["atoms"]] for r in records]
        out.append(
            {
                "generator": generator,
                "responses": len(records),
                "claims": sum(len(x) for x in labels),
                "false_claims": sum(x.count("NS") for x in labels),
                "responses_without_false": sum("NS" not in x for x in labels),
            }
        )
    return out


SCORER_NAMES = {"v3": "FR2, version 3 alone", "roles": "FR2, roles panel"}


def _pm(mean: float, sd: float) -> str:
    return f"{mean:.3f} ± {sd:.3f}"


def render(numbers: dict[str, Any]) -> str:
    """The Markdown results page of :func:`main`'s numbers."""
    splits = numbers["splits"]
    lines = [
        "# Conformal filtering on the 14 held-out biographies (issue #61)",
        "",
        "Written by `experiments/conformal_eval.py` (issue #61); rerun it with the command below after any change "
        "to the posteriors (delete `runs/conformal/out` first, or give another `--work`).",
        "",
        "```bash",
        f"{numbers['command']}",
        "```",
        "",
        "## Data",
        "",
        "The 14 FActScore topics no shipped judge was trained on (`factscore_heldout_topics` of "
        "`experiments/behaviour_suite.json`), the three generators' answers with their gold S/NS atoms (IR dropped), "
        "each atom with its 5 BM25 passages from the topic's Wikipedia passages "
        "(`experiments.prepare_factscore --retriever bm25`), assessed by FR2 "
        "(`experiments.run_biographies --assessors fr2`): the score of a claim is its posterior.",
        "",
        "| generator | responses | gold claims | false (NS) | responses without a false claim |",
        "|---|---:|---:|---:|---:|",
    ]
    for d in numbers["data"]:
        lines.append(
            f"| {d['generator']} | {d['responses']} | {d['claims']} | {d['false_claims']} | "
            f"{d['responses_without_false']} |"
        )
    total = {k: sum(d[k] for d in numbers["data"]) for k in ("responses", "claims", "false_claims")}
    lines += [
        f"| all | {total['responses']} | {total['claims']} | {total['false_claims']} | "
        f"{sum(d['responses_without_false'] for d in numbers['data'])} |",
        "",
        f"## Realised error and retention over {splits} random half/half splits",
        "",
        f"Each split draws {numbers['measured'][0]['calibration_answers']} answers as calibration at random (seed "
        f"{numbers['seed']}) and tests on the other {total['responses'] - numbers['measured'][0]['calibration_answers']}. "
        "**Realised error** is the guarantee's own quantity on the test half — `response`: the share of test "
        "answers whose kept claims include a false one; `claims`: the mean over test answers of the share of false "
        "claims among the kept (0 when none kept) — averaged over splits (mean ± sd over splits); the guarantee "
        "bounds that mean by α (one split may exceed it: the column after it says how often). **Retention**: the "
        "kept true claims over all true claims of the test half; **kept**: the kept share of all claims. The splits "
        "reuse the same 42 answers: how sure these means are is a matter of 42 answers, not of the number of "
        "splits.",
        "",
        "| score | guarantee | method | α | realised error | splits > α | retention of true claims | kept |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for m in numbers["measured"]:
        lines.append(
            f"| {SCORER_NAMES.get(m['scorer'], m['scorer'])} | {m['guarantee']} | {m['method']} | {m['alpha']:g} | "
            f"{_pm(m['error'], m['error_sd'])} | {m['splits_over_alpha']:.2f} | "
            f"{_pm(m['retention'], m['retention_sd'])} | {m['kept_share']:.3f} |"
        )
    lines += [
        "",
        "## Realised error by generator",
        "",
        "The guarantee is marginal over the pooled answers, not per generator: the error of the test answers of "
        "one generator, pooled over splits, may be above α where another's is below.",
        "",
        "| score | guarantee | method | α | " + " | ".join(GENERATORS) + " |",
        "|---|---|---|---:|" + "---:|" * len(GENERATORS),
    ]
    for m in numbers["measured"]:
        cells = " | ".join(f"{m['error_by_generator'].get(g, float('nan')):.3f}" for g in GENERATORS)
        lines.append(
            f"| {SCORER_NAMES.get(m['scorer'], m['scorer'])} | {m['guarantee']} | {m['method']} | {m['alpha']:g} | "
            f"{cells} |"
        )
    lines += [
        "",
        "## Plain against adaptive at equal realised error (`response`)",
        "",
        f"Each method over α ∈ {{{', '.join(f'{a:g}' for a in GRID)}}} ({numbers['grid_splits']} splits each); "
        "the plain threshold's retention is read off its curve at the adaptive method's realised error (linear "
        "between grid points), so the two are compared where they err equally; — where the adaptive error is "
        "below the plain curve's lowest (its smallest α with 21 answers is 1/22).",
        "",
        "| score | α (adaptive) | adaptive: realised error | adaptive: retention | plain: retention at that error |",
        "|---|---:|---:|---:|---:|",
    ]
    for tag, curves in numbers["curves"].items():
        for point in curves["adaptive"]:
            plain = interpolate(curves["plain"], point["error"])
            shown = "—" if plain is None else f"{plain:.3f}"
            lines.append(
                f"| {SCORER_NAMES.get(tag, tag)} | {point['alpha']:g} | {point['error']:.3f} | "
                f"{point['retention']:.3f} | {shown} |"
            )
    e = numbers["example"]
    filters = e["filters"]
    lines += [
        "",
        "## One answer before and after filtering",
        "",
        f"The calibration half of the first split (seed {numbers['seed']}), version 3 alone, α = {e['alpha']:g}, a "
        "filter of each guarantee; the test answer with the median number of claims of the other half, filtered by "
        "the command line:",
        "",
        "```bash",
    ]
    for f in filters.values():
        lines += [f["fit_command"], f["apply_command"]]
    lines += ["```", ""]
    for guarantee, f in filters.items():
        lines += [f"`fact-reasoner conformal --guarantee {guarantee}` said:", "", "```text", f["fit_output"], "```", ""]
    false_total = sum(c["gold"] == "NS" for c in e["claims"])
    lines.append(
        f"**{e['topic']}** ({e['generator']}): {len(e['claims'])} claims, {false_total} of them false by the gold "
        "labels. "
        + " ".join(
            f"The `{g}` filter kept {f['conformal']['num_kept']} (posterior > "
            + ("∞" if f["conformal"]["threshold"] is None else f"{f['conformal']['threshold']:.4f}")
            + f"), {sum(k and c['gold'] == 'NS' for k, c in zip(f['kept'], e['claims']))} of them false."
            for g, f in filters.items()
        )
    )
    lines += [
        "",
        "Before (every claim, its posterior and gold label) and after (kept or dropped by each filter):",
        "",
        "| claim | posterior | gold | " + " | ".join(f"`{g}` α {e['alpha']:g}" for g in filters) + " |",
        "|---|---:|---|" + "---|" * len(filters),
    ]
    for i, c in enumerate(e["claims"]):
        marks = " | ".join("kept" if f["kept"][i] else "dropped" for f in filters.values())
        lines.append(f"| {c['text']} | {c['posterior']:.3f} | {c['gold']} | {marks} |")
    lines.append("")
    for guarantee, f in filters.items():
        lines += [
            f"After, `{guarantee}`: " + (" ".join(f["conformal"]["kept_claims"]) or "(nothing kept)"),
            "",
            f"Its row's guarantee, as written: *{f['conformal']['statement']}*",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

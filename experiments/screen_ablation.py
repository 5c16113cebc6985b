"""The sentence screen's checks one by one on labelled biographies (issue 58): which check pays.

    .venv-dev/bin/python -m experiments.screen_ablation runs/bios_dev33.jsonl [--version 2] \
        [--variant NAME=CHECK,CHECK …] [--json OUT]

Runs FR2 (``--version``) on prepared records with gold atoms (``experiments.prepare_factscore``)
under the word rules (the baseline: ``--entailments same-subject --contradictions
same-attribute``) and under the sentence screen without some of its entailment checks or
findings (``--variant``; default: all checks, and all but each one), the judge's verdicts coming from the
model-call cache after the first variant. For each it prints balanced accuracy, the MAE of the
per-response precision, the false entailments (gold NS predicted S) and, against the baseline,
the gold-S atoms newly lost and the gold-NS atoms newly right: the trade each check makes.

The development biographies choose the checks; the held-out ones only confirm (the ship rule's
run is ``experiments.screen_eval``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.measures import balanced_accuracy, mean_absolute_error
from fact_reasoner.screening import stage
from fact_reasoner.screening.checks import CHECKS


def config_from_flags(flags: list[str]) -> PipelineConfig:
    """The settings of a command line's flags (``["--version", "2", "--entailments", "sentence"]``)."""
    from fact_reasoner.settings.cli_options import add_config_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    return config_from_args(parser.parse_args(flags), parser)


def predictions(
    records: list[dict[str, Any]], config: PipelineConfig, skip: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """Each record's atoms as ``{id, label, prediction}`` under ``config``, the entailment
    checks or findings in ``skip`` passed over."""
    stage._Screen.skip = skip
    try:
        assessor = FactReasoner(config)
        out = []
        for record in records:
            row = assessor.assess(record)
            out.append(
                {
                    "atoms": [
                        {"id": a.id, "label": a.label.value if a.label else None, "prediction": a.prediction.value}
                        for a in row.atoms
                    ]
                }
            )
        return out
    finally:
        stage._Screen.skip = ()


def measures(rows: list[dict[str, Any]], baseline: list[dict[str, Any]] | None) -> dict[str, Any]:
    truth, predicted, gold_precision, precision = [], [], [], []
    false_entailments = lost = fixed = 0
    for index, row in enumerate(rows):
        labelled = [a for a in row["atoms"] if a["label"]]
        if not labelled:
            continue
        before = {a["id"]: a["prediction"] for a in baseline[index]["atoms"]} if baseline else {}
        for atom in labelled:
            truth.append(atom["label"] == "S")
            predicted.append(atom["prediction"] == "S")
            false_entailments += atom["label"] == "NS" and atom["prediction"] == "S"
            if before:
                lost += atom["label"] == "S" and before.get(atom["id"]) == "S" and atom["prediction"] == "NS"
                fixed += atom["label"] == "NS" and before.get(atom["id"]) == "S" and atom["prediction"] == "NS"
        gold_precision.append(sum(a["label"] == "S" for a in labelled) / len(labelled))
        precision.append(sum(a["prediction"] == "S" for a in labelled) / len(labelled))
    return {
        "balanced_accuracy": round(balanced_accuracy(truth, predicted), 4),
        "mae": round(mean_absolute_error(gold_precision, precision), 4),
        "false_entailments": false_entailments,
        "gold_s_lost": lost,
        "gold_ns_fixed": fixed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.screen_ablation", description=__doc__.split("\n\n")[0])
    parser.add_argument("records", type=Path)
    parser.add_argument("--version", type=int, default=2, choices=(1, 2, 3))
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME=SKIP,SKIP: the sentence screen without these checks (subject) or findings (names:set aside); "
        "repeatable",
    )
    parser.add_argument(
        "--contradictions",
        default="sentence",
        choices=("sentence", "same-attribute", "any"),
        help="the contradiction rule beside the sentence screen's entailments (default: %(default)s)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in args.records.open(encoding="utf-8") if line.strip()]
    variants: list[tuple[str, tuple[str, ...]]] = []
    for text in args.variant:
        name, _, checks = text.partition("=")
        variants.append((name, tuple(c for c in checks.split(",") if c)))
    if not variants:
        variants = [("all", ())] + [(f"without {c}", (c,)) for c in CHECKS]
    words = PipelineConfig(version=args.version, entailments="same-subject", contradictions="same-attribute")
    sentence = PipelineConfig(version=args.version, entailments="sentence", contradictions=args.contradictions)
    baseline = predictions(records, words)
    table = {"word rules": measures(baseline, None)}
    print(f"{'variant':28} {'BA':>7} {'MAE':>7} {'false E':>8} {'S lost':>7} {'NS fixed':>9}")
    for name, checks in [("word rules", ())] + variants:
        if name != "word rules":
            table[name] = measures(predictions(records, sentence, checks), baseline)
        m = table[name]
        print(
            f"{name:28} {m['balanced_accuracy']:7.4f} {m['mae']:7.4f} {m['false_entailments']:8d} "
            f"{m.get('gold_s_lost', 0):7d} {m.get('gold_ns_fixed', 0):9d}"
        )
    if args.json:
        args.json.write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

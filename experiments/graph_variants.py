"""Replay the factor graph's variants on one set of NLI judgements: contradiction rule × tables.

Every pair FR1, FR2 and FR3 need is judged once (through the NLI pair cache, so a rerun asks
the model nothing), then each variant builds and infers its graphs from exactly those
relations (as ``--nli precomputed`` does); the FactScore-style baseline, which reads
entailments only, is the same for every variant. For each variant and assessor it prints the
atom balanced accuracy, the MAE of factual precision, the mean predicted and gold precision,
and how many posteriors lie within 0.05 of 0.5 (pooled over atoms, and the median over
biographies of each biography's share)::

    python -m experiments.graph_variants runs/bios/heldout14.jsonl --nli cross-encoder \\
        --cache-dir runs/cache --markdown runs/bios/variants_heldout14.md

Variants (``--variants``; settings as in ``fact-reasoner``):

- ``paper/any``: the paper's Table 1, every contradiction a factor (the paper's graph);
- ``paper/same-attribute``, ``priors/any``, ``priors/same-attribute``: ``--contradictions`` ×
  ``--factor-tables``;
- ``paper/none``, ``priors/none``: no atom–context contradiction at all (a reference point:
  what the graph does on entailments alone; not a setting of the tool);
- ``…+min0.5``: with ``--min-relation-probability 0.5`` (the others with 0: every relation).

It also counts the atom–context contradictions of FR2 (label contradiction, every pair) by the
atom's gold label and by what ``same-attribute`` does with them: the rule should drop many on
gold-S atoms (spurious) and keep those on gold-NS atoms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments import baselines as baseline_module
from experiments.run_biographies import read_prepared
from fact_reasoner.atoms.frames import same_attribute
from fact_reasoner.graph.build import plan_graph
from fact_reasoner.nli import PrecomputedNLI
from fact_reasoner.schema import InputRecord, Relation, RelationType
from fact_reasoner.scores import summarize_rows
from fact_reasoner.settings.config import PipelineConfig
from fact_reasoner.stages import Stages, judge_plan


@dataclass(frozen=True)
class Variant:
    """Graph settings (``PipelineConfig.with_options`` names) and whether to drop every
    atom–context contradiction before building (the ``none`` reference point)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    drop_contradictions: bool = False


def _variants() -> dict[str, Variant]:
    out: dict[str, Variant] = {}
    for tables in ("paper", "priors"):
        for rule in ("any", "same-attribute", "none"):
            settings: dict[str, Any] = {"factor_tables": tables, "contradictions": "any" if rule == "none" else rule}
            for suffix, minimum in (("", 0.0), ("+min0.5", 0.5)):
                extra = {"min_relation_probability": minimum}
                name = f"{tables}/{rule}{suffix}"
                out[name] = Variant(name, settings | extra, drop_contradictions=rule == "none")
    return out


VARIANTS = _variants()
DEFAULT_VARIANTS = (
    "paper/any",
    "paper/same-attribute",
    "priors/any",
    "priors/same-attribute",
    "paper/none",
    "priors/none",
    "paper/any+min0.5",
    "paper/same-attribute+min0.5",
    "priors/any+min0.5",
    "priors/same-attribute+min0.5",
    "priors/none+min0.5",
)
#: how close to 0.5 a posterior must be to count as undecided
NEAR_HALF = 0.05


def judge_record(record: InputRecord, nli: Any) -> dict[int, list[Relation]]:
    """The relations of each FR version's pairs (the cache makes the shared pairs free)."""
    atoms, contexts = list(record.atoms or []), list(record.contexts or [])
    return {version: judge_plan(plan_graph(atoms, contexts, version), nli).relations for version in (1, 2, 3)}


def without_atom_contradictions(record: InputRecord, relations: list[Relation]) -> list[Relation]:
    """``relations`` with every contradiction whose hypothesis is an atom made neutral."""
    atom_ids = {a.id for a in record.atoms or []}
    return [
        r.model_copy(update={"relation": RelationType.NEUTRAL})
        if r.target in atom_ids and r.relation == RelationType.CONTRADICTION
        else r
        for r in relations
    ]


def contradiction_census(record: InputRecord, relations: list[Relation]) -> Counter:
    """FR2's atom–context contradictions counted by (gold label, kept by ``same-attribute``?)."""
    atoms = {a.id: a for a in record.atoms or []}
    contexts = {c.id: c.text for c in record.contexts or []}
    census: Counter = Counter()
    for r in relations:
        atom = atoms.get(r.target)
        if atom is None or r.failed or r.relation != RelationType.CONTRADICTION:
            continue
        label = atom.label.value if atom.label is not None else "unlabelled"
        kept = same_attribute(atom.text, contexts[r.source]) != "other attribute"
        census[(label, "kept" if kept else "neutral")] += 1
    return census


def near_half(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """The share of posteriors within NEAR_HALF of 0.5, pooled over atoms and the median of the
    per-biography shares."""
    shares, hits, total = [], 0, 0
    for row in rows:
        probabilities = [a["probability"] for a in row.get("atoms") or []]
        if not probabilities:
            continue
        close = sum(abs(p - 0.5) <= NEAR_HALF for p in probabilities)
        shares.append(close / len(probabilities))
        hits, total = hits + close, total + len(probabilities)
    return (hits / total if total else float("nan")), (statistics.median(shares) if shares else float("nan"))


def summary_line(variant: str, assessor: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary = summarize_rows(rows)
    pooled, median = near_half(rows)
    counters: dict[str, float] = {}
    for row in rows:
        for key in ("contradictions_same_attribute", "contradictions_other_attribute", "factors"):
            if key in row.get("counters", {}):
                counters[key] = counters.get(key, 0) + row["counters"][key]
    return {
        "variant": variant,
        "assessor": assessor,
        "bios": summary.num_records,
        "atoms": summary.num_atoms,
        "balanced_accuracy": summary.atom_balanced_accuracy,
        "mae": summary.mae_factuality_score,
        "precision": summary.mean_factuality_score,
        "gold_precision": summary.mean_gold_factuality_score,
        "near_half_pooled": pooled,
        "near_half_median_bio": median,
        "f1_s": summary.atom_f1_supported,
        **dict(counters),
    }


def run(args: argparse.Namespace) -> int:
    records = read_prepared(args.input, args.limit)
    if records is None:
        return 2
    median = statistics.median(len(r.record.atoms or []) for r in records)
    settings: dict[str, Any] = {"models": {"nli": args.nli, "nli_model": args.nli_model}}
    if args.cache_dir is not None:
        settings["cache"] = {"cache_dir": args.cache_dir}
    base = PipelineConfig.model_validate(settings)
    model = None if base.models.nli_choice.model is None else Stages(base).nli()

    def nli_for(record: InputRecord) -> Any:
        """The model behind the pair cache, or the record's own relations (``--nli precomputed``)."""
        if model is not None:
            return model
        texts = {a.id: a.text for a in record.atoms or []} | {c.id: c.text for c in record.contexts or []}
        return PrecomputedNLI(record.relations or [], texts)

    from tqdm import tqdm

    judged = [judge_record(r.record, nli_for(r.record)) for r in tqdm(records, desc="judging", disable=args.quiet)]
    census: Counter = Counter()
    for item, relations in zip(records, judged):
        census += contradiction_census(item.record, relations[2])
    lines = []
    baseline_rows = [
        baseline_module.assess_baselines(
            r.record, nli_for(r.record), ["factscore"], k="median", dataset_median_atoms=median, record_key=r.key
        )["factscore"]
        for r in records
    ]
    lines.append(summary_line("—", "FactScore-style", baseline_rows))
    from fact_reasoner.reasoner import FactReasoner

    for name in args.variants:
        variant = VARIANTS[name]
        for version in args.versions:
            # the replayed relations are a judge's, so the graph's rules for a judge's noise apply
            # to them (a record's supplied relations are otherwise used as given)
            config = base.with_options(
                nli="precomputed", version=version, filter_supplied_relations=True, **variant.settings
            )
            fr = FactReasoner(config)
            rows = []
            for item, relations in zip(records, judged):
                given = relations[version]
                if variant.drop_contradictions:
                    given = without_atom_contradictions(item.record, given)
                record = item.record.model_copy(update={"relations": given})
                result = fr.assess(record, k="median", dataset_median_atoms=median, record_key=item.key)
                rows.append(result.model_dump(mode="json"))
            lines.append(summary_line(name, f"FR{version}", rows))
            if not args.quiet:
                print(json.dumps(lines[-1]), file=sys.stderr)
    text = markdown(lines, census, args)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(
            json.dumps({"lines": lines, "census": {"/".join(k): v for k, v in census.items()}}, indent=1)
        )
    return 0


def markdown(lines: list[dict[str, Any]], census: Counter, args: argparse.Namespace) -> str:
    out = [
        f"{args.input} — NLI `{args.nli}`{' ' + str(args.nli_model) if args.nli_model else ''}",
        "",
        "| variant | assessor | bal acc | MAE | Pr (gold) | near 0.5: atoms / median bio | F1(S) | "
        "contradiction factors kept / made neutral |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for line in lines:
        kept, dropped = line.get("contradictions_same_attribute"), line.get("contradictions_other_attribute")
        rule = f"{kept:.0f} / {dropped:.0f}" if dropped is not None else "—"
        out.append(
            f"| {line['variant']} | {line['assessor']} | {line['balanced_accuracy']:.3f} | {line['mae']:.3f} | "
            f"{line['precision']:.3f} ({line['gold_precision']:.3f}) | {line['near_half_pooled']:.1%} / "
            f"{line['near_half_median_bio']:.1%} | {line['f1_s']:.3f} | {rule} |"
        )
    out += [
        "",
        "FR2's atom–context contradictions (arg-max label, every pair) by gold label and what "
        "`same-attribute` does with them:",
        "",
        "| gold | kept | made neutral |",
        "|---|---:|---:|",
    ]
    for label in sorted({label for label, _ in census}):
        out.append(f"| {label} | {census[(label, 'kept')]} | {census[(label, 'neutral')]} |")
    return "\n".join(out) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help="prepared records with gold labels (experiments/prepare_factscore.py)")
    p.add_argument(
        "--nli",
        default="cross-encoder",
        help="NLI backend (default: cross-encoder); precomputed replays the relations the records carry",
    )
    p.add_argument("--nli-model", help="model folder for the backend (default: the shipped one)")
    p.add_argument("--cache-dir", type=Path, help="cache directory (the NLI pair cache lives there)")
    p.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(DEFAULT_VARIANTS))
    p.add_argument("--versions", nargs="+", type=int, choices=(1, 2, 3), default=[1, 2, 3])
    p.add_argument("--limit", type=int, help="only the first N records")
    p.add_argument("--markdown", type=Path, help="also write the table here")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

"""Replaying the graph's variants on one set of judgements, and the rule over the suite."""

from __future__ import annotations

import json
from pathlib import Path

from experiments import graph_variants, same_attribute_suite
from experiments.behaviour import Item, ItemResult
from fact_reasoner.schema import InputRecord
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def test_variants_replay_the_records_relations(tmp_path: Path) -> None:
    out = tmp_path / "v.json"
    argv = [str(EXAMPLE), "--nli", "precomputed", "--quiet", "--json", str(out), "--versions", "2"]
    assert graph_variants.main(argv + ["--variants", "paper/any", "priors/same-attribute+min0.5", "paper/none"]) == 0
    lines = {(line["variant"], line["assessor"]): line for line in json.loads(out.read_text())["lines"]}
    assert set(lines) == {
        ("—", "FactScore-style"),
        ("paper/any", "FR2"),
        ("priors/same-attribute+min0.5", "FR2"),
        ("paper/none", "FR2"),
    }
    # the rule's counters are summed over the records; `any` has none
    assert "contradictions_other_attribute" not in lines[("paper/any", "FR2")]
    assert lines[("priors/same-attribute+min0.5", "FR2")]["contradictions_same_attribute"] >= 1
    census = json.loads(out.read_text())["census"]
    assert census["NS/kept"] == 2  # "born in Vienna" (values) and "discovered penicillin" (agent)


def test_dropping_atom_contradictions_leaves_the_rest():
    record = InputRecord.model_validate(json.loads(EXAMPLE.read_text().splitlines()[0]))
    relations = list(record.relations or [])
    dropped = graph_variants.without_atom_contradictions(record, relations)
    atoms = {a.id for a in record.atoms or []}
    assert all(not (r.target in atoms and r.relation.value == "contradiction") for r in dropped)
    assert sum(a.relation != b.relation for a, b in zip(relations, dropped)) == sum(
        r.target in atoms and r.relation.value == "contradiction" for r in relations
    )


def test_near_half_pools_atoms_and_takes_the_median_biography():
    rows = [{"atoms": [{"probability": 0.5}, {"probability": 0.9}]}, {"atoms": [{"probability": 0.54}]}]
    assert graph_variants.near_half(rows) == (2 / 3, 0.75)


def test_suite_rows_count_what_becomes_a_contradiction_factor():
    def result(capability: str, premise: str, claim: str, label: str) -> ItemResult:
        return ItemResult(Item(capability, "v", premise, claim, "heldout", "t"), label)

    results = [
        result(
            "other_attribute",
            "Albert Einstein died in 1955 in Princeton.",
            "Albert Einstein was born in 1879.",
            "contradiction",
        ),
        result("other_attribute", "Albert Einstein died in 1955.", "Albert Einstein won a Nobel Prize.", "neutral"),
        result(
            "substitution",
            "Albert Einstein was born in Ulm in 1879.",
            "Albert Einstein was born in 1880.",
            "contradiction",
        ),
    ]
    rows = {row["capability"]: row for row in same_attribute_suite.rule_rows(results)}
    assert rows["other_attribute"]["judge_contradiction"] == 0.5
    assert rows["other_attribute"]["contradiction_factor"] == 0.0
    assert rows["substitution"]["contradiction_factor"] == 1.0
    text = same_attribute_suite.markdown("heldout", list(rows.values()), "judge")
    assert "1 (50.0%) without the rule, 0 (0.0%) with `same-attribute`" in text

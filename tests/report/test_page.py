"""The report page's correction block and contradiction highlights, read back by parsing the HTML
into a tree (not by searching the text): rows of ``fact-reasoner correct`` show the corrected
text beside the original, and rows with ``contradicting_pairs`` (``--coherence``) mark both
atoms of each pair and list the pairs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.report import build_report

VOID = {"meta", "br", "img", "hr", "input", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node | str"] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        return " ".join(
            " ".join(c.split()) if isinstance(c, str) else c.text() for c in self.children if str(c).strip()
        ).strip()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list["Node"]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                    found.append(child)
                found += child.find_all(tag, cls)
        return found


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    return builder.root


RECORD = {
    "input": "Tell me about Marie Curie.",
    "output": "Marie Curie was born in 1869. She was born in 1867. She won three Nobel Prizes.",
    "atoms": [
        {"id": "a0", "text": "Marie Curie was born in 1869."},
        {"id": "a1", "text": "Marie Curie was born in 1867."},
        {"id": "a2", "text": "Marie Curie won three Nobel Prizes."},
    ],
    "contexts": [{"id": "c0", "text": "Marie Curie was born in Warsaw on 7 November 1867."}],
    "relations": [
        {"source": "c0", "target": "a0", "relation": "contradiction", "probability": 0.9},
        {"source": "c0", "target": "a1", "relation": "entailment", "probability": 0.9},
    ],
}

CORRECTION = {
    "status": "corrected",
    "reason": None,
    "text": "She was born in 1867 [1].",
    "plain_text": "She was born in 1867.",
    "references": [{"n": 1, "context": "c0", "title": None, "link": None, "snippet": RECORD["contexts"][0]["text"]}],
    "sentences": [
        {"index": 0, "action": "removed", "original": "Marie Curie was born in 1869.", "corrected": None},
        {"index": 1, "action": "kept", "original": "She was born in 1867.", "corrected": "She was born in 1867 [1]."},
        {"index": 2, "action": "removed", "original": "She won three Nobel Prizes.", "corrected": None},
    ],
    "changes": [
        {"atom": "a0", "text": "Marie Curie was born in 1869.", "action": "remove", "why": "contradicted"},
        {"atom": "a2", "text": "Marie Curie won three Nobel Prizes.", "action": "remove", "why": "no context"},
    ],
    "before": {"factuality_score": 1 / 3, "chars": 80},
    "after": {"factuality_score": 1.0, "chars": 21},
}


def assessed_row(**extra) -> dict:
    """A real assessment of :data:`RECORD` (its own relations, no model), plus ``extra``."""
    assessor = FactReasoner(PipelineConfig(version=2, nli="precomputed", use_cache=False))
    return assessor.assess(RECORD).model_dump(mode="json") | extra


def page_of(tmp_path: Path, row: dict) -> Node:
    results = tmp_path / "rows.fr2.jsonl"
    results.write_text(json.dumps(row) + "\n")
    return parse(build_report([results]))


def test_the_corrected_text_stands_beside_the_original(tmp_path):
    page = page_of(tmp_path, assessed_row(correction=CORRECTION))
    [block] = page.find_all("div", "correction")
    [side] = block.find_all("div", "sidebyside")
    columns = [c for c in side.children if isinstance(c, Node)]
    assert [c.find_all("h4")[0].text() for c in columns] == ["original", "corrected"]
    assert columns[0].find_all("div", "original")[0].text() == RECORD["output"]
    assert columns[1].find_all("div", "corrected")[0].text() == "She was born in 1867 [1]."
    assert "Pr 0.333 → 1.000" in block.find_all("div", "meta")[0].text()
    diff = block.find_all("table", "diff")[0].find_all("tbody")[0].find_all("tr")
    assert [(tr.classes, [td.text() for td in tr.find_all("td")]) for tr in diff] == [
        ({"removed"}, ["Marie Curie was born in 1869.", "removed", ""]),
        ({"kept"}, ["She was born in 1867.", "kept", "She was born in 1867 [1]."]),
        ({"removed"}, ["She won three Nobel Prizes.", "removed", ""]),
    ]
    [reference] = block.find_all("ol", "references")[0].find_all("li")
    assert reference.attrs["value"] == "1" and RECORD["contexts"][0]["text"] in reference.text()


def test_a_refused_correction_shows_the_reason_and_no_corrected_text(tmp_path):
    refused = CORRECTION | {"status": "failed", "reason": "1 atom(s) that no context supports", "text": None}
    refused["rejected_text"] = "She was born in 1867 in Paris [1]."
    [block] = page_of(tmp_path, assessed_row(correction=refused)).find_all("div", "correction")
    assert block.find_all("p", "failed")[0].text() == "1 atom(s) that no context supports"
    assert block.find_all("div", "corrected") == []
    assert block.find_all("div", "rejected")[0].text() == "She was born in 1867 in Paris [1]."
    # the refused text's precision is no improvement anyone received: the original's figures alone
    meta = block.find_all("div", "meta")[0].text()
    assert "→" not in meta and "Pr 0.333 · 80 characters (the original: no corrected text was delivered)" in meta


def test_an_extractive_correction_says_why_the_rewrite_was_refused(tmp_path):
    extractive = CORRECTION | {
        "method": "extractive",
        "refused_rewrite": {"reason": "1 atom(s) that no context supports", "text": "She was born in Paris [1]."},
    }
    [block] = page_of(tmp_path, assessed_row(correction=extractive)).find_all("div", "correction")
    [note] = block.find_all("p", "extractive")
    assert "rewrite was refused (1 atom(s) that no context supports)" in note.text()
    assert block.find_all("div", "corrected")[0].text() == "She was born in 1867 [1]."


def test_contradicting_atom_pairs_are_highlighted(tmp_path):
    pair = {
        "atom_a": "a0",
        "atom_b": "a1",
        "text_a": "Marie Curie was born in 1869.",
        "text_b": "Marie Curie was born in 1867.",
        "p_contradiction": 0.87,
    }
    page = page_of(tmp_path, assessed_row(coherence=0.5, contradicting_pairs=[pair]))
    atoms = {tr.attrs["id"]: tr for tr in page.find_all("tr", "atom")}
    assert set(atoms) == {"r0-a0", "r0-a1", "r0-a2"}
    assert "contradicting" in atoms["r0-a0"].classes and "contradicting" in atoms["r0-a1"].classes
    assert "contradicting" not in atoms["r0-a2"].classes
    assert atoms["r0-a0"].find_all("span", "contradiction-mark")[0].text() == "⚡ contradicts a1"
    [listed] = page.find_all("table", "contradictions")[0].find_all("tr", "contradiction")
    cells = listed.find_all("td")
    assert [a.attrs["href"] for a in listed.find_all("a")] == ["#r0-a0", "#r0-a1"]
    assert cells[0].text() == "a0 Marie Curie was born in 1869." and cells[2].text() == "0.87"
    # no correction block without a correction, no pair table without pairs
    assert page.find_all("div", "correction") == []
    plain = page_of(tmp_path, assessed_row())
    assert plain.find_all("table", "contradictions") == [] and not plain.find_all("tr", "contradicting")

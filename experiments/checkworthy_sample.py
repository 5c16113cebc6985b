"""Build and score the labelled checkworthy sample (issue #25).

``python -m experiments.checkworthy_sample build`` writes
``experiments/data/checkworthy_sample.jsonl`` from the FActScore dev biographies
(``/work/shared/data/factscore_bios_dev``): every human atom the rules flag, the human atoms that
carry evaluative or hedging words (first 60 of them in file order, and every one judged
uncheckable), the model atoms (FActScore's own atomizer) that look uncheckable, a few checkable
model atoms, and 40 random other human atoms (seed 0). The label ``checkworthy`` is a judgement
made by hand while reading each atom (:data:`UNCHECKABLE`: the speaker's own judgement, a
prediction, the response speaking about itself or its sources, advice); a reported judgement
("is considered", "known for", "popular", "successful") is checkworthy, as FActScore's
annotators treated it.

``python -m experiments.checkworthy_sample score`` prints precision and recall of "uncheckable"
for the rule classifier.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

from fact_reasoner.atoms.checkworthy import classify_by_rules

DATA = Path("/work/shared/data/factscore_bios_dev")
OUT = Path(__file__).parent / "data" / "checkworthy_sample.jsonl"
MODELS = ("InstructGPT", "PerplexityAI", "ChatGPT")
#: evaluative / hedging / self-referring words that make an atom a candidate
CANDIDATE = re.compile(
    r"\b(may|might|could|perhaps|probably|possibly|likely|seems?|appears?|believe|think|opinion|hope|should|"
    r"must|talented|amazing|great|greatest|best|inspir\w*|remarkable|legacy|beloved|truly|respected|admired|"
    r"impressive|important|influential|notable|renowned|successful|popular|known for|unclear|unknown|"
    r"not known|information|sources?|search results|note|significant|pioneering|expected)\b|\?",
    re.IGNORECASE,
)
#: the atoms judged uncheckable by hand, with the kind
UNCHECKABLE = {
    "Lily Branscombe is successful.": "opinion",
    "Anna May Wong was pioneering.": "opinion",
    "Anna May Wong was a pioneering Chinese-American actress.": "opinion",
    "Anna May Wong was a pioneering actress.": "opinion",
    "Her legacy as a pioneering actress continues to this day.": "opinion",
    "Her legacy as an advocate continues to this day.": "opinion",
    "Oliphant's contributions to open-source software are significant.": "opinion",
    "Heyward-Bey had impressive statistics.": "opinion",
    "She is a multi-talented artist.": "opinion",
    "He is expected to have a successful career.": "hedge",
    "He made a remarkable comeback in 2017.": "opinion",
    "Wong quickly established herself as one of Hollywood's most talented actresses.": "opinion",
    "She is an important figure in the history of Hollywood.": "opinion",
    "She is an important figure in Asian-American representation in film.": "opinion",
    "His performances were impressive.": "opinion",
    "Diallo was impressive at Dortmund.": "opinion",
    "Despite the controversy, he remains one of the most influential filmmakers in India.": "opinion",
    "Despite the controversy, he remains one of the most respected filmmakers in India.": "opinion",
    "Carlos Santana is one of the greatest guitarists of all time.": "opinion",
    "Carlos Santana should not be confused with Carlos Santana (baseball).": "instruction",
    "It is important to note this.": "about the response",
    "Kourosh Zolani's personal life information is not available.": "about the response",
    "Kourosh Zolani's background information is not available.": "about the response",
    "There is no detailed biography of Terence Blacker available in the provided search results.": "about the response",
}
MODEL_CHECKABLE = [
    "He was re-elected for a second term in May 2016.",
    "Anna May Wong was born in 1905.",
    "My Tutor Friend was released in 2003.",
    "Bin Laden was killed on May 2, 2011.",
    '"You\'ve Got a Friend" was written by Carole King in 1971.',
    "Anna May Wong was considered the first Chinese-American movie star in Hollywood.",
    "She made her film debut in My Blue Heaven.",
    "Michelle Krusiec played Anna May Wong in 2020.",
]


def _atoms(kind: str):
    for model in MODELS:
        for line in (DATA / f"{model}.jsonl").open():
            record = json.loads(line)
            for sentence in record["annotations"] or []:
                for atom in sentence.get(kind) or []:
                    yield model, record["topic"], atom["text"], atom.get("label")


def build() -> list[dict]:
    human = list(_atoms("human-atomic-facts"))
    model = list(_atoms("model-atomic-facts"))
    chosen: dict[str, dict] = {}

    def add(source: str, model_name: str, topic: str, text: str) -> None:
        if text not in chosen:
            kind = UNCHECKABLE.get(text)
            chosen[text] = {
                "text": text,
                "model": model_name,
                "topic": topic,
                "source": source,
                "checkworthy": kind is None,
                "kind": kind,
            }

    for m, topic, text, _ in human:
        if not classify_by_rules(text).checkworthy:
            add("human atom flagged by the rules", m, topic, text)
    candidates = [(m, topic, text) for m, topic, text, _ in human if CANDIDATE.search(text)]
    for m, topic, text in candidates:
        if text in UNCHECKABLE:
            add("human atom with evaluative words", m, topic, text)
    for m, topic, text in [c for c in candidates if c[2] not in UNCHECKABLE][:60]:
        add("human atom with evaluative words", m, topic, text)
    for m, topic, text, _ in model:
        if text in UNCHECKABLE or text in MODEL_CHECKABLE:
            add("model atom", m, topic, text)
    rest = [(m, topic, text) for m, topic, text, _ in human if text not in chosen]
    for m, topic, text in random.Random(0).sample(rest, 40):
        add("random human atom", m, topic, text)
    return list(chosen.values())


def score(rows: list[dict]) -> dict[str, float]:
    truth = [not r["checkworthy"] for r in rows]
    predicted = [not classify_by_rules(r["text"]).checkworthy for r in rows]
    tp = sum(p and t for p, t in zip(predicted, truth))
    fp = sum(p and not t for p, t in zip(predicted, truth))
    fn = sum(t and not p for p, t in zip(predicted, truth))
    return {
        "atoms": len(rows),
        "uncheckable": sum(truth),
        "flagged": sum(predicted),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else float("nan"),
        "recall": tp / (tp + fn) if tp + fn else float("nan"),
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["build"]:
        rows = build()
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        print(f"{len(rows)} atoms ({sum(not r['checkworthy'] for r in rows)} uncheckable) -> {OUT}")
        return 0
    rows = [json.loads(line) for line in OUT.read_text().splitlines()]
    result = score(rows)
    print(json.dumps(result))
    for row in rows:
        verdict = classify_by_rules(row["text"])
        if verdict.checkworthy != row["checkworthy"]:
            print(f"{'FN' if verdict.checkworthy else 'FP'}: {row['text']}  ({verdict.reason or row['kind']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

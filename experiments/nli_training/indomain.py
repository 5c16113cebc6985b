"""In-domain supervision for the judge: FActScore atoms as bags of (passage window, atom) pairs.

    .venv-dev/bin/python -m experiments.nli_training.indomain --mix-config experiments/nli_training/mix.json \
        --out runs/indomain.json

What the engine judges is an atom against each retrieved passage, and what FActScore's labels say
is about the atom and the *article*: S means at least one passage supports it, NS that none does.
Pretending every passage of an S atom entails it (one pair, one label) teaches the judge to say
"entailed" to passages that only share the topic. So each labelled atom becomes a *bag*: the best
window (≤ ``max_premise_words`` words, ``data.best_window``) of each of its passages, and the
training loss is a multiple-instance one over the bag (``distill.bag_loss``).

Atoms of all three dev generators (ChatGPT, InstructGPT, PerplexityAI) on the *training* topics
of the mix's split (``data.factscore_topic_split`` with the mix's seed and held fraction): the 14
held-out topics appear nowhere in this file. ChatGPT atoms have their own BM25 passages; the
others use the topic's distinct passages (``topic_passages_dev.json``), ranked by content-word
overlap with the atom. A few training topics (``--validation-topics``) are set apart as in-domain
validation bags (calibration, model choice).

The file also holds the *pool* of unlabelled in-domain pairs that the teacher labels for the
student: every (window, atom) pair of the bags, plus synthetic contradictions — an S atom with a
year, number, month, nationality or negation changed (``data.contradict``) against its
best-overlapping window.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

from experiments.nli_training.data import (
    best_window,
    contradict,
    factscore_atoms,
    factscore_chatgpt_passages,
    factscore_topic_split,
    split_sentences,
)

HERE = Path(__file__).resolve().parent

ROOT = HERE.parents[1]


def atom_windows(atom_text: str, passages: list[dict], max_words: int, max_passages: int) -> list[str]:
    """Best window of each passage for the atom, most-overlapping passages first, de-duplicated."""
    scored = []
    for passage in passages:
        text, score = best_window(split_sentences(passage["text"]), atom_text, max_words)
        if text:
            scored.append((score, text))
    scored.sort(key=lambda item: -item[0])
    out: list[str] = []
    for _, text in scored:
        if text not in out:
            out.append(text)
        if len(out) >= max_passages:
            break
    return out


def build_indomain(
    data_dir: Path,
    seed: int,
    held_fraction: float,
    max_words: int,
    max_passages: int = 8,
    validation_topics: int = 5,
) -> dict:
    """Bags of the training topics (train / validation by topic) and the unlabelled pool."""
    train_topics, held_topics = factscore_topic_split(data_dir, seed, held_fraction)
    rng = random.Random(seed)
    ordered = sorted(train_topics)
    rng.shuffle(ordered)
    val_topics = set(ordered[:validation_topics])
    own = factscore_chatgpt_passages(data_dir)
    topic_passages = json.loads((data_dir / "factscore_bios_dev" / "topic_passages_dev.json").read_text())

    bags: dict[str, list[dict]] = {"train": [], "validation": []}
    seen: set[tuple[str, str]] = set()
    for atom in factscore_atoms(data_dir):
        if atom.topic not in train_topics or (atom.topic, atom.atom) in seen:
            continue
        seen.add((atom.topic, atom.atom))
        passages = list(topic_passages.get(atom.topic, []))
        if atom.model == "ChatGPT":
            passages = list(own.get((atom.topic, atom.atom)) or []) + passages
        windows = atom_windows(atom.atom, passages, max_words, max_passages)
        if not windows:
            continue
        split = "validation" if atom.topic in val_topics else "train"
        bags[split].append(
            {"topic": atom.topic, "model": atom.model, "atom": atom.atom, "label": atom.label, "premises": windows}
        )

    pool = [
        {"premise": p, "hypothesis": b["atom"], "source": f"indomain_{b['model']}"}
        for b in bags["train"]
        for p in b["premises"]
    ]
    synthetic = 0
    for bag in bags["train"]:
        if bag["label"] != "S":
            continue
        changed = contradict(bag["atom"], rng, ("year", "number", "month", "nationality", "negation"))
        if changed:
            pool.append({"premise": bag["premises"][0], "hypothesis": changed[0], "source": f"indomain_{changed[1]}"})
            synthetic += 1
    assert not ({b["topic"] for split in bags.values() for b in split} & held_topics)
    return {
        "train_topics": sorted(train_topics - val_topics),
        "validation_topics": sorted(val_topics),
        "heldout_topics": sorted(held_topics),
        "bags": bags,
        "pool": pool,
        "summary": {split: dict(Counter(f"{b['model']}:{b['label']}" for b in rows)) for split, rows in bags.items()}
        | {"pool_pairs": len(pool), "pool_synthetic_contradictions": synthetic},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix-config", default=str(HERE / "mix.json"), help="seed and topic split come from here")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--max-passages", type=int, default=8, help="windows per atom (the bag's size at most)")
    parser.add_argument("--validation-topics", type=int, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    config = json.loads(Path(args.mix_config).read_text())
    result = build_indomain(
        Path(args.data_dir),
        config["seed"],
        config["factscore_held_fraction"],
        config["max_premise_words"],
        args.max_passages,
        args.validation_topics,
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False))
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()

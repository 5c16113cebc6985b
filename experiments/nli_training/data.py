"""Training and held-out NLI pairs built from ``../shared/data`` (nothing is downloaded).

Every example is ``{"premise", "hypothesis", "label", "source"}`` with label one of
``entailment | neutral | contradiction``. The splits are fixed by seeds and by *groups*
(FActScore topics, VitaminC claim families, the 882 pairs' premises), so no held-out premise
or person is ever seen in training.

Label decisions (why):

- Factcheck-Bench ``completely-support`` → entailment; ``partially-support`` → neutral (part
  of the claim is not backed by the evidence, and FactReasoner counts an atom as supported
  only when it is fully entailed); ``refute`` → contradiction; ``irrelevant`` → neutral
  (sub-sampled, it is 62 % of the set).
- WiCE ``supported`` → entailment (premise = the annotated supporting sentences),
  ``partially_supported`` → neutral (premise = the sentences that support the other part: hard
  negatives), ``not_supported`` → neutral (premise = the best-overlapping window of the
  article; "not supported" in WiCE means "not backed", seldom "contradicted").
- FActScore atoms: ``S`` → entailment, ``NS`` → neutral. NS atoms are mostly facts that the
  Wikipedia article does not state; with only a partial article as premise, calling them
  contradictions would teach the model to contradict whatever it cannot see. Contradictions
  come instead from the synthetic swaps below, which are contradicted by construction.
- Synthetic contradictions: in the hypothesis of an entailed pair, change a year, a number, a
  month, a nationality, or negate the main verb.

Long premises are cut to the window of consecutive sentences (≤ ``max_premise_words``) that
shares most content words with the hypothesis — the same idea as the inference backend's
windows, but chosen by overlap so that the label still holds for the window.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

LABELS = ("entailment", "neutral", "contradiction")

_STOP = set(
    "a an the of in on at to for from by with and or but is was are were be been being as "
    "that this these those it its he she his her they their them who whom which what when "
    "where how also has have had not no do does did will would can could than then there".split()
)
_WORD = re.compile(r"[A-Za-z0-9]+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage: FActScore's ``<s>…</s>`` marks when present, else a regex split.

    Not :func:`fact_reasoner.text.sentences.premise_sentences`, whose rule also ends a sentence
    after a closing quote or bracket: the shipped judges' training mixes were cut with this
    rule, and a rebuilt mix must be the one their model cards record."""
    if "<s>" in text:
        parts = re.findall(r"<s>(.*?)</s>", text, flags=re.S)
        if parts:
            return [p.strip() for p in parts if p.strip()]
    return [s.strip() for s in _SENT_SPLIT.split(text) if s.strip()]


def best_window(sentences: list[str], hypothesis: str, max_words: int) -> tuple[str, float]:
    """The run of consecutive sentences (≤ max_words words) with most hypothesis content words.

    Returns (window text, overlap) where overlap = |hyp ∩ window| / |hyp| over content words.
    A single sentence longer than ``max_words`` is cut to its first ``max_words`` words.
    """
    hyp = content_words(hypothesis)
    if not sentences:
        return "", 0.0
    best_text, best_score = "", -1.0
    for start in range(len(sentences)):
        words = 0
        chunk: list[str] = []
        for sentence in sentences[start:]:
            n = len(sentence.split())
            if chunk and words + n > max_words:
                break
            chunk.append(sentence if n <= max_words else " ".join(sentence.split()[:max_words]))
            words += min(n, max_words)
        text = " ".join(chunk)
        score = len(hyp & content_words(text)) / max(len(hyp), 1)
        if score > best_score:
            best_text, best_score = text, score
    return best_text, best_score


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _ex(premise: str, hypothesis: str, label: str, source: str, **extra) -> dict:
    assert label in LABELS, label
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "source": source, **extra}


def _group_split(items: list, group_of, held_fraction: float, seed: int) -> tuple[list, list]:
    """Split items so that every group lands wholly on one side (held-out ≈ held_fraction)."""
    groups = sorted({group_of(x) for x in items})
    rng = random.Random(seed)
    rng.shuffle(groups)
    held_groups = set(groups[: round(len(groups) * held_fraction)])
    train = [x for x in items if group_of(x) not in held_groups]
    held = [x for x in items if group_of(x) in held_groups]
    return train, held


# --------------------------------------------------------------------------- sources


def vitaminc(data_dir: Path, seed: int, held_fraction: float) -> tuple[list[dict], list[dict]]:
    label_map = {"supports": "entailment", "refutes": "contradiction", "not enough info": "neutral"}
    rows = _read_jsonl(data_dir / "nli" / "vitaminc_sample.jsonl")
    exs = [_ex(r["evidence"], r["claim"], label_map[r["label"]], "vitaminc", group=r["id"].split("_")[0]) for r in rows]
    return _group_split(exs, lambda e: e["group"], held_fraction, seed)


def factreasoner_pairs(data_dir: Path, seed: int, held_fraction: float) -> tuple[list[dict], list[dict]]:
    rows = _read_jsonl(data_dir / "nli" / "factreasoner_nli_pairs.jsonl")
    exs = [_ex(r["premise"], r["hypothesis"], r["gold"], "fr_pairs") for r in rows]
    return _group_split(exs, lambda e: e["premise"], held_fraction, seed)


def factcheck(data_dir: Path, seed: int, max_words: int, irrelevant_keep: int) -> list[dict]:
    label_map = {
        "completely-support": "entailment",
        "partially-support": "neutral",
        "refute": "contradiction",
        "irrelevant": "neutral",
    }
    rows = _read_jsonl(data_dir / "nli" / "factcheck_stance.jsonl")
    rng = random.Random(seed)
    irrelevant = [r for r in rows if r["stance"] == "irrelevant"]
    rng.shuffle(irrelevant)
    keep = [r for r in rows if r["stance"] != "irrelevant"] + irrelevant[:irrelevant_keep]
    out = []
    for r in keep:
        window, _ = best_window(split_sentences(r["evidence"]), r["claim"], max_words)
        if window:
            out.append(_ex(window, r["claim"], label_map[r["stance"]], f"factcheck:{r['stance']}"))
    return out


def wice(data_dir: Path, max_words: int) -> list[dict]:
    out = []
    for r in _read_jsonl(data_dir / "nli" / "wice_dev.jsonl"):
        sentences = [s for s in r["evidence"] if not s.startswith("(meta data)")]
        if r["label"] in ("supported", "partially_supported") and r["supporting_sentences"]:
            # Use the first annotated set of supporting sentence indices.
            idx = sorted(set(r["supporting_sentences"][0]))
            premise = " ".join(r["evidence"][i] for i in idx if i < len(r["evidence"]))
            premise = " ".join(premise.split()[:max_words])
        else:
            premise, _ = best_window(sentences, r["claim"], max_words)
        if not premise:
            continue
        label = "entailment" if r["label"] == "supported" else "neutral"
        out.append(_ex(premise, r["claim"], label, f"wice:{r['label']}"))
    return out


@dataclass
class FactScoreAtom:
    model: str
    topic: str
    atom: str
    label: str  # S | NS


def factscore_atoms(data_dir: Path) -> list[FactScoreAtom]:
    """Human atoms labelled S/NS (IR dropped, as in the paper) of the three dev generators."""
    out = []
    for model in ("ChatGPT", "InstructGPT", "PerplexityAI"):
        for r in _read_jsonl(data_dir / "factscore_bios_dev" / f"{model}.jsonl"):
            for sentence in r.get("annotations") or []:
                for h in sentence.get("human-atomic-facts") or []:
                    if h["label"] in ("S", "NS"):
                        out.append(FactScoreAtom(model, r["topic"], h["text"], h["label"]))
    return out


def factscore_topic_split(data_dir: Path, seed: int, held_fraction: float) -> tuple[set[str], set[str]]:
    """Train / held-out topics: held_fraction of the annotated ChatGPT dev topics."""
    topics = sorted({a.topic for a in factscore_atoms(data_dir) if a.model == "ChatGPT"})
    rng = random.Random(seed)
    rng.shuffle(topics)
    n_held = round(len(topics) * held_fraction)
    return set(topics[n_held:]), set(topics[:n_held])


def factscore_chatgpt_passages(data_dir: Path) -> dict[tuple[str, str], list[dict]]:
    """(topic, atom text) → its BM25 passages."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in _read_jsonl(data_dir / "factscore_bios_dev" / "passages_bm25_ChatGPT_dev.jsonl"):
        out.setdefault((r["name"], r["sent"]), r["passages"])
    return out


def factscore_train(data_dir: Path, train_topics: set[str], max_words: int, min_overlap_other: float) -> list[dict]:
    """FActScore atoms of the training topics with a premise window.

    ChatGPT atoms: the best window over their own BM25 passages. InstructGPT / PerplexityAI
    atoms have no passages of their own: the best window over the topic's passages (those of
    the ChatGPT atoms), kept only when it covers ≥ min_overlap_other of the atom's content
    words — whatever the label, so the filter does not leak the label.
    """
    passages = factscore_chatgpt_passages(data_dir)
    topic_passages = json.loads((data_dir / "factscore_bios_dev" / "topic_passages_dev.json").read_text())
    out = []
    for a in factscore_atoms(data_dir):
        if a.topic not in train_topics:
            continue
        label = "entailment" if a.label == "S" else "neutral"
        if a.model == "ChatGPT":
            ps = passages.get((a.topic, a.atom))
            if not ps:
                continue
            sentences = [s for p in ps for s in split_sentences(p["text"])]
            window, _ = best_window(sentences, a.atom, max_words)
            out.append(_ex(window, a.atom, label, f"factscore:{a.model}:{a.label}"))
        else:
            best_text, best_score = "", -1.0
            for p in topic_passages.get(a.topic, []):
                text, score = best_window(split_sentences(p["text"]), a.atom, max_words)
                if score > best_score:
                    best_text, best_score = text, score
            if best_score >= min_overlap_other:
                out.append(_ex(best_text, a.atom, label, f"factscore:{a.model}:{a.label}"))
    return out


def factscore_heldout(data_dir: Path, held_topics: set[str]) -> list[dict]:
    """Held-out ChatGPT atoms with *all* their passages (evaluation: max over passages)."""
    passages = factscore_chatgpt_passages(data_dir)
    out = []
    for a in factscore_atoms(data_dir):
        if a.model != "ChatGPT" or a.topic not in held_topics:
            continue
        ps = passages.get((a.topic, a.atom))
        if ps:
            texts = [" ".join(split_sentences(p["text"])) for p in ps]
            out.append({"topic": a.topic, "atom": a.atom, "label": a.label, "passages": texts})
    return out


# --------------------------------------------------------------------------- synthetic

_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)\b")
_NUMBER = re.compile(r"\b(\d{1,3}(?:,\d{3})*|\d+)(\.\d+)?\b")
_MONTHS = "January February March April May June July August September October November December".split()
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_NATIONALITIES = (
    "American British English French German Italian Spanish Canadian Australian Russian Chinese "
    "Japanese Indian Mexican Brazilian Irish Scottish Swedish Dutch Polish Korean Nigerian"
).split()
_NATIONALITY = re.compile(r"\b(" + "|".join(_NATIONALITIES) + r")\b")
_COPULA = re.compile(r"\b(is|was|are|were|has been|have been|had been)\b")


SYNTHETIC_RULES = ("year", "number", "month", "nationality", "negation")


def contradict(
    hypothesis: str, rng: random.Random, allowed: tuple[str, ...] = SYNTHETIC_RULES
) -> tuple[str, str] | None:
    """A changed hypothesis that the original premise contradicts, and the kind of change.

    Tries the ``allowed`` rules in random order: year shift, number change, month swap,
    nationality swap, negation. None when no rule applies.
    """
    rules = [rule for rule in SYNTHETIC_RULES if rule in allowed]
    rng.shuffle(rules)
    for rule in rules:
        if rule == "year" and (m := _YEAR.search(hypothesis)):
            year = int(m.group(1))
            new = year + rng.choice([-1, 1]) * rng.randint(1, 12)
            return hypothesis[: m.start()] + str(new) + hypothesis[m.end() :], rule
        if rule == "number":
            ms = [m for m in _NUMBER.finditer(hypothesis) if not _YEAR.fullmatch(m.group(0))]
            if ms:
                m = rng.choice(ms)
                value = float(m.group(0).replace(",", ""))
                factor = rng.choice([0.5, 2, 3, 1.5, 0.25]) if value > 3 else None
                new = round(value * factor) if factor else int(value) + rng.randint(2, 6)
                if new != value:
                    return hypothesis[: m.start()] + f"{new:,}" + hypothesis[m.end() :], rule
        if rule == "month" and (m := _MONTH.search(hypothesis)):
            new = rng.choice([x for x in _MONTHS if x != m.group(1)])
            return hypothesis[: m.start()] + new + hypothesis[m.end() :], rule
        if rule == "nationality" and (m := _NATIONALITY.search(hypothesis)):
            new = rng.choice([x for x in _NATIONALITIES if x != m.group(1)])
            return hypothesis[: m.start()] + new + hypothesis[m.end() :], rule
        if rule == "negation" and (m := _COPULA.search(hypothesis)):
            verb = m.group(1)
            neg = verb.replace(" been", " never been") if "been" in verb else verb + " not"
            return hypothesis[: m.start()] + neg + hypothesis[m.end() :], rule
    return None


def synthetic_contradictions(
    entailed: list[dict],
    n: int,
    seed: int,
    max_negation_share: float = 0.3,
    rules: tuple[str, ...] = SYNTHETIC_RULES,
) -> list[dict]:
    """Up to n contradicted copies of entailed pairs.

    Negation applies to almost any sentence, so it is capped at ``max_negation_share`` of the
    output: otherwise the model learns the shortcut "contains *not* → contradiction".
    """
    rng = random.Random(seed)
    # Two passes over the entailed pairs: a pair may give two different changes (e.g. two years).
    pool = list(entailed) + list(entailed)
    rng.shuffle(pool)
    out = []
    seen: set[str] = set()
    max_negations = int(n * max_negation_share)
    negations = 0
    for e in pool:
        if len(out) >= n:
            break
        changed = contradict(e["hypothesis"], rng, rules)
        if changed and changed[1] == "negation":
            if negations >= max_negations:
                continue
            negations += 1
        if changed and changed[0] not in seen:
            seen.add(changed[0])
            out.append(_ex(e["premise"], changed[0], "contradiction", f"synthetic:{changed[1]}"))
    return out


# --------------------------------------------------------------------------- all together


@dataclass
class DataConfig:
    data_dir: Path
    seed: int = 13
    max_premise_words: int = 160
    vitaminc_held_fraction: float = 0.5
    fr_pairs_held_fraction: float = 0.4
    factscore_held_fraction: float = 0.3
    factcheck_irrelevant_keep: int = 600
    factscore_min_overlap_other: float = 0.5
    synthetic_contradictions: int = 1600
    validation_size: int = 300
    max_per_label: int | None = None  # cap each label's training pairs (CPU budget, balance)
    synthetic_rules: tuple[str, ...] = SYNTHETIC_RULES  # which kinds of synthetic contradiction


def build(cfg: DataConfig) -> dict[str, list[dict]]:
    """``train``, ``validation`` (from training sources, for the learning curve) and held-out sets.

    Held-out: ``heldout_vitaminc``, ``heldout_fr_pairs`` (3-way) and ``heldout_factscore``
    (atoms with all their passages, S/NS).
    """
    vc_train, vc_held = vitaminc(cfg.data_dir, cfg.seed, cfg.vitaminc_held_fraction)
    fr_train, fr_held = factreasoner_pairs(cfg.data_dir, cfg.seed, cfg.fr_pairs_held_fraction)
    train_topics, held_topics = factscore_topic_split(cfg.data_dir, cfg.seed, cfg.factscore_held_fraction)
    real = (
        vc_train
        + fr_train
        + factcheck(cfg.data_dir, cfg.seed, cfg.max_premise_words, cfg.factcheck_irrelevant_keep)
        + wice(cfg.data_dir, cfg.max_premise_words)
        + factscore_train(cfg.data_dir, train_topics, cfg.max_premise_words, cfg.factscore_min_overlap_other)
    )
    synthetic = synthetic_contradictions(
        [e for e in real if e["label"] == "entailment"],
        cfg.synthetic_contradictions,
        cfg.seed,
        rules=tuple(cfg.synthetic_rules),
    )
    pool = real + synthetic
    for e in pool:
        e.pop("group", None)
    rng = random.Random(cfg.seed)
    rng.shuffle(pool)
    validation, train = pool[: cfg.validation_size], pool[cfg.validation_size :]
    if cfg.max_per_label:
        kept: Counter = Counter()
        capped = []
        for e in train:  # already shuffled: a random subset of each label
            if kept[e["label"]] < cfg.max_per_label:
                kept[e["label"]] += 1
                capped.append(e)
        train = capped
    for e in vc_held:
        e.pop("group", None)
    return {
        "train": train,
        "validation": validation,
        "heldout_vitaminc": vc_held,
        "heldout_fr_pairs": fr_held,
        "heldout_factscore": factscore_heldout(cfg.data_dir, held_topics),
        "heldout_topics": sorted(held_topics),
    }


def summary(splits: dict[str, list]) -> str:
    lines = []
    for name, rows in splits.items():
        if name == "heldout_topics":
            lines.append(f"{name}: {len(rows)} topics")
            continue
        if name == "heldout_factscore":
            lines.append(f"{name}: {len(rows)} atoms {dict(Counter(r['label'] for r in rows))}")
            continue
        lines.append(f"{name}: {len(rows)} {dict(Counter(r['label'] for r in rows))}")
        if name == "train":
            by_source: dict[str, Counter] = defaultdict(Counter)
            for r in rows:
                by_source[r["source"].split(":")[0]][r["label"]] += 1
            kinds = Counter(r["source"].split(":")[1] for r in rows if r["source"].startswith("synthetic"))
            for source, c in sorted(by_source.items()):
                lines.append(f"    {source:12s} {sum(c.values()):5d} {dict(c)}")
            lines.append(f"    synthetic kinds: {dict(kinds)}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    root = Path(__file__).resolve().parents[2]
    splits = build(DataConfig(data_dir=Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent / "shared" / "data"))
    print(summary(splits))

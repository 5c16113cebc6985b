"""Polarity pairs on any kind of fact, for the contradiction specialist of a panel (issue #50).

The targeted pairs of ``targeted.py`` and ``forms.py`` are about people (born, died, worked …),
and a judge trained on them calls "Bats are blind." entailed by "Bats are not blind.". These
pairs are made from the training mix's own sentences — FEVER claims, SciTail and health claims,
FActScore atoms: every kind of subject — by rules that change polarity and nothing else:

- **negation** (:func:`negate`): ``not`` after the first auxiliary or copula (``is``, ``was``,
  ``can`` → ``cannot``, ``has been`` …), or ``no longer`` after ``is``/``are``; a sentence that
  already says ``not`` is affirmed by taking it out (:func:`affirm`). The negated sentence
  against the sentence is a contradiction both ways (premise negated, claim negated).
- **the same polarity** (the positives, so that ``not`` alone is never the signal): the sentence
  against itself and the negated sentence against itself are entailments, also inside a
  passage of two sentences (the sentence beside another of the mix).
- **superlatives read with "no … than"** (:func:`no_more_than`): "X is the highest N" entails
  "No N is higher than X" and back.

Only the mix's ``train`` rows are read (nothing held out), and a sentence naming anything of
the user reports this work answers (the Great Wall, Everest, Mercury, bats, Pluto — kept as a
check the training never saw) is left out.

    .venv-dev/bin/python -m experiments.nli_training.polarity --mix runs/nli/mix.json \
        --targeted runs/nli/targeted.json --out runs/nli/targeted_polarity.json

writes the targeted rows of ``--targeted`` with these added (sources ``targeted_polarity``,
``targeted_polarity_same``, ``targeted_no_more_than``), in the format ``finetune.py`` reads.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

#: auxiliaries and copulas after which ``not`` makes the negation (``can`` → ``cannot``)
AUXILIARIES = frozenset("is are was were has have had can could will would should may might must does do did".split())
#: words that already make a sentence negative
NEGATION_CUES = frozenset("not n't never no none nobody nothing neither nor cannot without".split())
#: after these, ``not`` does not negate the sentence ("not only … but also")
NOT_NEGATING_NEXT = frozenset("only just also even merely simply".split())
#: what the user reports of issue #50 are about: left out of training, kept as a check
RESERVED = re.compile(r"great wall|everest|mercury|\bbats?\b|pluto|naked eye", re.IGNORECASE)
#: where sentences come from: the mix's sets whose hypotheses (or premises) are single claims
CLAIM_SOURCES = (
    "fever_ggkorn",
    "fever_rte_dev",
    "fool_me_twice",
    "scitail",
    "climate_fever",
    "healthver",
    "covidfact",
    "factscore_ChatGPT",
    "factscore_InstructGPT",
    "factscore_PerplexityAI",
    "sufficient_facts_fever",
)
_WORD = re.compile(r"\S+")
_IRREGULAR = {"best": "better", "worst": "worse", "most": "more", "least": "less", "furthest": "further"}


def is_claim(sentence: str) -> bool:
    """One declarative sentence of 4–25 words, capitalised, ending with a full stop."""
    words = sentence.split()
    return (
        4 <= len(words) <= 25
        and sentence[:1].isupper()
        and sentence.endswith(".")
        and sentence.count(".") == 1
        and "?" not in sentence
        and '"' not in sentence
    )


def has_negation(sentence: str) -> bool:
    return any(w.lower().strip(".,;:") in NEGATION_CUES or w.lower().endswith("n't") for w in sentence.split())


def negate(sentence: str, rng: random.Random) -> str | None:
    """The sentence with ``not`` after its first auxiliary or copula (among its first eight
    words, not the first), ``cannot`` for ``can``, or ``no longer`` after ``is``/``are`` (one
    time in four); None when it has none or is negative already.

    >>> negate("Bats can see in the dark.", random.Random(1))
    'Bats cannot see in the dark.'
    >>> negate("The tower was completed in 1889.", random.Random(1))
    'The tower was not completed in 1889.'
    >>> negate("Paris hosted the games.", random.Random(1)) is None
    True
    """
    if has_negation(sentence):
        return None
    words = sentence.split(" ")
    for i, word in enumerate(words[:8]):
        lower = word.lower()
        if i == 0 or lower not in AUXILIARIES:
            continue
        if lower in ("has", "have", "had") and not _participle(words[i + 1 : i + 2]):
            return None  # "has a cat" is not "has not a cat"
        if lower in ("does", "do", "did") and i + 1 < len(words) and not words[i + 1].isalpha():
            return None
        if i + 1 < len(words) and words[i + 1].lower() in NOT_NEGATING_NEXT:
            return None
        if lower == "can":
            replaced = "cannot" if word == "can" else "Cannot"
            return " ".join(words[:i] + [replaced] + words[i + 1 :])
        inserted = "no longer" if lower in ("is", "are") and rng.random() < 0.25 else "not"
        return " ".join(words[: i + 1] + [inserted] + words[i + 1 :])
    return None


def affirm(sentence: str) -> str | None:
    """A sentence negated by ``not`` after an auxiliary (``is not``, ``was not``, ``cannot``),
    without it; None otherwise.

    >>> affirm("The film was not released in 2001.")
    'The film was released in 2001.'
    """
    words = sentence.split(" ")
    for i, word in enumerate(words[:9]):
        if word == "cannot" and i:
            return " ".join(words[:i] + ["can"] + words[i + 1 :])
        if word == "not" and i and words[i - 1].lower() in AUXILIARIES:
            if i + 1 < len(words) and words[i + 1].lower() in NOT_NEGATING_NEXT:
                return None
            rest = words[:i] + words[i + 1 :]
            return None if has_negation(" ".join(rest)) else " ".join(rest)
    return None


def _participle(following: list[str]) -> bool:
    return bool(following) and (following[0].endswith("ed") or following[0].endswith("en") or following[0] == "been")


_SUPERLATIVE = re.compile(
    r"^(?P<x>.+?) (?P<be>is|was|are|were) the (?P<sup>\w+est|most \w+|best|worst) (?P<rest>[^,;]+)\.$"
)


def comparative(superlative: str) -> str | None:
    """``highest`` → ``higher``, ``largest`` → ``larger``, ``most famous`` → ``more famous``."""
    if superlative in _IRREGULAR:
        return _IRREGULAR[superlative]
    if superlative.startswith("most "):
        return "more " + superlative[5:]
    if superlative.endswith("est") and len(superlative) > 4:
        return superlative[:-3] + "er"
    return None


def no_more_than(sentence: str) -> str | None:
    """ "X is the highest N." → "No N is higher than X." (None when the sentence is not of
    that form).

    >>> no_more_than("The Nile is the longest river in Africa.")
    'No river in Africa is longer than the Nile.'
    """
    match = _SUPERLATIVE.match(sentence)
    if not match:
        return None
    more = comparative(match["sup"])
    rest = match["rest"].strip()
    if more is None or not rest or not rest[0].islower():
        return None
    subject = match["x"]
    subject = subject[0].lower() + subject[1:] if subject.startswith(("The ", "A ", "An ")) else subject
    be = {"are": "is", "were": "was"}.get(match["be"], match["be"])
    return f"No {rest} {be} {more} than {subject}."


def claims(mix: dict, rng: random.Random, limit: int) -> list[str]:
    """Distinct claims from the mix's training rows (hypotheses of :data:`CLAIM_SOURCES`,
    and their premises where a premise is one sentence), none naming a reserved subject."""
    seen: dict[str, None] = {}
    for row in mix["train"]:
        if row["source"] not in CLAIM_SOURCES:
            continue
        for text in (row["hypothesis"], row["premise"]):
            text = " ".join(str(text).split())
            if is_claim(text) and not RESERVED.search(text):
                seen.setdefault(text)
    pool = list(seen)
    rng.shuffle(pool)
    return pool[:limit]


def polarity_rows(sentences: list[str], rng: random.Random) -> list[dict]:
    """The rows of the module docstring, in ``targeted.py``'s format."""
    rows: list[dict] = []

    def add(premise: str, hypothesis: str, label: str, source: str, variant: str) -> None:
        rows.append(
            {
                "premise": premise,
                "hypothesis": hypothesis,
                "label": label,
                "source": source,
                "group": f"targeted:polarity:{variant}",
                "split": "train",
                "synthetic": True,
            }
        )

    for k, sentence in enumerate(sentences):
        other = sentences[(k + 1) % len(sentences)]
        negative = negate(sentence, rng)
        positive = affirm(sentence) if negative is None else None
        if negative is not None or positive is not None:
            plain, negated = (sentence, negative) if negative is not None else (positive, sentence)
            assert plain is not None and negated is not None
            add(negated, plain, "contradiction", "targeted_polarity", "negated premise")
            add(plain, negated, "contradiction", "targeted_polarity", "negated claim")
            add(f"{other} {negated}", plain, "contradiction", "targeted_polarity", "passage: negated premise")
            add(plain, plain, "entailment", "targeted_polarity_same", "same sentence")
            add(negated, negated, "entailment", "targeted_polarity_same", "same negated sentence")
            add(f"{negated} {other}", negated, "entailment", "targeted_polarity_same", "passage: same negated")
        reading = no_more_than(sentence)
        if reading is not None:
            add(sentence, reading, "entailment", "targeted_no_more_than", "superlative to no … than")
            add(reading, sentence, "entailment", "targeted_no_more_than", "no … than to superlative")
            negated_superlative = negate(sentence, rng)
            if negated_superlative is not None:
                add(negated_superlative, reading, "contradiction", "targeted_polarity", "negated superlative")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix", type=Path, required=True)
    parser.add_argument("--targeted", type=Path, required=True, help="targeted.py's rows, kept beside these")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=12000, help="claims drawn from the mix (12000)")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    mix = json.loads(args.mix.read_text())
    rows = polarity_rows(claims(mix, rng, args.sentences), rng)
    targeted = json.loads(args.targeted.read_text())
    targeted["train"] = targeted["train"] + rows
    summary: dict[str, int] = {}
    for row in rows:
        key = f"{row['source']} / {row['group'].removeprefix('targeted:polarity:')}"
        summary[key] = summary.get(key, 0) + 1
    targeted["summary"] = dict(targeted.get("summary") or {}) | summary
    args.out.write_text(json.dumps(targeted, ensure_ascii=False))
    print(json.dumps(summary, indent=1))
    for row in rng.sample(rows, min(12, len(rows))):
        print(f"{row['label']:14s} {row['premise']!r} => {row['hypothesis']!r}")


if __name__ == "__main__":  # pragma: no cover
    main()

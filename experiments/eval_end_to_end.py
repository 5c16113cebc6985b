#!/usr/bin/env python3
"""The path a user runs, measured: the pipeline's own atoms against FActScore's gold atoms.

Two parts (issue #52):

``table``: the development biographies end to end. ``experiments.run_biographies --atoms own``
sets the gold atoms aside and lets the default pipeline atomize, revise, judge and score the raw
response; the same command without ``--atoms own`` scores the gold atoms. This reads both
outputs and the prepared input (the gold atoms and their S/NS labels) and gives, over the
responses both runs finished::

    python -m experiments.run_biographies runs/bios_dev33.jsonl --atoms own --assessors fr2 --nli auto \\
        --out-dir runs/e2e/after --cache-dir runs/e2e/cache
    python -m experiments.run_biographies runs/bios_dev33.jsonl --assessors fr2 --nli auto \\
        --out-dir runs/e2e/gold --cache-dir runs/e2e/cache
    python -m experiments.eval_end_to_end table runs/bios_dev33.jsonl \\
        --gold runs/e2e/gold/bios_dev33.cross-encoder.fr2.jsonl \\
        --own before=runs/e2e/before/….fr2.jsonl --own after=runs/e2e/after/….fr2.jsonl

- atoms per response: ours (judged; set aside as ungrounded or stating nothing beside them)
  against the gold atoms (S and NS; IR dropped, as the prepared file does);
- the alignment (:func:`align`): gold atoms *covered* by one of ours, our atoms *matched* to a
  gold atom or *invented*, and the one-to-one token-F1 matching of
  :mod:`experiments.eval_atomizer` (F1 ≥ 0.6) for comparison with earlier tables;
- the checks' counters summed: atoms flagged with an unresolved reference, clauses set aside as
  fragments, ungrounded atoms, and what the same-subject rule decided;
- FR2's factual precision against the gold precision (#S / #(S + NS) of the gold atoms): the
  MAE with our atoms and with the gold atoms, on the same responses.

``answers``: long answers written for this measure (``experiments/data/long_answers.jsonl``:
each sentence supported by a passage except the planted errors each record lists) through the
default pipeline (``--set`` changes a setting); one row per answer in ``--out`` (resumable),
then the failure kinds of issue #52 counted per answer (:func:`failure_kinds`) and every atom
listed with its verdict.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.eval_atomizer import greedy_match, tokens
from fact_reasoner.atoms.frames import light_stem
from fact_reasoner.atoms.grounding import PRONOUNS

#: a gold atom is covered by one of ours (and ours matches it) when at least this share of the
#: smaller one's content words are in the other (:func:`align`)
COVER = 0.75
#: the one-to-one token-F1 matching of experiments.eval_atomizer
F1_THRESHOLD = 0.6
#: words that carry no content of their own: pronouns, articles, auxiliaries, prepositions, conjunctions
FUNCTION_WORDS = PRONOUNS | frozenset(
    """a an the this that these those there here is was are were be been being has have had do does did
    of in on at by for from to with as into over under about after before during since until and or but
    nor also both either neither not s""".split()
)


def content_words(text: str, topic: str = "") -> frozenset[str]:
    """The words of ``text`` that carry its content: lower-case word tokens, stemmed
    (:func:`~fact_reasoner.atoms.frames.light_stem`), without :data:`FUNCTION_WORDS` and without the words of the record's
    ``topic`` (the gold atoms say "He", ours "Joey D. Vieira": neither counts).

    >>> sorted(content_words("Joey D. Vieira was born in California.", "Joey D. Vieira"))
    ['birth', 'california']
    """
    skip = FUNCTION_WORDS | set(tokens(topic))
    return frozenset(light_stem(w) for w in tokens(text) if w not in skip)


def _inside(part: frozenset[str], whole: frozenset[str]) -> float:
    """The share of ``part``'s words that are in ``whole`` (1 for an empty ``part``)."""
    return len(part & whole) / len(part) if part else 1.0


@dataclass(frozen=True)
class Alignment:
    """One response's atoms against its gold atoms (:func:`align`)."""

    gold: int
    ours: int
    covered: int
    matched: int
    one_to_one: int
    invented: tuple[str, ...]
    missed: tuple[str, ...]


def align(ours: Sequence[str], gold: Sequence[str], topic: str = "", cover: float = COVER) -> Alignment:
    """Align our atoms to the gold atoms of one response.

    Rules: a gold atom is *covered* when one of our atoms holds at least ``cover`` of its
    content words (:func:`content_words`): ours may be larger ("shared the prize with A and B"
    covers "shared the prize with A"); one of ours is *matched* when it covers a gold atom or at
    least ``cover`` of its own content words are in one gold atom (a piece of it), else it is
    *invented* (it says what no gold atom says). ``one_to_one``: the greedy one-to-one token-F1
    pairs of :func:`experiments.eval_atomizer.greedy_match` (F1 ≥ 0.6).

    >>> a = align(["Ann Lee shared the Marle Prize with Tom Velde.", "It is Oslo."],
    ...           ["Ann Lee shared the Marle Prize.", "She shared it with Tom Velde."], topic="Ann Lee")
    >>> a.covered, a.matched, a.invented
    (2, 1, ('It is Oslo.',))
    """
    our_words = [content_words(o, topic) for o in ours]
    gold_words = [content_words(g, topic) for g in gold]
    covered = [g for g, gw in zip(gold, gold_words) if any(_inside(gw, ow) >= cover for ow in our_words)]
    matched = [
        o
        for o, ow in zip(ours, our_words)
        if any(_inside(gw, ow) >= cover or _inside(ow, gw) >= cover for gw in gold_words)
    ]
    return Alignment(
        gold=len(gold),
        ours=len(ours),
        covered=len(covered),
        matched=len(matched),
        one_to_one=len(greedy_match(list(ours), list(gold), F1_THRESHOLD)),
        invented=tuple(o for o in ours if o not in matched),
        missed=tuple(g for g in gold if g not in covered),
    )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def gold_precision(atoms: Iterable[dict[str, Any]]) -> float | None:
    """#S / #(S + NS) of the labelled atoms (None without any)."""
    labels = [a.get("label") for a in atoms if a.get("label") in ("S", "NS")]
    return sum(label == "S" for label in labels) / len(labels) if labels else None


#: the counters of an own-atoms row that the table sums
SUMMED_COUNTERS = (
    "unresolved_atoms",
    "fragment_atoms",
    "ungrounded_atoms",
    "reviser_changed",
    "entailments_same_subject",
    "entailments_other_subject",
    "entailments_subject_from_sentence",
    "entailments_subject_from_topic",
    "entailments_subject_unknown",
)


def table_line(label: str, inputs: dict[str, dict], own_rows: list[dict], gold_rows: dict[str, dict]) -> dict:
    """One line of the end-to-end table: the figures of the module docstring over the responses
    that both the own-atoms run and the gold-atoms run finished (``table`` keeps the responses
    every run of the table finished)."""
    rows = [r for r in own_rows if r["topic"] in gold_rows and r["topic"] in inputs]
    totals: Counter[str] = Counter()
    errors_own, errors_gold = [], []
    invented: list[str] = []
    for row in rows:
        record = inputs[row["topic"]]
        gold_atoms = [a["text"] for a in record["atoms"]]
        ours = [a["text"] for a in row.get("atoms") or []]
        aside = [a["text"] for a in (row.get("ungrounded_atoms") or []) + (row.get("fragment_atoms") or [])]
        # ours are compared as the judge reads them (revised); the set-aside atoms are not judged
        alignment = align(ours, gold_atoms, row["topic"])
        totals["responses"] += 1
        totals["gold_atoms"] += alignment.gold
        totals["our_atoms"] += alignment.ours
        totals["set_aside"] += len(aside)
        totals["covered"] += alignment.covered
        totals["matched"] += alignment.matched
        totals["one_to_one"] += alignment.one_to_one
        invented += [f"{row['topic']}: {text}" for text in alignment.invented]
        counters = row.get("counters") or {}
        for key in SUMMED_COUNTERS:
            totals[key] += int(counters.get(key, 0))
        truth = gold_precision(record["atoms"])
        if truth is not None and row.get("factuality_score") is not None:
            errors_own.append(abs(row["factuality_score"] - truth))
            gold_row = gold_rows[row["topic"]]
            errors_gold.append(abs(gold_row["factuality_score"] - truth))
    n = totals["responses"] or 1
    return {
        "run": label,
        **totals,
        "gold_atoms_per_response": totals["gold_atoms"] / n,
        "our_atoms_per_response": totals["our_atoms"] / n,
        "gold_covered": totals["covered"] / totals["gold_atoms"] if totals["gold_atoms"] else None,
        "ours_matched": totals["matched"] / totals["our_atoms"] if totals["our_atoms"] else None,
        "ours_invented": 1 - totals["matched"] / totals["our_atoms"] if totals["our_atoms"] else None,
        "mae_own_atoms": statistics.fmean(errors_own) if errors_own else None,
        "mae_gold_atoms": statistics.fmean(errors_gold) if errors_gold else None,
        "scored": len(errors_own),
        "invented_atoms": invented,
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table_markdown(lines: Sequence[dict]) -> str:
    """The table of :func:`table_line` lines, one per run."""
    head = (
        "| run | responses | gold atoms / resp. | our atoms / resp. | set aside | gold covered | ours matched | "
        "ours invented | 1:1 F1≥0.6 | unresolved (flagged) | fragments | ungrounded | other subject | "
        "FR2 MAE, our atoms | FR2 MAE, gold atoms |"
    )
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for line in lines:
        out.append(
            f"| {line['run']} | {line['responses']} | {_fmt(line['gold_atoms_per_response'], 1)} | "
            f"{_fmt(line['our_atoms_per_response'], 1)} | {line['set_aside']} | {_fmt(line['gold_covered'])} | "
            f"{_fmt(line['ours_matched'])} | {_fmt(line['ours_invented'])} | {line['one_to_one']} | "
            f"{line['unresolved_atoms']} | {line['fragment_atoms']} | {line['ungrounded_atoms']} | "
            f"{line['entailments_other_subject']} | {_fmt(line['mae_own_atoms'])} | {_fmt(line['mae_gold_atoms'])} |"
        )
    return "\n".join(out) + "\n"


def table(args: argparse.Namespace) -> int:
    inputs = {r["topic"]: r for r in _read_jsonl(args.input)}
    gold_rows = {r["topic"]: r for r in _read_jsonl(args.gold)}
    runs = [(label, _read_jsonl(Path(path))) for label, _, path in (spec.partition("=") for spec in args.own)]
    # the responses every run finished, so that the lines compare like with like
    common = set(gold_rows).intersection(*({r["topic"] for r in rows} for _, rows in runs))
    lines = [table_line(label, inputs, [r for r in rows if r["topic"] in common], gold_rows) for label, rows in runs]
    print(table_markdown(lines))
    if args.json:
        args.json.write_text(json.dumps(lines, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


# -- the long answers ------------------------------------------------------------------------

#: words that point to something named elsewhere, wherever they are: object pronouns ("named
#: after her."), "its"/"their" (rarely the atom's own subject), "did so"; and "there", "together", "both"
#: opening the atom
_REFERENCE = re.compile(
    r"\b(?:him|them|it|its|their|theirs)\b|\bher\b(?=\s*(?:[.!?,;]|$))|\b(?:do|does|did|done) so\b"
    r"|^(?:there|together|both)\b",
    re.IGNORECASE,
)
#: "he", "she", "they", "his", "her" before any capitalised word after the first: the subject
#: is a pronoun ("She was born …", "In 1907 she moved …")
_SUBJECT_REFERENCE = re.compile(r"^(?:[A-Z][a-z]*\s+(?:[0-9,]+\s+)?)?(?:he|she|they|his|her)\b", re.IGNORECASE)


#: an atom that opens with a lower-case word ("with Pierre Curie", "and Henri Becquerel.") or a
#: coordinating conjunction is a piece of a sentence, not a claim
_PIECE = re.compile(r"^(?:[a-z]|(?:And|Or|But|Nor)\b)")


def _is_false(atom: dict[str, Any], record: dict[str, Any]) -> bool:
    """Whether an atom states a planted error: it comes from a planted sentence and names one of
    its false terms (``*``: every atom of that sentence is false)."""
    for planted in record.get("planted") or []:
        if atom.get("sentence") == planted["sentence"]:
            terms = planted["false"]
            if "*" in terms or any(t.casefold() in atom["text"].casefold() for t in terms):
                return True
    return False


def failure_kinds(row: dict[str, Any], record: dict[str, Any]) -> dict[str, list[str]]:
    """The atoms of one answer in each failure kind of issue #52, by this script's own checks
    (not the pipeline's, which they measure):

    - ``pieces``: an atom judged that opens with a lower-case word or a coordinating
      conjunction ("with Pierre Curie", "and Henri Becquerel.");
    - ``unresolved``: a judged atom whose subject is a pronoun ("She …", "In 1907 she …"), with
      an object pronoun, "its", "their" or "did so" anywhere, or opening with "There",
      "Together" or "Both"; ``unresolved_unflagged``: those the pipeline did not mark;
    - ``true_ns``: a true atom (not a planted error) judged NS; ``false_s``: a planted error
      judged S; ``true_set_aside``: a true atom whose entailment the same-subject rule set aside;
    - ``not_in_answer``: a judged atom with a content word (:func:`content_words`) the answer
      does not have ("The Great Wall of China is a man-made structure.").
    """
    answer = content_words(record["output"] + " " + (record.get("input") or ""))
    kinds: dict[str, list[str]] = {
        k: [] for k in ("pieces", "unresolved", "unresolved_unflagged", "true_ns", "false_s", "true_set_aside")
    }
    kinds["not_in_answer"] = []
    judged = row.get("atoms") or []
    for atom in judged:
        if _PIECE.match(atom["text"]):
            kinds["pieces"].append(atom["text"])
    for atom in judged:
        text = atom["text"]
        if _REFERENCE.search(text) or _SUBJECT_REFERENCE.match(text):
            kinds["unresolved"].append(text)
            if not atom.get("unresolved_reference"):
                kinds["unresolved_unflagged"].append(text)
        false = _is_false(atom, record)
        if atom["prediction"] == "NS" and not false:
            kinds["true_ns"].append(text)
        if atom["prediction"] == "S" and false:
            kinds["false_s"].append(text)
        if not false and any("another subject" in (u.get("reason") or "") for u in atom.get("unused_evidence") or []):
            kinds["true_set_aside"].append(text)
        extra = content_words(text) - answer
        if extra:
            kinds["not_in_answer"].append(f"{text} ({', '.join(sorted(extra))})")
    return kinds


def answers(args: argparse.Namespace) -> int:
    records = _read_jsonl(args.input)
    if not args.summarise:
        _run_answers(records, args)
    rows = {r["topic"]: r for r in _read_jsonl(args.out)}
    totals: Counter[str] = Counter()
    for record in records:
        row = rows.get(record["topic"])
        if row is None:
            continue
        kinds = failure_kinds(row, record)
        counters = row.get("counters") or {}
        totals["answers"] += 1
        totals["atoms"] += len(row.get("atoms") or [])
        totals["set_aside"] += len((row.get("ungrounded_atoms") or []) + (row.get("fragment_atoms") or []))
        for key in ("fragment_atoms", "unresolved_atoms", "ungrounded_atoms"):
            totals[f"flagged_{key}"] += int(counters.get(key, 0))
        for kind, atoms in kinds.items():
            totals[kind] += len(atoms)
        if args.verbose:
            print(f"\n## {record['topic']} (precision {_fmt(row.get('factuality_score'))})")
            for atom in row.get("atoms") or []:
                marks = [m for m in ("unresolved_reference", "reviser_rejected") if atom.get(m)]
                false = " [planted]" if _is_false(atom, record) else ""
                shown = (
                    atom["text"]
                    if atom.get("original") in (None, atom["text"])
                    else f"{atom['original']} -> {atom['text']}"
                )
                print(
                    f"- {atom['prediction']} {atom['probability']:.2f} {shown}{false}" + (f" {marks}" if marks else "")
                )
            for atom in (row.get("ungrounded_atoms") or []) + (row.get("fragment_atoms") or []):
                print(f"- (set aside) {atom['text']}: {atom['reason']}")
            for kind, atoms in kinds.items():
                if atoms:
                    print(f"  {kind}: {atoms}")
    print(json.dumps(dict(totals), indent=1))
    return 0


def _run_answers(records: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """Each answer through the default pipeline (``--set`` settings), one row per answer
    appended to ``--out``; answers already there are skipped."""
    from fact_reasoner.reasoner import FactReasoner
    from fact_reasoner.settings.config import PipelineConfig

    options: dict[str, Any] = dict(item.split("=", 1) for item in args.set)
    if args.cache_dir:
        options["cache_dir"] = args.cache_dir
    reasoner = FactReasoner(PipelineConfig(**options))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = {r["topic"] for r in _read_jsonl(args.out)} if args.out.exists() else set()
    for record in records:
        if record["topic"] in done:
            continue
        given = {k: v for k, v in record.items() if k != "planted"}
        row = reasoner.assess(given).model_dump(mode="json")
        with args.out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parts = parser.add_subparsers(dest="part", required=True)
    t = parts.add_parser("table", help="the development biographies: our atoms against gold")
    t.add_argument("input", type=Path, help="the prepared input (gold atoms with labels)")
    t.add_argument("--gold", type=Path, required=True, help="run_biographies' FR2 rows on the gold atoms")
    t.add_argument("--own", action="append", required=True, metavar="LABEL=ROWS", help="FR2 rows of --atoms own")
    t.add_argument("--json", type=Path, help="also write the lines as JSON")
    a = parts.add_parser("answers", help="the long answers through the default pipeline")
    a.add_argument("input", type=Path, nargs="?", default=Path(__file__).parent / "data" / "long_answers.jsonl")
    a.add_argument("--out", type=Path, required=True, help="rows (JSON lines, resumable)")
    a.add_argument("--cache-dir", type=Path, help="the model-call cache's directory")
    a.add_argument("--set", action="append", default=[], metavar="DEST=VALUE", help="a pipeline setting")
    a.add_argument("--summarise", action="store_true", help="only count what --out holds")
    a.add_argument("--verbose", action="store_true", help="every atom with its verdict")
    args = parser.parse_args(argv)
    return table(args) if args.part == "table" else answers(args)


if __name__ == "__main__":
    sys.exit(main())

"""Where FR2 goes wrong on prepared biographies: every error classified, as a Markdown table and JSON.

    .venv-dev/bin/python -m experiments.error_table --records runs/bios_dev33.jsonl \\
        --out experiments/results/errors_dev33 -- --cache-dir .cache/fr [--nli-sentences all] [--nli a,b]

runs ``python -m fact_reasoner --version 2 --input-file RECORDS --output-file RUN_DIR/<label>.fr2.jsonl``
with every option after ``--`` passed through unchanged (``--nli``, ``--nli-model``,
``--nli-sentences``, ``--cache-dir`` …; the command resumes an output of the same settings), or
with ``--rows FILE`` reads the rows of such a run. Then each atom with a gold label that FR2 got
wrong is put in one class (:func:`classify_error`):

- a gold-S atom predicted NS **with a contradiction factor**: ``false contradiction`` (which
  passage, which probability);
- a gold-S atom predicted NS **with no factor** (posterior 0.5, ``no_evidence``): ``no decisive
  evidence``, subdivided by the first rule that applies:

  1. ``set aside by a graph rule``: the judge gave an entailment that the graph's rules left out
     (the row's ``unused_evidence`` says which: ``another subject``, ``below the floor``);
  2. the atom's *content* — its content words (:func:`content_keys`: stop words dropped, the
     project's crude stemmer, then the first ``KEY_LETTERS`` letters, so "retired" meets
     "retirement" and "Ph.D." meets "PhD") less the words naming the biography's subject — is
     compared with every sentence of every passage of the record (FR2 judges each atom against
     all of them). The *best sentence* has the largest share of the content (``coverage``). It
     *states* the atom when ``coverage ≥ MIN_COVERAGE`` and it holds every *value* of the atom
     (:func:`atom_values`: the phrases of capitalised words or numbers, "ANNIKA Foundation",
     "1937", unless they only name the subject);
  3. a value of the atom is in no passage at all: ``passage lacks the fact`` (or ``world
     knowledge needed``, below); else, the atom judges or sums up — a count ("over 50 wickets")
     or a word of :data:`EVALUATIVE` ("popular", "a long career", "numerous") its best sentence
     lacks: ``evaluative or summary claim``; else no sentence states it: ``world knowledge
     needed`` when what is missing is a place or nationality word (``GEO_WORDS``: "American",
     "England", …) or a decade ("the 1940s") that a place or a year of some sentence implies
     (:func:`inferable`), else ``passage lacks the fact``;
  4. a sentence states it: ``passage about another subject`` when that sentence does not name the
     subject and opens with another person's name or with "his father", "her husband" …
     (:func:`about_another_subject`); ``subject only in the title`` when the atom opens with the
     subject's name and no word of it is in the passage's text (the judge never sees the title);
     ``subject by a pronoun`` when the sentence does not name the subject (it opens with "He",
     "She" … or names nobody); else ``judge misses a paraphrase`` (the words are there, the judge
     said neutral);
- a gold-NS atom predicted S: ``false entailment`` (the passage and probability of the strongest
  entailment factor, and what that passage's best sentence holds of the atom:
  :func:`entailment_class`), and split again by **what a check could see** in the sentence the
  entailment rests on (:func:`check_kind`: the relation screen's parser reading of it, issue 58):
  another subject or doer; lacks or changes a number or date; lacks a name the claim has; says
  the opposite; hedges; another attribute; or none of these — the sentence has the claim's words
  (a near miss, or gold noise: read by hand) or lacks some (a loose association).

These are heuristics: ``--hand-sample N`` writes a seeded random sample of the no-decisive-evidence
errors as a sheet to judge by hand (the heuristic's verdict left out; errors already in
``--verdicts`` left out too), and ``--verdicts FILE`` (a JSONL of ``{sample, key, verdict, note}``)
reports the heuristic's agreement with them per sample
(``experiments/results/errors_dev33.md`` has the rates: about 60% exact and 80% on "could a judge
find it in the passages or not", on verdicts judged after the rules were fixed).

Beside the classes: FR2's balanced accuracy over the atoms, the MAE of the per-record precision
(:func:`fact_reasoner.measures.mean_absolute_error`) and the judge's pairs per second (the run's
``nli_backend_pairs`` over ``nli_backend_seconds``; a run answered from the pair cache has none).
``--compare OTHER.json`` adds how the atoms moved from that earlier table's classes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import re
import shlex
import subprocess
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fact_reasoner.atoms.frames import atom_frame
from fact_reasoner.measures import balanced_accuracy, mean_absolute_error
from fact_reasoner.nli.alignment_features import content_stems
from fact_reasoner.screening.checks import DIAGNOSES
from fact_reasoner.text.sentences import sentence_spans

#: the share of the atom's content words the best sentence must hold to "state" the atom
MIN_COVERAGE = 0.5
#: a content word is compared by its first letters (after the crude stemmer): "retired" and
#: "retirement" match, so do "signed" and "sign"
KEY_LETTERS = 5

NO_EVIDENCE = "no decisive evidence"
FALSE_CONTRADICTION = "false contradiction"
FALSE_ENTAILMENT = "false entailment"
GRAPH_RULE = "set aside by a graph rule"
WORLD_KNOWLEDGE = "world knowledge needed"
LACKS = "passage lacks the fact"
EVALUATIVE_CLAIM = "evaluative or summary claim"
ANOTHER_SUBJECT = "passage about another subject"
TITLE_ONLY = "subject only in the title"
PRONOUN = "subject by a pronoun"
PARAPHRASE = "judge misses a paraphrase"
OTHER = "other"
VALUE_MISSING = "a value of the atom is not in the passage"
NEAR_MISS = "the passage has the atom's words (near miss or strict gold)"
LOOSE = "few of the atom's words in the passage"
ENTAILMENT_CLASSES = (VALUE_MISSING, NEAR_MISS, LOOSE)
#: what no check sees, split by the best sentence's coverage of the atom (module docstring)
CHECK_WORDS_THERE = "no check sees it: the sentence has the claim's words (near miss or gold noise)"
CHECK_LOOSE = "no check sees it: the sentence lacks some of the claim's words (loose association)"
#: the kinds of false entailment by what a check could see (:func:`check_kind`)
CHECK_KINDS = DIAGNOSES + (CHECK_WORDS_THERE, CHECK_LOOSE)
#: upper ends of the bins of the strongest entailment's probability of a false entailment
ENTAILMENT_BINS = (0.6, 0.7, 0.8, 0.9, 1.0)

#: the sub-classes of "no decisive evidence", in the order of the table
NO_EVIDENCE_CLASSES = (
    GRAPH_RULE,
    LACKS,
    EVALUATIVE_CLAIM,
    WORLD_KNOWLEDGE,
    PARAPHRASE,
    PRONOUN,
    TITLE_ONLY,
    ANOTHER_SUBJECT,
)

#: the sub-classes where the passages hold the atom, so that a better judge or reading could
#: find it (the others: the passages do not state it)
REACHABLE = frozenset({WORLD_KNOWLEDGE, PARAPHRASE, PRONOUN, TITLE_ONLY, ANOTHER_SUBJECT})

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_ABBREVIATION = re.compile(r"\b(?:[A-Za-z]{1,2}\.){2,}")


def normalise(text: str) -> str:
    """``text`` without accents and with the dots of abbreviations dropped ("Ph.D." → "PhD",
    "U.S." → "US"), so that words compare as a reader compares them."""
    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch))
    return _ABBREVIATION.sub(lambda m: m.group(0).replace(".", "") + " ", plain)


def content_keys(text: str) -> set[str]:
    """The content words of ``text`` as compared here: stop words dropped, stemmed
    (:func:`~fact_reasoner.nli.alignment_features.content_stems`), cut to ``KEY_LETTERS`` letters."""
    return {s[:KEY_LETTERS] for s in content_stems(normalise(text))}


def _keys(words: str) -> frozenset[str]:
    return frozenset(k for w in words.split() for k in content_keys(w))


#: places and nationalities a reader maps onto each other ("London" → "United Kingdom")
GEO_WORDS = _keys(
    """america american americans usa us united states canada canadian mexico mexican
    britain british england english scotland scottish wales welsh ireland irish uk kingdom
    france french germany german italy italian spain spanish portugal portuguese netherlands dutch
    belgium belgian switzerland swiss austria austrian sweden swedish norway norwegian denmark danish
    finland finnish poland polish russia russian soviet ukraine ukrainian greece greek turkey turkish
    israel israeli iran iranian iraq iraqi egypt egyptian nigeria nigerian kenya kenyan africa african
    south north east west india indian pakistan pakistani china chinese japan japanese korea korean
    philippines filipino vietnam vietnamese thailand thai indonesia indonesian malaysia malaysian
    australia australian zealand brazil brazilian argentina argentine argentinian chile chilean
    colombia colombian peru peruvian venezuela venezuelan cuba cuban jamaica jamaican europe european
    asia asian latin caribbean scandinavian arab hispanic"""
)
#: words of a judgement or a summary rather than a fact ("popular", "a long career", "numerous")
EVALUATIVE = _keys(
    """popular popularity respected respect acclaim acclaimed success successful prominent
    prominence notable renowned famous fame distinguished influential influence praised praise
    recognition recognized recognised celebrated prestigious numerous various several many
    significant important highly leading rising star critically critical best greatest iconic
    legendary talented skilled accomplished prolific versatile impressive remarkable outstanding
    reputation contributions contribution widely well-known dedicated passionate pioneering
    pioneer unique key long strong support fans beloved admired"""
)
#: "over 20 books", "more than 30 films": a count the passages rarely state
_COUNT = re.compile(r"\b(?:over|more than|at least|dozens|hundreds)\s+(?:of\s+)?\d*", re.IGNORECASE)
#: a word that names a place inside a sentence: "in"/"from"/"at"/"near" + a capitalised word
_PLACE_CUE = re.compile(r"\b(?:in|from|at|near)\s+(?:the\s+)?[A-Z][a-z]+")
_DECADE = re.compile(r"\b(1\d|20)(\d)0s\b")
_YEAR = re.compile(r"\b(1\d\d\d|20\d\d)\b")
_PRONOUNS = frozenset("he she they his her their him them it its".split())
_RELATIVES = frozenset(
    """father mother parents brother sister brothers sisters son daughter sons daughters wife husband
    spouse partner uncle aunt nephew niece cousin grandfather grandmother grandson granddaughter
    stepfather stepmother friend""".split()
)
#: capitalised words that open a sentence without naming anyone
_FUNCTION_WORDS = frozenset(
    """a an the in on at by for from with after before during since until as when while this
    that these those there here his her their its he she they it we i now later then also however
    although though despite following born upon under over early late one two three
    january february march april may june july august september october november december""".split()
)
#: lower-case words that may join the capitalised words of one name ("King of Kings")
_NAME_JOINERS = frozenset("of the de von van la le du da del".split())


@dataclass(frozen=True)
class BestSentence:
    """The sentence of the record's passages that shares most of an atom's content.

    ``coverage``: the share of the atom's content words in it; ``missing``: those not in it;
    ``values_missing``: the atom's names and numbers (:func:`atom_values`) not in it;
    ``passage_names_subject``: whether its passage's text names the subject."""

    context: str | None
    index: int
    sentence: str
    coverage: float
    missing: tuple[str, ...]
    values_missing: tuple[str, ...]
    passage_names_subject: bool


def subject_words(topic: str | None, atom_text: str) -> set[str]:
    """The content words (:func:`content_keys`) that name the biography's subject: the topic's,
    and the capitalised words that open the atom when they name the same person ("Joey D.
    Vieira"); an atom about something else ("The Weir Group is …") keeps those words as content."""
    words = content_keys(topic or "")
    opening = content_keys(" ".join(sorted(atom_frame(atom_text).subject)))
    return words | opening if opening & words or not words else words


def atom_names_subject(topic: str | None, atom_text: str) -> bool:
    """Whether the atom opens with the subject's name ("Vieira was born …"), not a pronoun or
    another name."""
    return bool(content_keys(" ".join(sorted(atom_frame(atom_text).subject))) & content_keys(topic or ""))


def atom_content(atom_text: str, subject: set[str]) -> set[str]:
    """The atom's content words less the subject's (what a passage must say)."""
    return content_keys(atom_text) - subject


def atom_values(atom_text: str, subject: set[str]) -> list[str]:
    """The atom's names and numbers, as lower-case phrases: runs of capitalised words or numbers
    after the first word ("ANNIKA Foundation", "King of Kings", "1937"), but not a run that only
    names the subject ("Joey D. Vieira"); a passage holds a value when it holds the phrase."""
    tokens = _WORD.findall(normalise(atom_text))
    values: list[str] = []
    run: list[str] = []
    for token in [*tokens[1:], ""]:
        capital = token[:1].isupper() or token[:1].isdigit()
        if capital or (run and token.lower() in _NAME_JOINERS):
            run.append(token)
            continue
        while run and run[-1].lower() in _NAME_JOINERS:
            run.pop()
        while run and run[0].lower() in _NAME_JOINERS:
            run.pop(0)
        if run and content_keys(" ".join(run)) - subject:
            values.append(" ".join(run).lower())
        run = []
    return values


def holds_value(value: str, sentence: str) -> bool:
    """Whether ``sentence`` holds the value phrase (the same words in a row, case and accents aside)."""
    words = " ".join(w.lower() for w in _WORD.findall(normalise(sentence)))
    return re.search(rf"(?<![^\s]){re.escape(value)}(?![^\s])", words) is not None


def passage_sentences(text: str) -> list[str]:
    """The passage's sentences, split as the cross-encoder splits them (:func:`sentence_spans`)."""
    return [text[a:b].strip() for a, b in sentence_spans(text)]


def inferable(word: str, atom_text: str, sentence: str) -> bool:
    """Whether a missing content word can be read off ``sentence`` with world knowledge: a place
    or nationality word when the sentence names a place (a GEO word, or "in"/"from" + a
    capitalised word), or the decade of a "1940s" when the sentence has a year of that decade."""
    if word in GEO_WORDS:
        return bool(_PLACE_CUE.search(sentence) or content_keys(sentence) & GEO_WORDS)
    for match in _DECADE.finditer(atom_text):
        prefix = match.group(1) + match.group(2)
        if word == prefix + "0" and any(y.startswith(prefix) for y in _YEAR.findall(sentence)):
            return True
    return False


def best_sentence(atom_text: str, subject: set[str], contexts: Sequence[dict[str, Any]]) -> BestSentence:
    """The sentence of ``contexts`` (``{id, text}``) with the largest coverage of the atom's
    content; on ties the one holding more of its values, then one naming the subject, then the first."""
    content = atom_content(atom_text, subject)
    values = atom_values(atom_text, subject)
    best: tuple[tuple[float, int, bool], BestSentence] | None = None
    for context in contexts:
        names = bool(subject & content_keys(context.get("text") or "")) if subject else True
        for index, sentence in enumerate(passage_sentences(context.get("text") or "")):
            keys = content_keys(sentence)
            coverage = len(content & keys) / len(content) if content else 1.0
            held = [v for v in values if holds_value(v, sentence)]
            key = (coverage, len(held), bool(subject & keys))
            if best is None or key > best[0]:
                best = (
                    key,
                    BestSentence(
                        context=context.get("id"),
                        index=index,
                        sentence=sentence,
                        coverage=round(coverage, 3),
                        missing=tuple(sorted(content - keys)),
                        values_missing=tuple(v for v in values if v not in held),
                        passage_names_subject=names,
                    ),
                )
    if best is None:
        return BestSentence(None, -1, "", 0.0, tuple(sorted(content)), tuple(values), False)
    return best[1]


def states_atom(best: BestSentence) -> bool:
    """Whether the best sentence holds the atom: enough of its content and all of its values."""
    return best.coverage >= MIN_COVERAGE and not best.values_missing


def needs_world_knowledge(atom_text: str, subject: set[str], contexts: Sequence[dict[str, Any]]) -> bool:
    """Whether some sentence holds the atom once its missing place, nationality or decade words
    are read off the sentence with world knowledge (:func:`inferable`), and at least one such
    word was missing."""
    content = atom_content(atom_text, subject)
    if not content:
        return False
    values = atom_values(atom_text, subject)
    for context in contexts:
        for sentence in passage_sentences(context.get("text") or ""):
            missing = content - content_keys(sentence)
            inferred = {w for w in missing if inferable(w, atom_text, sentence)}
            if not inferred:
                continue
            coverage = (len(content) - len(missing - inferred)) / len(content)
            unheld = [v for v in values if not holds_value(v, sentence) and not content_keys(v) <= inferred]
            if coverage >= MIN_COVERAGE and not unheld:
                return True
    return False


def is_evaluative(atom_text: str, best: BestSentence) -> bool:
    """Whether the atom judges or sums up rather than states: a count ("over 20 books"), or a
    word of :data:`EVALUATIVE` ("popular", "a long career") that its best sentence lacks."""
    return bool(_COUNT.search(atom_text)) or bool(set(best.missing) & EVALUATIVE)


def about_another_subject(sentence: str, subject: set[str]) -> bool:
    """Whether ``sentence`` is about someone else: it does not name the subject, and it opens
    with "His father", "Her husband" … or with a name of two capitalised words ("John Smith was
    …", not "In 1990" or "Now")."""
    if subject & content_keys(sentence):
        return False
    tokens = _WORD.findall(sentence)
    if len(tokens) >= 2 and tokens[0].lower() in _PRONOUNS and tokens[1].lower() in _RELATIVES:
        return True
    return len(tokens) >= 2 and all(t[0].isupper() and t.lower() not in _FUNCTION_WORDS for t in tokens[:2])


def names_subject_in(sentence: str, subject: set[str]) -> bool:
    """Whether ``sentence`` holds a word of the subject's name."""
    return bool(subject & content_keys(sentence))


def no_evidence_class(
    atom: dict[str, Any], topic: str | None, contexts: Sequence[dict[str, Any]]
) -> tuple[str, dict[str, Any]]:
    """The sub-class of a gold-S atom that no factor touched, and the details that decided it
    (the module docstring's rules 1–4)."""
    set_aside = [u for u in atom.get("unused_evidence") or [] if u.get("relation") == "entailment"]
    subject = subject_words(topic, atom["text"])
    best = best_sentence(atom["text"], subject, contexts)
    details: dict[str, Any] = {"best": asdict(best)}
    if set_aside:
        top = max(set_aside, key=lambda u: u.get("probability", 0.0))
        # the setting that set it aside (the reason's last parentheses), whatever the rule saw
        reason = str(top.get("reason") or "")
        setting = re.search(r"\((--[^()]*)\)\s*$", reason)
        details["rule"] = setting.group(1) if setting else reason
        details["set_aside"] = top
        details["text_class"] = text_class(atom["text"], topic, subject, best, contexts)
        return GRAPH_RULE, details
    return text_class(atom["text"], topic, subject, best, contexts), details


def text_class(
    atom_text: str, topic: str | None, subject: set[str], best: BestSentence, contexts: Sequence[dict[str, Any]]
) -> str:
    """Rules 2–4 of the module docstring: what the passages' words say about an atom no factor
    touched."""
    if best.values_missing and not any(
        holds_value(v, s) for v in best.values_missing for c in contexts for s in [c.get("text") or ""]
    ):
        # a name or number of the atom is in no passage at all
        return WORLD_KNOWLEDGE if needs_world_knowledge(atom_text, subject, contexts) else LACKS
    if is_evaluative(atom_text, best):
        return EVALUATIVE_CLAIM
    if not states_atom(best):
        return WORLD_KNOWLEDGE if needs_world_knowledge(atom_text, subject, contexts) else LACKS
    named = atom_names_subject(topic, atom_text)
    if about_another_subject(best.sentence, subject):
        return ANOTHER_SUBJECT
    if named and not best.passage_names_subject:
        return TITLE_ONLY
    if named and not names_subject_in(best.sentence, subject):
        return PRONOUN
    return PARAPHRASE


def _strongest(atom: dict[str, Any], relation: str) -> dict[str, Any] | None:
    links = [e for e in atom.get("evidence") or [] if e.get("relation") == relation]
    return max(links, key=lambda e: e.get("probability", 0.0)) if links else None


def check_kind(atom_text: str, topic: str | None, context: dict[str, Any], best: BestSentence) -> str:
    """What a check could see of a false entailment (module docstring): the first kind the
    relation screen's :func:`~fact_reasoner.screening.checks.diagnose` finds in the passage's
    deciding sentence, in :data:`~fact_reasoner.screening.checks.DIAGNOSES` order, else one of
    the two "no check sees it" kinds by the best sentence's coverage."""
    from fact_reasoner.screening.checks import deciding_window, diagnose
    from fact_reasoner.screening.reading import read_claim, read_passage, referent_of

    claim = read_claim(atom_text, referent_of(None, topic))
    passage = read_passage(context["text"], context.get("title"))
    window = deciding_window(claim, passage)
    kinds = diagnose(claim, window, passage, context.get("title")) if window is not None else []
    if kinds:
        return kinds[0]
    return CHECK_WORDS_THERE if best.coverage >= MIN_COVERAGE and not best.values_missing else CHECK_LOOSE


def entailment_class(best: BestSentence) -> str:
    """What the entailing passage's best sentence holds of a gold-NS atom the judge entailed: not
    all of its values (a more specific claim than the passage: "received his Ph.D. in 2001"
    from "has a Ph.D."); most of its words (a near miss such as "received" for "was nominated
    for", or a stricter gold label); or few of its words (a loose association)."""
    if best.values_missing:
        return VALUE_MISSING
    return NEAR_MISS if best.coverage >= MIN_COVERAGE else LOOSE


def classify_error(
    atom: dict[str, Any], topic: str | None, contexts: Sequence[dict[str, Any]]
) -> tuple[str, str | None, dict[str, Any]] | None:
    """``(class, sub-class, details)`` of an atom FR2 got wrong (the module docstring), None for
    an atom it got right or one without a gold S/NS label. ``atom`` is an output row's atom,
    ``contexts`` the record's passages (``{id, title, text}``)."""
    gold, predicted = atom.get("label"), atom.get("prediction")
    if gold not in ("S", "NS") or gold == predicted:
        return None
    if gold == "NS":
        link = _strongest(atom, "entailment")
        if link is None:
            return OTHER, None, {}
        subject = subject_words(topic, atom["text"])
        passage = [c for c in contexts if c.get("id") == link["context"]]
        best = best_sentence(atom["text"], subject, passage)
        details = {"entailment": link, "best": asdict(best)}
        if passage:
            details["check"] = check_kind(atom["text"], topic, passage[0], best)
        return FALSE_ENTAILMENT, entailment_class(best), details
    link = _strongest(atom, "contradiction")
    if link is not None:
        subject = subject_words(topic, atom["text"])
        passage = [c for c in contexts if c.get("id") == link["context"]]
        return (
            FALSE_CONTRADICTION,
            None,
            {"contradiction": link, "best": asdict(best_sentence(atom["text"], subject, passage))},
        )
    if atom.get("evidence"):
        return OTHER, None, {"evidence": atom["evidence"]}
    sub, details = no_evidence_class(atom, topic, contexts)
    return NO_EVIDENCE, sub, details


def record_contexts(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The record's passages, the first of each text (FR2 deduplicates them so)."""
    seen: set[str] = set()
    kept = []
    for context in record.get("contexts") or []:
        if context.get("text") not in seen:
            seen.add(context.get("text"))
            kept.append(context)
    return kept


def classify_rows(rows: Iterable[dict[str, Any]], records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per error of the rows (FR2 output rows, ``source_line`` = the record's line in
    the input file): key (``topic#atom id``), topic, atom, gold, prediction, posterior, class,
    sub-class and details."""
    errors = []
    for row in rows:
        record = records[int(row["source_line"]) - 1]
        contexts = record_contexts(record)
        for atom in row.get("atoms") or []:
            verdict = classify_error(atom, row.get("topic"), contexts)
            if verdict is None:
                continue
            kind, sub, details = verdict
            errors.append(
                {
                    "key": f"{row.get('topic')}#{atom['id']}",
                    "topic": row.get("topic"),
                    "atom": atom["text"],
                    "gold": atom.get("label"),
                    "prediction": atom.get("prediction"),
                    "probability": round(float(atom.get("probability", 0.0)), 4),
                    "class": kind,
                    "subclass": sub,
                    "details": details,
                }
            )
    return errors


def row_measures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """FR2's balanced accuracy over the gold-labelled atoms, the MAE of per-record precision
    (predicted ``factuality_score`` against ``gold_factuality_score``), and the judge's pairs,
    seconds and pairs per second (backend pairs only: a pair answered from the cache costs none)."""
    truths, predicted = [], []
    for row in rows:
        for atom in row.get("atoms") or []:
            if atom.get("label") in ("S", "NS"):
                truths.append(atom["label"] == "S")
                predicted.append(atom.get("prediction") == "S")
    scored = [r for r in rows if r.get("gold_factuality_score") is not None and r.get("factuality_score") is not None]
    pairs = sum(float((r.get("counters") or {}).get("nli_backend_pairs", 0.0)) for r in rows)
    seconds = sum(float((r.get("counters") or {}).get("nli_backend_seconds", 0.0)) for r in rows)
    return {
        "records": len(rows),
        "atoms": len(truths),
        "gold_S": sum(truths),
        "gold_NS": len(truths) - sum(truths),
        "balanced_accuracy": round(balanced_accuracy(truths, predicted), 4),
        "mae_precision": round(
            mean_absolute_error([r["gold_factuality_score"] for r in scored], [r["factuality_score"] for r in scored]),
            4,
        )
        if scored
        else None,
        "judge_pairs": int(pairs),
        "judge_seconds": round(seconds, 2),
        "pairs_per_second": round(pairs / seconds, 1) if seconds else None,
        "pairs_requested": int(sum(float((r.get("counters") or {}).get("nli_pairs", 0.0)) for r in rows)),
    }


def count_classes(errors: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Errors per class and, for "no decisive evidence", per sub-class (a graph rule split by
    its reason); false entailments by whether the passage holds the atom's values."""
    classes = Counter(e["class"] for e in errors)
    subs = Counter(e["subclass"] for e in errors if e["class"] == NO_EVIDENCE)
    rules = Counter(e["details"].get("rule") for e in errors if e["subclass"] == GRAPH_RULE)
    behind_rules = Counter(e["details"].get("text_class") for e in errors if e["subclass"] == GRAPH_RULE)
    entail = Counter(e["subclass"] for e in errors if e["class"] == FALSE_ENTAILMENT)
    checks = Counter(e["details"].get("check") for e in errors if e["class"] == FALSE_ENTAILMENT)
    strengths = Counter(
        _bin(e["details"]["entailment"]["probability"], ENTAILMENT_BINS)
        for e in errors
        if e["class"] == FALSE_ENTAILMENT
    )
    return {
        "classes": dict(classes),
        "no_evidence": {name: subs.get(name, 0) for name in NO_EVIDENCE_CLASSES},
        "graph_rules": dict(rules),
        "graph_rules_text_class": dict(behind_rules),
        "false_entailment": {name: entail.get(name, 0) for name in ENTAILMENT_CLASSES},
        "false_entailment_by_check": {name: checks.get(name, 0) for name in CHECK_KINDS},
        "false_entailment_probability": {
            f"{low:g}–{edge:g}": strengths.get(edge, 0) for low, edge in zip((0.5, *ENTAILMENT_BINS), ENTAILMENT_BINS)
        },
    }


def _bin(value: float, edges: Sequence[float]) -> float:
    """The first edge ``value`` does not exceed (the last edge for larger values)."""
    return next((edge for edge in edges if value <= edge), edges[-1])


def compare(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How the errors moved between two tables of the same atoms (keys): errors fixed and new
    ones, by class (``before`` class → ``after`` class or ``fixed``)."""
    old = {e["key"]: e for e in before}
    new = {e["key"]: e for e in after}

    def name(e: dict[str, Any]) -> str:
        return e["class"] + (f" / {e['subclass']}" if e["class"] == NO_EVIDENCE else "")

    moves = Counter(f"{name(e)} → {name(new[k]) if k in new else 'fixed'}" for k, e in old.items())
    appeared = Counter(name(e) for k, e in new.items() if k not in old)
    return {
        "fixed": sum(k not in new for k in old),
        "new": sum(k not in old for k in new),
        "moves": dict(moves.most_common()),
        "new_errors": dict(appeared.most_common()),
        "no_evidence_gold_S_now_supported": sum(
            1 for k, e in old.items() if e["class"] == NO_EVIDENCE and k not in new
        ),
        "new_false_entailments": appeared.get(FALSE_ENTAILMENT, 0),
    }


def hand_sheet(
    errors: Sequence[dict[str, Any]], n: int, seed: int, exclude: Iterable[str] = ()
) -> list[dict[str, Any]]:
    """A seeded random sample of ``n`` no-decisive-evidence errors (none of the ``exclude`` keys:
    those judged already), without the heuristic's verdict: the atom, its best sentence and the
    graph's unused evidence, to be judged by hand."""
    skip = set(exclude)
    pool = [e for e in errors if e["class"] == NO_EVIDENCE and e["key"] not in skip]
    sample = random.Random(seed).sample(pool, min(n, len(pool)))
    return [
        {
            "key": e["key"],
            "atom": e["atom"],
            "best_sentence": e["details"]["best"]["sentence"],
            "best_context": e["details"]["best"]["context"],
            "set_aside": e["details"].get("set_aside"),
        }
        for e in sample
    ]


def text_verdict(error: dict[str, Any]) -> str | None:
    """The heuristic's reading of the passages' words for a no-decisive-evidence error: its
    sub-class, or for one a graph rule set aside, what the words say behind the rule (the rule
    itself is read off the row, so checking it by hand would prove nothing)."""
    return error["details"].get("text_class") or error["subclass"]


def agreement(errors: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per sample (the verdicts' ``sample`` field) and over all: how many hand verdicts
    (``{key, verdict}``) equal the heuristic's (:func:`text_verdict`), the share, and the
    disagreements (heuristic → hand)."""
    by_key = {e["key"]: e for e in errors}
    groups: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for v in verdicts:
        if v["key"] in by_key:
            groups.setdefault(str(v.get("sample", "all")), []).append((v, by_key[v["key"]]))
    out = {}
    for sample, judged in groups.items():
        same = sum(v["verdict"] == text_verdict(e) for v, e in judged)
        confusions = Counter(
            f"{text_verdict(e)} → {v['verdict']}" for v, e in judged if v["verdict"] != text_verdict(e)
        )
        coarse = sum((v["verdict"] in REACHABLE) == (text_verdict(e) in REACHABLE) for v, e in judged)
        out[sample] = {
            "judged": len(judged),
            "agree": same,
            "rate": round(same / len(judged), 3) if judged else None,
            "reachable_agree_rate": round(coarse / len(judged), 3) if judged else None,
            "hand": dict(Counter(v["verdict"] for v, _ in judged).most_common()),
            "disagreements": dict(confusions.most_common()),
        }
    return out


def render_markdown(table: dict[str, Any]) -> str:
    """The table's Markdown: the command, the measures, the classes with counts and shares, and
    two examples of each class."""
    m, counts, errors = table["measures"], table["counts"], table["errors"]
    total = len(errors)
    gold_s, gold_ns = m["gold_S"], m["gold_NS"]

    def share(n: int, of: int) -> str:
        return f"{n} ({100 * n / of:.1f}%)" if of else str(n)

    lines = [
        f"### {table['label']}",
        "",
        f"Command ({table['date']}): `{table['command']}`",
        "",
        f"{m['records']} records, {m['atoms']} gold atoms ({gold_s} S / {gold_ns} NS): FR2 balanced accuracy "
        f"**{m['balanced_accuracy']}**, MAE of precision **{m['mae_precision']}**; judge: {m['judge_pairs']} pairs "
        f"in {m['judge_seconds']} s ({m['pairs_per_second']} pairs/s; {m['pairs_requested']} pairs asked).",
        "",
        "| error | atoms | share of errors |",
        "|---|---:|---:|",
    ]
    no_ev = counts["classes"].get(NO_EVIDENCE, 0)
    lines.append(
        f"| gold S → NS: **{NO_EVIDENCE}** (no factor, posterior 0.5) | {share(no_ev, gold_s)} of gold S | {share(no_ev, total)} |"
    )
    for name in NO_EVIDENCE_CLASSES:
        n = counts["no_evidence"][name]
        extra = ""
        if name == GRAPH_RULE and counts["graph_rules"]:
            extra = " (" + ", ".join(f"{k}: {v}" for k, v in sorted(counts["graph_rules"].items())) + ")"
        lines.append(f"| &nbsp;&nbsp;· {name}{extra} | {n} | {share(n, total)} |")
    fc = counts["classes"].get(FALSE_CONTRADICTION, 0)
    lines.append(f"| gold S → NS: **{FALSE_CONTRADICTION}** | {share(fc, gold_s)} of gold S | {share(fc, total)} |")
    fe = counts["classes"].get(FALSE_ENTAILMENT, 0)
    lines.append(f"| gold NS → S: **{FALSE_ENTAILMENT}** | {share(fe, gold_ns)} of gold NS | {share(fe, total)} |")
    for name, n in counts["false_entailment"].items():
        lines.append(f"| &nbsp;&nbsp;· {name} | {n} | {share(n, total)} |")
    if counts.get("false_entailment_by_check"):
        lines.append("| &nbsp;&nbsp;*by what a check could see in the deciding sentence:* | | |")
        for name, n in counts["false_entailment_by_check"].items():
            lines.append(f"| &nbsp;&nbsp;· {name} | {n} | {share(n, total)} |")
    if counts["classes"].get(OTHER):
        lines.append(f"| other | {counts['classes'][OTHER]} | |")
    lines.append(f"| **all errors** | {total} | |")
    if counts["graph_rules_text_class"]:
        behind = ", ".join(
            f"{k}: {v}" for k, v in sorted(counts["graph_rules_text_class"].items(), key=lambda kv: -kv[1])
        )
        lines += ["", f"Behind the graph rules' set-asides, the passages' words say: {behind}."]
    if fe:
        strength = ", ".join(f"{k}: {v}" for k, v in counts["false_entailment_probability"].items())
        lines += ["", f"False entailments by the strongest entailment's probability: {strength}."]
    lines += ["", "Examples (the first two of each class, in file order):", ""]
    seen: Counter[str] = Counter()
    for e in errors:
        name = e["subclass"] if e["class"] == NO_EVIDENCE else e["class"]
        if e["class"] == FALSE_ENTAILMENT and e["details"].get("check"):
            name = f"{FALSE_ENTAILMENT}: {e['details']['check']}"
        if seen[name] >= 2:
            continue
        seen[name] += 1
        d = e["details"]
        link = d.get("entailment") or d.get("contradiction") or d.get("set_aside")
        where = f" {link['context']} {link['relation']} {link['probability']:.2f}" if link else ""
        best = d.get("best", {}).get("sentence", "")
        lines.append(f"- *{name}*: “{e['atom']}” ({e['topic']}){where} — best sentence: “{best[:220]}”")
    return "\n".join(lines) + "\n"


#: how much of a best sentence the JSON keeps (a pointer into the passages, not a copy of them)
SENTENCE_CHARS = 120


def shortened(table: dict[str, Any]) -> dict[str, Any]:
    """The table with each error's best sentence cut to ``SENTENCE_CHARS`` characters."""
    errors = []
    for error in table["errors"]:
        best = error["details"].get("best")
        if best and len(best.get("sentence", "")) > SENTENCE_CHARS:
            best = best | {"sentence": best["sentence"][:SENTENCE_CHARS] + "…"}
            error = error | {"details": error["details"] | {"best": best}}
        errors.append(error)
    return table | {"errors": errors}


def run_command(records: Path, rows: Path, passthrough: Sequence[str]) -> tuple[list[str], int]:
    """Run FR2 (``python -m fact_reasoner --version 2``) on ``records`` into ``rows`` with the
    pass-through options; the command line and its exit status."""
    command = [
        sys.executable,
        "-m",
        "fact_reasoner",
        "--version",
        "2",
        "--input-file",
        str(records),
        "--output-file",
        str(rows),
        "--quiet",
        *passthrough,
    ]
    rows.parent.mkdir(parents=True, exist_ok=True)
    return command, subprocess.call(command)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_table(
    label: str, command: str, rows: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The whole table: label, command, date, measures, counts and every classified error."""
    errors = classify_rows(rows, records)
    return {
        "label": label,
        "command": command,
        "date": dt.date.today().isoformat(),
        "min_coverage": MIN_COVERAGE,
        "measures": row_measures(rows),
        "counts": count_classes(errors),
        "errors": errors,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument(
        "--records", type=Path, default=Path("runs/bios_dev33.jsonl"), help="prepared records (gold atoms, contexts)"
    )
    p.add_argument("--rows", type=Path, help="read this FR2 output instead of running the command")
    p.add_argument("--run-dir", type=Path, default=Path("runs/error_table"), help="where the command's output goes")
    p.add_argument("--label", default="default", help="the run's name (file names, table heading)")
    p.add_argument("--out", type=Path, help="write OUT.md and OUT.json (else print the Markdown)")
    p.add_argument("--compare", type=Path, help="an earlier table's JSON: add how its errors moved")
    p.add_argument(
        "--hand-sample", type=int, metavar="N", help="write OUT.handsheet.jsonl: N no-evidence errors to judge"
    )
    p.add_argument("--sample-seed", type=int, default=50)
    p.add_argument("--verdicts", type=Path, help="hand verdicts (JSONL {key, verdict, note}): report the agreement")
    args = p.parse_args(argv)

    records = read_jsonl(args.records)
    if args.rows is not None:
        rows_path, command = args.rows, f"(rows read from {args.rows})"
        if passthrough:
            p.error("options after -- are for the command; with --rows nothing is run")
    else:
        rows_path = args.run_dir / f"{args.label}.fr2.jsonl"
        argv_run, status = run_command(args.records, rows_path, passthrough)
        command = shlex.join(["python", *argv_run[1:]])
        if status != 0:
            print(f"error: the command failed ({status}): {command}", file=sys.stderr)
            return 2
    rows = read_jsonl(rows_path)
    table = build_table(args.label, command, rows, records)
    if args.compare is not None:
        table["compared_with"] = str(args.compare)
        table["moves"] = compare(json.loads(args.compare.read_text())["errors"], table["errors"])
    if args.verdicts is not None:
        table["hand_check"] = agreement(table["errors"], read_jsonl(args.verdicts))
    markdown = render_markdown(table)
    if args.out is None:
        print(markdown)
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{args.out}.json").write_text(
        json.dumps(shortened(table), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    Path(f"{args.out}.md").write_text(markdown, encoding="utf-8")
    if args.hand_sample:
        judged = [v["key"] for v in read_jsonl(args.verdicts)] if args.verdicts is not None else []
        sheet = hand_sheet(table["errors"], args.hand_sample, args.sample_seed, exclude=judged)
        path = Path(f"{args.out}.handsheet.jsonl")
        path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sheet), encoding="utf-8")
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A behavioural test suite for NLI judges (in the manner of CheckList, Ribeiro et al. 2020).

    python -m experiments.behaviour --nli cross-encoder [--nli-model DIR] \
        [--part heldout|train|all] [--json OUT]

Each *capability* is a kind of (premise, claim) pair with the label a judge must give it;
its items are made by filling templates with facts (``behaviour_suite.json``, beside this
module) and by cutting sentences out of the FActScore dev passages (``--factscore-dir``,
``../shared/data/factscore_bios_dev`` by default; without it only the template items run, and
the report says so). The capabilities, the label they expect and the threshold a judge must
reach:

===================  ==========================================================  ==============  =========
capability           what the pair is                                           expected        threshold
===================  ==========================================================  ==============  =========
word_for_word        the claim is a sentence of the premise                     entailment      ≥ 0.95
paraphrase           inversions ("the capital of X is Y" / "Y is the capital    entailment      ≥ 0.95
                     city of X"), nominalisations ("discovered" / "was the
                     discoverer of"), active / passive, synonyms
part                 the claim is one part of a sentence or of a conjunction    entailment      ≥ 0.85
role_swap            roles or subjects swapped, someone else did it             not entailment  ≥ 0.85
substitution         a year, number, place, nationality or name changed         contradiction   ≥ 0.85
negation             the claim negates the premise (or the premise the claim)   contradiction   ≥ 0.85
other_attribute      the same person, another attribute (what they did vs when  neutral         ≥ 0.85
                     they were born): must *not* be a contradiction
someone_else         the premise is about someone else only                     neutral         ≥ 0.85
hedged               a hedged premise ("is believed to", "possibly") against    neutral         ≥ 0.80
                     a categorical claim
===================  ==========================================================  ==============  =========

and over every item whose expected label is neutral, the **spurious-contradiction rate** (the
label is contradiction — a factor against a true atom in the graph) must be ≤ 5 %. These are
the ship rule of issue #42: a user's verdict rests on what becomes a factor, so the thresholds
apply to the suite **through the graph** (:func:`through_graph`: the judge's label as the
default graph uses it — the relation floor, ``contradictions same-attribute``, ``entailments``
— an item is entailment or contradiction only where it would be a factor of that kind);
the judge alone is reported beside it. A word-for-word sentence and a paraphrase must be seen
(0.95); the rest 0.85; whether a hedge ("is believed to") supports a plain claim is the one
convention here on which careful annotators differ, so its bar is lower (0.80). "not
entailment" accepts neutral or contradiction: a swapped role is often contradicted, always not
entailed.

**Two parts** (``--part``), with different templates *and* different facts and people:

- ``train`` — the ``train`` templates and facts of ``behaviour_suite.json`` and the passages of
  the 33 FActScore dev topics the training mix may use. Training pairs may be made from this
  part (``experiments/nli_training/targeted.py`` does, with the same templates over invented
  people and those passages).
- ``heldout`` (the default) — the ``heldout`` templates and facts and the passages of the 14
  held-out FActScore dev topics (``factscore_heldout_topics`` in the JSON file: the topics the
  training mix holds out, ``experiments.nli_training.data.factscore_topic_split``). Never used
  to make training pairs or to choose a checkpoint; ``heldout_names`` lists the people it
  names, which the training generator refuses to emit.

The report has one table per capability (per variant: n, accuracy, the expected label, the most
frequent wrong label and its share, the spurious-contradiction rate where the expected label is
neutral) and a summary with pass or fail against each threshold. A judgement that failed counts
as wrong (its label shows as ``failed``), never as neutral. Exit status: 0 every threshold met,
1 one missed.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = [
    "CAPABILITIES",
    "Capability",
    "CapabilityResult",
    "Item",
    "ItemResult",
    "fast_subset",
    "format_report",
    "heldout_names",
    "judge_items",
    "load_suite",
    "passage_items",
    "score_results",
    "suite_items",
    "template_items",
    "through_graph",
]

SUITE_FILE = Path(__file__).with_name("behaviour_suite.json")
#: where the FActScore dev passages are looked for when ``--factscore-dir`` is not given
DEFAULT_FACTSCORE_DIR = Path("..") / "shared" / "data" / "factscore_bios_dev"
PARTS = ("train", "heldout")
NOT_ENTAILED = ("neutral", "contradiction")
#: the largest share of neutral items a judge may call contradiction
SPURIOUS_CONTRADICTION_LIMIT = 0.05


@dataclass(frozen=True)
class Capability:
    name: str
    expected: tuple[str, ...]
    threshold: float
    description: str

    @property
    def expected_text(self) -> str:
        return "not entailment" if self.expected == NOT_ENTAILED else self.expected[0]


CAPABILITIES: dict[str, Capability] = {
    c.name: c
    for c in (
        Capability("word_for_word", ("entailment",), 0.95, "the claim is a sentence of the premise"),
        Capability("paraphrase", ("entailment",), 0.95, "inversion, nominalisation, active/passive, synonym"),
        Capability("part", ("entailment",), 0.85, "one part of a sentence or of a conjunction"),
        Capability("role_swap", NOT_ENTAILED, 0.85, "roles or subjects swapped, someone else did it"),
        Capability("substitution", ("contradiction",), 0.85, "a year, number, place, nationality or name changed"),
        Capability("negation", ("contradiction",), 0.85, "the claim negates the premise or the premise the claim"),
        Capability("other_attribute", ("neutral",), 0.85, "the same person, another attribute"),
        Capability("someone_else", ("neutral",), 0.85, "the premise is about someone else only"),
        Capability("hedged", ("neutral",), 0.80, "a hedged premise against a categorical claim"),
    )
}


@dataclass(frozen=True)
class Item:
    """One (premise, hypothesis) pair of the suite and what it tests."""

    capability: str
    variant: str
    premise: str
    hypothesis: str
    part: str
    source: str  # the template id, or "passage:<topic>"

    @property
    def expected(self) -> tuple[str, ...]:
        return CAPABILITIES[self.capability].expected


# --------------------------------------------------------------------------- facts → fields

#: nationality adjectives a substitution draws from; a group's members do not contradict each
#: other (a Scottish physician is British), so a substitute is taken from another group
NATIONALITY_GROUPS: tuple[tuple[str, ...], ...] = (
    ("English", "Scottish", "Welsh", "British", "Northern Irish"),
    ("American",),
    ("Irish",),
    ("French",),
    ("German",),
    ("Italian",),
    ("Spanish",),
    ("Portuguese",),
    ("Dutch",),
    ("Belgian",),
    ("Swiss",),
    ("Austrian",),
    ("Polish",),
    ("Russian",),
    ("Ukrainian",),
    ("Swedish",),
    ("Norwegian",),
    ("Danish",),
    ("Finnish",),
    ("Greek",),
    ("Turkish",),
    ("Egyptian",),
    ("Moroccan",),
    ("Nigerian",),
    ("Kenyan",),
    ("Ghanaian",),
    ("South African",),
    ("Indian",),
    ("Pakistani",),
    ("Chinese",),
    ("Japanese",),
    ("South Korean", "Korean"),
    ("Vietnamese",),
    ("Filipino",),
    ("Indonesian",),
    ("Australian",),
    ("New Zealand",),
    ("Canadian",),
    ("Mexican",),
    ("Brazilian",),
    ("Argentine", "Argentinian"),
    ("Chilean",),
    ("Colombian",),
    ("Peruvian",),
    ("Cuban",),
    ("Dominican",),
    ("Puerto Rican",),
    ("Jamaican",),
)
_GROUP_OF = {n: group for group in NATIONALITY_GROUPS for n in group}
_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine")


def with_article(phrase: str) -> str:
    """``a`` or ``an`` before ``phrase`` by its first sound (an English physician, a Ukrainian
    engineer)."""
    lowered = phrase.lower()
    vowel = lowered[:1] in "aeiou" and not lowered.startswith(("uk", "uni", "uru", "eu", "one", "use", "usu"))
    return ("an " if vowel else "a ") + phrase


def other_nationality(nationality: str, rng: random.Random) -> str:
    """A nationality that contradicts ``nationality`` (from another group)."""
    own = _GROUP_OF.get(nationality, (nationality,))
    choices = [group[0] for group in NATIONALITY_GROUPS if group is not own and group[0] not in own]
    return rng.choice(choices)


def shifted_year(year: int, rng: random.Random) -> int:
    """``year ± k`` with ``k`` in 1..12 (never the year itself)."""
    return year + rng.choice((-1, 1)) * rng.randint(1, 12)


def person_fields(
    person: dict[str, Any], rng: random.Random, others: Sequence[dict[str, Any]], pools: dict[str, list[str]]
) -> dict[str, str]:
    """The template fields of one person: their facts, and the substitutes a template may use
    (another year, place, nationality, person, count, relative). A fact the person lacks is
    absent, and templates that need it are skipped for that person."""
    female = person.get("gender") == "f"
    fields: dict[str, str] = {
        "name": person["name"],
        "short": person.get("short") or person["name"].split()[-1],
        "Pron": "She" if female else "He",
        "pron": "she" if female else "he",
        "poss": "her" if female else "his",
        "Poss": "Her" if female else "His",
    }
    for key in ("born_year", "born_place", "nationality", "occupation", "occupation2", "died_year", "died_place"):
        if person.get(key) is not None:
            fields[key] = str(person[key])
    if "nationality" in fields:
        fields["a_nationality"] = with_article(fields["nationality"])
        fields["other_nationality"] = other_nationality(fields["nationality"], rng)
        fields["a_other_nationality"] = with_article(fields["other_nationality"])
    for key in ("occupation", "occupation2"):
        if key in fields:
            fields[f"a_{key}"] = with_article(fields[key])
    if "born_year" in fields:
        fields["other_year"] = str(shifted_year(int(fields["born_year"]), rng))
    if "died_year" in fields:
        fields["other_died_year"] = str(shifted_year(int(fields["died_year"]), rng))
    work = person.get("work")
    if work:
        fields.update(
            work_verb=work["verb"],
            work_base=work["base"],
            work_object=work["object"],
            Work_object=work["object"][:1].upper() + work["object"][1:],
            work_noun=work["noun"],
            work_passive=work["passive"],
            work_year=str(work["year"]),
        )
    own_places = {person.get("born_place"), person.get("died_place")}
    places = [p for p in pools.get("places", []) if p not in own_places]
    if places:
        fields["other_place"] = rng.choice(places)
    candidates = [o for o in others if o["name"] != person["name"]]
    if candidates:
        other = rng.choice(candidates)
        fields["other_name"] = other["name"]
        fields["other_short"] = other.get("short") or other["name"].split()[-1]
    count, other_count = rng.sample(_NUMBER_WORDS, 2)
    fields["count"], fields["other_count"] = count, other_count
    relatives = pools.get("relatives", [])
    if len(relatives) >= 2:
        fields["relative"], fields["other_relative"] = rng.sample(relatives, 2)
    return fields


def _template_year_fields(template: dict[str, Any], fields: dict[str, str], rng: random.Random) -> dict[str, str]:
    """A year substitution in a sentence about a work shifts the work's year."""
    if "{work_year}" in template["premise"] and "{other_year}" in template["hypothesis"] and "work_year" in fields:
        return {**fields, "other_year": str(shifted_year(int(fields["work_year"]), rng))}
    return fields


def _render(template: dict[str, Any], fields: dict[str, str], part: str) -> Item | None:
    try:
        premise = template["premise"].format(**fields)
        hypothesis = template["hypothesis"].format(**fields)
    except KeyError:  # the fact this template needs is not known for these people
        return None
    return Item(template["capability"], template["variant"], premise, hypothesis, part, template["id"])


def load_suite(path: Path | None = None) -> dict[str, Any]:
    """The suite's facts and templates (``behaviour_suite.json``)."""
    return json.loads((path or SUITE_FILE).read_text(encoding="utf-8"))


def template_items(
    part: str,
    *,
    suite: dict[str, Any] | None = None,
    people: Sequence[dict[str, Any]] | None = None,
    countries: Sequence[dict[str, Any]] | None = None,
    pools: dict[str, list[str]] | None = None,
    templates: Sequence[dict[str, Any]] | None = None,
    seed: int = 13,
    samples: int = 1,
) -> list[Item]:
    """Every template of ``part`` filled with every fact that fits it.

    ``people`` / ``countries`` / ``pools`` (``places``, ``relatives``) replace the part's own
    facts, and ``templates`` its templates (the training generator passes invented people and
    templates of its own here). Person templates take each
    person once per sample; two-person templates (``kind: duo``) take consecutive people of a
    seeded shuffle; country templates each country. The random choices (substitutes, pairs) are
    seeded by ``seed``, the template and the sample, so adding a template changes no other item.
    """
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    suite = suite or load_suite()
    data = suite["parts"][part]
    people = list(people if people is not None else data["people"])
    countries = list(countries if countries is not None else data["countries"])
    pools = pools or {"places": data["places"], "relatives": data["relatives"]}
    items: list[Item] = []
    for template in templates if templates is not None else data["templates"]:
        kind = template.get("kind", "person")
        for sample in range(samples):
            rng = random.Random(f"{seed}:{template['id']}:{sample}")
            if kind == "person":
                for person in people:
                    fields = _template_year_fields(template, person_fields(person, rng, people, pools), rng)
                    item = _render(template, fields, part)
                    if item:
                        items.append(item)
            elif kind == "duo":
                order = list(people)
                rng.shuffle(order)
                for a, b in zip(order, order[1:] + order[:1]):
                    if a["name"] == b["name"]:
                        continue
                    fields = {
                        "a": a["name"],
                        "b": b["name"],
                        "a_short": a.get("short") or a["name"].split()[-1],
                        "b_short": b.get("short") or b["name"].split()[-1],
                        "place": rng.choice(pools["places"]),
                        "year": str(rng.randint(1950, 2015)),
                    }
                    item = _render(template, fields, part)
                    if item:
                        items.append(item)
            elif kind == "country":
                for country in countries:
                    item = _render(template, dict(country), part)
                    if item:
                        items.append(item)
            else:
                raise ValueError(f"template {template['id']}: unknown kind {kind!r}")
    return unique_items(items)


def unique_items(items: Iterable[Item]) -> list[Item]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in items:
        key = (item.premise, item.hypothesis)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


# --------------------------------------------------------------------------- FActScore passages

_SEGMENT_MARK = re.compile(r"</?s>")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)\b")
_BIRTH_WORDS = re.compile(r"\b(born|birth|age|aged|year-old|years old|childhood|infant|teenage|teen)\b|\bat \d", re.I)
_JUNK = re.compile(r"[{}|=]|\(\s*;|\"\"|\s\(\)")


@dataclass
class PassagePerson:
    """What the suite reads about one FActScore topic from its passages."""

    topic: str
    name: str  # the topic without a disambiguation or a title ("Owen Wright (surfer)" → "Owen Wright")
    short: str  # the surname the passages use
    sentences: list[str]
    lead: str | None = None
    born: int | None = None
    died: int | None = None
    nationality: str | None = None
    predicate: str | None = None  # "is an American actress and singer" (the lead's description)


def display_name(topic: str) -> str:
    """``Owen Wright (surfer)`` → ``Owen Wright``; ``Rennie Fritchie, Baroness Fritchie`` →
    ``Rennie Fritchie``."""
    return re.sub(r"\s*\(.*?\)\s*$", "", topic).split(",")[0].strip()


def passage_sentences(text: str) -> list[str]:
    """The sentences of one FActScore passage: its ``<s>`` segments, each split again at sentence
    ends (a segment may start with section titles such as ``Club career.:Monaco.``).

    Its own rule, not one of :mod:`fact_reasoner.text.sentences`: the suite's cases are cut from
    these sentences, and the recorded tables (docs/judges.md, the model cards) are of these cases."""
    segments = _SEGMENT_MARK.split(text)
    out = []
    for segment in segments:
        out += [s.strip() for s in _SENTENCE_BREAK.split(segment.strip()) if s.strip()]
    return out


def _lead_facts(person: PassagePerson) -> None:
    """Birth and death years, nationality and description from the lead sentence."""
    lead = person.lead
    if not lead:
        return
    bracket = re.search(r"\(([^()]*)\)", lead[:200])
    if bracket:
        inside = bracket.group(1)
        years = _YEAR.findall(inside)
        if re.search(r"\bborn\b", inside) and years:
            person.born = int(years[-1]) if len(years) == 1 else int(years[0])
        elif len(years) == 2 and re.search(r"\d\s*[–-]\s*\S", inside):
            person.born, person.died = int(years[0]), int(years[1])
    names = sorted((n for group in NATIONALITY_GROUPS for n in group), key=len, reverse=True)
    match = re.search(
        r"\b(is|was) (?:an?|the) (?:(?:former|retired|prominent|professional|renowned) )?("
        + "|".join(re.escape(n) for n in names)
        + r") ([a-z][^,.;()]*)",
        lead,
    )
    if match and not lead[match.end(2) : match.end(2) + 1] == "-":
        person.nationality = match.group(2)
        description = re.split(r"\b(?:who|which|known|best|with|from|for|in|on|at)\b", match.group(3))[0].strip()
        if 1 <= len(description.split()) <= 6:
            person.predicate = f"{match.group(1)} {{article_nationality}} {description}"


def factscore_people(factscore_dir: Path, topics: Iterable[str]) -> list[PassagePerson]:
    """The topics' passages (``topic_passages_dev.json``) as :class:`PassagePerson` records."""
    passages = json.loads((factscore_dir / "topic_passages_dev.json").read_text(encoding="utf-8"))
    wanted = set(topics)
    people = []
    for topic in sorted(passages):
        if topic not in wanted:
            continue
        name = display_name(topic)
        sentences: list[str] = []
        lead = None
        for passage in passages[topic]:
            found = passage_sentences(passage["text"])
            if lead is None and passage["text"].startswith("<s>" + passage["title"]) and found:
                lead = found[0][len(passage["title"]) :].strip()
                found[0] = lead
            sentences += [s for s in found if s not in sentences]
        person = PassagePerson(topic, name, name.split()[-1], sentences, lead)
        _lead_facts(person)
        people.append(person)
    return people


def is_clean_sentence(sentence: str, low: int = 6, high: int = 40) -> bool:
    words = sentence.split()
    return low <= len(words) <= high and not _JUNK.search(sentence) and sentence.count('"') % 2 == 0


def subject_prefix(person: PassagePerson, sentence: str) -> str | None:
    """The subject prefix when ``sentence`` starts with the person's name or surname."""
    for prefix in (person.name, person.short):
        if sentence.startswith(prefix + " "):
            return prefix
    return None


def passage_items(part: str, factscore_dir: Path, *, suite: dict[str, Any] | None = None, seed: int = 13) -> list[Item]:
    """Items cut from the FActScore dev passages of ``part``'s topics.

    - ``word_for_word``: a sentence that names the person, against it and its neighbours;
    - ``part``: "NAME was born in YEAR." against the lead sentence that gives the birth date;
    - ``substitution``: the same with another year, and the lead's description with another
      nationality;
    - ``negation``: "SURNAME was not …" from a sentence "SURNAME was …", against its window;
    - ``role_swap``: a sentence about the person with another topic's person as its subject;
    - ``other_attribute``: "NAME was born in YEAR." against two sentences about the person that
      say nothing about birth or age;
    - ``someone_else``: a claim about the person against another topic's lead, or the birth year
      of the other topic's person claimed for this one.
    """
    suite = suite or load_suite()
    heldout = set(suite["factscore_heldout_topics"])
    passages = json.loads((factscore_dir / "topic_passages_dev.json").read_text(encoding="utf-8"))
    topics = sorted(t for t in passages if (t in heldout) == (part == "heldout"))
    people = factscore_people(factscore_dir, topics)
    rng = random.Random(f"{seed}:passages:{part}")
    items: list[Item] = []

    def add(capability: str, variant: str, premise: str, hypothesis: str, person: PassagePerson) -> None:
        items.append(Item(capability, f"passage: {variant}", premise, hypothesis, part, f"passage:{person.topic}"))

    for index, person in enumerate(people):
        others = people[index + 1 :] + people[:index]
        about = [(i, s) for i, s in enumerate(person.sentences) if subject_prefix(person, s) and is_clean_sentence(s)]
        rng.shuffle(about)

        def window(i: int) -> str:
            return " ".join(person.sentences[max(0, i - 1) : i + 2])

        for i, sentence in about[:3]:
            add("word_for_word", "sentence of the passage", window(i), sentence, person)
        negatable = [
            (i, s, m)
            for i, s in about
            if (m := re.match(rf"{re.escape(subject_prefix(person, s) or '')} (is|was) (?!not\b|never\b|also\b)", s))
        ]
        for i, sentence, match in negatable[:2]:
            negated = sentence[: match.end(1)] + " not" + sentence[match.end(1) :]
            add("negation", "negated sentence", window(i), negated, person)
        for (i, sentence), other in zip(about[:3], rng.sample(others, min(3, len(others)))):
            prefix = subject_prefix(person, sentence) or person.short
            add("role_swap", "someone else did it", window(i), other.name + sentence[len(prefix) :], person)
        if person.lead and person.born:
            born_claim = f"{person.name} was born in {person.born}."
            add("part", "birth year from the lead", person.lead, born_claim, person)
            add(
                "substitution",
                "year",
                person.lead,
                f"{person.name} was born in {shifted_year(person.born, rng)}.",
                person,
            )
            if person.died:
                add("part", "death year from the lead", person.lead, f"{person.name} died in {person.died}.", person)
            quiet = [
                i
                for i in range(len(person.sentences) - 1)
                if person.sentences[i] != person.lead
                and subject_prefix(person, person.sentences[i])
                and all(is_clean_sentence(s, 4, 60) for s in person.sentences[i : i + 2])
                and not any(_BIRTH_WORDS.search(s) or str(person.born) in s for s in person.sentences[i : i + 2])
            ]
            for i in rng.sample(quiet, min(2, len(quiet))):
                add("other_attribute", "birth year vs other sentences", window_pair(person, i), born_claim, person)
            stranger = next((o for o in others if o.lead and o.born and o.born != person.born), None)
            if stranger and stranger.lead:
                add("someone_else", "another person's lead", stranger.lead, born_claim, person)
        if person.lead and person.nationality and person.predicate:
            substitute = other_nationality(person.nationality, rng)
            claim = (
                f"{person.name} " + person.predicate.replace("{article_nationality}", with_article(substitute)) + "."
            )
            add("substitution", "nationality", person.lead, claim, person)
        if about:
            other = rng.choice(others)
            if other.lead and other.born and person.born != other.born:
                add(
                    "someone_else",
                    "same year, another person",
                    other.lead,
                    f"{person.name} was born in {other.born}.",
                    person,
                )
    return unique_items(items)


def window_pair(person: PassagePerson, i: int) -> str:
    return " ".join(person.sentences[i : i + 2])


# --------------------------------------------------------------------------- the suite


def heldout_names(suite: dict[str, Any] | None = None) -> set[str]:
    """Every person the held-out part names (its facts' people and relatives, its FActScore
    topics): what training pairs must never mention."""
    suite = suite or load_suite()
    data = suite["parts"]["heldout"]
    names = {p["name"] for p in data["people"]} | set(data["relatives"])
    names |= {display_name(t) for t in suite["factscore_heldout_topics"]}
    return names


def suite_items(
    part: str = "heldout",
    factscore_dir: Path | None = None,
    *,
    seed: int = 13,
    suite: dict[str, Any] | None = None,
) -> list[Item]:
    """The items of ``part`` (``train``, ``heldout`` or ``all``): template items, and passage
    items when ``factscore_dir`` holds the FActScore dev passages."""
    suite = suite or load_suite()
    parts = PARTS if part == "all" else (part,)
    items: list[Item] = []
    for name in parts:
        items += template_items(name, suite=suite, seed=seed)
        if factscore_dir is not None:
            items += passage_items(name, factscore_dir, suite=suite, seed=seed)
    order = {name: i for i, name in enumerate(CAPABILITIES)}
    return sorted(items, key=lambda item: (item.part, order[item.capability]))


def fast_subset(items: Sequence[Item], per_capability: int, seed: int = 13) -> list[Item]:
    """At most ``per_capability`` items of each capability, a seeded sample spread over its
    variants (what the test suite runs)."""
    by_variant: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in items:
        by_variant[(item.capability, item.variant)].append(item)
    out: list[Item] = []
    rng = random.Random(seed)
    for capability in CAPABILITIES:
        pools = [list(v) for (c, _), v in sorted(by_variant.items()) if c == capability]
        for pool in pools:
            rng.shuffle(pool)
        chosen: list[Item] = []
        while len(chosen) < per_capability and any(pools):
            for pool in pools:
                if pool and len(chosen) < per_capability:
                    chosen.append(pool.pop())
        out += chosen
    return out


# --------------------------------------------------------------------------- judging and scoring


@dataclass(frozen=True)
class ItemResult:
    item: Item
    label: str  # the judge's label, or "failed"
    probabilities: dict[str, float] = field(default_factory=dict)
    reason: str | None = None

    @property
    def correct(self) -> bool:
        return self.label in self.item.expected


def judge_items(
    backend: Any, items: Sequence[Item], *, chunk: int = 64, progress: Callable[[int], None] | None = None
) -> list[ItemResult]:
    """Each item judged by ``backend`` (an :class:`~fact_reasoner.nli.base.NLIBackend`), in
    order; a failed judgement is kept as the label ``failed`` with its reason."""
    results: list[ItemResult] = []
    for start in range(0, len(items), chunk):
        batch = items[start : start + chunk]
        judgements = backend.judge([(item.premise, item.hypothesis) for item in batch])
        for item, judgement in zip(batch, judgements):
            label = "failed" if judgement.failed else judgement.label.value
            results.append(ItemResult(item, label, dict(judgement.probabilities), judgement.reason))
        if progress:
            progress(len(batch))
    return results


def through_graph(results: Sequence[ItemResult], options: Any = None) -> list[ItemResult]:
    """Each judged item as the factor graph uses it: the item's claim as the one atom, its
    premise as the one context, the judge's label and probability as the relation, built by
    :func:`fact_reasoner.graph.build.build_graph` with ``options`` (a
    :class:`~fact_reasoner.settings.graph_options.GraphOptions`; the defaults when None). The label
    becomes the factor's relation, or ``neutral`` where no factor is made (the reason in
    ``reason``); a failed judgement stays ``failed``."""
    from fact_reasoner.graph.build import plan_graph
    from fact_reasoner.schema import Atom, Context, Relation, RelationType
    from fact_reasoner.settings.graph_options import GraphOptions
    from fact_reasoner.stages import screen_and_build

    options = options or GraphOptions()
    out = []
    for result in results:
        if result.label == "failed":
            out.append(result)
            continue
        plan = plan_graph(
            [Atom(id="a", text=result.item.hypothesis)],
            [Context(id="c", text=result.item.premise)],
            options.version if options.version != 1 else 2,
        )
        probability = result.probabilities.get(result.label, 1.0) if result.probabilities else 1.0
        relation = Relation(
            source="c",
            target="a",
            relation=RelationType(result.label),
            probability=probability,
            probabilities=result.probabilities or None,
        )
        built = screen_and_build(plan, [relation], options.model_copy(update={"version": plan.version}))
        factors = built.factor_relations
        label = factors[0].relation.value if factors else "neutral"
        reason = built.unused_relations[0].reason if built.unused_relations else None
        out.append(ItemResult(result.item, label, result.probabilities, reason))
    return out


@dataclass
class Row:
    """Accuracy of a group of items (a capability or one of its variants)."""

    name: str
    n: int
    accuracy: float
    wrong_label: str | None
    wrong_share: float
    spurious_contradiction: float | None  # share labelled contradiction, for neutral items

    @classmethod
    def of(cls, name: str, results: Sequence[ItemResult]) -> "Row":
        n = len(results)
        wrong = Counter(r.label for r in results if not r.correct)
        top = wrong.most_common(1)[0] if wrong else None
        neutral = [r for r in results if r.item.expected == ("neutral",)]
        spurious = sum(r.label == "contradiction" for r in neutral) / len(neutral) if neutral else None
        return cls(
            name,
            n,
            sum(r.correct for r in results) / n if n else float("nan"),
            top[0] if top else None,
            top[1] / n if top and n else 0.0,
            spurious,
        )


@dataclass
class CapabilityResult:
    capability: Capability
    total: Row
    variants: list[Row]

    @property
    def passed(self) -> bool:
        return self.total.n > 0 and self.total.accuracy >= self.capability.threshold


@dataclass
class SuiteScore:
    capabilities: list[CapabilityResult]
    spurious_contradiction: float | None  # over every item expected neutral
    neutral_items: int
    failed: int

    @property
    def passed(self) -> bool:
        spurious_ok = (
            self.spurious_contradiction is not None and self.spurious_contradiction <= SPURIOUS_CONTRADICTION_LIMIT
        )
        return all(c.passed for c in self.capabilities) and spurious_ok

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "spurious_contradiction": self.spurious_contradiction,
            "spurious_contradiction_limit": SPURIOUS_CONTRADICTION_LIMIT,
            "neutral_items": self.neutral_items,
            "failed_judgements": self.failed,
            "capabilities": {
                c.capability.name: {
                    "expected": c.capability.expected_text,
                    "threshold": c.capability.threshold,
                    "passed": c.passed,
                    **asdict(c.total),
                    "variants": [asdict(v) for v in c.variants],
                }
                for c in self.capabilities
            },
        }


def score_results(results: Sequence[ItemResult]) -> SuiteScore:
    """Per capability: accuracy (the judge's label is one the capability expects), per variant,
    the most frequent wrong label; and the spurious-contradiction rate over neutral items."""
    by_capability: dict[str, list[ItemResult]] = defaultdict(list)
    for result in results:
        by_capability[result.item.capability].append(result)
    capabilities = []
    for name, capability in CAPABILITIES.items():
        members = by_capability.get(name, [])
        if not members:
            continue
        variants: dict[str, list[ItemResult]] = defaultdict(list)
        for result in members:
            variants[result.item.variant].append(result)
        capabilities.append(
            CapabilityResult(capability, Row.of("all", members), [Row.of(v, rs) for v, rs in sorted(variants.items())])
        )
    neutral = [r for r in results if r.item.expected == ("neutral",)]
    spurious = sum(r.label == "contradiction" for r in neutral) / len(neutral) if neutral else None
    return SuiteScore(capabilities, spurious, len(neutral), sum(r.label == "failed" for r in results))


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_report(score: SuiteScore, title: str = "") -> str:
    """One table per capability, then the summary with pass / fail."""
    lines = [title] if title else []
    for result in score.capabilities:
        capability = result.capability
        lines.append("")
        lines.append(
            f"{capability.name}: {capability.description} — expected {capability.expected_text}, "
            f"threshold ≥ {capability.threshold:.2f}"
        )
        lines.append(
            f"  {'variant':42s} {'n':>5s} {'accuracy':>8s}  {'most frequent wrong label':26s} {'spurious C':>10s}"
        )
        for row in [*result.variants, result.total]:
            wrong = f"{row.wrong_label} ({row.wrong_share:.2f})" if row.wrong_label else "—"
            lines.append(
                f"  {row.name[:42]:42s} {row.n:5d} {row.accuracy:8.3f}  {wrong:26s} {_pct(row.spurious_contradiction):>10s}"
            )
    lines.append("")
    lines.append("summary")
    lines.append(f"  {'capability':18s} {'n':>5s} {'accuracy':>8s} {'threshold':>9s}  result")
    for result in score.capabilities:
        verdict = "pass" if result.passed else "FAIL"
        lines.append(
            f"  {result.capability.name:18s} {result.total.n:5d} {result.total.accuracy:8.3f} "
            f"{'≥ ' + format(result.capability.threshold, '.2f'):>9s}  {verdict}"
        )
    spurious = score.spurious_contradiction
    verdict = "pass" if spurious is not None and spurious <= SPURIOUS_CONTRADICTION_LIMIT else "FAIL"
    lines.append(
        f"  {'spurious contra.':18s} {score.neutral_items:5d} {_pct(spurious):>8s} "
        f"{'≤ ' + format(SPURIOUS_CONTRADICTION_LIMIT, '.2f'):>9s}  {verdict}   (share of neutral items labelled contradiction)"
    )
    if score.failed:
        lines.append(f"  {score.failed} judgement(s) failed and count as wrong")
    lines.append(f"  overall: {'PASS' if score.passed else 'FAIL'}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    from fact_reasoner.settings.cli_options import add_config_arguments, config_from_args, positive_int

    parser = argparse.ArgumentParser(
        prog="python -m experiments.behaviour",
        description=__doc__.split("\n\n")[0] + ": one table per capability for any judge, and pass or fail.",
        epilog="The capabilities, their thresholds and the two parts are described in the module's docstring "
        "(python -c 'import experiments.behaviour as b; help(b)'). Exit status: 0 every threshold met, "
        "1 one missed.",
    )
    parser.add_argument(
        "--part", choices=("heldout", "train", "all"), default="heldout", help="which part (default: %(default)s)"
    )
    parser.add_argument(
        "--factscore-dir",
        type=Path,
        help=f"the FActScore dev passages (topic_passages_dev.json) for the passage items (default: "
        f"{DEFAULT_FACTSCORE_DIR} if it exists, else template items only)",
    )
    parser.add_argument("--no-passages", action="store_true", help="template items only")
    parser.add_argument(
        "--per-capability",
        type=positive_int,
        help="a seeded sample of at most N items per capability (for slow judges such as llm)",
    )
    parser.add_argument("--seed", type=int, default=13, help="seed of the templates' choices (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="write the scores and every item's verdict here")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_config_arguments(parser, groups=("models", "cache", "graph"))
    args = parser.parse_args(argv)
    config = config_from_args(args, parser)

    factscore_dir: Path | None = None
    if not args.no_passages:
        factscore_dir = args.factscore_dir or DEFAULT_FACTSCORE_DIR
        if not (factscore_dir / "topic_passages_dev.json").is_file():
            if args.factscore_dir is not None:
                parser.error(f"argument --factscore-dir: no topic_passages_dev.json in {args.factscore_dir}")
            print(f"passage items: none ({factscore_dir}/topic_passages_dev.json not found); template items only")
            factscore_dir = None
    items = suite_items(args.part, factscore_dir, seed=args.seed)
    if args.per_capability:
        parts = PARTS if args.part == "all" else (args.part,)
        items = [
            i for p in parts for i in fast_subset([x for x in items if x.part == p], args.per_capability, args.seed)
        ]

    from fact_reasoner.nli.factory import make_nli
    from fact_reasoner.progress import progress_bar

    backend = make_nli(config)
    bar = progress_bar(len(items), desc="judging", unit="pair", quiet=args.quiet)
    try:
        results = judge_items(backend, items, progress=bar.update)
    finally:
        bar.close()
    identity = getattr(backend, "identity", config.models.nli)
    graphed = through_graph(results, config.graph)
    report: dict[str, Any] = {
        "judge": identity,
        "part": args.part,
        "passages": factscore_dir is not None,
        "graph": config.graph.model_dump(mode="json"),
        "parts": {},
        "judge_alone": {},
    }
    status = 0
    for part in PARTS if args.part == "all" else (args.part,):
        passages = "with" if factscore_dir is not None else "without"
        alone = score_results([r for r in results if r.item.part == part])
        print(format_report(alone, f"\n=== {part} part ({passages} passage items) — judge alone: {identity}"))
        score = score_results([r for r in graphed if r.item.part == part])
        print(format_report(score, f"\n=== {part} part ({passages} passage items) — through the graph: {identity}"))
        report["parts"][part] = score.as_dict()
        report["judge_alone"][part] = alone.as_dict()
        status = status or (0 if score.passed else 1)
    if args.json:
        report["items"] = [
            asdict(r.item)
            | {"label": r.label, "probabilities": r.probabilities, "reason": r.reason}
            | {"graph_label": g.label, "graph_reason": g.reason}
            for r, g in zip(results, graphed)
        ]
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""Targeted pairs made from many wordings of the same facts, each negative balanced by positives
of the same form (issue #42).

    (used by ``targeted.py``; ``python -m experiments.nli_training.forms`` prints a sample)

The targeted rows of version-4 candidate v4b taught the judge to say "no" more than to read
carefully: paraphrases fell from 1.000 to 0.837 on the behavioural suite's held-out part. So
every negative form here comes with positives built from the same sentences:

==================  ===============================================  ==========================================
capability          negative (the suite's label)                     positive of the same form (entailment)
==================  ===============================================  ==========================================
role_swap           A taught B → "B taught A"; someone else did it;   "B was taught by A"; the doer named;
                    a relative did it                                the relative named
substitution        another year, place, name, number, nationality   the same claim form with the true value
negation            "X was not born in P"; "X never married"         "X was not born in Q but in P" → P;
                                                                     a negated premise against a negated claim
other_attribute     the same person, a fact the premise lacks        the same claim with that fact added among
                                                                     the premise's sentences
someone_else        another person (or a relative) with the value    "X and her brother were both born in P"
hedged              "reportedly", "it is rumoured that", "may have"  "records confirm that", "it is documented"
==================  ===============================================  ==========================================

and the entailment capabilities themselves (word for word, paraphrase, part) are drawn from
several premise wordings and several claim wordings of each fact (inversions, nominalisations,
active/passive, synonyms, date formats such as "(14 March 1879 – 18 April 1955)" against "born
in 1879" and "died in 1955", a part of a sentence, a claim spread over two sentences joined by
a pronoun). A positive's ``source`` is ``targeted_<capability>_positive``, so that the
capability weights of ``finetune.capability_weights`` give each negative form and its positives
the same share of a step.

The people are the invented people of ``targeted.invented_people`` (no name shared with the
behavioural suite), enriched here with a study, a spouse, an award, a move, children and a
sibling; every wording below was written for training and is not a template of the suite.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from experiments.behaviour import other_nationality, shifted_year, with_article

MONTHS = ("January February March April May June July August September October November December").split()
SUBJECTS = (
    "law|medicine|chemistry|physics|history|philosophy|architecture|mathematics|music|economics|botany|"
    "engineering|painting|theology|classics|geology"
).split("|")
AWARDS = (
    "Halvard Medal|Order of the Silver Crane|Ostrander Prize|Kessel Award|Marlowe Prize|Bellamy Medal|"
    "Tarn Award for Fiction|Corvin Prize|Ashgrove Medal|Linden Prize|Vesper Award|Gilcrest Medal"
).split("|")
COUNTS = ("two", "three", "four", "five", "six", "seven")
#: two-person relations: (active, passive, nominal) — active "A taught B", passive "B was taught
#: by A", nominal "A was B's teacher" (None where no noun fits)
DUO_RELATIONS = (
    ("taught", "was taught by", "teacher"),
    ("trained", "was trained by", "trainer"),
    ("defeated", "was defeated by", None),
    ("hired", "was hired by", "employer"),
    ("interviewed", "was interviewed by", "interviewer"),
    ("replaced", "was replaced by", "successor"),
    ("mentored", "was mentored by", "mentor"),
    ("sued", "was sued by", None),
    ("painted a portrait of", "was painted by", None),
    ("succeeded", "was succeeded by", "successor"),
    ("supervised", "was supervised by", "supervisor"),
    ("criticised", "was criticised by", "critic"),
    ("photographed", "was photographed by", "photographer"),
    ("coached", "was coached by", "coach"),
)
SETTINGS = (
    "in {year}",
    "at the {place} conservatory",
    "in the {year} final",
    "during the {year} season",
    "at the University of {place}",
    "in {place} in {year}",
)

HEDGES = (
    "It is rumoured that {clause}.",
    "Some accounts claim that {clause}.",
    "According to a disputed story, {clause}.",
    "It has been suggested, without evidence, that {clause}.",
    "There are unconfirmed reports that {clause}.",
    "Local legend says that {clause}.",
    "It is possible that {clause}.",
    "A few biographers speculate that {clause}.",
    "It remains unclear whether {clause}.",
    "Fans often repeat the story that {clause}, though nothing confirms it.",
)
CONFIRMED = (
    "It is documented that {clause}.",
    "Records confirm that {clause}.",
    "Historians agree that {clause}.",
    "Contemporary sources show that {clause}.",
    "It is well established that {clause}.",
    "As official records show, {clause}.",
)


@dataclass(frozen=True)
class Fact:
    """One fact about a person in several wordings.

    ``premises``: sentences that state it (for a premise); ``claims``: sentences that state it
    as a claim; ``false_claims``: claims with one value changed (contradictions);
    ``negated``: claims that deny it; ``modal``: premise sentences that only suggest it (hedged);
    ``kind``: what the fact is about (an atom about another kind is another attribute).
    """

    kind: str
    premises: tuple[str, ...]
    claims: tuple[str, ...]
    false_claims: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()
    modal: tuple[str, ...] = ()
    #: the plain clause the hedge wrappers take ("X was born in P")
    clause: str = ""
    #: a premise that denies the true value's alternative: "X was not born in Q but in P"
    not_but: str = ""
    #: the words that state it: a premise holding one of them may state the fact, so it is never
    #: a premise of "another attribute"
    values: tuple[str, ...] = ()


def enrich(person: dict[str, Any], rng: random.Random, places: list[str], relatives: list[str]) -> dict[str, Any]:
    """Add the facts this module needs to one of ``targeted.invented_people``'s people."""
    p = dict(person)
    p["born_day"] = f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"
    if p.get("died_year"):
        p["died_day"] = f"{rng.randint(1, 28)} {rng.choice(MONTHS)}"
    if rng.random() < 0.8:
        p["study"] = {"subject": rng.choice(SUBJECTS), "place": rng.choice(places), "year": p["born_year"] + 22}
    if rng.random() < 0.75:
        p["spouse"] = {"name": rng.choice(relatives), "year": p["born_year"] + rng.randint(21, 40)}
    if rng.random() < 0.7:
        p["award"] = {"name": rng.choice(AWARDS), "year": min(p["born_year"] + rng.randint(30, 60), 2023)}
    if rng.random() < 0.7:
        p["move"] = {"place": rng.choice([x for x in places if x != p["born_place"]]), "year": p["born_year"] + 25}
    if rng.random() < 0.6:
        p["children"] = rng.choice(COUNTS)
    p["sibling"] = rng.choice(("brother", "sister"))
    return p


def _pron(p: dict[str, Any]) -> dict[str, str]:
    female = p.get("gender") == "f"
    return {
        "Pron": "She" if female else "He",
        "pron": "she" if female else "he",
        "poss": "her" if female else "his",
        "Poss": "Her" if female else "His",
        "spouse_role": "husband" if female else "wife",
        "parent": "mother" if female else "father",
    }


def facts_of(p: dict[str, Any], rng: random.Random, places: list[str], relatives: list[str]) -> list[Fact]:
    """Every fact of person ``p`` in its wordings (a fact the person lacks is absent)."""
    n = p["name"]
    w = _pron(p)
    other_place = rng.choice([x for x in places if x not in (p["born_place"], p.get("died_place"))])
    facts: list[Fact] = []

    by, bp, bd = p["born_year"], p["born_place"], p["born_day"]
    oy = shifted_year(by, rng)
    born_month = bd.split()[1]
    facts.append(
        Fact(
            "birth place",
            premises=(
                f"{n} was born in {bp}.",
                f"Born in {bp}, {n} later became {with_article(p['occupation'])}.",
                f"{n}, a native of {bp}, worked as {with_article(p['occupation'])}.",
                f"{n} was born and raised in {bp}.",
                f"{bp} is the city where {n} was born.",
                f"{n} was born in {bp} on {bd} {by}.",
            ),
            claims=(
                f"{n} was born in {bp}.",
                f"{n}'s birthplace is {bp}.",
                f"{n} is a native of {bp}.",
                f"{bp} is {n}'s place of birth.",
                f"{n} was born in the city of {bp}.",
            ),
            false_claims=(
                f"{n} was born in {other_place}.",
                f"{n}'s birthplace is {other_place}.",
                f"{other_place} is {n}'s place of birth.",
            ),
            negated=(
                f"{n} was not born in {bp}.",
                f"{bp} is not {n}'s birthplace.",
                f"{n} was born somewhere other than {bp}.",
            ),
            modal=(f"{n} may have been born in {bp}.", f"{n} was possibly born in {bp}."),
            clause=f"{n} was born in {bp}",
            not_but=f"{n} was not born in {other_place} but in {bp}.",
            values=(bp,),
        )
    )
    facts.append(
        Fact(
            "birth year",
            premises=(
                f"{n} was born in {by}.",
                f"{n} (born {bd} {by}) is {with_article(p['nationality'])} {p['occupation']}."
                if not p.get("died_year")
                else f"{n} ({bd} {by} – {p['died_day']} {p['died_year']}) was {with_article(p['nationality'])} "
                f"{p['occupation']}.",
                f"{n} ({by}–{p['died_year']}) was {with_article(p['occupation'])}."
                if p.get("died_year")
                else f"{n} (born {by}) is {with_article(p['occupation'])}.",
                f"Born on {bd} {by}, {n} grew up in {bp}.",
                f"{n} was born on {bd} {by} in {bp}.",
                f"{n}'s year of birth was {by}.",
            ),
            claims=(
                f"{n} was born in {by}.",
                f"{n} was born in the year {by}.",
                f"{n}'s birth year is {by}.",
                f"{n} was born in {born_month} {by}.",
            ),
            false_claims=(f"{n} was born in {oy}.", f"{n}'s birth year is {oy}.", f"{n} was born in the year {oy}."),
            negated=(f"{n} was not born in {by}.",),
            modal=(f"{n} was probably born in {by}.", f"{n} may have been born around {by}."),
            clause=f"{n} was born in {by}",
            not_but=f"{n} was born not in {oy}, as often stated, but in {by}.",
            values=(str(by),),
        )
    )
    if p.get("died_year"):
        dy, dp, dd = p["died_year"], p["died_place"], p["died_day"]
        ody = shifted_year(dy, rng)
        facts.append(
            Fact(
                "death",
                premises=(
                    f"{n} died in {dp} in {dy}.",
                    f"{n} died on {dd} {dy} in {dp}.",
                    f"{n} ({by}–{dy}) was {with_article(p['nationality'])} {p['occupation']}.",
                    f"{n} ({bd} {by} – {dd} {dy}) was {with_article(p['occupation'])}.",
                    f"{n} passed away in {dp} in {dy}.",
                    f"{n} spent {w['poss']} last years in {dp}, where {w['pron']} died in {dy}.",
                    f"After a long illness, {n} died in {dy}.",
                ),
                claims=(
                    f"{n} died in {dy}.",
                    f"{n} passed away in {dy}.",
                    f"{n} died in the year {dy}.",
                    f"{n}'s death occurred in {dy}.",
                ),
                false_claims=(f"{n} died in {ody}.", f"{n} passed away in {ody}.", f"{n}'s death occurred in {ody}."),
                negated=(f"{n} did not die in {dy}.",),
                modal=(f"{n} probably died in {dy}.",),
                clause=f"{n} died in {dy}",
                not_but=f"{n} did not die in {ody}; {w['pron']} died in {dy}.",
                values=(str(dy), "died", "death"),
            )
        )
        facts.append(
            Fact(
                "death place",
                premises=(f"{n} died in {dp} in {dy}.", f"{n} died at {w['poss']} home in {dp}."),
                claims=(f"{n} died in {dp}.", f"{dp} is where {n} died.", f"{n}'s place of death was {dp}."),
                false_claims=(f"{n} died in {other_place}.", f"{n}'s place of death was {other_place}."),
                negated=(f"{n} did not die in {dp}.",),
                modal=(f"{n} may have died in {dp}.",),
                clause=f"{n} died in {dp}",
                not_but=f"{n} died not in {other_place} but in {dp}.",
                values=(dp, "died", "death"),
            )
        )
    nat, occ, occ2 = p["nationality"], p["occupation"], p["occupation2"]
    other_nat = other_nationality(nat, rng)
    facts.append(
        Fact(
            "occupation",
            premises=(
                f"{n} was {with_article(nat)} {occ}.",
                f"{n} worked as {with_article(occ)} for most of {w['poss']} life.",
                f"{n} was {with_article(nat)} {occ} and {occ2}.",
                f"{n} made a living as {with_article(occ)}.",
                f"{n} is best known as {with_article(occ)}.",
                f"{n} was a {nat}-born {occ}.",
            ),
            claims=(
                f"{n} was {with_article(occ)}.",
                f"{n} worked as {with_article(occ)}.",
                f"{n}'s profession was {occ}.",
                f"{n} was by profession {with_article(occ)}.",
            ),
            negated=(f"{n} was not {with_article(occ)}.", f"{n} never worked as {with_article(occ)}."),
            modal=(f"{n} may have worked as {with_article(occ)}.",),
            clause=f"{n} worked as {with_article(occ)}",
            values=(occ,),
        )
    )
    facts.append(
        Fact(
            "nationality",
            premises=(f"{n} was {with_article(nat)} {occ}.", f"{n} was a {nat}-born {occ}."),
            claims=(f"{n} was {nat}.", f"{n} was {with_article(nat)} {occ}."),
            false_claims=(f"{n} was {other_nat}.", f"{n} was {with_article(other_nat)} {occ}."),
            negated=(f"{n} was not {nat}.",),
            clause=f"{n} was {nat}",
            values=(nat,),
        )
    )
    work = p.get("work")
    if work:
        verb, base, noun, passive, obj, wy = (
            work["verb"],
            work["base"],
            work["noun"],
            work["passive"],
            work["object"],
            work["year"],
        )
        Obj = obj[:1].upper() + obj[1:]
        participle = passive.removeprefix("was ")
        owy = shifted_year(wy, rng)
        facts.append(
            Fact(
                "work",
                premises=(
                    f"{n} {verb} {obj} in {wy}.",
                    f"{Obj} {passive} by {n} in {wy}.",
                    f"{n} is the {noun} of {obj}.",
                    f"In {wy}, {n} {verb} {obj}, which made {w['poss']} name.",
                    f"{n} is credited with having {participle} {obj}.",
                    f"{Obj}, which {n} {verb} in {wy}, is still well known.",
                ),
                claims=(
                    f"{n} {verb} {obj}.",
                    f"{Obj} {passive} by {n}.",
                    f"{n} was the {noun} of {obj}.",
                    f"{n} {verb} {obj} in {wy}.",
                    f"{Obj} is the work of {n}.",
                ),
                false_claims=(f"{n} {verb} {obj} in {owy}.", f"{Obj} {passive} by {n} in {owy}."),
                negated=(
                    f"{n} did not {base} {obj}.",
                    f"{n} never {verb} {obj}.",
                    f"{n} was not the {noun} of {obj}.",
                    f"{Obj} {passive.replace('was ', 'was not ')} by {n}.",
                ),
                modal=(f"{n} possibly {verb} {obj}.", f"{n} may have {participle} {obj}."),
                clause=f"{n} {verb} {obj}",
                values=(obj, verb),
            )
        )
    study = p.get("study")
    if study:
        s, sp = study["subject"], study["place"]
        facts.append(
            Fact(
                "study",
                premises=(
                    f"{n} studied {s} at the University of {sp}.",
                    f"{n} graduated in {s} from the University of {sp} in {study['year']}.",
                    f"{n} was educated at the University of {sp}, where {w['pron']} read {s}.",
                    f"After studying {s} at the University of {sp}, {n} became {with_article(occ)}.",
                ),
                claims=(
                    f"{n} studied {s}.",
                    f"{n} attended the University of {sp}.",
                    f"{n} studied at the University of {sp}.",
                    f"{n} is a graduate of the University of {sp}.",
                ),
                negated=(f"{n} never studied {s}.", f"{n} did not attend the University of {sp}."),
                modal=(f"{n} may have studied {s} at the University of {sp}.",),
                clause=f"{n} studied {s} at the University of {sp}",
                values=(s, sp),
            )
        )
    spouse = p.get("spouse")
    if spouse:
        sn, sy = spouse["name"], spouse["year"]
        other_spouse = rng.choice([r for r in relatives if r != sn])
        facts.append(
            Fact(
                "marriage",
                premises=(
                    f"{n} married {sn} in {sy}.",
                    f"{n}'s {w['spouse_role']} was {sn}.",
                    f"In {sy}, {n} and {sn} were married in {other_place}.",
                    f"{n} was married to {sn} from {sy} until {w['poss']} death.",
                ),
                claims=(
                    f"{n} married {sn}.",
                    f"{n} was married to {sn}.",
                    f"{sn} was {n}'s {w['spouse_role']}.",
                    f"{n}'s spouse was {sn}.",
                ),
                false_claims=(f"{n}'s spouse was {other_spouse}.", f"{n}'s {w['spouse_role']} was {other_spouse}."),
                negated=(f"{n} never married.", f"{n} was never married to {sn}."),
                modal=(f"{n} may have married {sn}.",),
                clause=f"{n} married {sn}",
                values=(sn, "married", w["spouse_role"]),
            )
        )
    award = p.get("award")
    if award:
        an, ay = award["name"], award["year"]
        oay = shifted_year(ay, rng)
        facts.append(
            Fact(
                "award",
                premises=(
                    f"{n} won the {an} in {ay}.",
                    f"{n} was awarded the {an} in {ay}.",
                    f"The {an} went to {n} in {ay}.",
                    f"In {ay}, {n} received the {an}.",
                ),
                claims=(
                    f"{n} won the {an}.",
                    f"{n} received the {an}.",
                    f"{n} was a recipient of the {an}.",
                    f"{n} won the {an} in {ay}.",
                    f"{n} was awarded the {an}.",
                ),
                false_claims=(f"{n} won the {an} in {oay}.", f"{n} received the {an} in {oay}."),
                negated=(f"{n} never won the {an}.", f"{n} did not receive the {an}."),
                modal=(f"{n} may have won the {an}.",),
                clause=f"{n} won the {an}",
                values=(an,),
            )
        )
    move = p.get("move")
    if move:
        mp, my = move["place"], move["year"]
        facts.append(
            Fact(
                "move",
                premises=(
                    f"{n} moved to {mp} in {my}.",
                    f"In {my}, {n} relocated to {mp}.",
                    f"{n} settled in {mp} in {my}.",
                ),
                claims=(f"{n} moved to {mp}.", f"{n} lived in {mp}.", f"{n} moved to {mp} in {my}."),
                negated=(f"{n} never lived in {mp}.", f"{n} did not move to {mp}."),
                modal=(f"{n} may have moved to {mp}.",),
                clause=f"{n} moved to {mp}",
                values=(mp,),
            )
        )
    children = p.get("children")
    if children:
        other_count = rng.choice([c for c in COUNTS if c != children])
        facts.append(
            Fact(
                "children",
                premises=(
                    f"{n} had {children} children.",
                    f"{n} was the {w['parent']} of {children} children.",
                    f"{n} and {w['poss']} {w['spouse_role']} raised {children} children.",
                ),
                claims=(f"{n} had {children} children.", f"{n} was a {w['parent']} of {children}."),
                false_claims=(f"{n} had {other_count} children.", f"{n} was a {w['parent']} of {other_count}."),
                negated=(f"{n} had no children.",),
                clause=f"{n} had {children} children",
                values=(children, "children"),
            )
        )
    return facts


@dataclass(frozen=True)
class Row:
    capability: str  # a suite capability, or "<capability>_positive"
    variant: str
    premise: str
    hypothesis: str
    label: str  # entailment / neutral / contradiction / not_entailment


def _clause(text: str) -> str:
    return text.rstrip(".")


def _with_pronoun(sentence: str, name: str, pron: str) -> str:
    """A follow-up sentence that refers to the person by pronoun (for premises of several
    sentences, as passages write them)."""
    if sentence.startswith(name + " "):
        return pron + sentence[len(name) :]
    return sentence


def person_rows(
    p: dict[str, Any], others: list[dict[str, Any]], rng: random.Random, places: list[str], relatives: list[str]
) -> list[Row]:
    """The rows of one person: every capability and its positives, wordings chosen at random."""
    facts = facts_of(p, rng, places, relatives)
    w = _pron(p)
    n = p["name"]
    rows: list[Row] = []

    def add(capability: str, variant: str, premise: str, hypothesis: str, label: str) -> None:
        if premise.strip() != hypothesis.strip() or capability == "word_for_word":
            rows.append(Row(capability, variant, premise, hypothesis, label))

    def context(chosen: list[Fact], pronouns: bool = True) -> list[str]:
        sentences = [rng.choice(f.premises) for f in chosen]
        if pronouns:
            sentences = [sentences[0]] + [
                _with_pronoun(s, n, w["Pron"]) if rng.random() < 0.5 else s for s in sentences[1:]
            ]
        return sentences

    distinct = {f.kind: f for f in facts}
    kinds = list(distinct)

    # word for word: a sentence of a premise of 2–4 sentences
    for _ in range(2):
        chosen = rng.sample(facts, min(len(facts), rng.randint(2, 4)))
        sentences = context(chosen)
        named = [s for s in sentences if s.startswith(n + " ")]
        if named:
            add("word_for_word", "sentence of a premise", " ".join(sentences), rng.choice(named), "entailment")

    # paraphrase: another wording of a fact, among other sentences or alone
    for fact in rng.sample(facts, min(4, len(facts))):
        premise = rng.choice(fact.premises)
        claim = rng.choice([c for c in fact.claims if c != premise] or fact.claims)
        extra = [rng.choice(f.premises) for f in rng.sample(facts, min(2, len(facts))) if f.kind != fact.kind]
        sentences = [premise] + extra[: rng.randint(0, 2)]
        rng.shuffle(sentences)
        add("paraphrase", f"wording: {fact.kind}", " ".join(sentences), claim, "entailment")

    # part: two facts in one sentence, or over two sentences joined by a pronoun
    if len(kinds) >= 2:
        a, b = rng.sample(facts, 2)
        ca, cb = _clause(rng.choice(a.claims)), _clause(rng.choice(b.claims))
        if ca.startswith(n + " ") and cb.startswith(n + " "):
            joined = f"{ca} and {cb[len(n) + 1 :]}."
            add("part", "conjunction", joined, rng.choice(b.claims), "entailment")
            spread = f"{rng.choice(a.premises)} {_with_pronoun(rng.choice(b.premises), n, w['Pron'])}"
            add("part", "over two sentences", spread, rng.choice(b.claims), "entailment")
    if p.get("died_year"):
        dates = f"{n} ({p['born_day']} {p['born_year']} – {p['died_day']} {p['died_year']}) was {with_article(p['occupation'])}."
        add("part", "dates in brackets", dates, f"{n} was born in {p['born_year']}.", "entailment")
        add("part", "dates in brackets", dates, f"{n} died in {p['died_year']}.", "entailment")
        add(
            "substitution",
            "dates in brackets",
            dates,
            f"{n} died in {shifted_year(p['died_year'], rng)}.",
            "contradiction",
        )

    # substitution and its positives (the same claim wordings with the true value)
    for fact in [f for f in facts if f.false_claims]:
        companions = [f for f in facts if f.kind != fact.kind]
        premise = " ".join(context([fact] + rng.sample(companions, min(1, len(companions)))))
        add("substitution", f"value changed: {fact.kind}", premise, rng.choice(fact.false_claims), "contradiction")
        add("substitution_positive", f"value kept: {fact.kind}", premise, rng.choice(fact.claims), "entailment")

    # negation and its positives
    for fact in rng.sample([f for f in facts if f.negated], min(3, len([f for f in facts if f.negated]))):
        premise = rng.choice(fact.premises)
        add("negation", f"negated claim: {fact.kind}", premise, rng.choice(fact.negated), "contradiction")
        negated_premise = rng.choice(fact.negated)
        add("negation", f"negated premise: {fact.kind}", negated_premise, rng.choice(fact.claims), "contradiction")
        # a negated claim the premise states, among other sentences: "not" is not "no"
        companions = [
            c
            for c in (rng.choice(f.premises) for f in facts if f.kind != fact.kind)
            if not any(v.lower() in c.lower() for v in fact.values)
        ]
        sentences = [negated_premise] + rng.sample(companions, min(len(companions), rng.randint(1, 2)))
        rng.shuffle(sentences)
        add(
            "negation_positive",
            f"negated sentence of the premise: {fact.kind}",
            " ".join(sentences),
            negated_premise,
            "entailment",
        )
        if fact.not_but:
            add("negation_positive", f"not … but: {fact.kind}", fact.not_but, rng.choice(fact.claims), "entailment")

    # other attribute (neutral) and its positive (the fact added to the same premise)
    for _ in range(3):
        if len(kinds) < 2:
            break
        target = rng.choice(facts)
        rest = [f for f in facts if f.kind != target.kind]
        if not rest:
            continue
        chosen = rng.sample(rest, min(len(rest), rng.randint(1, 3)))
        sentences = context(chosen)
        if not target.values or any(v.lower() in " ".join(sentences).lower() for v in target.values):
            continue  # the premise may state the claim after all
        claim = rng.choice(target.claims)
        add("other_attribute", f"{target.kind} not stated", " ".join(sentences), claim, "neutral")
        with_target = sentences + [rng.choice(target.premises)]
        rng.shuffle(with_target)
        add(
            "other_attribute_positive", f"{target.kind} stated among others", " ".join(with_target), claim, "entailment"
        )

    # someone else (neutral) and its positives
    if others:
        other = rng.choice(others)
        o_facts = {f.kind: f for f in facts_of({**other, "born_place": p["born_place"]}, rng, places, relatives)}
        if "birth place" in o_facts:
            premise = rng.choice(o_facts["birth place"].premises)
            add(
                "someone_else",
                "same value, other person",
                premise,
                rng.choice(distinct["birth place"].claims),
                "neutral",
            )
        sibling = f"{n}'s {p['sibling']}"
        bp = p["born_place"]
        add(
            "someone_else",
            "same value, relative",
            f"{sibling} was born in {bp} in {p['born_year'] + 3}.",
            f"{n} was born in {bp}.",
            "neutral",
        )
        add(
            "someone_else_positive",
            "both",
            f"{n} and {w['poss']} {p['sibling']} were both born in {bp}.",
            f"{n} was born in {bp}.",
            "entailment",
        )
        if "work" in distinct and other.get("name"):
            work = distinct["work"]
            o = other["name"]
            premise = rng.choice(work.premises).replace(n, o)
            add("someone_else", "same value, other person", premise, rng.choice(work.claims), "neutral")
            add(
                "someone_else_positive",
                "the person named",
                rng.choice(work.premises),
                rng.choice(work.claims),
                "entailment",
            )
            # role swap: someone else did it, and its positive (the doer named)
            add(
                "role_swap",
                "someone else did it",
                rng.choice(work.premises),
                rng.choice(work.claims).replace(n, o),
                "not_entailment",
            )
            add("role_swap_positive", "the doer", rng.choice(work.premises), rng.choice(work.claims), "entailment")
        if "award" in distinct and other.get("name"):
            award = distinct["award"]
            o = other["name"]
            add(
                "role_swap",
                "someone else won it",
                rng.choice(award.premises),
                rng.choice(award.claims).replace(n, o),
                "not_entailment",
            )
            add("role_swap_positive", "the winner", rng.choice(award.premises), rng.choice(award.claims), "entailment")
            relative = f"{n}'s {p['sibling']}, {o},"
            add(
                "role_swap",
                "relative did it",
                f"{relative} won the {p['award']['name']} in {p['award']['year']}.",
                rng.choice(award.claims),
                "not_entailment",
            )
            add(
                "role_swap_positive",
                "relative named",
                f"{relative} won the {p['award']['name']} in {p['award']['year']}.",
                f"{o} won the {p['award']['name']}.",
                "entailment",
            )

    # hedged (neutral) and its positives
    for fact in rng.sample(facts, min(2, len(facts))):
        if not fact.clause:
            continue
        claim = rng.choice(fact.claims)
        hedged = rng.choice(HEDGES).format(clause=fact.clause)
        add("hedged", "hedged clause", hedged, claim, "neutral")
        if fact.modal:
            add("hedged", "modal", rng.choice(fact.modal), claim, "neutral")
        add(
            "hedged_positive", "confirmed clause", rng.choice(CONFIRMED).format(clause=fact.clause), claim, "entailment"
        )
    return rows


def duo_rows(people: list[dict[str, Any]], rng: random.Random, places: list[str]) -> list[Row]:
    """Role swaps of two-person relations and their positives (passive, nominal, a longer
    sentence)."""
    rows: list[Row] = []
    order = list(people)
    rng.shuffle(order)
    for a, b in zip(order, order[1:]):
        active, passive, noun = rng.choice(DUO_RELATIONS)
        setting = rng.choice(SETTINGS).format(year=rng.randint(1950, 2015), place=rng.choice(places))
        A, B = a["name"], b["name"]
        premise = f"{A} {active} {B} {setting}."
        rows.append(
            Row("role_swap", "agent and patient swapped", premise, f"{B} {active} {A} {setting}.", "not_entailment")
        )
        rows.append(
            Row("role_swap", "agent and patient swapped, passive", premise, f"{A} {passive} {B}.", "not_entailment")
        )
        rows.append(Row("role_swap_positive", "passive", premise, f"{B} {passive} {A}.", "entailment"))
        rows.append(
            Row(
                "role_swap_positive",
                "active from passive",
                f"{B} {passive} {A} {setting}.",
                f"{A} {active} {B}.",
                "entailment",
            )
        )
        if noun:
            rows.append(Row("role_swap_positive", "nominal", premise, f"{A} was {B}'s {noun}.", "entailment"))
            rows.append(Row("role_swap", "nominal swapped", premise, f"{B} was {A}'s {noun}.", "not_entailment"))
    return rows


def generate_rows(
    people: list[dict[str, Any]], places: list[str], relatives: list[str], seed: int, samples: int = 2
) -> list[Row]:
    """Rows for every person, ``samples`` times with other wordings and substitutes."""
    rows: list[Row] = []
    for sample in range(samples):
        rng = random.Random(f"forms:{seed}:{sample}")
        enriched = [enrich(p, rng, places, relatives) for p in people]
        for index, person in enumerate(enriched):
            others = enriched[index + 1 : index + 6] or enriched[:5]
            rows += person_rows(person, [o for o in others if o["name"] != person["name"]], rng, places, relatives)
        rows += duo_rows(enriched, rng, places)
    return rows


def capability_of(row: Row) -> str:
    """The suite capability a row exercises (a positive's own capability without the suffix)."""
    return row.capability.removesuffix("_positive")


def _demo(show: Callable[[str], None] = print) -> None:
    from experiments.nli_training.targeted import PLACES, invented_people

    rng = random.Random(1)
    people = invented_people(4, rng, set())
    relatives = [p["name"] for p in invented_people(10, random.Random(2), set())]
    for row in generate_rows(people, PLACES, relatives, seed=1, samples=1)[:60]:
        show(f"{row.capability:26s} {row.label:14s} {row.premise!r} => {row.hypothesis!r}")


if __name__ == "__main__":
    _demo()

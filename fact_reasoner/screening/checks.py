"""The checks of the sentence screen: does the passage's deciding sentence state what the claim
states? Pure functions of what the parser read (:mod:`fact_reasoner.screening.reading`).

**The deciding sentence** (:func:`deciding_window`): of the passage's sentences and pairs of
adjacent sentences, the one that holds the largest share of the claim — its words and the words
of its names (its subject's among them, a pronoun counting as the name it stands for), each of
its numbers and dates counted twice. A pair is taken only when it holds more than either of its
sentences ("… on 7 March 1876. Three days later, Bell made the first telephone call." for "The
first telephone call was made in March 1876."). This is the sentence the judge's relation is
taken to rest on, and the one the output quotes.

**An entailment** (:func:`check_entailment`) is kept only when the deciding sentence passes every
check, in this order; the first that fails decides:

1. *subject* — the claim's doer (its subject, or "by X" in a passive) is the sentence's: set
   aside when the sentence's doer is another person ("the sentence names Alexander Graham Bell,
   not Thomas Edison": a shared first name is no match), when the roles are swapped ("in the
   sentence Anna Smith does it, not Maria Jones"), when the sentence is about a relative of the
   doer ("the sentence is about Isaac Newton's nephew"), or when the passage never names the doer;
2. *thing* — what the claim's act is done to is in the sentence only as part of another thing,
   and the sentence tells another act ("improved the telephone transmitter" for "invented the
   telephone"): set aside;
3. *numbers and dates* — a value of the claim the sentence does not state, where the sentence
   gives another of the same kind, about the same thing (the words above the value in the parse,
   and their objects, share one: "received the 1921 Nobel Prize" and "won the Nobel Prize in
   1925" share *prize*) and of the claim's doer (the subject of its clause: a son's birth year is
   not his father's): a stated opposite, the entailment is **turned** into a contradiction ("the
   sentence says 1921, not 1925");
4. *names* — a proper name of the claim the sentence does not give, where it gives another in
   the same place, of the claim's doer ("member of the Republican Party" for "member of the Whig
   Party"): set aside (a place may hold several names: two national teams);
5. *negation* — a predicate of the claim that the sentence states with the other polarity
   ("Pluto is not a planet" for "Pluto is a planet") turns it (not a negated comparison: "No
   mountain is taller than Mount Everest" is what "Mount Everest is the highest mountain" says);
6. *direction* — a word of the claim whose opposite the sentence says of the same thing ("water
   boils at a lower temperature" for "… at a higher temperature") turns it;
7. *hedge* — the sentence hedges ("traditionally", "is believed to", "unknown", "some sources
   say") and the claim does not: set aside.

A value or a name of the claim that the sentence merely does not give is *not* a reason to set
the entailment aside: measured on the development biographies, that lost more true claims than it
caught false ones (the judge's support often rests on a form the parser does not match);
:func:`diagnose` still reports it, for the error table.

**A contradiction** (:func:`check_contradiction`) is kept only where the deciding sentence says
something else of the claim's attribute: another doer of an act done once ("Penicillin was
discovered by Alexander Fleming" against "Marie Curie discovered penicillin"), another value or
name in the claim's place, the other polarity, or an opposite word. It is set aside where the
sentence's subject is another name or a relative of the claim's doer, or where it says nothing
against the claim's attribute: a passage telling another fact about the same person is no
evidence against the claim.

A finding says what it saw in the user's terms; the stage (:mod:`fact_reasoner.screening.stage`)
counts and shows it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from .lexicon import opposite
from .reading import Claim, Name, Relative, Statement, fold, plain_name, singular, window_statements

__all__ = [
    "CHECKS",
    "DIAGNOSES",
    "Finding",
    "check_contradiction",
    "check_entailment",
    "deciding_window",
    "diagnose",
]

#: predicates that say nothing by their verb alone ("is not in romantic comedies": the objects say it)
_LIGHT_VERBS = frozenset({"be", "have"})
_WORD = re.compile(r"[^\W_]+(?:['’.][^\W_]+)*")

#: the checks, in the order they run on an entailment (each a counter and a kind of reason)
CHECKS = ("subject", "thing", "numbers", "names", "negation", "direction", "hedge")

Action = Literal["set aside", "turned", "kept"]


@dataclass(frozen=True)
class Finding:
    """What a check saw: ``check`` (one of :data:`CHECKS`, or ``attribute`` for a contradiction
    about something else), ``action`` (``set aside``: the relation is no factor; ``turned``: an
    entailment becomes a contradiction; ``kept``), and ``reason`` in the user's words."""

    check: str
    action: Action
    reason: str


def deciding_window(claim: Claim, sentences: Sequence[Statement]) -> Statement | None:
    """The passage sentence (or pair of adjacent sentences) that holds the largest share of the
    claim's content — its words (C: lemmas, and the words of its names, its subject's among
    them, so that a sentence about the claim's subject wins a tie) and its numbers and dates
    (V, each counted twice), (|C ∩ W| + 2·|V stated by W|) / (|C| + 2·|V|); a pair only when it
    holds more than any single sentence; the first on ties. None for a passage without
    sentences."""
    if not sentences:
        return None
    content = claim.statement.lemmas
    values = claim.statement.values
    if not content and not values:
        return sentences[0]
    best, best_score = None, -1.0
    for window in window_statements(sentences):
        # a number or date of the claim counts twice: it names the fact more than a word does
        stated = sum(2 for value in values if value.stated_by(window.values))
        score = (len(content & window.lemmas) + stated) / (len(content) + 2 * len(values))
        if score > best_score:
            best, best_score = window, score
    return best


def _matches(name: Name, names: Sequence[Name]) -> bool:
    return any(name.same_as(other) for other in names)


def _subject(claim: Claim, window: Statement, passage: Sequence[Statement], title: str | None) -> Finding | None:
    """The claim's doer is the sentence's (module docstring, check 1)."""
    doers = claim.doers
    if not doers:
        return None
    if any(_matches(doer, window.actors) for doer in doers):
        return None
    doer = doers[0]
    relatives = [r for r in window.relatives if r.of is not None and _matches(r.of, doers)]
    if relatives:
        return Finding("subject", "set aside", f"the sentence is about {relatives[0]}, not {doer}")
    named = claim.statement.names
    # the doer under every name the claim gives them ("Nadiadwala" and, by "his", "Sajid Nadiadwala")
    doer_names = [n for n in named if _matches(n, doers)] + list(doers)
    if any(window.mentions(d) for d in doers):
        # the doer is there, but another does the act: a person the claim names as the one it
        # was done to ("Y beat X" for "X beat Y", "X was replaced by Y" for "X replaced Y")
        swapped = [
            a
            for a in window.actors
            if _matches(a, named)
            and not _matches(a, doer_names)
            and not _matches(a, window.patients)
            and not _matches(a, window.owners)
        ]
        if swapped:
            return Finding("subject", "set aside", f"in the sentence {swapped[0]} does it, not {doer}")
        return None
    main = Name.of(plain_name(title)) if title else None
    # another person who does it: a film, a place or a company the claim is about is not "done"
    # by the person a biography's sentence names ("A Bronx Tale is a film." beside "Hicks
    # appeared in A Bronx Tale"); the tagger must take both for people. In a passage about the
    # claim's doer (its title names them) another person acting is a sentence of their life,
    # not someone else credited: only a relative counts there (above)
    about_doer = main is not None and _matches(main, doers)
    others = [a for a in _rivals(claim, window) if a.person and not _matches(a, named)]
    if others and doer.person and not about_doer:
        return Finding("subject", "set aside", f"the sentence names {others[0]}, not {doer}")
    everywhere = [n for s in passage for n in (*s.names, *s.actors)] + ([main] if main is not None else [])
    if any(_matches(d, everywhere) for d in doers):
        return None
    if any(_written(d, s) or _written(Name.of(d.text.split()[-1], d.kind), s) for d in doers for s in passage):
        return None  # written there (a surname will do), though the tagger did not read it as a name
    return Finding("subject", "set aside", f"the passage never names {doer}")


def _rivals(claim: Claim, window: Statement) -> list[Name]:
    """The sentence's actors in the claim's doer's role: its passive subjects for a claim whose
    doer was done to ("The Outcasts was released …" against "The film was released … by Swen
    Releasing": not Swen Releasing), its doers otherwise."""
    if claim.doers_are_patients:
        return [a for a in window.actors if _matches(a, window.patients)]
    return list(window.actors)


def _thing(claim: Claim, window: Statement) -> Finding | None:
    """The thing the claim's act is done to is in the sentence only as part of another, and the
    sentence tells another act ("improved the telephone transmitter" for "invented the telephone")."""
    if any(mine.same(theirs) for mine in claim.predicates for theirs in window.predicates):
        return None
    for theme in sorted(claim.objects):
        phrase = window.only_as_modifier(theme)
        if phrase is not None:
            return Finding("thing", "set aside", f"the sentence speaks of the {phrase}, not the {theme}")
    return None


def _shares_attribute(claim: Claim, window: Statement) -> bool:
    """The sentence speaks of what the claim's main clause says: one of its predicates' lemmas
    (the verb, or a copula's noun or adjective) or the nouns it is about is among the
    sentence's words ("born" and "where she was born", "physicist" and "known as a physicist")."""
    said = {p.lemma for p in claim.predicates} | claim.themes
    return bool(said & window.lemmas)


def _owned(holder: "Name | Relative | None", claim: Claim, strict: bool) -> bool:
    """Whether a value or name the sentence gives is the claim's doer's: ``strict`` (to turn an
    entailment) when the parse names the doer as its holder, or the claim names no doer and the
    parse no holder; else (to keep a contradiction) unless it names someone else ("a son born in
    December 2016" is not "he was born in 1990")."""
    doers = claim.doers
    if holder is None:
        return not strict or not doers
    if isinstance(holder, Relative):
        # "X's mother, N, was …" holds a name for the claim "X's mother was M"
        mine = claim.relative
        return (
            mine is not None
            and mine.noun == holder.noun
            and (mine.of is None or holder.of is None or mine.of.same_as(holder.of))
        )
    if not doers:
        return not strict
    return _matches(holder, doers) or _matches(holder, [n for n in claim.statement.names if _matches(n, doers)])


def _numbers(claim: Claim, window: Statement, strict: bool = True) -> Finding | None:
    for value in claim.statement.values:
        if value.stated_by(window.values):
            continue
        about = value.anchors | claim.themes
        others = [
            v for v in window.values if v.kind == value.kind and v.anchors & about and _owned(v.holder, claim, strict)
        ]
        if others:
            return Finding("numbers", "turned", f"the sentence says {others[0].text}, not {value.text}")
    return None


def _names(
    claim: Claim, window: Statement, passage: Sequence[Statement], title: str | None, strict: bool = True
) -> Finding | None:
    doers = claim.doers
    everywhere = [n for s in passage for n in (*s.names, *s.actors)] + ([Name.of(title)] if title else [])
    quoted = claim.statement.quoted
    for name in claim.statement.names:
        if any(set(name.words) <= set(q.words) for q in quoted):
            continue  # part of a title in quotation marks, which the parser does not read as one name
        if _matches(name, doers) or window.mentions(name) or _written(name, window):
            continue
        if _matches(name, everywhere) or any(_written(name, s) or _kin(name, s) for s in passage):
            continue
        place = next((p for p, n, _ in claim.statement.placed if n == name), None)
        if place is not None:
            # the same preposition (or relation) on the same word; to keep a contradiction also on
            # any word of a sentence that speaks of the claim's attribute ("born in Aberdeen", "…
            # where she was born in 1867" after "grew up in Warsaw")
            how = place.partition(" ")[0]
            loose = not strict and _shares_attribute(claim, window)
            rivals = [
                n
                for p, n, holder in window.placed
                if (p == place or (loose and p.partition(" ")[0] == how))
                and _owned(holder, claim, strict)
                and not _matches(n, claim.statement.names)
                and not _matches(n, claim.doers)
            ]
            if rivals:
                # another name in the claim's place is against the claim only where the place takes
                # one name, which the parse cannot tell ("represented the French national team" and
                # "plays for the Senegal national team" are both true): the entailment is set aside,
                # a contradiction the judge gave is kept as it is
                return Finding(
                    "names", "set aside" if strict else "turned", f"the sentence says {rivals[0]}, not {name}"
                )
    return None


def _written(name: Name, statement: Statement) -> bool:
    """Every word of the name is written in the statement (case and accents aside), and not only
    as part of a person's name ("Florence" in "Florence Nightingale" is not the city; "S.M." in
    "S.M. Global Audition" is written)."""
    words = _words(statement.text)
    if not name.words or not all(w in words for w in name.words):
        return False
    inside = [n for n in (*statement.names, *statement.actors) if set(name.words) < set(n.words)]
    return not any(n.person and not name.person for n in inside) or any(n.words == name.words for n in statement.names)


def _kin(name: Name, statement: Statement) -> bool:
    """A one-word name whose form the statement gives with another ending: a country and its
    people ("Belgium", "Belgian"; "Mexico", "Mexican"): the first five letters, or all but the
    last two of a shorter word, in common with a word of the statement."""
    if len(name.words) != 1 or len(name.words[0]) < 4:
        return False
    word = name.words[0]
    stem = word[: max(4, min(5, len(word) - 2))]
    return any(other.startswith(stem) for other in _words(statement.text))


def _words(text: str) -> set[str]:
    """The words of a text, folded (case, accents, a possessive, punctuation around them), each
    also without a plural "s" as a name's words are (:func:`~fact_reasoner.screening.reading.Name.of`)."""
    words = {fold(w) for w in _WORD.findall(text)}
    return words | {singular(w) for w in words}


def _negation(claim: Claim, window: Statement) -> Finding | None:
    if claim.negated_comparison:
        return None
    negated_anywhere = any(p.negated for p in window.predicates)
    for predicate in claim.predicates:
        same = [p for p in window.predicates if p.same(predicate) and predicate.lemma not in _LIGHT_VERBS] or [
            p
            for p in window.predicates
            if predicate.lemma in p.objects  # "is known as a physicist"
            or (predicate.lemma in _LIGHT_VERBS and predicate.objects & p.objects)  # "is not in comedies"
        ]
        flipped = bool(same) and all(p.negated != predicate.negated for p in same)
        # a denial of what the sentence states without any negation ("X is not a physicist"
        # against "X is known as a Polish physicist")
        flipped = flipped or (
            not same and predicate.negated and predicate.lemma in window.lemmas and not negated_anywhere
        )
        if flipped:
            said = "states what the claim denies" if predicate.negated else "denies it"
            return Finding("negation", "turned", f"the sentence {said}")
    return None


def _direction(claim: Claim, window: Statement) -> Finding | None:
    for mine in claim.statement.gradables:
        for theirs in window.gradables:
            if mine.head == theirs.head and opposite(mine.word, theirs.word):
                if any(g.head == mine.head and g.word == mine.word for g in window.gradables):
                    continue  # the sentence says both (of two things of one name)
                return Finding("direction", "turned", f"the sentence says {theirs.text}, not {mine.text}")
    return None


def _hedge(claim: Claim, window: Statement) -> Finding | None:
    if window.hedges and not claim.statement.hedges:
        return Finding("hedge", "set aside", f'the sentence hedges ("{window.hedges[0]}"), the claim states it as fact')
    return None


def check_entailment(
    claim: Claim,
    window: Statement,
    passage: Sequence[Statement],
    title: str | None = None,
    skip: Collection[str] = (),
) -> Finding | None:
    """The first check the deciding sentence fails (module docstring), or None: the entailment
    stands. ``skip``: checks (``"names"``) or findings (``"names:set aside"``) to pass over, for
    an experiment that measures what each one does. A claim of several sentences is not read
    (None)."""
    if claim.sentences != 1:
        return None
    runs = {
        "subject": lambda: _subject(claim, window, passage, title),
        "thing": lambda: _thing(claim, window),
        "numbers": lambda: _numbers(claim, window),
        "names": lambda: _names(claim, window, passage, title),
        "negation": lambda: _negation(claim, window),
        "direction": lambda: _direction(claim, window),
        "hedge": lambda: _hedge(claim, window),
    }
    for name in CHECKS:
        if name in skip:
            continue
        found = runs[name]()
        if found is not None and f"{found.check}:{found.action}" not in skip:
            return found
    return None


#: what :func:`diagnose` can see of an entailment, in the order the error table reads them
DIAGNOSES = (
    "another subject or doer",
    "lacks or changes a number or date",
    "lacks a name the claim has",
    "says the opposite",
    "hedges",
    "another attribute",
)


def diagnose(claim: Claim, window: Statement, passage: Sequence[Statement], title: str | None = None) -> list[str]:
    """Every kind of difference between a claim and its deciding sentence that a check can see
    (:data:`DIAGNOSES`), each check run on its own — including two the screen measures but does
    not act on: a number or date of the claim the sentence does not state, and a proper name of
    the claim the passage never gives (on the development biographies they set aside more true
    claims than false ones: the judge's support often rests on a form the parser does not match),
    and a claim whose predicate the sentence does not say. For the error table
    (``experiments/error_table.py``), not for the graph."""
    kinds = []
    if _subject(claim, window, passage, title) is not None:
        kinds.append("another subject or doer")
    if _numbers(claim, window) is not None or any(not v.stated_by(window.values) for v in claim.statement.values):
        kinds.append("lacks or changes a number or date")
    everywhere = [n for s in passage for n in (*s.names, *s.actors)]
    absent = [
        n
        for n in claim.statement.names
        if n.kind
        and not _matches(n, claim.doers)
        and not _matches(n, everywhere)
        and not any(_written(n, s) or _kin(n, s) for s in passage)
    ]
    if _names(claim, window, passage, title) is not None or absent:
        kinds.append("lacks a name the claim has")
    if _negation(claim, window) is not None or _direction(claim, window) is not None:
        kinds.append("says the opposite")
    if _hedge(claim, window) is not None:
        kinds.append("hedges")
    said = {p.lemma for p in claim.predicates} | {p.form for p in claim.predicates} - {""}
    words = window.lemmas | _words(window.text)
    if _thing(claim, window) is not None or (said and not said & words):
        kinds.append("another attribute")
    return kinds


def check_contradiction(
    claim: Claim, window: Statement, passage: Sequence[Statement], title: str | None = None
) -> Finding | None:
    """Whether the judge's contradiction stands (module docstring): a ``kept`` finding that says
    what the deciding sentence says against the claim, or a ``set aside`` one that says why it
    is no evidence against it. None for a claim of several sentences, which is not read (the
    contradiction stands as the judge gave it)."""
    if claim.sentences != 1:
        return None
    subject = _another(claim, window)
    if subject is not None:
        if _same_act(claim, window):
            # someone else did it: "Penicillin was discovered by Alexander Fleming"
            return Finding("subject", "kept", subject.reason)
        return subject
    # what the sentence says against the claim: of the claim's doer ("numbers", "names",
    # "negation", "direction": the stage trusts these as it trusts a turned entailment), or only
    # of the same kind of thing in a sentence about the claim's attribute ("numbers near" …)
    for found in (
        _numbers(claim, window),
        _names(claim, window, passage, title),
        _negation(claim, window),
        _direction(claim, window),
    ):
        if found is not None and found.action != "kept":
            return Finding(found.check, "kept", found.reason)
    for found in (_numbers(claim, window, strict=False), _names(claim, window, passage, title, strict=False)):
        if found is not None and found.action == "turned":
            return Finding(f"{found.check} near", "kept", found.reason)
    return Finding("attribute", "set aside", "the sentence says nothing against the claim's attribute")


def _another(claim: Claim, window: Statement) -> Finding | None:
    """For a contradiction: the sentence is about someone or something else — another name (of
    any kind: "Venus is the hottest planet" is no evidence about Mount Everest) is its subject and
    the claim's doer is not, or a relative of the doer is. A sentence that merely does not name
    the doer may still be about it ("The film was released on April 14, 2017" in the film's own
    article): its attribute decides."""
    doers = claim.doers
    if not doers or any(_matches(doer, window.actors) for doer in doers):
        return None
    relatives = [r for r in window.relatives if r.of is not None and _matches(r.of, doers)]
    if relatives:
        return Finding("subject", "set aside", f"the sentence is about {relatives[0]}, not {doers[0]}")
    named = claim.statement.names
    others = [a for a in _rivals(claim, window) if not _matches(a, named)]
    if others and not any(window.mentions(d) for d in doers):
        return Finding("subject", "set aside", f"the sentence names {others[0]}, not {doers[0]}")
    return None


def _same_act(claim: Claim, window: Statement) -> bool:
    """The sentence tells the claim's act (a predicate of the same lemma) on the claim's thing."""
    if not any(mine.same(theirs) for mine in claim.predicates for theirs in window.predicates):
        return False
    # a thing done once (discovered penicillin, wrote a novel): its object must be there, and
    # every value of the claim; "was born in 1905" has no object (many were born in 1905)
    things = claim.themes | {w for n in claim.statement.names if not _matches(n, claim.doers) for w in n.words}
    if not things or not things <= window.lemmas:
        return False
    return all(value.stated_by(window.values) for value in claim.statement.values)

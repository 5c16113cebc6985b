"""What the screen reads of a sentence: who acts, which names, numbers and dates it states, which
predicates it negates, which words give a direction, and whether it hedges.

Everything here is read off spaCy's parse (:mod:`fact_reasoner.screening.parser`) into plain,
frozen data (:class:`Statement`), so that the checks (:mod:`fact_reasoner.screening.checks`)
are pure functions of two statements. A passage is read sentence by sentence
(:func:`read_passage`), its pronouns resolved to the passage's own names as it goes — the parser
has no coreference, so "he" is the last person named as a subject before it (or the passage's
title), "it"/"its" the last thing so named: "Its summit is 8,849 metres high." after "Mount
Everest is Earth's highest mountain." is about Mount Everest.

Names are compared by :func:`same_name`: a short form is the same name ("Einstein", "Albert
Einstein"), a shared first name is not ("Thomas Watson", "Thomas Edison").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from .lexicon import (
    CERTAINTY_WORDS,
    HEDGE_ADJECTIVES,
    HEDGE_ADVERBS,
    HEDGE_MODALS,
    HEDGE_VERBS,
    OPPOSITES,
    RELATIONAL_NOUNS,
)
from .parser import parse

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Span, Token

__all__ = [
    "Claim",
    "Gradable",
    "Name",
    "Predicate",
    "Relative",
    "Statement",
    "Value",
    "read_claim",
    "read_passage",
    "referent_of",
    "same_name",
    "window_statements",
]

#: words a name is compared without ("the Battle of Hastings" is "Battle Hastings")
_NAME_FUNCTION_WORDS = frozenset("the a an of and in on at for de la le del der van von da di du".split())
#: titles before a name and generations after it ("Sir Alexander Fleming" is "Alexander Fleming",
#: "William Post III" is "William Post")
_HONORIFICS = frozenset(
    "mr mrs ms miss dr sir dame lord lady saint st prof professor president king queen jr sr ii iii iv".split()
)
#: entity types whose tokens are names, not values ("Apollo 11", "World War II")
_NAME_ENTITIES = frozenset("PERSON ORG WORK_OF_ART LAW PRODUCT FAC EVENT GPE LOC NORP LANGUAGE".split())
_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
NUMBER_WORDS = {
    w: str(v)
    for v, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
    if w != "_"  # "one" is mostly a pronoun ("one of the first")
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90"}
_MULTIPLIERS = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
_DIGITS = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_DECADE = re.compile(r"^(1\d{2}|20\d)0s$")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
#: the numbers inside one token ("1867–1934", "1954-57")
_NUMBERS_IN = re.compile(r"\d+")
#: a title in quotation marks
_QUOTED = re.compile(r'["“]([^"“”]{2,80})["”]')
#: a parenthesis with a year in it: life dates after a name ("(1879–1955)", "(born 9 October 1970)")
_LIFESPAN = re.compile(r"\([^()]*\b\d{3,4}\b[^()]*\)")
#: lemmas that name one event by different parts of speech (alignment only: "born" / "birth")
_SAME_EVENT = {
    "bear": "birth",
    "born": "birth",
    "birthday": "birth",
    "birthplace": "birth",
    "die": "death",
    "dead": "death",
    "marriage": "marry",
    "wed": "marry",
}
#: verbs that carry no content of their own for alignment
_LIGHT = frozenset({"be", "have", "do", "become", "get", "also"})
#: nouns any number or date may hang on, which say nothing of which fact it dates or counts
_GENERIC = frozenset(
    "age year time date day month week decade century number total amount sum figure percent million billion "
    "thousand hundred dozen".split()
)
#: words that carry no content for alignment (spaCy's own stop list holds "made", "call", "first")
_NOT_CONTENT = _LIGHT | frozenset(
    """not never no very just only even also too so then there here well much many more most less least own
    same such other another however thus still yet again ever often later""".split()
)
_PERSONAL = frozenset({"he", "him", "his", "himself", "she", "her", "hers", "herself"})
_IMPERSONAL = frozenset({"it", "its", "itself"})
_RELATIVE = frozenset({"who", "whom", "that", "which", "whose"})
_NEGATING_DETERMINERS = frozenset({"no", "neither"})

ValueKind = Literal["year", "month", "day", "decade", "century", "number", "ordinal"]


def singular(word: str) -> str:
    """A name's word without a plural "s" ("Grammy Awards" names what "Grammy Award" does)."""
    return word[:-1] if len(word) > 4 and word.endswith("s") and not word.endswith("ss") else word


def fold(word: str) -> str:
    """A word without case, accents or a possessive "'s"."""
    plain = unicodedata.normalize("NFKD", word)
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch)).casefold().replace("’", "'")
    return re.sub(r"'s?$", "", plain).strip(".")


@dataclass(frozen=True)
class Name:
    """A proper name as written (``text``) and its folded words without function words and
    titles (``words``: "Sir Alexander Fleming" → ``("alexander", "fleming")``)."""

    text: str
    words: tuple[str, ...]
    #: what the named-entity tagger took it for: ``person``, ``thing`` (a place, a work, an
    #: organisation …) or ``""`` (it did not say)
    kind: str = ""

    @classmethod
    def of(cls, text: str, kind: str = "") -> "Name":
        words = [fold(w) for w in re.split(r"[\s\-‐–]+", text) if w.strip()]
        kept = [w for w in words if w and w not in _NAME_FUNCTION_WORDS and w not in _HONORIFICS]
        return cls(text, tuple(singular(w) for w in (kept or words)), kind)

    @property
    def person(self) -> bool:
        return self.kind == "person"

    def same_as(self, other: "Name") -> bool:
        if "thing" in (self.kind, other.kind) and min(len(self.words), len(other.words)) == 1:
            # a place is not a person of that first name ("Florence", "Florence Nightingale")
            if self.words[-1] != other.words[-1] and (len(self.words) > 1) != (len(other.words) > 1):
                return False
        return same_name(self.words, other.words)

    def __str__(self) -> str:
        return self.text


def same_name(a: Sequence[str], b: Sequence[str]) -> bool:
    """Whether two names (folded words) can name the same one: the shorter's words in the
    longer, in order ("Henry Santos" / "Henry Santos Jeter"; a first name alone, as biographies
    use it, for a name of up to three words: "Owen" / "Owen Wright"), or the same last word and
    every other word of the shorter matched by one of the longer — the same word, an initial of
    it, or a short form with three letters in common ("Einstein" / "Albert Einstein", "J.
    Vieira" / "Joseph Vieira", "Alex Fleming" / "Alexander Fleming"). A shared first name, or
    first names with one initial, are not enough.

    >>> same_name(["thomas", "edison"], ["thomas", "watson"]), same_name(["edison"], ["thomas", "edison"])
    (False, True)
    >>> same_name(["marie", "curie"], ["pierre", "curie"]), same_name(["marie", "curie"], ["marie", "sklodowska", "curie"])
    (False, True)
    >>> same_name(["sunil", "manohar"], ["shashank", "manohar"]), same_name(["j", "vieira"], ["joseph", "vieira"])
    (False, True)
    """
    if not a or not b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if _in_order(short, long) and (len(short) > 1 or len(long) <= 3):
        # a name without its last part ("Henry Santos" / "Henry Santos Jeter"), a first name
        # alone as biographies use it ("Owen" / "Owen Wright")
        return True
    if a[-1] != b[-1]:
        return False
    return all(any(_same_word(w, x) for x in long[:-1]) for w in short[:-1])


def _same_word(a: str, b: str) -> bool:
    """Two words of names that can stand for each other: equal, an initial ("j" / "joseph"), or
    a short form with three letters in common ("alex" / "alexander")."""
    if a == b:
        return True
    if min(len(a), len(b)) <= 2:
        return a[:1] == b[:1]
    return a[:3] == b[:3] and (a.startswith(b) or b.startswith(a))


def _in_order(short: Sequence[str], long: Sequence[str]) -> bool:
    """Every word of ``short`` in ``long``, in the same order."""
    words = iter(long)
    return all(any(w == x for x in words) for w in short)


@dataclass(frozen=True)
class Value:
    """A number or date a text states: ``kind`` (values are compared only with values of their
    kind), ``value`` (normalised: "8,849" → "8849", "three" → "3", "April" → "4", "23 April" →
    "4-23", "1940s" → "194"), ``text`` as written, and ``anchors`` (the lemmas of what it is
    about: the words above it in the parse, and their objects: "received the 1921 Nobel Prize" →
    prize, receive)."""

    kind: ValueKind
    value: str
    text: str
    anchors: frozenset[str] = frozenset()
    #: the number as written before a multiplier ("32" of "32 million"), which a text may give
    #: without it ("€32m")
    written: str = ""
    #: whose it is: the subject of the clause that states it ("a son born in December 2016": the
    #: son), None where the parse names none
    holder: "Name | Relative | None" = None

    def stated_by(self, values: Iterable["Value"]) -> bool:
        """Whether ``values`` state this one: the same value of the same kind, or a year inside
        this decade or century ("the 1940s" is stated by "1943")."""
        for other in values:
            if other.kind == self.kind and (
                other.value == self.value or (self.written and self.written in (other.value, other.written))
            ):
                return True
            if self.kind in ("decade", "century") and other.kind == "year":
                year = int(other.value)
                if (self.kind == "decade" and year // 10 == int(self.value)) or (
                    self.kind == "century" and (year - 1) // 100 + 1 == int(self.value)
                ):
                    return True
        return False


@dataclass(frozen=True)
class Relative:
    """Someone named by their tie to another: ``noun`` ("student") of ``of`` ("Curie")."""

    noun: str
    of: Name | None

    def __str__(self) -> str:
        return f"{self.of.text}'s {self.noun}" if self.of else f"a {self.noun}"


@dataclass(frozen=True)
class Predicate:
    """What a clause says of its subject: the verb's lemma, or for "is/was …" the lemma of the
    noun or adjective it says (``planet`` in "Pluto is not a planet"), and whether it is negated.
    ``objects``: the lemmas of its direct objects and complements."""

    lemma: str
    negated: bool
    objects: frozenset[str] = frozenset()
    #: the word as written, lower-case: the lemmatizer reads "found" (a school) as "find"
    form: str = ""

    def same(self, other: "Predicate") -> bool:
        """The same predicate: the same lemma, or the same word as written."""
        mine, theirs = {self.lemma, self.form} - {""}, {other.lemma, other.form} - {""}
        return bool(mine & theirs)


@dataclass(frozen=True)
class Gradable:
    """A word with an opposite (:data:`~fact_reasoner.screening.lexicon.OPPOSITES`) and what it
    is said of: ``word`` "high" of ``head`` "temperature" in "boils at a higher temperature"."""

    head: str
    word: str
    text: str


@dataclass(frozen=True)
class Statement:
    """What the parser reads of one sentence, two adjacent sentences, or a claim."""

    text: str
    #: who acts or is described: named subjects, agents ("by X"), possessors of a subject ("Its
    #: summit"), pronouns resolved
    actors: tuple[Name, ...] = ()
    #: subjects that are someone by their tie to another ("Curie's student", "the brother of X")
    relatives: tuple[Relative, ...] = ()
    #: the actors that are the subject of a passive without "by" (what was done to: "The Nobel
    #: Prize was awarded to her")
    patients: tuple[Name, ...] = ()
    #: a subject is a pronoun the passage gives no name for ("In 2003, he was hired …" in a
    #: passage without a title): the sentence may be about anyone
    unresolved: bool = False
    #: the actors that own the subject rather than are it ("Japan's capital is Tokyo": Japan)
    owners: tuple[Name, ...] = ()
    #: every proper name of the text (with the pronouns' referents)
    names: tuple[Name, ...] = ()
    values: tuple[Value, ...] = ()
    predicates: tuple[Predicate, ...] = ()
    gradables: tuple[Gradable, ...] = ()
    #: the hedge words ("traditionally", "unknown", "is believed")
    hedges: tuple[str, ...] = ()
    #: content lemmas (folded), for alignment
    lemmas: frozenset[str] = frozenset()
    #: nouns that head a phrase, and nouns that modify a common noun, with the phrase they make
    #: ("telephone" → "telephone transmitter")
    heads: frozenset[str] = frozenset()
    modifiers: tuple[tuple[str, str], ...] = ()
    #: titles in quotation marks ("Like Water"), whose words the parser does not read as one name
    quoted: tuple[Name, ...] = ()
    #: names with their place in the sentence: the preposition or relation that attaches them
    #: and what to ("in birth" for "born in Ulm", "amod actor" for "an American actor")
    placed: tuple[tuple[str, Name, "Name | Relative | None"], ...] = ()

    def joined(self, other: "Statement") -> "Statement":
        """Two adjacent sentences read as one window."""
        return Statement(
            f"{self.text} {other.text}",
            self.actors + other.actors,
            self.relatives + other.relatives,
            self.patients + other.patients,
            self.unresolved or other.unresolved,
            self.owners + other.owners,
            self.names + other.names,
            self.values + other.values,
            self.predicates + other.predicates,
            self.gradables + other.gradables,
            self.hedges + other.hedges,
            self.lemmas | other.lemmas,
            self.heads | other.heads,
            self.modifiers + other.modifiers,
            self.quoted + other.quoted,
            self.placed + other.placed,
        )

    def only_as_modifier(self, lemma: str) -> str | None:
        """The phrase in which ``lemma`` modifies another noun, when it never heads a phrase here
        ("telephone transmitter" for "telephone"), else None."""
        if lemma in self.heads:
            return None
        return next((phrase for word, phrase in self.modifiers if word == lemma), None)

    def mentions(self, name: Name) -> bool:
        return any(name.same_as(n) for n in self.names) or any(name.same_as(a) for a in self.actors)


@dataclass(frozen=True)
class Claim:
    """A claim as the screen reads it: its statement, and what its main clause says."""

    statement: Statement
    #: who does or is what the claim says (its subject, or "by X" in a passive); empty when the
    #: subject names nothing ("No mountain", "The telephone" of a passive without a doer)
    doers: tuple[Name, ...] = ()
    #: the claim's subject is someone by their tie to another ("Curie's student won …")
    doer_is_relative: bool = False
    #: the doers are what something was done to (the subject of a passive without "by": "The
    #: Outcasts was released …"), to be compared with such subjects, not with doers
    doers_are_patients: bool = False
    #: the main clause's predicates (the root and the verbs joined to it)
    predicates: tuple[Predicate, ...] = ()
    #: nouns the main clause is about besides the doer (objects, passive subjects, complements)
    themes: frozenset[str] = frozenset()
    #: of those, what the act is done to (direct objects, a passive's subject with "by X")
    objects: frozenset[str] = frozenset()
    #: "No mountain is taller than …": a negated comparison, which a superlative restates
    negated_comparison: bool = False
    #: content lemmas without the doer's words, for finding the deciding sentence
    content: frozenset[str] = frozenset()
    #: how many sentences the claim has (a claim of several is not read)
    sentences: int = 1
    #: the claim's subject when it is someone by their tie to another ("Darwin's mother")
    relative: Relative | None = None

    @property
    def negated(self) -> bool:
        return any(p.negated for p in self.predicates)


# --------------------------------------------------------------------------------------------
# Reading one sentence

Resolver = Callable[["Token"], "Name | None"]


def _is_name(token: "Token") -> bool:
    """A word of a proper name: a proper noun, or a capitalised word the tagger took for a noun or
    an adjective where it cannot be capitalised for opening the sentence ("Rabat" opening a
    sentence is tagged a noun but is a place the named-entity tagger knows; "an English
    mathematician" gives a nationality), never a month or a number."""
    if _is_month(token) or _is_value_token(token) or not token.text[:1].isupper():
        return False
    if token.pos_ == "PROPN":
        return True
    if token.pos_ not in ("NOUN", "ADJ", "X"):
        return False
    return token.ent_type_ in _NAME_ENTITIES or not token.is_sent_start


def _name_tokens(token: "Token") -> list["Token"]:
    """The proper-noun words that make one name with ``token`` (its compound and flat parts, and
    the capitalised modifiers just before it of the same noun: "South Korean", "Puerto Rican")."""
    parts = [token]
    if token.dep_ == "amod":
        doc = token.doc
        i = token.i - 1
        while i >= 0 and doc[i].dep_ == "amod" and doc[i].head.i == token.head.i and _is_name(doc[i]):
            parts.append(doc[i])
            i -= 1
    for child in token.lefts:
        if child.dep_ in ("compound", "flat", "amod") and _is_name(child):
            parts.extend(_name_tokens(child))
    for child in token.rights:
        if child.dep_ == "flat" and _is_name(child):
            parts.extend(_name_tokens(child))
    return sorted(parts, key=lambda t: t.i)


def _heads_a_name(token: "Token") -> bool:
    """``token`` is a name's last word (not a part of a longer name)."""
    if not _is_name(token) or (token.dep_ in ("compound", "flat", "amod") and _is_name(token.head)):
        return False
    following = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
    return not (
        token.dep_ == "amod"
        and following is not None
        and following.dep_ == "amod"
        and following.head.i == token.head.i
        and _is_name(following)
    )


def _name_of(token: "Token") -> Name:
    tokens = _name_tokens(token)
    kinds = {t.ent_type_ for t in tokens} & _NAME_ENTITIES
    kind = "person" if "PERSON" in kinds else "thing" if kinds else ""
    return Name.of(" ".join(t.text for t in tokens), kind)


def _is_value_token(token: "Token") -> bool:
    """A word of a number or date (the tagger also calls "Montevideo" in "born in Montevideo" a
    date: a value has a digit, or is a month or a number word)."""
    if token.ent_type_ not in ("DATE", "TIME", "CARDINAL", "QUANTITY", "PERCENT", "MONEY", "ORDINAL"):
        return False
    return any(ch.isdigit() for ch in token.text) or token.lower_ in _MONTHS or token.lower_ in NUMBER_WORDS


def _is_month(token: "Token") -> bool:
    """A month's name ("April"; not "may" the verb, nor "May" in "Anna May Wong")."""
    return (
        token.lower_ in _MONTHS
        and (token.text[0].isupper() or token.lower_ != "may")
        and token.tag_ != "MD"
        and token.ent_type_ not in ("PERSON", "ORG", "WORK_OF_ART", "FAC", "PRODUCT", "EVENT")
    )


def _possessor(token: "Token") -> "Token | None":
    """The "X's" or "of X" of a noun: ``Its`` summit, the summit ``of Mount Everest``."""
    for child in token.children:
        if child.dep_ == "poss":
            return child
    for child in token.children:
        if child.dep_ == "prep" and child.lower_ == "of":
            for grandchild in child.children:
                if grandchild.dep_ == "pobj" and grandchild.pos_ in ("PROPN", "PRON"):
                    return grandchild
    return None


@dataclass
class _Actors:
    names: list[Name] = field(default_factory=list)
    relatives: list[Relative] = field(default_factory=list)
    patients: list[Name] = field(default_factory=list)
    owners: list[Name] = field(default_factory=list)
    unresolved: bool = False


class _Reader:
    """Reads one sentence (a spaCy span) with a pronoun resolver."""

    def __init__(self, sentence: "Span", resolve: Resolver) -> None:
        self.sentence = sentence
        self.resolve = resolve

    # -- who ---------------------------------------------------------------------------------

    def mention(self, token: "Token", depth: int = 0) -> "Name | Relative | None":
        """Who or what ``token`` names, as an actor: a name, a relative of a name, the possessor
        of an attribute ("Its summit" → the referent of "Its"), a pronoun's referent."""
        if depth > 3:
            return None
        if _is_name(token):
            # "Curie's student Marguerite Perey", "Perey, a student of Curie": someone by their tie
            for child in token.children:
                if child.dep_ in ("appos", "compound") and child.lemma_.lower() in RELATIONAL_NOUNS:
                    owner = _possessor(child)
                    owner_name = self.mention(owner, depth + 1) if owner is not None else None
                    if isinstance(owner_name, Name):
                        return Relative(child.lemma_.lower(), owner_name)
            return _name_of(token)
        if token.pos_ == "PRON":
            if token.lower_ in _RELATIVE:
                clause = token.head
                if clause.dep_ == "relcl":
                    return self.mention(clause.head, depth + 1)
                return None
            return self.resolve(token)
        if token.pos_ == "NOUN":
            owner = _possessor(token)
            owner_name = self.mention(owner, depth + 1) if owner is not None else None
            if token.lemma_.lower() in RELATIONAL_NOUNS:
                # "Beethoven's daughter, Rosalind Franklin, became …": someone by their tie
                return Relative(token.lemma_.lower(), owner_name if isinstance(owner_name, Name) else None)
            for child in token.children:
                if child.dep_ == "appos" and _is_name(child):
                    return _name_of(child)
            if owner_name is not None:
                return owner_name
            # "X was a physicist who developed …": the relative clause's head is X's complement
            if token.dep_ in ("attr", "appos") and depth:
                for sibling in token.head.children:
                    if sibling.dep_ in ("nsubj", "nsubjpass") and sibling.i != token.i:
                        return self.mention(sibling, depth + 1)
        return None

    def actors(self, tokens: Iterable["Token"]) -> "_Actors":
        """The named actors and the relatives among the subjects and agents of ``tokens``'s
        clauses, the actors that are a passive's subject (patients) or own the subject (owners:
        "Its summit"), and whether a subject is a pronoun without a referent."""
        out = _Actors()
        for token in tokens:
            for subject in self._subjects(token):
                for mention in (subject, *subject.conjuncts):
                    found = self.mention(mention)
                    if isinstance(found, Name):
                        out.names.append(found)
                        if subject.dep_ == "nsubjpass":
                            out.patients.append(found)
                        if mention.pos_ == "NOUN" and not _is_name(mention):
                            out.owners.append(found)
                    elif isinstance(found, Relative):
                        out.relatives.append(found)
                    elif mention.lower_ in _PERSONAL | _IMPERSONAL:
                        out.unresolved = True
        return out

    @staticmethod
    def _subjects(predicate: "Token") -> list["Token"]:
        """The doer of a clause: its subject, or in a passive with "by X", X (the passive's
        subject is then what was done to). A copula's complement names its subject again
        ("Canberra is the capital city of Australia" is about Australia too)."""
        agents = [g for c in predicate.children if c.dep_ == "agent" for g in c.children if g.dep_ == "pobj"]
        subjects = [c for c in predicate.children if c.dep_ in ("nsubj", "csubj")]
        if predicate.lemma_ == "be":
            subjects += [c for c in predicate.children if c.dep_ == "attr" and c.pos_ == "NOUN"]
        if agents:
            return subjects + agents
        return subjects + [c for c in predicate.children if c.dep_ == "nsubjpass"]

    # -- what --------------------------------------------------------------------------------

    def predicate(self, token: "Token") -> Predicate:
        """The predicate of the clause headed by ``token``: a verb's lemma, or the complement's
        lemma for a copula ("is a planet" → planet), negated by "not", "never" or a subject
        determined by "no"."""
        lemma = _event(token.lemma_.lower())
        objects = {
            _event(c.lemma_.lower())
            for c in token.children
            if c.dep_ in ("dobj", "attr", "acomp", "oprd", "nsubjpass", "pobj")
        } | {g.lemma_.lower() for c in token.children if c.dep_ == "prep" for g in c.children if g.dep_ == "pobj"}
        if lemma == "be":
            complement = next((c for c in token.children if c.dep_ in ("attr", "acomp", "oprd")), None)
            subject = next((c for c in token.children if c.dep_ == "nsubj"), None)
            if complement is not None and complement.pos_ == "PROPN" and subject is not None and subject.pos_ == "NOUN":
                lemma = subject.lemma_.lower()  # "The capital of Morocco is Rabat" says what the capital is
            elif complement is not None:
                lemma = complement.lemma_.lower()
        negated = any(c.dep_ == "neg" or c.lower_ in ("never", "no longer") for c in token.children)
        for c in token.children:
            if c.dep_ in ("nsubj", "nsubjpass", "dobj", "attr") and any(
                d.dep_ == "det" and d.lower_ in _NEGATING_DETERMINERS for d in c.children
            ):
                negated = True
        form = token.lower_ if lemma == _event(token.lemma_.lower()) else ""
        return Predicate(lemma, negated, frozenset(objects), form)

    def predicates(self) -> list[Predicate]:
        return [
            self.predicate(t)
            for t in self.sentence
            if (t.pos_ == "VERB" and t.dep_ not in ("aux", "auxpass", "amod"))
            or (t.pos_ == "AUX" and t.dep_ not in ("aux", "auxpass"))
        ]

    def values(self) -> list[Value]:
        """Every number and date of the sentence, with whose it is (:meth:`holder`). The years of
        life dates in parentheses after the name that opens the sentence are that person's birth
        and death ("Charles Darwin (1809–1882) was …")."""
        found = self._values()
        values = [replace(v, holder=self.holder(token)) for token, v in found]
        match = self.lifespan_match()
        if match is None:
            return values
        start, end = (self.sentence.start_char + i for i in match.span())
        inside = [i for i, (token, v) in enumerate(found) if v.kind == "year" and start <= token.idx < end]
        opener = next((t for t in self.sentence if _heads_a_name(t)), None)
        owner = _name_of(opener) if opener is not None else None
        for n, i in enumerate(inside):
            event = "birth" if n == 0 else "death"
            values[i] = replace(values[i], anchors=values[i].anchors | {event}, holder=owner or values[i].holder)
        return values

    def _values(self) -> list[tuple["Token", Value]]:
        out: list[tuple[Token, Value]] = []
        tokens = list(self.sentence)
        quoted = _quoted_spans(self.sentence.text)
        for position, token in enumerate(tokens):
            if token.ent_type_ in _NAME_ENTITIES and not _is_value_token(token):
                continue
            if token.ent_type_ == "WORK_OF_ART" or _inside(token.idx - self.sentence.start_char, quoted):
                continue  # a title: "Born on the Fourth of July" gives no date
            text = token.text
            lower = token.lower_
            anchors = self._anchors(token)
            if _is_month(token):
                out.append((token, Value("month", str(_MONTHS[lower]), text, anchors)))
                continue
            neighbours = [tokens[p] for p in (position - 1, position + 1) if 0 <= p < len(tokens)]
            month = next((n for n in neighbours if _is_month(n)), None)
            if _DECADE.match(lower):
                out.append((token, Value("decade", _DECADE.match(lower).group(1), text, anchors)))  # type: ignore[union-attr]
                continue
            ordinal = _ORDINAL.match(lower)
            if ordinal:
                following = tokens[position + 1].lemma_.lower() if position + 1 < len(tokens) else ""
                kind: ValueKind = "century" if following == "century" else "ordinal"
                out.append((token, Value(kind, ordinal.group(1), text, anchors)))
                continue
            numbers = [text] if _DIGITS.match(text) else _numbers_in(text)
            for number in numbers:
                out.append((token, self._number(number, tokens, position, month, anchors)))
            if numbers:
                continue
            if lower in NUMBER_WORDS and token.pos_ in ("NUM", "ADJ", "DET", "NOUN"):
                following = tokens[position + 1].lower_ if position + 1 < len(tokens) else ""
                number = written = NUMBER_WORDS[lower]
                if following in _MULTIPLIERS:
                    number = _scaled(number, following)
                out.append((token, Value("number", number, text, anchors, written if number != written else "")))
        return out

    def holder(self, token: "Token") -> "Name | Relative | None":
        """Whose is what ``token`` says: the subject of the clause it is in (through a participle
        to its main clause), or the noun a participle or relative clause describes ("a son born
        in 2016": the son); None where the parse names none."""
        node = token
        for _ in range(8):
            head = node.head
            if head.i == node.i:
                return None
            if head.pos_ in ("VERB", "AUX"):
                if head.dep_ in ("acl", "relcl") and head.head.pos_ in ("NOUN", "PROPN"):
                    return self.mention(head.head)
                # the clause's grammatical subject: in a passive what was done to, not "by X"
                subjects = [c for c in head.children if c.dep_ in ("nsubj", "nsubjpass", "csubj")]
                if subjects:
                    return self.mention(subjects[0])
                if head.dep_ in ("advcl", "xcomp", "conj", "ccomp"):
                    node = head
                    continue
                return None
            node = head
        return None

    @staticmethod
    def _number(
        text: str, tokens: Sequence["Token"], position: int, month: "Token | None", anchors: frozenset[str]
    ) -> Value:
        """A number written in digits: a day beside a month, a year (1000–2099 without a comma), or a count
        ("3 million" as 3000000)."""
        number = text.replace(",", "")
        if month is not None and "." not in number and 1 <= int(number) <= 31:
            return Value("day", f"{_MONTHS[month.lower_]}-{int(number)}", f"{text} {month.text}", anchors)
        if "." not in number and "," not in text and 1000 <= int(number) <= 2099:
            return Value("year", number, text, anchors)
        following = tokens[position + 1].lower_ if position + 1 < len(tokens) else ""
        written = _plain_number(number)
        if following in _MULTIPLIERS:
            number = _scaled(number, following)
        value = _plain_number(number)
        return Value("number", value, text, anchors, written if written != value else "")

    @staticmethod
    def _anchors(token: "Token") -> frozenset[str]:
        """The content lemmas above a value (at most three), and the objects of the verbs among
        them — what the value is about ("received the 1921 Nobel Prize": prize, receive). Words
        that any value hangs on (a month, "age", "year", "million") say nothing of which fact."""
        anchors: set[str] = set()
        head = token.head
        steps = 0
        while head.i != token.i and steps < 6 and len(anchors) < 3:
            lemma = head.lemma_.lower()
            if head.pos_ in ("NOUN", "PROPN", "VERB", "ADJ") and lemma not in _LIGHT | _GENERIC and not _is_month(head):
                anchors.add(_event(lemma))
                if head.pos_ == "VERB":
                    anchors |= {
                        _event(c.lemma_.lower())
                        for c in head.children
                        if c.dep_ in ("dobj", "nsubjpass") and c.lemma_.lower() not in _GENERIC and not _is_month(c)
                    }
            if head.head.i == head.i:
                break
            token, head = head, head.head
            steps += 1
        return frozenset(anchors)

    def gradables(self) -> list[Gradable]:
        out = []
        for token in self.sentence:
            lemma = token.lemma_.lower()
            if lemma not in OPPOSITES or token.pos_ not in ("ADJ", "ADV", "ADP", "VERB"):
                continue
            if token.dep_ in ("amod", "advmod") and token.pos_ in ("ADJ", "ADV"):
                head = token.head
            elif token.dep_ in ("acomp", "attr", "oprd"):
                subject = next((c for c in token.head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
                head = subject if subject is not None else token.head
            elif token.pos_ == "ADP":
                head = next((c for c in token.children if c.dep_ == "pobj"), token.head)
            elif token.pos_ == "VERB":
                head = next((c for c in token.children if c.dep_ in ("dobj", "nsubjpass")), token)
            else:
                continue
            out.append(Gradable(_event(head.lemma_.lower()), lemma, token.text))
        return out

    def hedges(self) -> list[str]:
        out = []
        tokens = list(self.sentence)
        for position, token in enumerate(tokens):
            lemma = token.lemma_.lower()
            following = tokens[position + 1].lower_ if position + 1 < len(tokens) else ""
            if token.text[:1].isupper() and token.i > self.sentence.start and token.lower_ != "according":
                continue  # a capitalised word inside a sentence is a title ("Unknown", "Think"), no hedge
            if lemma in HEDGE_ADVERBS and token.pos_ == "ADV":
                out.append(token.text)
            elif lemma in HEDGE_ADJECTIVES and token.dep_ in ("acomp", "attr", "oprd", "amod", "conj"):
                out.append(token.text)
            elif lemma in HEDGE_VERBS and token.pos_ == "VERB":
                passive = any(c.dep_ in ("auxpass", "nsubjpass") for c in token.children) or token.dep_ == "amod"
                clausal = any(c.dep_ in ("ccomp", "xcomp") for c in token.children)
                subject = next((c for c in token.children if c.dep_ == "nsubj"), None)
                # "some sources say that …", "others claim …": told by no one in particular
                vague = subject is not None and (
                    subject.lower_ in ("some", "others", "many", "several")
                    or any(
                        d.lower_ in ("some", "many", "several", "other")
                        for d in subject.children
                        if d.dep_ == "det" or d.dep_ == "amod"
                    )
                )
                if passive or (clausal and vague):
                    out.append(token.text)
            elif lemma in HEDGE_MODALS and token.tag_ == "MD":
                out.append(token.text)
            elif token.lower_ == "according" and following == "to":
                out.append("according to")
            elif token.lower_ == "could" and following == "have":
                out.append("could have")
            elif lemma in CERTAINTY_WORDS and any(
                c.dep_ == "neg" or c.lower_ in ("little", "not") for c in (*token.children, *token.head.children)
            ):
                out.append(f"not {token.text}")
        return out

    def names(self) -> list[Name]:
        out = []
        for token in self.sentence:
            if _heads_a_name(token):
                out.append(_name_of(token))
            elif token.pos_ == "PRON" and token.lower_ not in _RELATIVE:
                referent = self.resolve(token)
                if referent is not None:
                    out.append(referent)
        return out

    def placed(self) -> list[tuple[str, Name, "Name | Relative | None"]]:
        """Each name with what attaches it — the preposition and what it hangs on ("in birth"),
        the noun it modifies ("amod actor"), or the verb it is the object of ("dobj win") — and
        whose it is (:meth:`holder`)."""
        out = []
        for token in self.sentence:
            if not _heads_a_name(token):
                continue
            name = _name_of(token)
            head = token.head
            if token.dep_ == "pobj" and head.dep_ in ("prep", "agent"):
                out.append((f"{head.lower_} {_event(head.head.lemma_.lower())}", name, self.holder(token)))
            elif token.dep_ in ("amod", "compound", "nmod") and head.pos_ == "NOUN":
                out.append((f"mod {_event(head.lemma_.lower())}", name, self.holder(token)))
            elif token.dep_ in ("nsubj", "attr", "acomp") and head.lemma_ == "be":
                # "Rabat is the capital city of Morocco", "The capital of Morocco is Casablanca":
                # the name is what the copula's noun is
                other = next((c for c in head.children if c.dep_ in ("attr", "nsubj") and c.i != token.i), None)
                noun = other.lemma_.lower() if other is not None and other.pos_ == "NOUN" else "be"
                out.append((f"is {noun}", name, self.holder(token)))
            elif token.dep_ == "appos" and head.pos_ == "NOUN":
                out.append(
                    (f"is {head.lemma_.lower()}", name, self.holder(token))
                )  # "her mother, Wanjiru Kamau, was …"
            elif token.dep_ in ("dobj", "attr", "oprd", "acomp"):
                out.append((f"{token.dep_} {_event(head.lemma_.lower())}", name, self.holder(token)))
        return out

    def lemmas(self) -> tuple[frozenset[str], frozenset[str], tuple[tuple[str, str], ...]]:
        """Content lemmas (for alignment), the nouns that head a phrase, and the nouns that
        modify a common noun with the phrase they make."""
        content: set[str] = set()
        heads: set[str] = set()
        modifiers: list[tuple[str, str]] = []
        for token in self.sentence:
            if token.pos_ not in ("NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"):
                continue
            lemma = _event(fold(token.lemma_))
            if lemma in _NOT_CONTENT or not lemma:
                continue
            content.add(lemma)
            if token.pos_ == "NOUN" and token.dep_ == "compound" and token.head.pos_ == "NOUN":
                modifiers.append((lemma, f"{token.text} {token.head.text}"))
            elif token.pos_ in ("NOUN", "PROPN"):
                heads.add(lemma)
        for name in self.names():
            content.update(name.words)
        return frozenset(content), frozenset(heads), tuple(modifiers)

    def aliases(self) -> list[tuple[Name, Name]]:
        """(name, other name) pairs the sentence gives: "Wong Liu Tsong, known professionally as
        Anna May Wong", "Henry Santos Jeter (born Henry Santos …)", "Joseph Vieira, called Joey"."""
        out = []
        for token in self.sentence:
            if token.lemma_.lower() not in ("know", "call", "name", "nickname", "credit", "bear", "bore"):
                continue
            owner = token.head if token.dep_ in ("acl", "relcl", "appos", "advcl") else None
            if owner is None:
                owner = next((c for c in token.children if c.dep_ in ("nsubjpass", "nsubj")), None)
            if owner is None or not _is_name(owner):
                continue
            others = [g for c in token.children if c.dep_ == "prep" and c.lower_ == "as" for g in c.children]
            others += [c for c in token.children if c.dep_ in ("oprd", "attr", "dobj", "npadvmod")]
            for other in others:
                if _is_name(other):
                    out.append((_name_of(owner), _name_of(other)))
        return out

    def lifespan_match(self) -> "re.Match[str] | None":
        """Life dates in parentheses right after the name that opens the sentence ("Albert
        Einstein (14 March 1879 – 18 April 1955) was …", "(born 9 October 1970)"): the sentence
        tells a birth (and a death) without a verb for it."""
        text = self.sentence.text
        match = _LIFESPAN.search(text)
        if match is None or any(w[:1].islower() for w in text[: match.start()].split()):
            return None
        return match

    def lifespan(self) -> bool:
        return self.lifespan_match() is not None

    def statement(self) -> Statement:
        found = self.actors(t for t in self.sentence if t.pos_ in ("VERB", "AUX") or t.dep_ == "ROOT")
        actors = found.names
        for name, alias in self.aliases():
            if any(name.same_as(actor) for actor in actors):
                actors.append(alias)
        lemmas, heads, modifiers = self.lemmas()
        if self.lifespan():
            lemmas |= {"birth", "death"}
        return Statement(
            self.sentence.text.strip(),
            tuple(actors),
            tuple(found.relatives),
            tuple(found.patients),
            found.unresolved,
            tuple(found.owners),
            tuple(self.names()),
            tuple(self.values()),
            tuple(self.predicates()),
            tuple(self.gradables()),
            tuple(self.hedges()),
            lemmas,
            heads,
            modifiers,
            tuple(Name.of(q, "thing") for q in _QUOTED.findall(self.sentence.text) if q.strip()),
            tuple(self.placed()),
        )


def _numbers_in(text: str) -> list[str]:
    """The numbers of a token that is not one number: a range "1867–1934" → 1867, 1934 ("1954–57"
    → 1954, 1957), or a number glued to other marks ("1966){{cite" → 1966); none in a word
    that only contains digits ("B52", "3rd")."""
    if not text[:1].isdigit() and not any(d in text for d in "–—-"):
        return []
    numbers = _NUMBERS_IN.findall(text)
    for i in range(1, len(numbers)):
        if len(numbers[i - 1]) == 4 and len(numbers[i]) == 2:
            numbers[i] = numbers[i - 1][:2] + numbers[i]
    return numbers


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    return [match.span() for match in _QUOTED.finditer(text)]


def _inside(offset: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in spans)


def _event(lemma: str) -> str:
    return _SAME_EVENT.get(lemma, lemma)


def _plain_number(number: str) -> str:
    value = float(number)
    return str(int(value)) if value == int(value) else str(value)


def _scaled(number: str, multiplier: str) -> str:
    return _plain_number(str(float(number) * _MULTIPLIERS[multiplier]))


# --------------------------------------------------------------------------------------------
# Passages and claims


@dataclass
class _Referents:
    """Whom "he"/"she" and "it" name at this point of a passage."""

    person: Name | None = None
    thing: Name | None = None
    persons: set[str] = field(default_factory=set)

    def resolve(self, token: "Token") -> Name | None:
        word = token.lower_
        if word in _PERSONAL:
            return Name(self.person.text, self.person.words, "person") if self.person else None
        if word in _IMPERSONAL:
            return self.thing
        return None

    def update(self, sentence: "Span", actors: Sequence[Name]) -> None:
        persons = {fold(t.text) for t in sentence if t.ent_type_ == "PERSON"}
        for actor in actors:
            if set(actor.words) & persons:
                self.person = actor
                break
        for actor in actors:
            if not set(actor.words) & persons:
                self.thing = actor
                break


@lru_cache(maxsize=4096)
def read_passage(text: str, title: str | None = None) -> tuple[Statement, ...]:
    """Each sentence of a passage as a :class:`Statement`, its pronouns resolved to the names
    the passage has given so far (the title first).

    >>> [s.actors[0].text for s in read_passage("Mount Everest is Earth's highest mountain. Its summit is 8,849 metres high.")]
    ['Mount Everest', 'Mount Everest']
    """
    doc = parse(text)
    referents = _Referents()
    if title:
        referents.person = referents.thing = Name.of(plain_name(title))
    statements = []
    for sentence in doc.sents:
        if not sentence.text.strip():
            continue
        statement = _Reader(sentence, referents.resolve).statement()
        statements.append(statement)
        referents.update(sentence, statement.actors)
    return tuple(statements)


def plain_name(text: str) -> str:
    """A title or topic as a name: without a disambiguation in parentheses or a title after a
    comma ("Owen Wright (surfer)" → "Owen Wright", "William Waldegrave, Baron Waldegrave of North
    Hill" → "William Waldegrave")."""
    text = re.sub(r"\s*\([^()]*\)\s*", " ", text).strip()
    return text.split(",")[0].strip() or text


@lru_cache(maxsize=4096)
def read_claim(text: str, referent: str | None = None) -> Claim:
    """A claim as the screen reads it. ``referent`` is whom a pronoun opening the claim names
    (the subject of the response sentence the atom came from, or the record's topic), if known.

    >>> claim = read_claim("The telephone was invented by Thomas Edison.")
    >>> [d.text for d in claim.doers], sorted(claim.themes)
    (['Thomas Edison'], ['telephone'])
    >>> read_claim("No mountain is taller than Mount Everest.").negated_comparison
    True
    """
    doc = parse(text)
    sentences = [s for s in doc.sents if s.text.strip()]
    named = Name.of(plain_name(referent)) if referent else None

    def resolve(token: "Token") -> Name | None:
        if named is None:
            return None
        if token.lower_ in _PERSONAL:
            return Name(named.text, named.words, "person")  # "she" names a person
        return named if token.lower_ in _IMPERSONAL | {"they", "their", "them"} else None

    statements = [_Reader(s, resolve).statement() for s in sentences]
    statement = statements[0] if statements else Statement(text)
    for other in statements[1:]:
        statement = statement.joined(other)
    if not sentences:
        return Claim(statement, sentences=0)
    main = sentences[0].root
    clause = [main, *(c for c in main.children if c.dep_ == "conj" and c.pos_ in ("VERB", "AUX"))]
    reader = _Reader(sentences[0], resolve)
    found = reader.actors(clause)
    doers, relatives, patients = found.names, found.relatives, found.patients
    predicates = tuple(reader.predicate(t) for t in clause)
    themes, objects = set(), set()
    for token in clause:
        agentive = any(c.dep_ == "agent" for c in token.children)
        for child in token.children:
            done_to = child.dep_ == "dobj" or (child.dep_ == "nsubjpass" and agentive)
            if child.pos_ == "NOUN" and (done_to or child.dep_ == "attr"):
                themes.add(_event(child.lemma_.lower()))
                if done_to:
                    objects.add(_event(child.lemma_.lower()))
    comparison = any(
        t.tag_ in ("JJR", "RBR") and any(c.lower_ == "than" for c in t.children) for t in sentences[0]
    ) and any(p.negated for p in predicates)
    doer_words = {w for d in doers for w in d.words}
    return Claim(
        statement,
        tuple(doers),
        bool(relatives) and not doers,
        bool(doers) and len(patients) == len(doers),
        predicates,
        frozenset(themes),
        frozenset(objects),
        comparison,
        frozenset(statement.lemmas - doer_words),
        len(sentences),
        relatives[0] if relatives and not doers else None,
    )


def window_statements(statements: Sequence[Statement]) -> list[Statement]:
    """Every sentence, and every two adjacent sentences read as one."""
    windows = list(statements)
    windows += [a.joined(b) for a, b in zip(statements, statements[1:])]
    return windows


@lru_cache(maxsize=4096)
def referent_of(sentence: str | None, topic: str | None) -> str | None:
    """Whom a claim that opens with a pronoun ("She was born in Ulm.") is about: the named
    subject of the response sentence it was made from, else the record's topic when the topic
    is a name (a proper noun or a named entity: "Marie Curie", not "General knowledge quiz").

    >>> referent_of("Albert Einstein, who played the violin, was born in Ulm.", None)
    'Albert Einstein'
    >>> referent_of(None, "General knowledge quiz") is None, referent_of(None, "Marie Curie")
    (True, 'Marie Curie')
    """
    if sentence:
        doers = read_claim(sentence).doers
        if doers:
            return doers[0].text
    if topic and topic.strip():
        doc = parse(topic.strip())
        if any(t.pos_ == "PROPN" for t in doc) or any(e.label_ in _NAME_ENTITIES for e in doc.ents):
            return topic.strip()
    return None

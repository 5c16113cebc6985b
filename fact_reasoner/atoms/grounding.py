"""Does an atom say only what the response says, and can it be read on its own?

Two word-level checks on the atoms the atomizer and reviser made, no model:

Grounding (:func:`ungrounded_terms`)
    A small model asked for the atomic facts of "Ada Lovelace is called the first computer
    programmer" may add what it knows about Ada Lovelace ("born in London", "born in 1815"):
    atoms the response never states. Judging them would score the model's knowledge, not the
    response. An atom is *ungrounded* when one of its numbers or proper names occurs neither in
    the response nor in the question it answers:

    - numbers: digit strings ("1815", "1,000" → 1000, "8.5", the 1940 of "1940s"); a number
      up to twenty or a round ten also counts as present when the response spells it as a word
      ("two", "forty");
    - proper names: capitalised words ("London", the "Babbage" of "Babbage's", both halves of
      "Heyward-Bey"), except the function words that open a sentence ("The", "She", "In" …;
      :data:`NOT_NAMES`). A name is present when the response has the same word, ignoring case,
      accents and a plural "s", or a capitalised word that shares its first letters with it: a common prefix of at least
      four letters, at most three letters shorter than the shorter word, and the two lengths at
      most three apart, so the "German" of "Germany", "Canadian" of "Canada", "British" of
      "Britain" count as present (and "Lovelace" is not present in "love"); an
      all-capital word ("US", "NBA") is present when it is the initials of a run of capitalised
      words of the response ("United States").

    Names the reviser brings in from elsewhere in the same response ("She" → "Ada Lovelace")
    are present, by construction. Known misses (a name that is a paraphrase, "France" for
    "French", is called ungrounded; an invented fact with no number or name, "She was
    married", is not seen).

Standing alone (:func:`unresolved_reference`)
    An atom such as "It was first climbed in 1953." is compared with passages about
    whatever "it" turns out to be. An atom has an *unresolved reference* when it contains a
    third-person pronoun (:data:`PRONOUNS`) and no proper name comes before that pronoun in
    the atom ("Ada Lovelace published her notes" is resolved; "Her notes were published" and
    "It lies in Nepal" are not), an object pronoun anywhere ("George Mallory climbed it",
    "Marie Curie married him": not the atom's subject, which would be "himself"), or a
    demonstrative ("This album went gold", "That year he moved"). A description ("The film won an award") is not counted: it
    often names its subject well enough ("The company was founded by Kang Ji-hwan").
    :func:`needs_revision` says which atoms the reviser must see at all: those with a pronoun
    anywhere, those that open with a description or name nothing, and those whose name is
    part of a longer name in the response ("Curie" where the response says "Marie Curie").

Not an atom (:func:`claimless_clause`)
    A passive whose participle needs a complement and has none ("The Great Wall of China was
    built.", "… was built mainly.") states no fact; judged, it is "supported" by any passage
    about the wall. Such a clause is set aside, listed in the row's ``fragment_atoms`` with the
    reason and counted (``counters.fragment_atoms``), like an ungrounded atom.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..schema import Atom
from .frames import NUMBER_WORDS

__all__ = [
    "NOT_NAMES",
    "PRONOUNS",
    "FRAGMENT_FIELD",
    "UNGROUNDED_FIELD",
    "AtomCheck",
    "atom_marks",
    "CheckedAtoms",
    "check_atom",
    "check_atoms",
    "claimless_clause",
    "name_runs",
    "needs_revision",
    "unfaithful_revision",
    "ungrounded_terms",
    "unresolved_reference",
]

#: third-person pronouns: an atom that uses one before naming anything does not stand alone
PRONOUNS = frozenset("he she it they him her his hers its their theirs them himself herself itself themselves".split())
#: capitalised words that open a sentence without naming anything
NOT_NAMES = PRONOUNS | frozenset(
    """a an the this that these those there here i we you my our your in on at by for from of to
    with as after before during since until while when where which who whom whose what how why
    both each every all some many most several few other another such no not none neither either
    and or but also although though however then thus born known according among between into
    over under about around throughout following despite within without unlike like
    is was are were be been has have had do does did one two three first second last later early
    today currently""".split()
)

_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# a number word as a digit string; "one" is left out: it is mostly a pronoun ("one of the first")
_WORD_NUMBERS = {digits: word for word, digits in NUMBER_WORDS.items()}


def _fold(text: str) -> str:
    """Lower case without accents: "Daullé" and "Daulle" are the same name."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _numbers(text: str) -> list[str]:
    """The digit strings of ``text``, thousands separators removed ("1,000" → "1000")."""
    out = []
    for match in _NUMBER.finditer(text):
        value = re.sub(r"(?<=\d),(?=\d{3}\b)", "", match.group()).rstrip(".,")
        out.append(value)
    return out


def _is_name(word: str) -> bool:
    return word[:1].isupper() and _fold(word) not in NOT_NAMES


def name_runs(text: str) -> list[tuple[str, ...]]:
    """Runs of consecutive capitalised words that are names ("Marie Curie", "Analytical
    Engine"); function words at a sentence start ("The", "She") are not names.

    >>> name_runs("She worked with Charles Babbage on the Analytical Engine.")
    [('Charles', 'Babbage'), ('Analytical', 'Engine')]
    """
    runs: list[tuple[str, ...]] = []
    current: list[str] = []
    position = 0
    for match in _WORD.finditer(text):
        word = match.group()
        gap = text[position : match.start()]
        position = match.end()
        # a run continues over spaces, hyphens and apostrophes, not over punctuation
        if current and (not _is_name(word) or not re.fullmatch(r"[\s'’-]*", gap)):
            runs.append(tuple(current))
            current = []
        if _is_name(word):
            current.append(word)
    if current:
        runs.append(tuple(current))
    return runs


@dataclass(frozen=True)
class _Source:
    """The words, numbers and name runs of the text an atom must be grounded in."""

    words: frozenset[str]
    numbers: frozenset[str]
    initials: frozenset[str]
    #: the capitalised words, folded: a derived name is looked for among these only
    names: frozenset[str]

    @staticmethod
    def of(texts: Iterable[str]) -> "_Source":
        words: set[str] = set()
        numbers: set[str] = set()
        initials: set[str] = set()
        names: set[str] = set()
        for text in texts:
            words.update(_fold(w) for w in _WORD.findall(text))
            numbers.update(_numbers(text))
            names.update(_fold(w) for w in _WORD.findall(text) if w[:1].isupper())
            for run in name_runs(text):
                for start in range(len(run)):
                    for end in range(start + 2, len(run) + 1):
                        initials.add("".join(w[0] for w in run[start:end]).casefold())
        return _Source(frozenset(words), frozenset(numbers), frozenset(initials), frozenset(names))

    def has_number(self, number: str) -> bool:
        if number in self.numbers:
            return True
        word = _WORD_NUMBERS.get(number)
        return word is not None and word in self.words

    def has_name(self, name: str) -> bool:
        folded = _fold(name)
        if folded in self.words or f"{folded}s" in self.words or folded.removesuffix("s") in self.words:
            return True
        if len(name) >= 2 and name.isupper() and folded in self.initials:
            return True
        for word in self.names:
            shorter = min(len(word), len(folded))
            common = len(_common_prefix(word, folded))
            if common >= 4 and common >= shorter - 3 and abs(len(word) - len(folded)) <= 3:
                return True
        return False


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def ungrounded_terms(atom: str, *sources: str) -> list[str]:
    """The numbers and proper names of ``atom`` that none of ``sources`` (the response, the
    question) contains, in the order they appear (module docstring for the matching rules).

    >>> ungrounded_terms("Ada Lovelace was born in London in 1815.", "Ada Lovelace wrote notes on Babbage's engine.")
    ['London', '1815']
    >>> ungrounded_terms("Ada Lovelace wrote notes on the Analytical Engine.", "Her notes on the analytical engine")
    ['Ada', 'Lovelace']
    >>> ungrounded_terms("The US Navy had two ships.", "the United States Navy had two ships")
    []
    """
    source = _Source.of(sources)
    missing: list[str] = []
    for number in _numbers(atom):
        if not source.has_number(number) and number not in missing:
            missing.append(number)
    for run in name_runs(atom):
        for name in run:
            if not name[0].isdigit() and not source.has_name(name) and name not in missing:
                missing.append(name)
    order = {term: atom.find(term) for term in missing}
    return sorted(missing, key=lambda term: order[term])


#: pronouns that stand for someone or something other than the atom's own subject even after a
#: name ("George Mallory climbed it", "Marie married him"): the subject would be "himself"
OBJECT_PRONOUNS = frozenset("him them it".split())
#: demonstratives that point to something the atom does not name ("This album", "these works");
#: "that" only where it opens the atom ("That year …"): elsewhere it is mostly a conjunction
DEMONSTRATIVES = frozenset("this these those".split())


def unresolved_reference(atom: str) -> str | None:
    """The first word of ``atom`` that refers to something the atom does not name, else None:
    a third-person pronoun before any proper name ("It was first climbed in 1953."), an object
    pronoun anywhere ("George Mallory climbed it.": *it* is not George Mallory), or a
    demonstrative ("This album sold a million copies.", "That year he moved.").

    >>> unresolved_reference("It was first climbed in 1953."), unresolved_reference("Her father was a poet.")
    ('It', 'Her')
    >>> unresolved_reference("George Mallory climbed it."), unresolved_reference("This album went gold.")
    ('it', 'This')
    >>> unresolved_reference("Ada Lovelace published her notes.") is None
    True
    """
    named = False
    for index, match in enumerate(_WORD.finditer(atom)):
        word = match.group()
        folded = _fold(word)
        if folded in PRONOUNS:
            if not named or folded in OBJECT_PRONOUNS:
                return word
            continue
        if folded in DEMONSTRATIVES or (index == 0 and folded == "that"):
            return word
        named = named or _is_name(word)
    return None


#: participles that say nothing until they say what, when, where or by whom: "The Great Wall
#: of China was built." states no fact, "… was built by the Ming" does
_NEEDS_COMPLEMENT = frozenset(
    """built made founded created designed written born constructed established located situated
    named called known considered based composed produced directed developed formed raised used
    completed released published recorded discovered invented""".split()
)
_ADVERB = r"(?:mainly|mostly|largely|primarily|originally|later|also|first|then|finally|eventually|initially|partly)"
_CLAIMLESS = re.compile(
    rf"^(?P<subject>.+?)\s+(?:was|were|is|are|has been|have been|had been)\s+(?:{_ADVERB}\s+)?"
    rf"(?P<participle>[a-z]+)(?:\s+{_ADVERB})?\s*[.!]?\s*$"
)


def claimless_clause(atom: str) -> str | None:
    """Why ``atom`` is a clause without a claim, or None: a passive whose participle needs a
    complement and has none ("The Great Wall of China was built.", "… was built mainly.").

    >>> claimless_clause("The Great Wall of China was built.")
    "a clause without a claim: 'was built' says not what, when, where or by whom"
    >>> claimless_clause("The Great Wall of China was built by the Ming.") is None
    True
    >>> claimless_clause("Marie Curie was Polish.") is None
    True
    """
    match = _CLAIMLESS.match(atom.strip())
    if not match or match.group("participle") not in _NEEDS_COMPLEMENT:
        return None
    verb = re.search(r"(?:was|were|is|are|has been|have been|had been)\s", atom)
    phrase = f"{verb.group().strip()} {match.group('participle')}" if verb else match.group("participle")
    return f"a clause without a claim: {phrase!r} says not what, when, where or by whom"


#: words a revision may drop: the references it resolves
_REPLACEABLE = PRONOUNS | frozenset("the a an this that these those".split())
#: words a revision may add wherever a reference becomes explicit: "Its height" → "The height
#: of Mount Everest"
_CONNECTORS = frozenset("of the a an".split())


def _content_words(text: str) -> list[str]:
    """Folded words, a possessive "'s" left out ("Ada's" → "ada")."""
    return [_fold(w) for w in _WORD.findall(re.sub(r"['’]s\b", "", text))]


def unfaithful_revision(original: str, revised: str, response: str) -> str | None:
    """Why ``revised`` is not a faithful rewrite of ``original``, or None when it is.

    A revision may replace a reference by what it refers to, nothing else: every word it adds
    must occur in ``response`` (the name it brings in), and every word of ``original`` must
    stay, except pronouns and determiners (:data:`PRONOUNS`, "the", "this" …: the references
    it resolves). Case and a possessive "'s" are ignored. Measured why: for "Ada Lovelace is
    often called the first computer programmer because of her notes on Babbage's Analytical
    Engine." the 1.5B reviser (v1) wrote "Ada Lovelace's notes on Babbage's Analytical Engine
    influenced the development of computers."

    >>> unfaithful_revision("She discovered radium.", "Marie Curie discovered radium.", "Marie Curie was a chemist.")
    >>> unfaithful_revision("Her notes were read.", "Ada's notes influenced computing.", "Ada wrote notes.")
    "adds 'influenced', 'computing'; drops 'were', 'read'"
    >>> unfaithful_revision("Its height is 8,849 metres.", "The height of Mount Everest is 8,849 metres.",
    ...                     "Mount Everest is the highest mountain. Its height is 8,849 metres.")
    """
    before, after = _content_words(original), _content_words(revised)
    known = set(_content_words(response)) | set(before) | _CONNECTORS
    added = list(dict.fromkeys(w for w in after if w not in known))
    kept = set(after)
    dropped = list(dict.fromkeys(w for w in before if w not in kept and w not in _REPLACEABLE))
    problems = []
    if added:
        problems.append("adds " + ", ".join(repr(w) for w in added))
    if dropped:
        problems.append("drops " + ", ".join(repr(w) for w in dropped))
    return "; ".join(problems) or None


#: an atom that opens with a description instead of a name ("The film …", "This album …")
_DESCRIPTION = re.compile(r"\s*(?i:the|this|that|these|those)\s+[a-z]")


def needs_revision(atom: str, response: str) -> bool:
    """Whether the reviser must see ``atom``: it has a pronoun (anywhere: "Ada worked with
    him"), it opens with a description ("The film grossed $5 million in the US") or names
    nothing, or one of its names is part of a longer name in ``response`` ("Curie" where the
    response says "Marie Curie"). An atom that already names what it is about in full is left
    as it is.

    >>> needs_revision("Marie Curie was born in Warsaw.", "Marie Curie was born in Warsaw.")
    False
    >>> needs_revision("She discovered radium.", "Marie Curie …"), needs_revision("Curie won.", "Marie Curie won.")
    (True, True)
    """
    if any(_fold(w) in PRONOUNS for w in _WORD.findall(atom)):
        return True
    if _DESCRIPTION.match(atom):
        return True
    runs = [tuple(_fold(w) for w in run) for run in name_runs(atom)]
    if not runs:
        return True
    response_runs = [tuple(_fold(w) for w in run) for run in name_runs(response)]
    for run in runs:
        # a shorter form even where the response uses it too: "Curie" in "Curie won" is the
        # "Marie Curie" of an earlier sentence
        if any(len(longer) > len(run) and _contains(longer, run) for longer in response_runs):
            return True
    return False


def _contains(longer: tuple[str, ...], run: tuple[str, ...]) -> bool:
    return any(longer[i : i + len(run)] == run for i in range(len(longer) - len(run) + 1))


@dataclass(frozen=True)
class AtomCheck:
    """The checks of one atom: its ungrounded terms (empty when grounded) and its unresolved
    pronoun (None when it stands alone)."""

    ungrounded: tuple[str, ...]
    unresolved: str | None

    @property
    def grounded(self) -> bool:
        return not self.ungrounded

    @property
    def reason(self) -> str | None:
        """Why the atom is not judged ("not in the response: 'London', '1815'"), or None."""
        if not self.ungrounded:
            return None
        return "not in the response: " + ", ".join(repr(term) for term in self.ungrounded)


def check_atom(atom: str, response: str, question: str | None = None) -> AtomCheck:
    """Both checks of ``atom`` against ``response`` (and the ``question`` it answers)."""
    sources = (response, question) if question else (response,)
    return AtomCheck(tuple(ungrounded_terms(atom, *sources)), unresolved_reference(atom))


#: the output field that lists the atoms not judged because they are ungrounded
UNGROUNDED_FIELD = "ungrounded_atoms"
#: the output field that lists the clauses set aside because they state nothing
FRAGMENT_FIELD = "fragment_atoms"


@dataclass(frozen=True)
class CheckedAtoms:
    """The atoms of a response after both checks.

    ``judged``: the atoms to judge, each carrying ``unresolved_reference`` (the pronoun) when
    it does not stand alone, and — when ungrounded atoms are kept — ``ungrounded_reason``;
    ``ungrounded``: the atoms left out of judging, each with its ``ungrounded_reason``;
    ``checked``: False for atoms the record carried (nothing was checked: they are judged as
    given).
    """

    judged: list[Atom]
    ungrounded: list[Atom] = field(default_factory=list)
    checked: bool = True
    #: clauses without a claim (:func:`claimless_clause`): not atoms, not judged, each with its
    #: ``fragment_reason``
    fragments: list[Atom] = field(default_factory=list)

    def counters(self) -> dict[str, int]:
        """``ungrounded_atoms`` (excluded or kept), ``unresolved_atoms`` and ``fragment_atoms``;
        none when nothing was checked."""
        if not self.checked:
            return {}
        every = [*self.judged, *self.ungrounded]
        return {
            "ungrounded_atoms": sum(1 for a in every if getattr(a, "ungrounded_reason", None)),
            "unresolved_atoms": sum(1 for a in every if getattr(a, "unresolved_reference", None)),
            "fragment_atoms": len(self.fragments),
        }

    def listed_fragments(self) -> list[dict[str, str]]:
        """The clauses set aside as the output lists them: id, text, original, reason."""
        return [
            {"id": a.id, "text": a.text, "original": a.original or a.text, "reason": a.fragment_reason}  # type: ignore[attr-defined]
            for a in self.fragments
        ]

    def listed(self) -> list[dict[str, str]]:
        """The excluded atoms as the output lists them: id, text, original, reason."""
        return [
            {"id": a.id, "text": a.text, "original": a.original or a.text, "reason": a.ungrounded_reason}  # type: ignore[attr-defined]
            for a in self.ungrounded
        ]


def check_atoms(atoms: Sequence[Atom], response: str, question: str | None, *, keep_ungrounded: bool) -> CheckedAtoms:
    """Both checks on the atoms made from ``response``: an ungrounded atom is set aside (or,
    with ``keep_ungrounded``, judged with its reason on it); an atom that does not stand alone
    is judged and marked."""
    judged: list[Atom] = []
    ungrounded: list[Atom] = []
    fragments: list[Atom] = []
    for atom in atoms:
        claimless = claimless_clause(atom.text)
        if claimless:  # not an atom: there is nothing to judge
            fragments.append(atom.model_copy(update={"fragment_reason": claimless}))
            continue
        check = check_atom(atom.text, response, question)
        marks: dict[str, str] = {}
        if check.reason:
            marks["ungrounded_reason"] = check.reason
        if check.unresolved:
            marks["unresolved_reference"] = check.unresolved
        marked = atom.model_copy(update=marks) if marks else atom
        (ungrounded if check.reason and not keep_ungrounded else judged).append(marked)
    return CheckedAtoms(judged, ungrounded, fragments=fragments)


#: the marks an atom can carry into its output verdict (:func:`check_atoms`, the atomizer's and
#: the reviser's failure reasons)
ATOM_MARKS = ("unresolved_reference", "ungrounded_reason", "atomizer_failure", "reviser_failure", "reviser_rejected")


def atom_marks(atom: Atom) -> dict[str, str]:
    """The marks ``atom`` carries (:data:`ATOM_MARKS`), for its verdict in the output."""
    return {name: value for name in ATOM_MARKS if (value := getattr(atom, name, None))}

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

The topic's pronouns (:func:`topic_reference`, :func:`resolve_by_topic`)
    A biography calls its subject "he" or "she" in most sentences, and the reviser's most common
    rewrite is the topic's name for that pronoun ("He was born in 1809." → "Abraham Lincoln was
    born in 1809."). Where the response refers to the topic with one gender's pronouns only and
    a sentence that opens with the topic's name is followed by one whose subject is such a
    pronoun, the rule writes the name for them without a model call, and the full name for a
    part of it ("Lincoln" → "Abraham Lincoln"); what it cannot resolve ("they", "there", "the
    film") still goes to the reviser.

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
from .frames import NUMBER_WORDS, light_stem

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
    "complete_pieces",
    "name_runs",
    "needs_revision",
    "resolve_by_topic",
    "resolve_in_place",
    "sentence_piece",
    "TopicReference",
    "topic_reference",
    "unfaithful_revision",
    "ungrounded_terms",
    "unresolved_reference",
    "unstated_words",
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
    today currently together meanwhile subsequently eventually finally initially originally previously
    recently afterwards moreover additionally furthermore now""".split()
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


#: how many content words an atom may have that the response does not (:func:`unstated_words`)
#: before it is taken to say what the response does not
MIN_UNSTATED_WORDS = 2
#: verbs an atom may use to state what the response says in other words ("took place", "is called")
_LIGHT_VERBS = frozenset(
    "take took taken takes taking place call called calls make made makes making come came comes give gave given".split()
)


def _stems(text: str) -> dict[str, str]:
    """The content words of ``text`` (not :data:`NOT_NAMES`, not a light verb, three letters or
    more), stemmed (:func:`~fact_reasoner.atoms.frames.light_stem`) → the word as written."""
    out: dict[str, str] = {}
    for word in _WORD.findall(text):
        folded = _fold(word)
        if len(folded) >= 3 and folded not in NOT_NAMES and folded not in _LIGHT_VERBS and not folded.isdigit():
            out.setdefault(light_stem(folded), word)
    return out


def unstated_words(atom: str, *sources: str) -> list[str]:
    """The content words of ``atom`` that none of ``sources`` has, or [] when there are fewer
    than :data:`MIN_UNSTATED_WORDS`: an atom that brings in two words of its own says what the
    response does not ("The Great Wall of China is a man-made structure.", "Julia Faye was 72
    years old when she died." from her dates). Words are compared by stem, and a word of five
    letters or more also by its first five ("appointment"/"appointed"); light verbs ("took
    place", "is called") do not count. One word is a paraphrase ("earned her PhD", "performed
    in"). Measured as a yardstick: 9 of the 4,921 human atoms of the FActScore dev biographies
    have two (a "birth name" the response does not give, "a member of the Privy Council").

    >>> unstated_words("The Great Wall of China is a man-made structure.", "The Great Wall of China is in China.")
    ['man', 'structure']
    >>> unstated_words("The appointment took place in 2005.", "She was appointed in 2005.")
    []
    """
    have: set[str] = set()
    for source in sources:
        have.update(_stems(source))
    prefixes = {stem[:5] for stem in have if len(stem) >= 5}
    missing = [
        word
        for stem, word in _stems(atom).items()
        if stem not in have and not (len(stem) >= 5 and stem[:5] in prefixes)
    ]
    return missing if len(missing) >= MIN_UNSTATED_WORDS else []


#: pronouns that stand for someone or something other than the atom's own subject even after a
#: name ("George Mallory climbed it", "Marie married him"): the subject would be "himself"
OBJECT_PRONOUNS = frozenset("him them it".split())
#: demonstratives that point to something the atom does not name ("This album", "these works");
#: "that" only where it opens the atom ("That year …"): elsewhere it is mostly a conjunction
DEMONSTRATIVES = frozenset("this these those".split())
#: words that open an atom and point back to a place or to people the atom does not name:
#: "There she met Pierre Curie." (not the "there" of "There are three bridges."), "Both ships …",
#: "Each brother …" (not "Both Marie and Pierre Curie …")
POINTING_OPENERS = frozenset("there both each".split())
#: what may follow an existential "there": "There are three bridges." names no place
_EXISTENTIAL = frozenset(
    "is was are were be been has have had will would may might can could must should seem seems seemed "
    "remain remains remained exist exists existed appear appears appeared".split()
)
#: a verb phrase that stands for an action named elsewhere: "They were confirmed to have done so."
_DO_SO = re.compile(r"\b(?:do|does|did|done|doing)\s+so\b", re.IGNORECASE)
#: words that point to one of two things named elsewhere
_LATTER = frozenset("latter former".split())


def unresolved_reference(atom: str) -> str | None:
    """The first word of ``atom`` that refers to something the atom does not name, else None:
    a third-person pronoun before any proper name ("It was first climbed in 1953."), an object
    pronoun anywhere ("George Mallory climbed it.": *it* is not George Mallory), a
    demonstrative ("This album sold a million copies.", "That year he moved."), "there", "both"
    or "each" opening the atom without a name after it ("There he joined the Institute.",
    "Both ships are kept in Oslo."; not "There are three bridges."), "the latter"/"the former",
    or "did so" standing for an action ("They were confirmed to have done so.": ``done so``).

    >>> unresolved_reference("It was first climbed in 1953."), unresolved_reference("Her father was a poet.")
    ('It', 'Her')
    >>> unresolved_reference("George Mallory climbed it."), unresolved_reference("This album went gold.")
    ('it', 'This')
    >>> unresolved_reference("There Einstein joined the Institute."), unresolved_reference("Both ships sank.")
    ('There', 'Both')
    >>> unresolved_reference("Hillary and Tenzing were confirmed to have done so.")
    'done so'
    >>> unresolved_reference("Ada Lovelace published her notes.") is None
    True
    >>> unresolved_reference("There are three bridges in Tovik.") is None
    True
    """
    named = False
    words = list(_WORD.finditer(atom))
    for index, match in enumerate(words):
        word = match.group()
        folded = _fold(word)
        if folded in PRONOUNS:
            if not named or folded in OBJECT_PRONOUNS:
                return word
            continue
        if folded in DEMONSTRATIVES or folded in _LATTER or (index == 0 and folded == "that"):
            return word
        if index == 0 and folded in POINTING_OPENERS:
            following = words[1].group() if len(words) > 1 else ""
            existential = folded == "there" and _fold(following) in _EXISTENTIAL
            if not existential and not (folded != "there" and _is_name(following)):
                return word
        named = named or _is_name(word)
    do_so = _DO_SO.search(atom)
    return do_so.group() if do_so else None


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


_COPULA = re.compile(r"^(?P<subject>.+?)\s+(?:is|was|are|were)\s+(?P<complement>[^,;]+?)\s*[.!]?\s*$")
_ARTICLES = frozenset("a an the".split())


def _is_bare_name(text: str) -> bool:
    """A proper name alone, without an article or a noun before it: "China", "Warsaw"."""
    words = _WORD.findall(text)
    return bool(words) and all(_is_name(w) for w in words)


def claimless_clause(atom: str) -> str | None:
    """Why ``atom`` is a clause without a claim, or None: a passive whose participle needs a
    complement and has none ("The Great Wall of China was built.", "… was built mainly."), or
    a copula whose complement only names its subject again ("The Great Wall of China is
    China.", "It is China.": a pronoun said to be a bare name).

    >>> claimless_clause("The Great Wall of China was built.")
    "a clause without a claim: 'was built' says not what, when, where or by whom"
    >>> claimless_clause("The Great Wall of China was built by the Ming.") is None
    True
    >>> claimless_clause("Marie Curie was Polish.") is None
    True
    >>> claimless_clause("It is China."), claimless_clause("The Great Wall of China is China.") is not None
    ("a clause without a claim: 'China' only names its subject again", True)
    >>> claimless_clause("The capital of Poland is Warsaw.") is None
    True
    """
    same = _COPULA.match(atom.strip())
    if same:
        subject = {_fold(w) for w in _WORD.findall(same.group("subject"))}
        complement = {_fold(w) for w in _WORD.findall(same.group("complement"))} - _ARTICLES
        if complement and (complement <= subject or (subject <= PRONOUNS and _is_bare_name(same.group("complement")))):
            return f"a clause without a claim: {same.group('complement').strip()!r} only names its subject again"
    match = _CLAIMLESS.match(atom.strip())
    if not match or match.group("participle") not in _NEEDS_COMPLEMENT:
        return None
    verb = re.search(r"(?:was|were|is|are|has been|have been|had been)\s", atom)
    phrase = f"{verb.group().strip()} {match.group('participle')}" if verb else match.group("participle")
    return f"a clause without a claim: {phrase!r} says not what, when, where or by whom"


#: words that open a piece of a sentence rather than a claim: "with Pierre Curie", "and Henri Becquerel."
_PIECE_OPENERS = frozenset("and or but nor with plus including as".split())
#: prepositions a piece can open with, whose phrase belongs after the claim's verb
_PREPOSITIONS = frozenset("with to by for from of in on at as into including".split())
#: words a claim cannot end with: "He appeared in", "She married and"
_DANGLING = frozenset("a an the and or but nor with to by for from of in on at as into than".split())
#: words that open a phrase of time or place ("In 1903", "From 1891 to 1895", "In Paris")
_PHRASE_OPENERS = _PREPOSITIONS | frozenset("after before during since until between".split())
#: lower-case words such a phrase may hold besides names and numbers
_PHRASE_WORDS = _PHRASE_OPENERS | frozenset("a an the and".split())


def sentence_piece(atom: str) -> str | None:
    """Why ``atom`` is a piece of a sentence and not a claim, or None: it is one word ("Ltd.",
    split off "Treasure Co. Ltd."), it opens with a lower-case word ("with Pierre Curie", "and
    Henri Becquerel."), with a conjunction or "with" and has no more than four words ("And
    radium."), it is a phrase of time or place alone ("In 1903", "From 1891 to 1895": a
    preposition, then only names, numbers, articles and prepositions), or it ends with a
    preposition, an article or a conjunction ("He appeared in").

    >>> sentence_piece("with Pierre Curie")
    "a piece of a sentence: opens with 'with'"
    >>> sentence_piece("He appeared in")
    "a claim cut short: ends with 'in'"
    >>> sentence_piece("With Pierre she discovered polonium.") is None
    True
    >>> sentence_piece("In 1903")
    "a piece of a sentence: 'In 1903' states no claim"
    >>> sentence_piece("In 1903 she moved to Paris.") is None
    True
    """
    words = _WORD.findall(atom)
    if len(words) < 2:
        return f"a piece of a sentence: {atom.strip()!r} alone"
    first, last = words[0], _fold(words[-1])
    if first[0].islower() or (_fold(first) in _PIECE_OPENERS and len(words) <= 4):
        return f"a piece of a sentence: opens with {first!r}"
    if _is_phrase(words):
        return f"a piece of a sentence: {atom.strip()!r} states no claim"
    if last in _DANGLING and not atom.rstrip().endswith(("'", '"', "”", "’")):
        return f"a claim cut short: ends with {words[-1]!r}"
    return None


def complete_pieces(atoms: Sequence[str]) -> list[str]:
    """The atoms of one sentence with each prepositional piece made a whole claim: the piece is
    put after the claim before it ("She shared the Nobel Prize" + "with Pierre Curie" → "She
    shared the Nobel Prize with Pierre Curie."), and a coordinated piece after it takes the same
    preposition ("and Henri Becquerel." → "She shared the Nobel Prize with Henri Becquerel.").
    Rules: only pieces that open with a lower-case word (:func:`sentence_piece`) after a claim
    of the same sentence; a piece that opens with "and"/"or" needs a prepositional piece before
    it. A phrase of time or place alone before a claim ("In 1903", then "She shared the Nobel
    Prize") opens that claim, as its own atom ("In 1903 she shared the Nobel Prize"), and one
    after the last claim closes it ("She shared the Nobel Prize in 1903."); every other atom is
    left as it is (the check sets a piece aside).

    >>> for atom in complete_pieces(["She shared the Nobel Prize", "with Pierre Curie", "and Henri Becquerel."]):
    ...     print(atom)
    She shared the Nobel Prize
    She shared the Nobel Prize with Pierre Curie.
    She shared the Nobel Prize with Henri Becquerel.
    >>> complete_pieces(["She discovered polonium.", "and radium."])
    ['She discovered polonium.', 'and radium.']
    >>> complete_pieces(["In 1903", "She shared the Nobel Prize."])
    ['In 1903 she shared the Nobel Prize.', 'She shared the Nobel Prize.']
    >>> complete_pieces(["She shared the Nobel Prize", "In 1903"])
    ['She shared the Nobel Prize', 'She shared the Nobel Prize in 1903.']
    """
    out: list[str] = []
    claim: str | None = None  # the last whole claim, without its final stop
    preposition: str | None = None  # the preposition of the last piece completed
    for index, atom in enumerate(atoms):
        words = _WORD.findall(atom)
        opener = words[0] if words else ""
        body = atom.strip().rstrip(".!;,").strip()
        if claim is not None and opener.islower() and opener in _PREPOSITIONS and len(words) > 1:
            out.append(f"{claim} {body}.")
            preposition = opener
            continue
        if claim is not None and preposition and opener in ("and", "or") and len(words) > 1:
            out.append(f"{claim} {preposition} {body[len(opener) :].strip()}.")
            continue
        preposition = None
        piece = sentence_piece(atom)
        if piece is None:
            claim = body
        elif _is_phrase(words) and index + 1 < len(atoms) and sentence_piece(atoms[index + 1]) is None:
            # "She shared …" → "In 1903 she shared …"; a name keeps its capital
            following = re.sub(r"^\W*(\w+)", _lower_pronoun, atoms[index + 1].strip(), count=1)
            out.append(f"{body} {following}")
            continue
        elif _is_phrase(words) and claim is not None:  # "She shared the prize", "In 1903"
            out.append(f"{claim} {body[0].lower()}{body[1:]}.")
            continue
        out.append(atom)
    return out


def _lower_pronoun(match: re.Match[str]) -> str:
    word = match.group(0)
    return word.lower() if match.group(1).lower() in PRONOUNS else word


def _is_phrase(words: Sequence[str]) -> bool:
    """Whether ``words`` are a phrase of time or place alone: a preposition, then only names,
    numbers, articles and prepositions ("In 1903", "From 1891 to 1895", "In Paris")."""
    return (
        len(words) >= 2
        and _fold(words[0]) in _PHRASE_OPENERS
        and all(not w[0].islower() or w in _PHRASE_WORDS for w in words[1:])
    )


#: words a revision may drop: the references it resolves ("There she met …" → "In Berlin, Lise
#: Meitner met …", "Together they …" → "Meitner and Hahn …", "… had done so" → "… had reached the
#: summit")
_REPLACEABLE = PRONOUNS | frozenset("the a an this that these those there together both each so latter former".split())
#: the forms of "do" a revision may drop with the "so" it resolves
_DO_FORMS = frozenset("do does did done doing".split())
#: words whose noun a name brought in may replace: "the company" → "Treasure", "both bridges" →
#: "the Varnell Bridge and the Oskel Bridge"
_DETERMINERS = frozenset("the this that these those both each".split())
#: words a revision may add wherever a reference becomes explicit: "Its height" → "The height
#: of Mount Everest", "they" → "Marie Curie and Pierre Curie"
_CONNECTORS = frozenset("of the a an and".split())


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
    >>> unfaithful_revision("Together they discovered radium.", "Marie Curie and Pierre Curie discovered radium.",
    ...                     "Marie Curie met Pierre Curie. Together they discovered radium.")
    >>> unfaithful_revision("The company makes games.", "Treasure makes games.", "Treasure is a company.")

    Besides pronouns and determiners it may drop "there", "together", "both", "each", "the
    latter", a "did so" it spells out, and the noun of a description ("the company") that a
    name it brings in replaces. It may not add a number, even one the response has.

    >>> unfaithful_revision("She was the second woman to do so.", "Lise Meitner was the second woman to do so in 1907.",
    ...                     "In 1907 Lise Meitner moved to Berlin.")
    "adds '1907'"
    """
    before, after = _content_words(original), _content_words(revised)
    known = set(_content_words(response)) | set(before) | _CONNECTORS
    added = list(dict.fromkeys(w for w in after if w not in known))
    # a number is never a reference resolved: "She was the second woman …" → "… in 1907"
    added += [n for n in dict.fromkeys(_numbers(revised)) if n not in _numbers(original) and n not in added]
    kept = set(after)
    replaceable = set(_REPLACEABLE)
    if _DO_SO.search(original):
        replaceable |= _DO_FORMS
    if set(name_runs(revised)) - set(name_runs(original)):
        # a name brought in may stand for a description: "The company developed …" → "Treasure
        # Co. Ltd. developed …" drops "company"; only the words right after a determiner
        replaceable |= {w for d, w in zip(before, before[1:]) if d in _DETERMINERS}
    dropped = list(dict.fromkeys(w for w in before if w not in kept and w not in replaceable))
    problems = []
    if added:
        problems.append("adds " + ", ".join(repr(w) for w in added))
    if dropped:
        problems.append("drops " + ", ".join(repr(w) for w in dropped))
    return "; ".join(problems) or None


def names_from_later(original: str, revised: str, preceding: str) -> list[str]:
    """The names ``revised`` brings in that ``preceding`` does not have: ``preceding`` is what a
    reader has seen when the atom's reference comes (the response up to the end of the atom's
    sentence, with the record's topic), and a reference points back, so a name first met later
    is the wrong one. Measured why: for "She moved to Paris in 1891." in an answer about Marie
    Curie, the 1.5B reviser wrote "Pierre Curie moved to Paris in 1891." — Pierre Curie is first
    named in the next sentence ("There she met Pierre Curie.").

    >>> names_from_later("She moved to Paris.", "Pierre Curie moved to Paris.",
    ...                  "Marie Curie was a physicist. She moved to Paris.")
    ['Pierre Curie']
    >>> names_from_later("She moved to Paris.", "Marie Curie moved to Paris.",
    ...                  "Marie Curie was a physicist. She moved to Paris.")
    []
    """
    seen = {_fold(w) for w in _WORD.findall(preceding)}
    new = [run for run in name_runs(revised) if run not in set(name_runs(original))]
    return [" ".join(run) for run in new if not all(_fold(w) in seen for w in run)]


#: the words a resolved reference may be made of besides names: "Lise Meitner and Otto Hahn"
_NAME_GLUE = frozenset("and of the".split())


def resolve_in_place(original: str, rewrite: str) -> str | None:
    """The original atom with its subject pronoun replaced by the name a rejected rewrite put in
    for it, or None. The 1.5B reviser often resolves "she" and drops or adds something beside
    it ("In 1926 she became the first woman …" → "Lise Meitner became the first woman …",
    rejected for dropping "1926"); the name it found is still right. Rules: the original has
    "he", "she" or "they" and an unresolved reference (:func:`unresolved_reference`); the
    rewrite brings in names the original lacks, and the first run of them (names joined by
    "and", "of", "the": "Lise Meitner and Otto Hahn") replaces the first "he", "she" or "they".
    The caller still checks the result with :func:`unfaithful_revision`.

    >>> resolve_in_place("In 1926 she became a professor.", "Lise Meitner became a professor.")
    'In 1926 Lise Meitner became a professor.'
    >>> resolve_in_place("Together they found protactinium.", "Lise Meitner and Otto Hahn found it in 1917.")
    'Together Lise Meitner and Otto Hahn found protactinium.'
    >>> resolve_in_place("After her studies, she taught.", "Ilse Marrow taught at Tovik after her studies.")
    'After her studies, Ilse Marrow taught.'
    >>> resolve_in_place("It opened in 1931.", "The Varnell Bridge opened in 1931.") is None
    True
    """
    target = re.search(r"\b(?:he|she|they|He|She|They)\b", original)
    if target is None or unresolved_reference(original) is None:
        return None
    have = {_fold(w) for w in _WORD.findall(original)}
    words = list(_WORD.finditer(rewrite))
    new = [i for i, m in enumerate(words) if _is_name(m.group()) and _fold(m.group()) not in have]
    if not new:
        return None
    end = new[0]
    while end + 1 < len(words) and (
        (_is_name(words[end + 1].group()) and _fold(words[end + 1].group()) not in have)
        or (_fold(words[end + 1].group()) in _NAME_GLUE and end + 2 < len(words) and _is_name(words[end + 2].group()))
    ):
        end += 1
    phrase = rewrite[words[new[0]].start() : words[end].end()]
    return original[: target.start()] + phrase + original[target.end() :]


#: the pronouns that stand for one person, by gender
_GENDERED = (frozenset("he him his himself".split()), frozenset("she her hers herself".split()))
#: words after which "her" is an object, not a possessive ("gave her an award", "with her in 1990")
_AFTER_OBJECT_HER = frozenset(
    """a an the and or but to in on at by for from of with as into than that this these those
    when while after before since until because if""".split()
)


@dataclass(frozen=True)
class TopicReference:
    """What the response calls its topic: its ``name`` as the response writes it, the ``pronouns``
    (of one gender) it uses for it, and the ``first_sentence`` that names it."""

    name: str
    pronouns: frozenset[str]
    first_sentence: int

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(_WORD.findall(self.name))


def _topic_name(topic: str) -> str:
    """The topic's name without a description in brackets or after a comma: "Owen Wright" for
    "Owen Wright (surfer)", "Rennie Fritchie" for "Rennie Fritchie, Baroness Fritchie"."""
    return re.sub(r"\s*\(.*?\)\s*", " ", topic).split(",")[0].strip()


def _subject_pronoun(sentence: str) -> str | None:
    """The "he" or "she" that is the subject of ``sentence``: its first one, before any name."""
    for word in _WORD.findall(sentence):
        if _fold(word) in ("he", "she"):
            return _fold(word)
        if _is_name(word):
            return None
    return None


def topic_reference(sentences: Sequence[str], topic: str | None) -> TopicReference | None:
    """How the response refers to its ``topic``, when a rule may write the topic's name for its
    pronouns, else None. All must hold: the response writes the topic's name (brackets and what
    follows a comma left out); it uses the pronouns of one gender only (he/him/his or
    she/her/hers); and a sentence whose first name contains the topic's name is followed by a
    sentence whose subject is such a pronoun before any name ("Abraham Lincoln was a lawyer.
    He was born in 1809."): then the pronoun is the topic's, not someone else's the response
    names ("The bridge … was designed by Joseph Strauss. He …" never qualifies).

    >>> ref = topic_reference(["Ada Lovelace was a mathematician.", "In 1835 she married William King."], "Ada Lovelace")
    >>> ref.name, sorted(ref.pronouns), ref.first_sentence
    ('Ada Lovelace', ['her', 'hers', 'herself', 'she'], 0)
    >>> topic_reference(["The bridge opened in 1937.", "It was designed by Joseph Strauss.", "He died in 1938."], "Golden Gate Bridge") is None
    True
    """
    if not topic:
        return None
    name = _topic_name(topic)
    words = tuple(_fold(w) for w in _WORD.findall(name))
    if not words:
        return None
    used = {_fold(w) for sentence in sentences for w in _WORD.findall(sentence)}
    genders = [g for g in _GENDERED if used & g]
    if len(genders) != 1:
        return None
    first = next((i for i, sentence in enumerate(sentences) if name in sentence), None)
    if first is None:
        return None
    for i in range(first, len(sentences) - 1):
        runs = name_runs(sentences[i])
        opens = bool(runs) and _contains(tuple(_fold(w) for w in runs[0]), words)
        pronoun = _subject_pronoun(sentences[i + 1])
        if opens and pronoun is not None and pronoun in genders[0]:
            return TopicReference(name, genders[0], first)
    return None


def resolve_by_topic(atom: str, topic: TopicReference) -> str:
    """``atom`` with the topic's name written for its pronouns: "he", "she", "him" or an object
    "her" where the atom has not named the topic before it ("In 1842 he", "During the Civil War,
    he" → "During the Civil War, Abraham Lincoln"), and a possessive before any name ("His
    father" → "Abraham Lincoln's father"). Reflexives ("himself"), a pronoun after the topic's
    name or a part of it ("Abraham Lincoln married his …", "Lincoln said he …") and a possessive
    after another name ("During the Civil War, his army …": whose?) stay. A part of the topic's
    name stays as written ("Lincoln served one term."): written out in full it scored worse end
    to end (FR2's MAE with our atoms 0.101 against 0.109 on the 33 development biographies,
    0.080 against 0.094 on the 14 held out; issue 59), because the judge reads some full forms
    against the same passage below its floor ("Terence Blacker worked for The Guardian." where
    "Blacker worked for The Guardian." is entailed at 0.85).

    >>> ref = TopicReference("Abraham Lincoln", frozenset("he him his himself".split()), 0)
    >>> resolve_by_topic("In 1842 he married Mary Todd.", ref), resolve_by_topic("His father was a farmer.", ref)
    ('In 1842 Abraham Lincoln married Mary Todd.', "Abraham Lincoln's father was a farmer.")
    >>> resolve_by_topic("Lincoln served one term.", ref), resolve_by_topic("They had four sons.", ref)
    ('Lincoln served one term.', 'They had four sons.')
    >>> resolve_by_topic("Abraham Lincoln and his wife sang.", ref), resolve_by_topic("Lincoln said he won.", ref)
    ('Abraham Lincoln and his wife sang.', 'Lincoln said he won.')
    >>> resolve_by_topic("During the Civil War, he issued it.", ref), resolve_by_topic("In 1861 his army won.", ref)
    ('During the Civil War, Abraham Lincoln issued it.', "In 1861 Abraham Lincoln's army won.")
    >>> resolve_by_topic("During the Civil War, his army won.", ref)
    'During the Civil War, his army won.'
    """
    words = list(_WORD.finditer(atom))
    topic_words = tuple(_fold(w) for w in topic.words)
    pieces: list[str] = []
    position = 0
    named = topic_named = False
    index = 0
    while index < len(words):
        match = words[index]
        word, folded = match.group(), _fold(match.group())
        replacement: str | None = None
        end = index + 1
        if folded in topic.pronouns and folded not in ("himself", "herself"):
            following = words[index + 1].group() if index + 1 < len(words) else ""
            possessive = folded in ("his", "hers") or (
                folded == "her"
                and following[:1].islower()
                and _fold(following) not in _AFTER_OBJECT_HER
                and atom[match.end() : words[index + 1].start()].strip() == ""
            )
            if (not possessive and not topic_named) or not named:
                replacement = f"{topic.name}'s" if possessive else topic.name
        elif _is_name(word):
            # a run of names: the topic's name or a part of it names the topic (kept as written)
            run_end = index
            while run_end + 1 < len(words) and _is_name(words[run_end + 1].group()):
                run_end += 1
            run = tuple(_fold(w.group()) for w in words[index : run_end + 1])
            end = run_end + 1
            named = True
            topic_named = topic_named or _contains(run, topic_words) or _contains(topic_words, run)
        if replacement is not None:
            pieces.append(atom[position : match.start()] + replacement)
            position = words[end - 1].end()
            named = topic_named = True
        index = end
    pieces.append(atom[position:])
    return "".join(pieces)


#: an atom that opens with a description instead of a name ("The film …", "This album …")
_DESCRIPTION = re.compile(r"\s*(?i:the|this|that|these|those)\s+[a-z]")


def needs_revision(atom: str, response: str) -> bool:
    """Whether the reviser must see ``atom``: it has a pronoun (anywhere: "Ada worked with
    him") or another unresolved reference (:func:`unresolved_reference`: "Both ships …",
    "There …", "… did so"), it opens with a description ("The film grossed $5 million in the US") or names
    nothing, or one of its names is part of a longer name in ``response`` ("Curie" where the
    response says "Marie Curie"). An atom that already names what it is about in full is left
    as it is.

    >>> needs_revision("Marie Curie was born in Warsaw.", "Marie Curie was born in Warsaw.")
    False
    >>> needs_revision("She discovered radium.", "Marie Curie …"), needs_revision("Curie won.", "Marie Curie won.")
    (True, True)
    """
    if any(_fold(w) in PRONOUNS for w in _WORD.findall(atom)) or unresolved_reference(atom):
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
    """Both checks of ``atom`` against ``response`` (and the ``question`` it answers): its
    ungrounded terms (:func:`ungrounded_terms`, then :func:`unstated_words`) and its unresolved
    reference."""
    sources = (response, question) if question else (response,)
    terms = ungrounded_terms(atom, *sources)
    terms += [w for w in unstated_words(atom, *sources) if w not in terms]
    return AtomCheck(tuple(terms), unresolved_reference(atom))


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
        claimless = claimless_clause(atom.text) or sentence_piece(atom.text)
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

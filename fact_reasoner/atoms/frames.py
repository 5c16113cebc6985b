"""Text frames: what a short claim talks about and which values it gives, read from its words.

Two rules use them to keep an NLI "contradiction" only where two texts can disagree at all:

- *atom–atom* (:func:`comparability`, coherence's ``coherence_pairs comparable``): two atoms of
  one response;
- *atom–context* (:func:`same_attribute`, the graph's ``contradictions same-attribute``): an
  atom and one evidence passage, read sentence by sentence.

Both need no model; they only decide whether a contradiction is *possible*, the NLI judge still
decides whether there is one.

Atom–atom comparability (:func:`comparability`)
    Coherence's comparability gate (``coherence_pairs comparable``) judges an atom pair only when
    the two atoms say something about the same attribute and disagree on its value. Why: the
    shipped cross-encoder labels two *different* facts about one subject "contradiction"
    ("Marie Curie was born in Vienna" / "… born in 1867": P(c) = 0.79 both ways), so with the
    similarity gate alone every consistent biography had false alarms; true
    self-contradictions almost always give different values for one attribute ("born in
    1949" / "born in 1942", "died in Paris" / "died in London", "won two" / "won three").
    Each atom is split (:func:`atom_frame`) into

    - *frame* tokens: lower-case content words, lightly stemmed (:func:`light_stem`, a few
      irregular forms such as born/birth, died/death, won/win mapped together), minus
      stopwords;
    - *values*: dates (years 1000–2099, month names, any number beside a month), other
      numbers (digits, "1,000" → 1000, and the number words two … ninety, hundred, thousand,
      million as digits) and names (capitalised words); a date is compared only with dates,
      so "died in 1966" / "died at the age of 72" is not a disagreement, nor "died on August
      28" / "died at the age of 43", nor "born on 4 May" / "born in Tours";
    - the *subject*: the capitalised words that open the atom ("Marie Curie", "A Bronx
      Tale"); they are not values, and "He …" has none;
    - a *negation* flag (not, never, no, nor, neither, a word ending in n't).

    Two atoms are comparable (:func:`comparability`) iff they do not name two different
    subjects ("A Bronx Tale was released in 1993" / "Just Cause was released in 1995" are
    about two films), their frames overlap, J = |F_a ∩ F_b| / |F_a ∪ F_b| ≥
    ``MIN_FRAME_OVERLAP`` (0.5; when both frames are empty, "He was French" / "He was
    American", their function words are compared instead: :func:`frame_overlap`), **and**
    either they have differing values of one kind — for dates, other numbers or names, each
    atom has a value of that kind the other lacks (a value shared by both does not count:
    "born in 1867" / "born on 7 November 1867" is a refinement, not a disagreement) — or
    exactly one of them is negated. A text of more than one sentence or more than
    ``MAX_ATOM_FRAME`` (8) frame tokens is not one fact: the rule would prune almost every
    such pair (two passages rarely share half their words), so its pairs are kept and only
    the similarity gate applies.

    Measured (``experiments/results/coherence.md``): recall of planted year, number and place
    contradictions unchanged, false alarms on consistent biographies down but not gone —
    the NLI still calls two values of a *multi-valued* attribute a contradiction
    ("appeared in A Bronx Tale" / "appeared in Belly", "served from 2008 to 2011" / "served
    from 2015 to 2017"), which no lexical rule can tell from a single-valued one.

    Known misses (pairs the comparability gate prunes although they can contradict):
    arithmetic ones ("aged 30 in 1985" / "born in 1949"), synonyms the stemmer does not map
    ("passed away" / "died"), values the rules do not see (lower-case nationalities or
    places, "born in the north" / "born in the south", ordinal words: "his first album" /
    "his debut album"), contradictions by antonym ("was married" / "was single"), and a
    capitalised value at the very start of the atom ("Paris was his birthplace"). It also
    keeps pairs that differ without contradicting ("won the Nobel Prize in Physics" / "… in
    Chemistry"): the NLI judge still decides those.

Atom–context: does the passage speak about the atom's attribute? (:func:`same_attribute`)
    The shipped cross-encoder gives a high P(contradiction) to a passage that tells another
    fact about the same person ("Albert Einstein died on 18 April 1955 in Princeton." against
    "Albert Einstein was born in 1879.": 0.87), and in the factor graph each such judgement is
    evidence against a true atom. With ``contradictions same-attribute`` an atom–context
    contradiction becomes a factor only when some *sentence* of the passage speaks about the
    atom's attribute and can disagree with it (:func:`context_comparability`):

    - ``long``: the atom is not one fact (more than one sentence or more than
      ``MAX_ATOM_FRAME`` frame tokens): the rule cannot read it, the contradiction is kept;
    - ``agent`` (kept): someone else did it — the sentence never names the atom's subject, has
      every frame word and value of the atom (the same act on the same object) and gives
      another doer, as its opening subject or after "by": "Penicillin was discovered in 1928
      by Alexander Fleming" / "Marie Curie discovered penicillin";
    - ``subjects`` (not kept): otherwise, a sentence that never names the atom's subject and
      opens with another name (a sentence about a film, a relative);
    - ``frames`` (not kept): the sentence carries no more than half (``MIN_FRAME_COVERAGE``)
      of the atom's frame, c = |F_atom ∩ F_sentence| / |F_atom| — it talks about something
      else ("died … in Princeton" has no ``birth``). The coverage of the atom's frame is used,
      not the Jaccard overlap of two atoms: a passage sentence carries many more words than a
      claim. An atom whose frame is empty ("He was American", "Riyadh is in Saudi Arabia":
      every content word is a value) has no attribute words to look for; its values decide,
      and when it names its subject the sentence must name it too;
    - ``values`` (kept): a conflicting value of the same kind — a year the sentence does not
      give where it gives another year ("born in 1880" / "born in Ulm in 1879"; months and
      days likewise, each a kind of its own, so "began in 2005" / "began in November" do not
      conflict), another number, or a name in the same *role* that the sentence never
      mentions where the sentence names another one in that role. A name's role is the
      preposition that governs it (articles, possessives, "and", "or" looked through), or none:
      "born in Munich" / "born in Ulm" (both ``in``) conflict, "born in Munich" / "born to
      Hermann Einstein" (``in`` / ``to``) do not; "Ada Lovelace's mother was Otto Ruhnke" /
      "Ada Lovelace's mother, Wanjiru Kamau, was a teacher" (no preposition) do. A name no
      preposition governs that is shaped like a nationality ("American", "Swedish",
      "Chinese", "Pakistani", "French") is compared only with names of that shape: "was
      American" / "was awarded the Nobel Prize" or "is Swedish" / "was LPGA Rookie of the
      Year" do not conflict. The name that opens the sentence counts as a value when the atom
      does not name it ("Islamabad is the capital city of Pakistan" / "The capital of Pakistan
      is Karachi"); a participle that opens it ("Born in 1881 in Darvel, …") is read as a word,
      not a name;
    - ``negation`` (kept): exactly one of the two is negated, and they share the attribute
      (a non-empty covered frame, or every value of a frameless atom named in the sentence);
    - ``same values`` (not kept): the same attribute, no conflicting value (the sentence agrees,
      or refines: "born in 1879" / "born on 14 March 1879").

    Why per sentence: a passage of an encyclopedia tells several facts, one or two per
    sentence. Read as one text, its frame is the union of all of them (any atom's words are
    "covered" somewhere) and its values are pooled (the birth year of one sentence and the
    death year of the next make every date differ), so the rule would keep almost every
    contradiction. A sentence is close to one fact; the passage speaks about the atom's
    attribute when one of its sentences does. Sentences are split where a lower-case word or a
    number ends with ., ! or ? before a capitalised word (not after an initial: "Joey D.
    Vieira"). The encyclopedia convention of life dates in parentheses after a name,
    "(14 March 1879 – 18 April 1955)", gives the sentence the frame tokens ``birth`` and
    ``death``.

    What it cannot see: the same misses as the atom–atom rule (synonyms the stemmer does not
    map, "passed away" / "died"; lower-case values; antonyms), arithmetic ("aged 30 in
    1985"), and who "he" is (a sentence about a relative that opens with a pronoun is read as
    about the atom's subject). It keeps values of a multi-valued attribute ("starred in 42" /
    "starred in Black Panther") for the judge. Contradictions only: entailments are kept as
    they are. Measured in ``experiments/results/same_attribute.md``.

Atom–context: is the passage about the atom's subject? (:func:`names_subject`)
    An entailment from a passage about something else is the error a user sees first: "Marie
    Curie discovered penicillin." judged entailed by "Penicillin was discovered in 1928 by the
    Scottish physician Alexander Fleming." With ``entailments same-subject`` an atom–context
    entailment becomes a factor only when the passage or its title names the atom's subject
    (a title that names it covers a passage that calls the subject "he" or "it"): one of the
    capitalised words that open the atom (:class:`AtomFrame` ``subject``, "Marie Curie", "Eiffel
    Tower") occurs as a word of the title or of the text, compared without case or accents and
    without a possessive "'s". An adverb that opens an atom ("Together they discovered
    polonium", "Later …") is not a name.

    An atom that opens without a name ("She was born in Ulm", "There he joined …", "Together
    they …": a reference the reviser left) is about someone all the same (:func:`atom_subject`):
    the rule looks for the subject of the response sentence the atom was made from when that
    sentence opens with a name ("Albert Einstein, who played the violin, …" → "He played the
    violin."), else for the record's topic (the person of a biography); only when neither is
    known is there nothing to look for, and the entailment is kept. Which of the four decided
    (``atom``, ``sentence``, ``topic``, ``none``) is counted for each entailment.

    What it cannot see: a subject named another way ("the US" for "United States", a
    nickname, a translated name), and a passage that names the subject only to speak of
    someone else ("Curie's student, Marguerite Perey, discovered francium").
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..text.sentences import FRAME_BREAK, frame_sentences

__all__ = [
    "COMPARABLE",
    "MAX_ATOM_FRAME",
    "MIN_FRAME_COVERAGE",
    "MIN_FRAME_OVERLAP",
    "SAME_ATTRIBUTE",
    "AtomFrame",
    "atom_frame",
    "comparability",
    "comparable_pair_mask",
    "context_comparability",
    "frame_coverage",
    "frame_overlap",
    "SUBJECT_SOURCES",
    "atom_subject",
    "light_stem",
    "names_subject",
    "passage_frames",
    "same_attribute",
]

#: the comparability gate's frame overlap threshold: Jaccard |F_a ∩ F_b| / |F_a ∪ F_b|
MIN_FRAME_OVERLAP = 0.5
#: a text with more frame tokens than this (or more than one sentence) is not one fact: the gate
#: keeps its pairs (the similarity gate still applies)
MAX_ATOM_FRAME = 8
#: the :func:`comparability` verdicts whose pairs are judged
COMPARABLE = frozenset({"values", "negation", "long"})

_STOPWORDS = frozenset(
    """a an the and or but of in on at to for from by with as is was were are be been being am has
    have had having do does did he she it they his her hers its their theirs him them this that these
    those who whom whose which what when where while also into onto over after before during about
    than then there here both each other another such only own same so very can could would should
    will shall may might must i we you our ours your yours my me us up out off more most many much
    any some all just among between within through throughout under until against again further once
    since including include includes known well later early around across along upon via like
    together meanwhile subsequently eventually finally initially originally previously recently afterwards
    however moreover additionally furthermore today currently now""".split()
)
_NEGATIONS = frozenset({"not", "never", "no", "nor", "neither", "none", "cannot"})
NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
    if word != "_"  # "one" is mostly a pronoun ("one of the first"), never a count worth comparing
} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
}
_MONTHS = {
    month: f"month-{i}"
    for i, month in enumerate(
        "january february march april may june july august september october november december".split(), 1
    )
}
_SKELETON = {"is": "be", "was": "be", "are": "be", "were": "be", "am": "be", "been": "be"} | {
    pronoun: "pron" for pronoun in ("he", "she", "it", "they", "i", "we", "you")
}
#: irregular forms that biographies use for one attribute (so "was born" and "birth" share a frame)
_IRREGULAR = {
    "born": "birth",
    "died": "death",
    "dies": "death",
    "die": "death",
    "dead": "death",
    "won": "win",
    "wins": "win",
    "winning": "win",
    "wrote": "write",
    "written": "write",
    "writes": "write",
    "writing": "write",
    "became": "become",
    "becomes": "become",
    "began": "begin",
    "begun": "begin",
    "taught": "teach",
    "teaches": "teach",
    "led": "lead",
    "leads": "lead",
    "grew": "grow",
    "grown": "grow",
    "made": "make",
    "makes": "make",
    "held": "hold",
    "holds": "hold",
    "sang": "sing",
    "sung": "sing",
    "left": "leave",
    "leaves": "leave",
    "met": "meet",
    "spent": "spend",
    "built": "build",
    "ran": "run",
    "married": "marry",
    "marries": "marry",
    "marriage": "marry",
}
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_TOKEN = re.compile(r"\d[\d,.]*\d|\d|[^\W\d_]+(?:['’-][^\W\d_]+)*")


def light_stem(word: str) -> str:
    """A lower-case word reduced by a few suffix rules, so inflections share a frame token.

    Irregular forms first (born → birth, died → death, won → win …), then: -ies/-ied → -y,
    -ing, -ed, -es, -s (not -ss) removed when at least three letters remain, and a final -e
    dropped. Deliberately crude: it only has to map the forms of one word together.

    >>> [light_stem(w) for w in ("born", "studied", "studies", "founded", "founder", "awards")]
    ['birth', 'study', 'study', 'found', 'founder', 'award']
    """
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


@dataclasses.dataclass(frozen=True)
class AtomFrame:
    """What an atom talks about (``frame``), the values it gives (``numbers``, ``names``) and
    whether it is negated (:func:`atom_frame`)."""

    frame: frozenset[str]
    numbers: frozenset[str]
    names: frozenset[str]
    negated: bool
    #: the function words (is/was/… as "be", he/she/… as "pron"), compared when both frames are empty
    skeleton: frozenset[str] = frozenset()
    #: years (1000–2099) and months: compared with each other, not with other numbers
    dates: frozenset[str] = frozenset()
    #: the capitalised words that open the atom ("Marie Curie"; empty for "She …")
    subject: frozenset[str] = frozenset()
    #: how many sentences the text has (the gate reads one-fact atoms)
    sentences: int = 1
    #: the names with their role, ``(role, name)``: the preposition that governs the name, or
    #: ``""`` (articles, possessives, "and", "or" skipped: "born in the Ulm" → ``("in", "Ulm")``)
    named: frozenset[tuple[str, str]] = frozenset()


def atom_frame(text: str) -> AtomFrame:
    """Split an atom into frame tokens, number and name values and a negation flag (module
    docstring, "Comparability gate").

    The capitalised words that open a sentence ("Marie Curie", "A Bronx Tale") are its subject,
    not a value: they are skipped, like a pronoun.

    >>> f = atom_frame("Marie Curie was born in Warsaw in 1867.")
    >>> sorted(f.frame), sorted(f.dates), sorted(f.names), sorted(f.subject), f.negated
    (['birth'], ['1867'], ['Warsaw'], ['Curie', 'Marie'], False)
    >>> atom_frame("She never won two Oscars.").numbers, atom_frame("She never won two Oscars.").negated
    (frozenset({'2'}), True)
    """
    frame: set[str] = set()
    numbers: set[str] = set()
    dates: set[str] = set()
    names: set[str] = set()
    skeleton: set[str] = set()
    subject: set[str] = set()
    named: set[tuple[str, str]] = set()
    role = ""  # the role the next name takes (AtomFrame.named)
    negated = False
    opening = True  # before the first word of the text
    in_subject = False  # inside the run of capitalised words that opens a sentence
    matches = list(_TOKEN.finditer(text))
    for position, match in enumerate(matches):
        token = match.group()
        following = matches[position + 1].group() if position + 1 < len(matches) else ""
        before = text[: match.start()].rstrip()
        if not before or before[-1] in '.!?:;"“(':
            in_subject = True
        if token[0].isdigit():
            in_subject = opening = False
            value = token.replace(",", "").rstrip(".")
            previous = matches[position - 1].group().lower() if position else ""
            day = previous in _MONTHS or following.lower() in _MONTHS  # "August 28", "4 May"
            (dates if _YEAR.fullmatch(value) or day else numbers).add(value)
            continue
        word = token.lower()
        if word.endswith(("'s", "’s")):
            word, token = word[:-2], token[:-2]
        # the subject's name; a capitalised stopword belongs to it when a name follows ("The Last
        # House", "Just Cause"), else it is a pronoun or the like ("He was", "In 1990")
        if in_subject and word in _IRREGULAR and not following[:1].isupper():
            in_subject = opening = False  # a participle opening the sentence: "Born in 1881 in Darvel, …"
            frame.add(light_stem(word))
            role = ""
            continue
        if (
            in_subject
            and token[0].isupper()
            and word not in _NEGATIONS  # "No mountain is taller …" names no one
            and (word not in _STOPWORDS or following[:1].isupper())
        ):
            if opening and word not in ("the", "a", "an"):
                subject.add(token)
            continue
        in_subject = opening = False
        if token[0].isupper():
            if word in _MONTHS:
                dates.add(_MONTHS[word])  # a date's month is compared with dates, not with places
            elif word in _STOPWORDS:  # "The", "He" opening a sentence
                skeleton.add(_SKELETON.get(word, word))
                role = _role(word, role)
            else:
                names.add(token)
                named.add((role, token))
        elif word in _NEGATIONS or word.endswith(("n't", "n’t")):
            negated = True
        elif word in NUMBER_WORDS:
            numbers.add(NUMBER_WORDS[word])
        elif word in _STOPWORDS or len(word) == 1:
            skeleton.add(_SKELETON.get(word, word))
            role = _role(word, role)
        else:
            frame.add(light_stem(word))
            role = ""
    return AtomFrame(
        frozenset(frame),
        frozenset(numbers),
        frozenset(names),
        negated,
        frozenset(skeleton),
        frozenset(dates),
        frozenset(subject),
        1 + len(FRAME_BREAK.findall(text.strip())),
        frozenset(named),
    )


#: the prepositions that give a name its role ("born in Ulm": ``in``, "born to Hermann": ``to``)
_ROLE_PREPOSITIONS = frozenset(
    "in at on from to by with for of into onto as during near under against between within across via".split()
)
#: words a name's role looks through ("born in the Ulm", "in Ulm and Munich")
_ROLE_TRANSPARENT = frozenset("a an the his her hers its their theirs our my your and or both either".split())


def _role(word: str, current: str) -> str:
    """The role of a name that follows the lower-case word ``word``: the preposition itself,
    ``current`` after an article, a possessive or a conjunction, else ``""`` (no preposition
    governs it: "was American", "mother, Wanjiru Kamau,")."""
    if word in _ROLE_TRANSPARENT:
        return current
    return word if word in _ROLE_PREPOSITIONS else ""


def frame_overlap(a: AtomFrame, b: AtomFrame) -> float:
    """Jaccard overlap of two atoms' frames, |F_a ∩ F_b| / |F_a ∪ F_b|.

    When both frames are empty ("He was French" / "She is American": every content word is a
    value) the atoms' function words (``AtomFrame.skeleton``) are compared the same way, so "He
    was French" / "London is in England" (skeletons {pron, be} / {be, in}: 1/3) are not matched
    while "He was French" / "She is American" ({pron, be} twice: 1) are. One empty frame: 0.
    """
    first, second = (a.frame, b.frame) if a.frame or b.frame else (a.skeleton, b.skeleton)
    if not first or not second:
        return 0.0
    return len(first & second) / len(first | second)


def comparability(a: AtomFrame, b: AtomFrame, min_overlap: float = MIN_FRAME_OVERLAP) -> str:
    """Why two atoms are, or are not, comparable. Kept (:data:`COMPARABLE`): ``"values"``,
    ``"negation"``, ``"long"`` (a text that is not one fact: the gate does not apply). Pruned:
    ``"subjects"`` (two different named subjects), ``"frames"`` (they talk about different
    things), ``"same values"`` (same attribute, no disagreement). The rule, in this order
    (module docstring):

        long      ⇔ either text has > 1 sentence or > MAX_ATOM_FRAME frame tokens
        subjects  ⇔ S_a ≠ ∅ ∧ S_b ≠ ∅ ∧ S_a ∩ S_b = ∅
        frames    ⇔ J(F_a, F_b) < min_overlap,  J = |F_a ∩ F_b| / |F_a ∪ F_b|  (:func:`frame_overlap`)
        values    ⇔ differ(dates) ∨ differ(numbers) ∨ differ(names),
                    differ(V) ⇔ V_a ∖ V_b ≠ ∅ ∧ V_b ∖ V_a ≠ ∅
        negation  ⇔ negated_a ≠ negated_b

    >>> comparability(atom_frame("He was born in 1949."), atom_frame("He was born in 1942."))
    'values'
    >>> comparability(atom_frame("He was born in Vienna."), atom_frame("He was born in 1867."))
    'same values'
    >>> comparability(atom_frame("He was a French engraver."), atom_frame("He was born in Abbeville."))
    'frames'
    """
    if max(a.sentences, b.sentences) > 1 or max(len(a.frame), len(b.frame)) > MAX_ATOM_FRAME:
        return "long"
    if a.subject and b.subject and not a.subject & b.subject:
        return "subjects"
    if frame_overlap(a, b) < min_overlap:
        return "frames"
    for mine, theirs in ((a.dates, b.dates), (a.numbers, b.numbers), (a.names, b.names)):
        if mine - theirs and theirs - mine:
            return "values"
    if a.negated != b.negated:
        return "negation"
    return "same values"


def comparable_pair_mask(texts: Sequence[str], min_overlap: float = MIN_FRAME_OVERLAP) -> np.ndarray:
    """For each unordered pair i < j (in ``numpy.triu_indices(len(texts), k=1)`` order): are
    the two atoms comparable (:func:`comparability` is ``"values"`` or ``"negation"``)?"""
    frames = [atom_frame(t) for t in texts]
    upper_i, upper_j = np.triu_indices(len(texts), k=1)
    return np.array(
        [
            comparability(frames[i], frames[j], min_overlap) in COMPARABLE
            for i, j in zip(upper_i.tolist(), upper_j.tolist())
        ],
        dtype=bool,
    )


# -- atom–context: does a passage speak about the atom's attribute? ------------------------------

#: a passage sentence speaks about the atom's attribute when it carries *more than* this share of
#: the atom's frame, |F_atom ∩ F_sentence| / |F_atom| (a majority: 1 of 1, 2 of 2, 2 of 3, 3 of 4)
MIN_FRAME_COVERAGE = 0.5
#: the :func:`context_comparability` verdicts under which an atom–context contradiction is kept
SAME_ATTRIBUTE = frozenset({"values", "agent", "negation", "long"})

#: life dates in parentheses right after the name that opens a sentence (no lower-case word
#: before them): "Albert Einstein (14 March 1879 – 18 April 1955) was …", "(1879–1955)"
_LIFESPAN = re.compile(r"\([^()]*\b\d{3,4}\b[^()]*?\s*[–—-]\s*[^()]*\b\d{3,4}\b[^()]*\)")


def _opens_with_lifespan(sentence: str) -> bool:
    """Life dates in parentheses come before any lower-case word of the sentence."""
    match = _LIFESPAN.search(sentence)
    return match is not None and not any(t[0].islower() for t in _TOKEN.findall(sentence[: match.start()]))


def passage_frames(text: str) -> tuple[AtomFrame, ...]:
    """The frame of each sentence of a passage (:func:`~fact_reasoner.text.sentences.frame_sentences`, :func:`atom_frame`); a
    sentence whose opening name is followed by life dates in parentheses also gets the frame
    tokens ``birth`` and ``death`` (not one that gives someone else's later on: "… worked at
    the studios of Robert Hecquet (1693-1775)").

    >>> [sorted(f.frame) for f in passage_frames("Jean Daullé (1703–1763) was a French engraver. He "
    ...                                          "worked for Robert Hecquet (1693–1775).")]
    [['birth', 'death', 'engraver'], ['work']]
    """
    frames = []
    for sentence in frame_sentences(text):
        frame = atom_frame(sentence)
        if _opens_with_lifespan(sentence):
            frame = dataclasses.replace(frame, frame=frame.frame | {"birth", "death"})
        frames.append(frame)
    return tuple(frames)


def _date_parts(dates: frozenset[str]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A date set split by granularity: years, months, days ("began in 2005" does not
    disagree with "began in November": one gives a year, the other a month)."""
    years = frozenset(d for d in dates if _YEAR.fullmatch(d))
    months = frozenset(d for d in dates if d.startswith("month-"))
    return years, months, dates - years - months


def frame_coverage(atom: AtomFrame, sentence: AtomFrame) -> float:
    """The share of the atom's frame that the sentence carries, |F_a ∩ F_s| / |F_a| (1 when the
    atom's frame is empty: its values decide)."""
    if not atom.frame:
        return 1.0
    return len(atom.frame & sentence.frame) / len(atom.frame)


#: a capitalised word shaped like a nationality (American, Italian, British, Chinese, Pakistani)
_DEMONYM = re.compile(r"[A-Z][^\W\d_]*(?:an|ish|ese|i)")
_DEMONYMS = frozenset(
    "French Dutch Czech Greek Thai Swiss Welsh Filipino Argentine Kazakh Uzbek Tajik Kyrgyz Turkmen Icelandic "
    "Cypriot Malagasy Basque".split()
)


def _name_kind(role: str, name: str) -> str:
    """``demonym`` for a nationality-shaped name that no preposition governs ("was American",
    "is a British actor"), else ``name``. Only there: after a preposition the shape says little
    ("born in Michigan" / "born in Ohio" are two places)."""
    if role == "" and (name in _DEMONYMS or _DEMONYM.fullmatch(name)):
        return "demonym"
    return "name"


def _conflicting_names(atom: AtomFrame, sentence: AtomFrame) -> bool:
    """A role and kind (demonym-shaped or other) in which the atom names someone or something
    the sentence never mentions and the sentence names another the atom never mentions (names
    and opening subjects count as mentions): "was American" / "was a British actor" conflict,
    "is Swedish" / "was LPGA Rookie of the Year" do not."""
    atom_mentions = atom.names | atom.subject
    sentence_mentions = sentence.names | sentence.subject
    atom_named = {(role, _name_kind(role, name), name) for role, name in atom.named}
    # the sentence's opening name is a value too when the atom does not name it ("Islamabad is the
    # capital city of Pakistan" against "The capital of Pakistan is Karachi")
    sentence_named = {(role, _name_kind(role, name), name) for role, name in sentence.named} | {
        ("", "name", word) for word in sentence.subject
    }
    for role, kind in {(r, k) for r, k, _ in atom_named}:
        mine = {name for r, k, name in atom_named if (r, k) == (role, kind)} - sentence_mentions
        theirs = {name for r, k, name in sentence_named if (r, k) == (role, kind)} - atom_mentions
        if mine and theirs:
            return True
    return False


def _stems(names: frozenset[str]) -> set[str]:
    return {light_stem(name.lower()) for name in names}


def _another_agent(atom: AtomFrame, sentence: AtomFrame) -> bool:
    """The sentence tells the atom's act on the atom's object with another doer: "Alexander
    Fleming discovered penicillin" or "Penicillin was discovered by Alexander Fleming" against
    "Marie Curie discovered penicillin" (the caller has checked that the sentence never names
    the atom's subject).

    The act and object: every frame token of the atom is among the sentence's words (its
    frame and the stems of its names and subject: "Penicillin" opening a passive sentence is
    the atom's object), and every value of the atom is mentioned by the sentence. The doer:
    the sentence's opening subject, unless it is the atom's object, or a name after "by".
    """
    if not atom.frame:
        return False
    sentence_words = sentence.frame | _stems(sentence.subject | sentence.names)
    if not atom.frame <= sentence_words:
        return False
    if (
        not atom.names | atom.dates | atom.numbers
        <= sentence.names | sentence.subject | sentence.dates | sentence.numbers
    ):
        return False
    object_words = atom.frame | _stems(atom.names)
    doers = {name for role, name in sentence.named if role == "by"}
    if sentence.subject and not _stems(sentence.subject) <= object_words:
        doers |= sentence.subject
    return any(light_stem(d.lower()) not in object_words for d in doers - atom.names)


def context_comparability(atom: AtomFrame, sentence: AtomFrame, min_coverage: float = MIN_FRAME_COVERAGE) -> str:
    """Whether one sentence of a passage speaks about the atom's attribute and can disagree with
    it. Kept (:data:`SAME_ATTRIBUTE`): ``"values"``, ``"negation"``, ``"long"``; not kept:
    ``"subjects"``, ``"frames"``, ``"same values"``. The rule, in this order (module docstring),
    with M = names ∪ subject (what a text mentions):

        long      ⇔ the atom has > 1 sentence or > MAX_ATOM_FRAME frame tokens
        agent     ⇔ S_a ≠ ∅ ∧ S_a ∩ M_s = ∅ ∧ the sentence tells the atom's act and object
                    with another doer (:func:`_another_agent`)
        subjects  ⇔ S_a ≠ ∅ ∧ S_a ∩ M_s = ∅ ∧ (S_s ≠ ∅ ∨ F_a = ∅)
        frames    ⇔ F_a ≠ ∅ ∧ |F_a ∩ F_s| / |F_a| ≤ min_coverage
        values    ⇔ differ(years) ∨ differ(months) ∨ differ(days) ∨ differ(numbers)
                    ∨ ∃ role r: N_a,r ∖ M_s ≠ ∅ ∧ N_s,r ∖ M_a ≠ ∅,
                    differ(V) ⇔ V_a ∖ V_s ≠ ∅ ∧ V_s ∖ V_a ≠ ∅
        negation  ⇔ negated_a ≠ negated_s ∧ (F_a ≠ ∅ ∨ ∅ ≠ values_a ⊆ values_s ∪ M_s)

    A frameless atom ("Riyadh is in Saudi Arabia": every content word a value) says nothing
    about which attribute beyond its values, so a sentence must name its subject to speak
    about it.

    >>> born = atom_frame("Albert Einstein was born in 1879.")
    >>> context_comparability(born, atom_frame("Albert Einstein died on 18 April 1955 in Princeton."))
    'frames'
    >>> context_comparability(atom_frame("Albert Einstein was born in 1880."), atom_frame("He was born in Ulm in 1879."))
    'values'
    >>> context_comparability(born, atom_frame("Einstein was born on 14 March 1879 in Ulm."))
    'same values'
    """
    if atom.sentences > 1 or len(atom.frame) > MAX_ATOM_FRAME:
        return "long"
    sentence_mentions = sentence.subject | sentence.names
    if atom.subject and not atom.subject & sentence_mentions:
        if _another_agent(atom, sentence):
            return "agent"
        if sentence.subject or not atom.frame:
            return "subjects"
    if atom.frame and frame_coverage(atom, sentence) <= min_coverage:
        return "frames"
    kinds = zip((*_date_parts(atom.dates), atom.numbers), (*_date_parts(sentence.dates), sentence.numbers))
    for mine, theirs in kinds:
        if mine - theirs and theirs - mine:
            return "values"
    if _conflicting_names(atom, sentence):
        return "values"
    if atom.negated != sentence.negated:
        values = atom.dates | atom.numbers | atom.names
        if atom.frame or (values and values <= sentence.dates | sentence.numbers | sentence_mentions):
            return "negation"
    return "same values"


@lru_cache(maxsize=4096)
def _atom_frame_cached(text: str) -> AtomFrame:
    return atom_frame(text)


@lru_cache(maxsize=4096)
def _passage_frames_cached(text: str) -> tuple[AtomFrame, ...]:
    return passage_frames(text)


def same_attribute(atom_text: str, passage_text: str, min_coverage: float = MIN_FRAME_COVERAGE) -> str:
    """The first kept :func:`context_comparability` verdict over the passage's sentences, or
    ``"other attribute"`` when no sentence speaks about the atom's attribute with a value or a
    negation that can disagree (then an NLI contradiction between them is not a factor).

    >>> same_attribute("Albert Einstein was born in 1879.", "Albert Einstein died on 18 April 1955 in Princeton.")
    'other attribute'
    >>> same_attribute("Albert Einstein was born in 1880.",
    ...                "Einstein was a physicist. Albert Einstein was born in Ulm in 1879. He died in 1955.")
    'values'
    """
    atom = _atom_frame_cached(atom_text)
    for sentence in _passage_frames_cached(passage_text):
        verdict = context_comparability(atom, sentence, min_coverage)
        if verdict in SAME_ATTRIBUTE:
            return verdict
    return "other attribute"


def _folded_words(text: str) -> set[str]:
    """The words of ``text`` without case, accents or a possessive "'s"."""
    import unicodedata

    plain = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in plain if not unicodedata.combining(ch)).casefold()
    return {re.sub(r"['’]s$", "", word) for word in re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", plain)}


@lru_cache(maxsize=4096)
def _passage_words(text: str, title: str) -> frozenset[str]:
    return frozenset(_folded_words(text) | _folded_words(title))


#: where :func:`atom_subject` found the names an atom is about, in the order it looks
SUBJECT_SOURCES = ("atom", "sentence", "topic", "none")


def atom_subject(atom_text: str, sentence: str | None = None, topic: str | None = None) -> tuple[frozenset[str], str]:
    """The names the same-subject rule looks for in a passage, and where they came from
    (:data:`SUBJECT_SOURCES`), the first that gives any:

    - ``atom``: the capitalised words that open the atom (:class:`AtomFrame` ``subject``: a name
      the reviser brought in is one);
    - ``sentence``: those that open ``sentence``, the response sentence the atom was made from
      (the atom opens with a reference the reviser left: "She was born in Ulm.");
    - ``topic``: the words of the record's ``topic`` but its function words ("of", "the");
    - ``none``: none of these (an empty set: nothing can be checked).

    >>> atom_subject("Marie Curie was born in Warsaw.", "She was born in Warsaw.", "Marie Curie")[1]
    'atom'
    >>> words, source = atom_subject("He played the violin.", "Albert Einstein, who played the violin, was born in Ulm.")
    >>> sorted(words), source
    (['Albert', 'Einstein'], 'sentence')
    >>> words, source = atom_subject("Together they discovered polonium.", "Together they discovered polonium.", "Marie Curie")
    >>> sorted(words), source
    (['Curie', 'Marie'], 'topic')
    >>> atom_subject("There she met Pierre Curie.")
    (frozenset(), 'none')
    >>> sorted(atom_subject("Together they won.", None, "The Battle of Hastings")[0])
    ['Battle', 'Hastings']
    >>> atom_subject("The summit is 8,849 metres high.", None, "General knowledge quiz")
    (frozenset(), 'none')
    """
    subject = _atom_frame_cached(atom_text).subject
    if subject:
        return subject, "atom"
    if sentence:
        subject = _atom_frame_cached(sentence).subject
        if subject:
            return subject, "sentence"
    # the topic's words without its function words: a passage with "of" does not name the
    # subject of "Battle of Hastings", nor one with "the" that of "The Beatles"; a topic with a
    # lower-case content word names no one ("General knowledge quiz"): no subject to look for
    named = frozenset(w for w in (topic or "").split() if w.strip(",.;:()").casefold() not in _STOPWORDS)
    if named and all(w.strip(",.;:()\"'")[:1].isupper() for w in named):
        return named, "topic"
    return frozenset(), "none"


def names_subject(
    atom_text: str,
    passage_text: str,
    title: str | None = None,
    *,
    sentence: str | None = None,
    topic: str | None = None,
) -> bool:
    """Whether the passage (with its title) names the atom's subject — the names
    :func:`atom_subject` finds for it from the atom, its ``sentence`` or the record's ``topic``
    — or no subject is known (then nothing can be checked: True). One word of the subject is
    enough ("Curie" for "Marie Curie").

    >>> names_subject("Marie Curie discovered penicillin.",
    ...               "Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming.")
    False
    >>> names_subject("Marie Curie was born in Warsaw.", "She was born in Warsaw.", title="Marie Skłodowska-Curie")
    True
    >>> names_subject("He was born in 1879.", "Einstein was born in 1879.")
    True
    >>> names_subject("Together they discovered polonium.", "With Pierre she discovered polonium.", "Marie Curie",
    ...               topic="Marie Curie")
    True
    """
    return passage_names(atom_subject(atom_text, sentence, topic)[0], passage_text, title)


def passage_names(subject: frozenset[str], passage_text: str, title: str | None = None) -> bool:
    """Whether the passage (with its title) has a word of ``subject`` (:func:`atom_subject`'s
    names; compared without case, accents or a possessive), or ``subject`` is empty (nothing to
    check: True)."""
    if not subject:
        return True
    wanted = {word for name in subject for word in _folded_words(name)}
    return bool(wanted & _passage_words(passage_text, title or ""))

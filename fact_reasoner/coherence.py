"""Coherence: relations between the atoms of one response, as factors and as a score.

FR1–FR3 relate atoms only to contexts, so a response that contradicts itself ("born in
1949" … "aged 30 in 1985") is never noticed. With ``GraphOptions.coherence`` the pairs of
atoms are judged by NLI in both directions and become factors between atom variables, and the
response gets a coherence score and the list of its contradicting pairs.

Which pairs
    Every unordered pair of (deduplicated) atoms that passes the gates is judged both ways
    (:func:`plan_atom_pairs`); the others are counted as pruned
    (``counters.coherence_pairs_pruned``, ordered pairs, split by reason into
    ``coherence_pairs_incomparable`` and ``coherence_pairs_dissimilar``). Judging all n(n−1)
    ordered pairs of a 40-atom biography costs 1,560 NLI calls.

    *Similarity gate* (``coherence_min_similarity``): the pair's sentence-embedding cosine is
    at least the threshold. Two sentences about unrelated things are rarely judged a
    contradiction.

    *Comparability gate* (``coherence_pairs comparable``, applied first, needs no model): the
    two atoms must say something about the same attribute and disagree on its value. Why: the
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

The factor tables (:func:`atom_contradiction_table`, :func:`atom_entailment_table`)
    Atom–context tables (``factors.py``, DESIGN.md §4) are the paper's Table 1, e.g.
    contradiction ``[[p, p], [p, 1−p]]``. Between two atoms that table is unsound for a weak
    relation: it is ``p · [[1, 1], [1, (1−p)/p]]``, so for p < 0.5 it *rewards* both atoms
    being true. Here a relation judged with probability p is read as a mixture: with
    probability p the relation holds (the state it forbids is impossible), with probability
    1 − p there is no constraint (every state weighs 1). The forbidden state then weighs
    p·0 + (1−p)·1 = 1 − p and the others p + (1 − p) = 1:

    ========================  =====  =====  =====  =====
    relation (X, Y atoms)     00     01     10     11
    ========================  =====  =====  =====  =====
    X contradicts Y           1      1      1      1 − p
    X entails Y (X ⇒ Y)       1      1      1 − p  1
    ========================  =====  =====  =====  =====

    A contradiction multiplies the odds of "both true" by 1 − p against every other state,
    whatever else the graph says: two atoms judged contradictory with p = 0.99 cannot both
    be confidently true. The tables never favour a state, so a weak judgement can only do
    little, never the opposite of what it says. They are the same with or without
    ``use_priors`` (atoms carry their prior as a unary factor already).

Both directions
    Contradiction is symmetric: the pair gets one contradiction factor when either direction
    is judged a contradiction, with p the larger of the two (NLI models often see a
    contradiction one way only). Each direction judged an entailment adds its own directed
    entailment factor. Neutral and failed judgements, and (with ``min_relation_probability``)
    weak ones, add nothing.

The coherence score (:func:`coherence_score`)
    ``coherence = 1 − max_r p_r`` over the response's contradiction factors r (1 when there
    is none). Why this one: the event "the response contains no contradiction" is contained
    in "pair r is not a contradiction" for every r, so P(no contradiction) ≤ 1 − p_r for each
    r, and 1 − max p_r is the tightest such bound that needs no assumption about how the
    pair judgements depend on each other; with a single candidate pair it is exactly
    P(no contradiction). The product Π(1 − p_r) would be the probability only if the
    judgements were independent — they are not (the same atom appears in many pairs) — and
    it falls towards 0 with the number of pairs judged, so long responses would look
    incoherent from NLI noise alone. The score is read from the NLI judgements, not from
    the posterior: a response that says both "1949" and "1950" is incoherent whether or not
    either is true. The posteriors of both atoms are reported beside each pair.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from .errors import RecordFailed
from .factors import clamp_probability
from .graph import RELATION_CODES, BuiltGraph, FactorGraph, GraphOptions, GraphPlan
from .schema import ContradictingPair, Relation, RelationType

if TYPE_CHECKING:  # pragma: no cover
    from .embeddings import Embedder

logger = logging.getLogger(__name__)

__all__ = [
    "COMPARABLE",
    "MAX_ATOM_FRAME",
    "MIN_FRAME_OVERLAP",
    "AtomFrame",
    "CoherencePairs",
    "add_atom_factors",
    "atom_frame",
    "atom_contradiction_table",
    "atom_entailment_table",
    "atom_pair_relations",
    "check_coherence_judged",
    "coherence_counters",
    "coherence_score",
    "comparability",
    "comparable_pair_mask",
    "contradicting_pairs",
    "frame_overlap",
    "light_stem",
    "plan_atom_pairs",
    "select_atom_pairs",
]

_CONTRADICTION = RELATION_CODES[RelationType.CONTRADICTION]
_ENTAILMENT = RELATION_CODES[RelationType.ENTAILMENT]


# -- which pairs: the comparability gate ---------------------------------------------------------

#: which atom pairs coherence judges: ``similar`` (the similarity gate only) or ``comparable``
#: (the comparability gate, then the similarity gate)
CoherencePairs = Literal["comparable", "similar"]

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
    since including include includes known well later early around across along upon via like""".split()
)
_NEGATIONS = frozenset({"not", "never", "no", "nor", "neither", "none", "cannot"})
_NUMBER_WORDS = {
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
#: a sentence end (after a lower-case word or a number: not an initial, "Joey D. Vieira")
#: followed by the next sentence's capitalised first word
_SENTENCE_BREAK = re.compile(r"(?<=[a-z\d]{2})[.!?][\"”')]?\s+(?=[\"“(]?[A-Z])")
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
        if in_subject and token[0].isupper() and (word not in _STOPWORDS or following[:1].isupper()):
            if opening and word not in ("the", "a", "an"):
                subject.add(token)
            continue
        in_subject = opening = False
        if token[0].isupper():
            if word in _MONTHS:
                dates.add(_MONTHS[word])  # a date's month is compared with dates, not with places
            elif word in _STOPWORDS:  # "The", "He" opening a sentence
                skeleton.add(_SKELETON.get(word, word))
            else:
                names.add(token)
        elif word in _NEGATIONS or word.endswith(("n't", "n’t")):
            negated = True
        elif word in _NUMBER_WORDS:
            numbers.add(_NUMBER_WORDS[word])
        elif word in _STOPWORDS or len(word) == 1:
            skeleton.add(_SKELETON.get(word, word))
        else:
            frame.add(light_stem(word))
    return AtomFrame(
        frozenset(frame),
        frozenset(numbers),
        frozenset(names),
        negated,
        frozenset(skeleton),
        frozenset(dates),
        frozenset(subject),
        1 + len(_SENTENCE_BREAK.findall(text.strip())),
    )


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


# -- which pairs: selection ---------------------------------------------------------------------


def select_atom_pairs(
    atom_ids: Sequence[str],
    embeddings: np.ndarray | None,
    min_similarity: float,
    candidates: np.ndarray | None = None,
) -> tuple[tuple[tuple[str, str], ...], int]:
    """The ordered atom pairs to judge (both directions of each unordered pair i < j whose
    cosine cos(e_i, e_j) = e_i·e_j / (|e_i| |e_j|) ≥ ``min_similarity``) and how many ordered
    pairs the similarity gate pruned.

    ``candidates`` (one boolean per unordered pair, ``numpy.triu_indices`` order, e.g.
    :func:`comparable_pair_mask`) restricts the pairs first; those it excludes are not counted
    here. ``embeddings`` (one row per atom) may be ``None`` when ``min_similarity`` ≤ −1, where
    no pair can be pruned, or when no candidate is left.
    """
    n = len(atom_ids)
    if n < 2:
        return (), 0
    upper_i, upper_j = np.triu_indices(n, k=1)
    allowed = np.ones(len(upper_i), dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    if len(allowed) != len(upper_i):
        raise ValueError(f"select_atom_pairs needs one candidate flag per unordered pair ({len(upper_i)})")
    if min_similarity <= -1.0 or not allowed.any():
        keep = allowed
    else:
        if embeddings is None or len(embeddings) != n:
            raise ValueError(f"select_atom_pairs needs one embedding per atom ({n})")
        vectors = np.asarray(embeddings, dtype=float)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0  # a zero vector has cosine 0 with everything
        unit = vectors / norms[:, None]
        cosine = (unit @ unit.T)[upper_i, upper_j]
        keep = allowed & (cosine >= min_similarity)
    pairs: list[tuple[str, str]] = []
    for i, j in zip(upper_i[keep].tolist(), upper_j[keep].tolist()):
        pairs += [(atom_ids[i], atom_ids[j]), (atom_ids[j], atom_ids[i])]
    return tuple(pairs), 2 * int((allowed & ~keep).sum())


def plan_atom_pairs(
    plan: GraphPlan,
    embedder: "Embedder | None",
    min_similarity: float,
    pairs: CoherencePairs = "similar",
) -> GraphPlan:
    """``plan`` with the atom pairs that coherence judges: with ``pairs="comparable"`` the
    comparability gate first (:func:`comparable_pair_mask`), then the similarity gate
    (:func:`select_atom_pairs`). ``atom_pairs_pruned`` counts both, ``atom_pairs_incomparable``
    the first.

    The embedder is used only when the similarity gate can prune (``min_similarity`` > −1) and
    some pair is left for it."""
    if pairs not in ("comparable", "similar"):
        raise ValueError(f"unknown coherence pair rule {pairs!r} (comparable or similar)")
    ids = [a.id for a in plan.atoms]
    candidates = comparable_pair_mask([a.text for a in plan.atoms]) if pairs == "comparable" and len(ids) > 1 else None
    incomparable = 0 if candidates is None else 2 * int((~candidates).sum())
    embeddings = None
    if min_similarity > -1.0 and len(ids) > 1 and (candidates is None or candidates.any()):
        if embedder is None:
            raise ValueError("the coherence similarity gate needs a sentence embedder (or min_similarity -1)")
        embeddings = embedder.encode([a.text for a in plan.atoms])
    selected, dissimilar = select_atom_pairs(ids, embeddings, min_similarity, candidates)
    return dataclasses.replace(
        plan, atom_pairs=selected, atom_pairs_pruned=incomparable + dissimilar, atom_pairs_incomparable=incomparable
    )


# -- the factors --------------------------------------------------------------------------------


def atom_contradiction_table(p: float) -> np.ndarray:
    """X and Y contradict each other with probability p: ``[[1, 1], [1, 1 − p]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0, 1.0 - p]])


def atom_entailment_table(p: float) -> np.ndarray:
    """X ⇒ Y with probability p: ``[[1, 1], [1 − p, 1]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0 - p, 1.0]])


def atom_pair_relations(
    atom_pairs: Iterable[tuple[str, str]],
    relations: Iterable[Relation],
    min_relation_probability: float = 0.0,
) -> list[tuple[str, str, RelationType, float]]:
    """The atom–atom factors, as (source, target, relation, p) before clamping.

    Per unordered pair: one contradiction (either direction labelled contradiction, p the
    larger) listed from the atom that comes first in ``atom_pairs``; one entailment per
    direction labelled entailment. Only relations on ``atom_pairs`` count; the first one
    given for an ordered pair counts; failed ones and those with p ≤
    ``min_relation_probability`` are neutral.
    """
    wanted = list(dict.fromkeys(atom_pairs))
    wanted_set = set(wanted)
    judged: dict[tuple[str, str], Relation] = {}
    for rel in relations:
        key = (rel.source, rel.target)
        if key in wanted_set and key not in judged:
            judged[key] = rel

    def usable(rel: Relation | None, label: RelationType) -> float | None:
        if rel is None or rel.failed or rel.relation != label or rel.probability <= min_relation_probability:
            return None
        return float(rel.probability)

    out: list[tuple[str, str, RelationType, float]] = []
    seen: set[frozenset[str]] = set()
    for a, b in wanted:
        pair = frozenset((a, b))
        if pair in seen:
            continue
        seen.add(pair)
        forward, backward = judged.get((a, b)), judged.get((b, a))
        both_ways = (usable(forward, RelationType.CONTRADICTION), usable(backward, RelationType.CONTRADICTION))
        contradiction = [p for p in both_ways if p is not None]
        if contradiction:
            out.append((a, b, RelationType.CONTRADICTION, max(contradiction)))
        for source, target, directed in ((a, b, forward), (b, a, backward)):
            p = usable(directed, RelationType.ENTAILMENT)
            if p is not None:
                out.append((source, target, RelationType.ENTAILMENT, p))
    return out


def add_atom_factors(built: BuiltGraph, relations: Iterable[Relation], options: GraphOptions) -> BuiltGraph:
    """``built`` with the atom–atom factors of ``built.plan.atom_pairs`` appended (last)."""
    relations = list(relations)
    factors = atom_pair_relations(built.plan.atom_pairs, relations, options.min_relation_probability)
    graph = built.graph
    judged = {(r.source, r.target) for r in relations}
    missing = sum(pair not in judged for pair in built.plan.atom_pairs)
    if not factors:
        return dataclasses.replace(built, ignored_relations=_not_ignored(built, relations), atom_pairs_missing=missing)
    index = {name: i for i, name in enumerate(graph.variables)}
    raw = np.array([p for *_, p in factors], dtype=float)
    probs = np.asarray(clamp_probability(raw, options.clamp), dtype=float).reshape(-1)
    codes = np.array([RELATION_CODES[rel] for _, _, rel, _ in factors], dtype=np.int8)
    tables = np.array(
        [
            atom_contradiction_table(p) if code == _CONTRADICTION else atom_entailment_table(p)
            for p, code in zip(probs.tolist(), codes.tolist())
        ]
    ).reshape(-1, 2, 2)
    extended = FactorGraph(
        variables=graph.variables,
        prior=graph.prior,
        source=np.concatenate([graph.source, [index[s] for s, *_ in factors]]).astype(np.int64),
        target=np.concatenate([graph.target, [index[t] for _, t, *_ in factors]]).astype(np.int64),
        tables=np.concatenate([graph.tables, tables]),
        relations=np.concatenate([graph.relations, codes]).astype(np.int8),
        probabilities=np.concatenate([graph.probabilities, probs]),
    )
    return dataclasses.replace(
        built,
        graph=extended,
        factor_probabilities=np.concatenate([built.factor_probabilities, raw]),
        ignored_relations=_not_ignored(built, relations),
        atom_factors=len(factors),
        atom_pairs_missing=missing,
    )


def _not_ignored(built: BuiltGraph, relations: list[Relation]) -> dict[str, int]:
    """The builder counted atom–atom relations as ``atom_premise`` (ignored); with coherence
    those on the plan's atom pairs are used, so they are taken out of that count."""
    wanted = set(built.plan.atom_pairs)
    used = sum((r.source, r.target) in wanted for r in relations)
    ignored = dict(built.ignored_relations)
    left = ignored.get("atom_premise", 0) - used
    if left > 0:
        ignored["atom_premise"] = left
    else:
        ignored.pop("atom_premise", None)
    return ignored


# -- the score and the report -------------------------------------------------------------------


def coherence_score(contradiction_probabilities: Iterable[float]) -> float:
    """coherence = 1 − max_r p_r over the contradiction probabilities p_r (1 with none).

    An upper bound on P(no pair contradicts) that needs no independence assumption, exact
    for one pair (module docstring).

    >>> coherence_score([]), coherence_score([0.2, 0.9])
    (1.0, 0.09999999999999998)
    """
    values = [float(p) for p in contradiction_probabilities]
    if any(not 0.0 <= p <= 1.0 for p in values):
        raise ValueError(f"a contradiction probability lies outside [0, 1]: {values}")
    return 1.0 - max(values, default=0.0)


def contradicting_pairs(built: BuiltGraph, marginals: Mapping[str, float]) -> list[ContradictingPair]:
    """The atom pairs joined by a contradiction factor, most probable contradiction first, with
    their texts, P(contradiction) (before clamping) and the posterior of each atom."""
    graph = built.graph
    first = graph.num_factors - built.atom_factors
    texts = {a.id: a.text for a in built.plan.atoms}
    out = []
    for e in range(first, graph.num_factors):
        if int(graph.relations[e]) != _CONTRADICTION:
            continue
        a, b = graph.variables[int(graph.source[e])], graph.variables[int(graph.target[e])]
        out.append(
            ContradictingPair(
                atoms=(a, b),
                texts=(texts[a], texts[b]),
                probability=float(built.factor_probabilities[e]),
                posteriors=(float(marginals[a]), float(marginals[b])),
            )
        )
    return sorted(out, key=lambda pair: -pair.probability)


def coherence_counters(built: BuiltGraph) -> dict[str, int]:
    """``coherence_pairs`` (ordered atom pairs planned for judging), ``coherence_pairs_pruned``
    (left out by the gates, ordered pairs) and by reason ``coherence_pairs_incomparable`` (the
    comparability gate) and ``coherence_pairs_dissimilar`` (the similarity gate),
    ``coherence_pairs_missing`` (planned but with no judgement, e.g. precomputed relations that
    lack them) and ``coherence_factors`` (atom–atom factors in the graph)."""
    plan = built.plan
    return {
        "coherence_pairs": len(plan.atom_pairs),
        "coherence_pairs_pruned": plan.atom_pairs_pruned,
        "coherence_pairs_incomparable": plan.atom_pairs_incomparable,
        "coherence_pairs_dissimilar": plan.atom_pairs_pruned - plan.atom_pairs_incomparable,
        "coherence_pairs_missing": built.atom_pairs_missing,
        "coherence_factors": built.atom_factors,
    }


def check_coherence_judged(built: BuiltGraph) -> None:
    """Raise :class:`~fact_reasoner.errors.RecordFailed` when atom pairs were planned and none
    was judged (precomputed relations without atom–atom ones): a coherence of 1 would then
    be a number nothing computed."""
    planned = len(built.plan.atom_pairs)
    if planned and built.atom_pairs_missing == planned:
        raise RecordFailed(
            f"--coherence: none of the {planned} atom pair(s) was judged (the record's relations have no "
            "atom-atom judgements); use a model NLI backend (e.g. --nli cross-encoder) or supply them"
        )

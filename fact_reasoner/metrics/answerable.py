"""Whether a response answers at all: a non-answer is reported, never scored.

A metric that judges the answer (faithfulness, factual correctness, factual accuracy, answer
relevance, the similarities, the composite) gives no score to a response that answers
nothing: it is NaN with the reason ``not answerable: …`` (:meth:`Metric.score
<fact_reasoner.metrics.base.Metric.score>`), and ``fact-reasoner ragas`` writes the sample's row
with ``not_answerable`` and counts it in the summary. Why: the sentence atomizer turns a short
response into "<question> <response>", so the response ``"..."`` became the claim "Where is
the Eiffel Tower? ..." and faithfulness 0.5 — a believable number for nothing.

A response answers nothing (:func:`non_answer`) when it

- has no word at all (``"..."``, ``"?!"``);
- declines: its first sentence opens with a refusal or "I don't know" (the rules of
  ``--abstention``, :class:`~fact_reasoner.atoms.checkworthy.RuleAbstentionDetector`, FActScore's
  convention), or all it says is an uncertainty phrase (:data:`UNCERTAINTY_PHRASES`) with
  filler words ("I have no idea.", "Not sure!");
- only echoes the question: every word of it is a word of the question ("Hamlet?" to "Who
  wrote Hamlet?"), so its only claims would come from the question. Not for a question whose
  answer may be made of its own words: a yes/no question ("Is the tower in Paris?" — "The tower
  is in Paris.") or one that offers a choice (:func:`choice_options`: "Paris or Rome?",
  "Between the Lapageria and Satureja genus, which …?", "Which of Paris, Rome and Madrid …?",
  "Paris vs Rome: …?"), when the response picks some of its options and not all ("Lapageria"):
  choosing an option is an answer. A bare echo of a choice question — none of its options, or
  every one of them — still answers nothing.

A missing or empty response is not a non-answer but a sample without a response
(:meth:`RagSample.require <fact_reasoner.metrics.sample.RagSample.require>`; the command refuses
such a line, naming it). The retrieval metrics (context precision and recall) judge the
contexts, not the answer, and are computed as usual; answer classification labels a non-answer
DON'T KNOW with its reason, which is what it counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["FILLER_WORDS", "UNCERTAINTY_PHRASES", "choice_options", "non_answer", "uncertainty_match"]

UNCERTAINTY_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i dont know",
    "don't know the answer",
    "not sure",
    "i'm not certain",
    "i am not certain",
    "i'm unsure",
    "i am unsure",
    "no idea",
    "cannot answer",
    "can't answer",
    "unable to answer",
    "cannot determine",
    "can't determine",
    "unable to determine",
    "cannot be determined",
    "not enough information",
    "insufficient information",
    "no information",
    "does not provide",
    "doesn't provide",
    "does not mention",
    "doesn't mention",
    "not mentioned",
    "not specified",
    "no answer",
    "i cannot say",
    "i can't say",
    "cannot provide",
    "unable to provide",
    "unable to find",
    "could not find",
    "couldn't find",
)

#: words that say nothing about the world, around an uncertainty phrase ("I have no idea, sorry.")
FILLER_WORDS = frozenset(
    "i i'm im me my you your it it's this that the a an to of about for on at in here there is am are "
    "was be have has had really honestly truly quite just so well sorry unfortunately but oh um uh hmm "
    "answer question any all".split()
)

_WORD = re.compile(r"[\w']+", re.UNICODE)


def _words(text: str) -> list[str]:
    return [w.strip("'") for w in _WORD.findall(_plain_quotes(text).lower()) if w.strip("'")]


def _plain_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'")


def _phrase_pattern(phrase: str) -> str:
    words = [re.escape(w) for w in phrase.split()]
    return r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"


def uncertainty_match(text: str, phrases: Iterable[str] = UNCERTAINTY_PHRASES) -> str | None:
    """The first uncertainty phrase occurring in ``text`` as whole words, or ``None``."""
    normalised = _plain_quotes(text)
    for phrase in phrases:
        if re.search(_phrase_pattern(phrase.lower()), normalised, flags=re.IGNORECASE):
            return phrase
    return None


def _only_uncertainty(response: str) -> str | None:
    """The uncertainty phrase a response consists of (with filler words only), or None."""
    phrase = uncertainty_match(response)
    if phrase is None:
        return None
    rest = re.sub(_phrase_pattern(phrase.lower()), " ", _plain_quotes(response), flags=re.IGNORECASE)
    return phrase if set(_words(rest)) <= FILLER_WORDS else None


def non_answer(response: str | None, question: str | None = None) -> str | None:
    """Why ``response`` answers nothing (the rules in the module docstring), or None when it
    answers, or when there is no response at all (a missing response is the sample's problem,
    said by the metrics as ``sample has no response``).

    >>> print(non_answer("...", "Where is the Eiffel Tower?"))
    the response has no words ('...')
    >>> print(non_answer("I have no idea, sorry.", "Where is the Eiffel Tower?"))
    the response only says it cannot answer ('no idea')
    >>> print(non_answer("Eiffel Tower?", "Where is the Eiffel Tower?"))
    the response only repeats words of the question, so its only claims would come from the question
    >>> print(non_answer("In Paris.", "Where is the Eiffel Tower?"))
    None
    """
    from ..atoms.checkworthy import RuleAbstentionDetector

    if response is None or not response.strip():
        return None
    words = _words(response)
    if not words:
        return f"the response has no words ({' '.join(response.split())[:40]!r})"
    declined = RuleAbstentionDetector().abstention(response)
    if declined is not None:
        return f"the response {declined.replace('declines: ', 'declines to answer: ')}"
    phrase = _only_uncertainty(response)
    if phrase is not None:
        return f"the response only says it cannot answer ({phrase!r})"
    if question and set(words) <= set(_words(question)) and _asks_for_new_words(question):
        options = choice_options(question)
        if not options:
            return "the response only repeats words of the question, so its only claims would come from the question"
        picked = [key for key in _option_keys(options) if key in words]
        if not picked or len(picked) == len(options):
            return "the response only repeats the question without choosing one of the options it offers"
    return None


#: the words a yes/no question opens with: its answer may restate it ("Is it …?" — "It is …")
_YES_NO_OPENINGS = frozenset(
    "is are was were am do does did can could will would shall should may might must has have had".split()
)
_LABEL = re.compile(r"^\s*(?:question|q)\s*:\s*", re.IGNORECASE)


def _asks_for_new_words(question: str) -> bool:
    """Whether an answer to ``question`` need say something the question does not: not a yes/no
    question (it opens with an auxiliary verb, after a "Question:" label)."""
    words = _words(_LABEL.sub("", question))
    return bool(words) and words[0] not in _YES_NO_OPENINGS


#: words of an option that name none of the options
_OPTION_FILLER = frozenset("a an the one ones of in on at to for".split())
#: where the last option of "which of A, B and C is …" ends: the verb after it
_LIST_END = re.compile(
    r"\s+(?:is|are|was|were|has|have|had|did|does|do|can|could|will|would|should|won|wrote|came|comes)\b.*$"
)
_BETWEEN = re.compile(r"\bbetween\s+(.+?)\s+and\s+([^,;:?]+)")
_WHICH_OF = re.compile(r"\b(?:which|what|who|whom)(?:\s+one|\s+ones)?\s+of\s+(?:the\s+following\s*:?\s*)?([^?;]+)")
_VERSUS = re.compile(r"([^,;:?]+?)\s+(?:vs\.?|versus)\s+([^,;:?]+)")
_OR = re.compile(r"\bor\b")


def _option_words(texts: Iterable[str]) -> list[tuple[str, ...]]:
    """Each option's words in order (fillers left out); options without a word are dropped."""
    options = [tuple(word for word in _words(text) if word not in _OPTION_FILLER) for text in texts]
    return [option for option in options if option]


def _option_keys(options: Sequence[tuple[str, ...]]) -> list[str]:
    """The word that names each option: its first word no other option has ("Eiffel" of "the
    Eiffel Tower or the Tokyo Tower"; "Satureja" of "the Lapageria and Satureja genus"), else
    its first word."""
    keys = []
    for i, option in enumerate(options):
        others = {word for j, other in enumerate(options) if j != i for word in other}
        keys.append(next((word for word in option if word not in others), option[0]))
    return keys


def _listed(text: str) -> list[str]:
    """``"Paris, Rome, and Madrid"`` → the items of a list (commas, "and", "or")."""
    return [item for item in re.split(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", text.strip()) if item.strip()]


def choice_options(question: str) -> list[tuple[str, ...]] | None:
    """The options a question offers to choose from, each as its words, or None when it offers
    no choice (fewer than two options found); a response picks an option when it has the word
    that names it (its first word no other option has):

    - "… A or B …" (the clause holding "or"; "Who was born first, Einstein or Bohr?");
    - "Between A and B, which …?";
    - "Which of A, B and C is …?" (the list ends at the verb after it);
    - "A vs B" / "A versus B".

    >>> choice_options("Between the Lapageria and Satureja genus, which is the national flower of Chile?")
    [('lapageria',), ('satureja', 'genus')]
    >>> choice_options("Which of Paris, Rome and Madrid is the capital of Spain?")
    [('paris',), ('rome',), ('madrid',)]
    >>> choice_options("Who wrote Hamlet?") is None
    True
    """
    text = _plain_quotes(_LABEL.sub("", question)).lower()
    found: list[tuple[str, ...]] = []
    between = _BETWEEN.search(text)
    which_of = _WHICH_OF.search(text)
    versus = _VERSUS.search(text)
    if between:
        found = _option_words(between.groups())
    elif which_of:
        found = _option_words(_listed(_LIST_END.sub("", which_of.group(1))))
    elif versus:
        found = _option_words(versus.groups())
    elif _OR.search(text):
        clause = next(part for part in re.split(r"[;:?]", text) if _OR.search(part))
        items = clause.split(",")
        if len(items) > 1 and not _OR.search(items[0]):
            items = items[1:]  # "Who was born first, Einstein or Bohr": the list follows the comma
        found = _option_words(option for item in items for option in _listed(re.sub(r"^\s*or\s+", "", item)))
    return found if len(found) >= 2 else None

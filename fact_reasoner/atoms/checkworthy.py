"""Which atoms can be checked against evidence, and which responses decline to answer.

Two questions, each behind a small protocol with two implementations (``--checkworthy``):

- :class:`CheckworthyClassifier`: is an atom a claim about the world that evidence could support
  or refute? Uncheckable atoms are **opinions** of the speaker ("He is a truly talented
  actor"), **questions**, **hedges** ("He may have been born in 1950"), **instructions or
  advice** ("Consult a doctor") and **statements about the response itself** ("I hope this
  helps", "As an AI language model …"). With ``--skip-uncheckable`` they are left out of the
  scores and kept in the output with ``checkworthy: false`` and the reason.
- :class:`AbstentionDetector`: does a response decline to answer ("I could not find any
  information about …")? With ``--abstention on`` such a response is reported as an
  abstention (``abstained: true``) and gets no precision, as FActScore does.

:class:`RuleClassifier` / :class:`RuleAbstentionDetector` (``rules``, the default) use the
patterns below: no model, deterministic, cheap; they miss paraphrases the lists do not name.
A reported opinion is a fact about reception and stays checkable ("He is considered one of the
best", "critics praised …"); only the speaker's own judgement is an opinion.
:class:`LLMClassifier` / :class:`LLMAbstentionDetector` (``llm``) ask the LLM backend: one
structured call per response for all its atoms. A reply that cannot be read even after the
repair round and retries fails the record (:class:`~fact_reasoner.errors.RecordFailed`): an atom
is never called checkworthy (or a response responding) by default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ..errors import RecordFailed
from ..llm.structured import InvalidOutput, StructuredCaller, StructuredFailure
from ..settings.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..llm.base import LLMBackend
    from ..settings.config import PipelineConfig

__all__ = [
    "CHECKWORTHY",
    "REASONS",
    "AbstentionDetector",
    "Checkworthy",
    "CheckworthyClassifier",
    "CheckworthyVerdict",
    "LLMAbstentionDetector",
    "LLMClassifier",
    "RuleAbstentionDetector",
    "RuleClassifier",
    "make_abstention_detector",
    "make_classifier",
]

#: the kinds of uncheckable atom, the first word of every reason
REASONS = ("opinion", "question", "hedge", "instruction", "about the response")


@dataclass(frozen=True)
class CheckworthyVerdict:
    """Whether an atom can be checked; ``reason`` (a kind of :data:`REASONS`, then what showed
    it) when it cannot."""

    checkworthy: bool
    reason: str | None = None


@runtime_checkable
class CheckworthyClassifier(Protocol):
    """Marks the atoms of one response as checkworthy or not, one verdict per atom, in order."""

    def classify(self, atoms: Sequence[str], *, response: str | None = None) -> list[CheckworthyVerdict]: ...


@runtime_checkable
class AbstentionDetector(Protocol):
    """The reason a response declines to answer, or None when it answers."""

    def abstention(self, response: str) -> str | None: ...


# -- rules ---------------------------------------------------------------------------------------


def _words(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


#: the response talking about itself or its author (checked first: "I hope" is not a hedge)
ABOUT_THE_RESPONSE = _words(
    r"\bas an? (?:ai|artificial intelligence|(?:ai )?language model|ai assistant)\b",
    r"\bI (?:hope|trust) (?:this|that|it) (?:helps|answers|is helpful)",
    r"\blet me know\b",
    r"\bfeel free to\b",
    r"\bI(?:'m| am) (?:sorry|happy|glad|not able|unable)\b",
    r"\bI apologi[sz]e\b",
    r"\bmy (?:knowledge|training)(?: cutoff| cut-off| data)?\b",
    r"\b(?:this|the above|my) (?:response|answer|summary|text|information provided)\b",
    r"\bI (?:do not|don't|cannot|can't|could not|couldn't) (?:have|find|provide|access|browse)\b",
    r"^(?:please )?note that\b",
    r"^(?:in summary|in conclusion|overall|to summari[sz]e)\b,?\s*$",
)
#: advice and instructions addressed to the reader
INSTRUCTION = _words(
    r"^(?:please|consider|make sure|be sure|remember|try|always|never|check|consult|contact|visit|"
    r"see|refer to|keep in mind|don't|do not|avoid|ensure|seek|ask)\b",
    r"\b(?:you|one|readers?) (?:should|must|may want to|might want to|need to|can (?:visit|check|consult|find))\b",
    r"\bit(?: is|'s) (?:recommended|advisable|important|best|a good idea|wise|essential) (?:to|that)\b",
    r"\bI (?:recommend|suggest|advise)\b",
)
#: the speaker's own uncertainty
HEDGE = _words(
    r"\b(?:probably|possibly|perhaps|maybe|presumably|supposedly|allegedly)\b",
    r"\bmight\b",
    r"\bmay (?:have|be|not)\b",
    r"\bcould (?:have|be)\b",
    r"\bit (?:seems|appears)\b",
    r"\bseems to\b",
    r"\bit is (?:possible|likely|unlikely|unclear|uncertain|not (?:clear|known|certain))\b",
    r"\bI(?:'m| am) not (?:sure|certain)\b",
    r"\b(?:I think|I believe|I guess|I suppose)\b",
)
#: the speaker's own judgement (not a reported one: "is considered", "critics praised" stay checkable)
OPINION = _words(
    r"\b(?:in my (?:opinion|view)|I (?:feel|find|love|admire)|personally)\b",
    r"\b(?:truly|undeniably|undoubtedly|incredibly|amazingly|remarkably|extremely|very|so|really) "
    r"(?:talented|gifted|inspiring|impressive|remarkable|fascinating|beautiful|important|influential|"
    r"successful|skilled|creative|interesting|accomplished|dedicated|passionate|brilliant|great)\b",
    # lower case only: "Wonderful Town", "Beautiful Vampire" are titles
    r"(?-i:\b(?:amazing|wonderful|fantastic|awesome|incredible|fascinating|inspiring|inspirational|"
    r"admirable|beautiful|brilliant|magnificent|breathtaking|delightful|extraordinary)\b)",
    r"\ba (?:true|real|great|talented|gifted|remarkable|fascinating|inspiring|beloved|brilliant) "
    r"(?:artist|talent|icon|inspiration|legend|pioneer|visionary|genius|person|individual|figure|athlete|"
    r"musician|actor|actress|writer|leader|role model|treasure)\b",
    r"\b(?:deserves?|worth (?:reading|watching|listening|a visit|seeing))\b",
    r"\b(?:will (?:always )?be remembered|continues? to inspire|(?:lasting|enduring|indelible) "
    r"(?:legacy|impact|mark))\b",
    r"\bone of the (?:best|greatest|finest|most (?:talented|gifted|inspiring|remarkable|fascinating|"
    r"beautiful|brilliant))\b(?!-)",
)
#: a reported opinion is a checkable fact about reception
REPORTED = _words(
    r"\b(?:is|was|are|were|been|being) (?:widely |often |generally |highly |universally )?(?:considered|"
    r"regarded|described|hailed|named|ranked|voted|called|praised|acclaimed|recognized|recognised|known)\b",
    r"\b(?:critics|reviewers|fans|according to|praised|acclaimed|mourned)\b",
    r"\b(?:argued|argues|said|says|stated|states|claimed|claims|suggested|suggests|wrote|believed) that\b",
)

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("about the response", ABOUT_THE_RESPONSE),
    ("instruction", INSTRUCTION),
    ("hedge", HEDGE),
    ("opinion", OPINION),
)


def classify_by_rules(atom: str) -> CheckworthyVerdict:
    """The verdict of the patterns: a question (ends with "?"), then the first kind whose pattern
    matches (about the response, instruction, hedge, opinion); an opinion or a hedge is not one
    when the atom reports it (:data:`REPORTED`: "is regarded as", "critics", "argued that"). The reason names the kind and the words that matched.

    >>> classify_by_rules("Is he still alive?").reason
    'question'
    >>> classify_by_rules("She is a truly talented singer.").reason
    "opinion: 'truly talented'"
    >>> classify_by_rules("She is widely regarded as one of the best singers.").checkworthy
    True
    """
    text = " ".join(atom.split())
    if text.endswith("?"):
        return CheckworthyVerdict(False, "question")
    for kind, pattern in _RULES:
        match = pattern.search(text)
        if match is None:
            continue
        if kind in ("opinion", "hedge") and REPORTED.search(text):
            continue
        return CheckworthyVerdict(False, f"{kind}: {match.group(0).strip()!r}")
    return CheckworthyVerdict(True)


@dataclass
class RuleClassifier:
    """The rule-based classifier (:func:`classify_by_rules`, one atom at a time)."""

    def classify(self, atoms: Sequence[str], *, response: str | None = None) -> list[CheckworthyVerdict]:
        return [classify_by_rules(atom) for atom in atoms]


#: a declining sentence; a response abstains when its first sentence is one
DECLINE = _words(
    r"\bI (?:do not|don't|did not|didn't) (?:know|have (?:any |enough |much |specific )?"
    r"(?:information|details|data|knowledge|records?))\b",
    r"\bI (?:could not|couldn't|cannot|can't|can not|was unable to|am unable to|'m unable to|was not able to) "
    r"(?:find|locate|provide|identify|determine|give)\b",
    r"\bI(?:'m| am) (?:not (?:aware|familiar|sure who|able to))\b",
    r"\bI(?:'m| am) sorry\b",
    r"\bI apologi[sz]e\b",
    r"\b(?:there is|there's|there are) (?:no|not enough|insufficient|limited) (?:information|details|data|"
    r"records?|search results|sources|available information)\b",
    r"\bno (?:information|sources?|results?|records?) (?:was |were |is |are )?(?:found|available)\b",
    r"\b(?:the )?search results (?:do not|don't|did not) (?:provide|contain|mention|include)\b",
    r"\bnot (?:provided|mentioned|found) in the (?:provided )?search results\b",
    r"\b(?:as of|based on) my (?:knowledge cutoff|knowledge cut-off|last (?:update|training)|training data)\b",
    r"\b(?:could|can) you (?:please )?(?:provide|give) (?:more|additional)\b",
    r"\bplease provide more\b",
    r"\bthere (?:seems to be|is) (?:a mistake|an error) in the question\b",
)

#: words a decline may open with ("Unfortunately, I could not find …")
_LEAD_IN = re.compile(r"^(?:(?:unfortunately|sorry|hmm|well|regrettably|however),?\s+)+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def first_sentence(text: str) -> str:
    """The text up to the first sentence end (``.``, ``!`` or ``?`` then a space) or line break."""
    stripped = re.sub(r"\[\d+\]", "", text).strip()  # PerplexityAI's citation marks
    first_line = stripped.split("\n", 1)[0]
    return _SENTENCE_END.split(first_line, 1)[0]


@dataclass
class RuleAbstentionDetector:
    """A response abstains when its first sentence opens with a decline (:data:`DECLINE`, after
    a lead-in such as "Unfortunately,"), as FActScore counts a response that opens with "I could not find any information" as an abstention even
    if it goes on ("However, there is a person named …"); an empty response abstains too."""

    def abstention(self, response: str) -> str | None:
        if not response.strip():
            return "empty response"
        sentence = _LEAD_IN.sub("", first_sentence(response))
        match = DECLINE.match(sentence)
        return f"declines: {match.group(0)!r}" if match else None


# -- the LLM -------------------------------------------------------------------------------------

CLASSIFY_PROMPT_VERSION = "checkworthy/v1"
CLASSIFY_SYSTEM = (
    "You decide which statements can be checked against evidence. A statement is checkworthy when "
    "it claims something about the world that a reference text could support or contradict "
    "(dates, places, works, roles, events, and also what others said, e.g. 'critics praised him'). "
    "It is not checkworthy when it is one of: opinion (the writer's own judgement, e.g. 'she is a "
    "truly inspiring artist'), question, hedge (the writer's own uncertainty, e.g. 'he may have "
    "been born in 1950'), instruction (advice or a request to the reader), about the response (the "
    "writer or the text itself, e.g. 'I hope this helps', 'As an AI language model')."
)
ABSTAIN_PROMPT_VERSION = "abstention/v1"
ABSTAIN_SYSTEM = (
    "You decide whether a response declines to answer the question: it says it does not know, "
    "could not find information, or asks for more details, instead of answering. A response that "
    "answers, even briefly or wrongly, does not decline."
)


def classify_schema(count: int) -> dict[str, Any]:
    """The JSON the LLM classifier asks for: one verdict per numbered atom."""
    verdict = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 1, "maximum": count},
            "checkworthy": {"type": "boolean"},
            "reason": {"type": "string", "enum": ["none", *REASONS]},
        },
        "required": ["id", "checkworthy", "reason"],
    }
    return {
        "type": "object",
        "properties": {"atoms": {"type": "array", "items": verdict, "minItems": count, "maxItems": count}},
        "required": ["atoms"],
    }


def classify_messages(atoms: Sequence[str], response: str | None) -> list[tuple[str, str]]:
    numbered = "\n".join(f"{i}. {atom}" for i, atom in enumerate(atoms, start=1))
    context = f"Response the statements come from:\n{response}\n\n" if response else ""
    return [
        ("system", CLASSIFY_SYSTEM),
        (
            "user",
            f"{context}Statements:\n{numbered}\n\nFor every statement give its number, checkworthy "
            'true or false, and the reason ("none" when checkworthy). Reply with JSON only: '
            '{"atoms": [{"id": 1, "checkworthy": true, "reason": "none"}, ...]}',
        ),
    ]


def check_classification(payload: Any, count: int) -> list[CheckworthyVerdict]:
    """The verdicts of a reply, in atom order; :class:`InvalidOutput` unless it gives exactly one
    verdict per atom number 1…count, each with a known reason (not "none" when uncheckable)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("atoms"), list):
        raise InvalidOutput('expected an object {"atoms": [...]}')
    verdicts: dict[int, CheckworthyVerdict] = {}
    for item in payload["atoms"]:
        if not isinstance(item, dict):
            raise InvalidOutput("every verdict must be an object")
        number, worthy, reason = item.get("id"), item.get("checkworthy"), item.get("reason")
        if not isinstance(number, int) or not 1 <= number <= count:
            raise InvalidOutput(f"id {number!r} is not a statement number 1…{count}")
        if number in verdicts:
            raise InvalidOutput(f"statement {number} is judged twice")
        if not isinstance(worthy, bool):
            raise InvalidOutput(f"statement {number}: checkworthy must be true or false")
        if not worthy and reason not in REASONS:
            raise InvalidOutput(f"statement {number}: reason must be one of {', '.join(REASONS)}")
        verdicts[number] = CheckworthyVerdict(True) if worthy else CheckworthyVerdict(False, f"{reason} (llm)")
    missing = [n for n in range(1, count + 1) if n not in verdicts]
    if missing:
        raise InvalidOutput(f"no verdict for statement(s) {missing}")
    return [verdicts[n] for n in range(1, count + 1)]


def _fail(stage: str, failure: StructuredFailure) -> RecordFailed:
    return RecordFailed(f"{stage}: {failure.reason}", unreachable=failure.transport and failure.unreachable)


@dataclass
class LLMClassifier:
    """The LLM classifier: one structured call for all the atoms of a response."""

    llm: LLMBackend
    retries: int = 1
    _counters: dict[str, int] = field(default_factory=lambda: {"calls": 0, "repairs": 0}, init=False)

    def __post_init__(self) -> None:
        self._caller = StructuredCaller(self.llm, CLASSIFY_PROMPT_VERSION, max_tokens=1024, retries=self.retries)

    def classify(self, atoms: Sequence[str], *, response: str | None = None) -> list[CheckworthyVerdict]:
        if not atoms:
            return []
        count = len(atoms)
        result = self._caller.ask_many(
            [classify_messages(atoms, response)],
            [classify_schema(count)],
            [lambda payload: check_classification(payload, count)],
        )[0]
        self._counters["calls"] += 1
        if isinstance(result, StructuredFailure):
            raise _fail("checkworthy (llm)", result)
        self._counters["repairs"] += int(result.repaired)
        return list(result.value)

    def stats(self) -> dict[str, float]:
        return dict(self._counters)


def check_abstention(payload: Any) -> bool:
    if not isinstance(payload, dict) or not isinstance(payload.get("declines"), bool):
        raise InvalidOutput('expected {"declines": true} or {"declines": false}')
    return bool(payload["declines"])


@dataclass
class LLMAbstentionDetector:
    """Asks the LLM whether the response declines (one structured call per response)."""

    llm: LLMBackend
    retries: int = 1

    def __post_init__(self) -> None:
        self._caller = StructuredCaller(self.llm, ABSTAIN_PROMPT_VERSION, max_tokens=32, retries=self.retries)

    def abstention(self, response: str) -> str | None:
        if not response.strip():
            return "empty response"
        messages = [
            ("system", ABSTAIN_SYSTEM),
            ("user", f'Response:\n{response}\n\nReply with JSON only: {{"declines": true}} or {{"declines": false}}'),
        ]
        schema = {"type": "object", "properties": {"declines": {"type": "boolean"}}, "required": ["declines"]}
        result = self._caller.ask_many([messages], [schema], [check_abstention])[0]
        if isinstance(result, StructuredFailure):
            raise _fail("abstention (llm)", result)
        return "declines (llm)" if result.value else None


class Checkworthy(NamedTuple):
    """What one ``--checkworthy`` choice decides with: the atom classifier and the abstention
    detector (each stage keeps only the one it uses, with its own counters)."""

    classifier: CheckworthyClassifier
    abstention: AbstentionDetector


def _rules(llm: LLMBackend | None) -> Checkworthy:
    return Checkworthy(RuleClassifier(), RuleAbstentionDetector())


def _llm(llm: LLMBackend | None) -> Checkworthy:
    if llm is None:
        raise ValueError("--checkworthy llm needs the LLM backend")
    return Checkworthy(LLMClassifier(llm), LLMAbstentionDetector(llm))


#: what decides which atoms are checkable and whether a response declines (``--checkworthy``):
#: ``factory(llm) -> Checkworthy``, ``llm`` the LLM backend (None when the entry does not list
#: ``llm`` in its ``uses``)
CHECKWORTHY: Registry[Checkworthy] = Registry(
    "checkworthy", noun="checkworthy classifier", entry_point_group="fact_reasoner.atoms.checkworthy"
)
CHECKWORTHY.register("rules", _rules, description="patterns, no model", builtin=True)
CHECKWORTHY.register(
    "llm",
    _llm,
    description="one structured call per response with the LLM backend (an unreadable answer fails the record)",
    uses=("llm",),
    builtin=True,
)


def make_classifier(config: PipelineConfig, llm: LLMBackend | None = None) -> CheckworthyClassifier:
    """The classifier ``config.scores.checkworthy`` names (``llm`` needs the LLM backend)."""
    return CHECKWORTHY.make(config.scores.checkworthy, llm).classifier


def make_abstention_detector(config: PipelineConfig, llm: LLMBackend | None = None) -> AbstentionDetector:
    """The detector ``config.scores.checkworthy`` names (``llm`` needs the LLM backend)."""
    return CHECKWORTHY.make(config.scores.checkworthy, llm).abstention

"""The corrector: a response rewritten to keep what is supported, with citations, and re-assessed.

``fact-reasoner correct`` (:mod:`fact_reasoner.commands.correct`) runs :meth:`Corrector.correct` on
every record. One record goes through:

1. **assess** the response as it is (:meth:`FactReasoner.assess
   <fact_reasoner.pipeline.FactReasoner.assess>`, the run's settings): each atom's posterior and
   the contexts that entail or contradict it;
2. **plan** (pure functions, no model): each atom is *kept* (posterior > 0.5, the S rule of
   :func:`~fact_reasoner.scores.predict_label`), *rewritten* (not supported, and a context
   contradicts it with P > 0.5: that context says what is true) or *removed* (not supported, and
   no context says otherwise); each atom belongs to the sentence whose words it shares most
   (:func:`assign_sentences`); a sentence whose atoms are all kept is kept word for word, one
   whose atoms are all removed is removed, any other is rewritten;
3. **rewrite** the mixed sentences with the language model (:class:`SentenceRewriter`; the
   prompt is :mod:`fact_reasoner.llm.correction`): keep these facts, correct those with this
   evidence, drop the rest;
4. **cite**: each sentence left gets ``[n]`` markers for the contexts that entail its kept
   atoms and contradict its corrected ones (at most :data:`MAX_CITATIONS` per sentence),
   numbered in order of first use, with a reference list;
5. **re-assess** the corrected text (citations removed) with the same settings and the same
   contexts: its atoms are made afresh from the new text. An unsupported atom the kept atoms
   entail is *carried over* (the first assessment supported the fact; the judge disagrees with
   itself over a rewording: listed under ``unsupported_atoms`` with ``carried_over: true``);
   any other one was *introduced* by the rewrite (:func:`introduced_atoms`), and then the
   record's correction **fails** (``status: "failed"``, the reason and the unsupported atoms
   listed, the rejected text kept apart under ``rejected_text``) — a correction is never
   returned with a claim that neither a context nor the supported part of the response states.

A record whose atoms are all supported is ``unchanged``: its text gets its citations and is not
assessed again (the same text, the same contexts and settings give the same assessment).

The output row is the assessment of the original response (every field of
:class:`~fact_reasoner.schema.OutputRecord`, so reports and summaries read it as before) plus
``correction`` (:meth:`Correction.as_dict`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .atomizer import split_sentences
from .config import PipelineConfig
from .errors import FactReasonerError, RecordFailed
from .executors import Job
from .io import NumberedRecord
from .llm.correction import PROMPT_VERSION, FactToCorrect, RewriteRequest
from .schema import Context, InputRecord, Label, OutputRecord
from .scores import is_supported

if TYPE_CHECKING:  # pragma: no cover
    from .llm.base import LLMBackend
    from .pipeline import FactReasoner

logger = logging.getLogger(__name__)

#: a contradiction must be more likely than not to count as saying what is true
CONTRADICTION_THRESHOLD = 0.5
#: citation markers after one sentence, at most
MAX_CITATIONS = 3
#: characters of a context shown as the evidence of a change or a reference
SNIPPET_CHARS = 240

AtomAction = Literal["keep", "rewrite", "remove"]
SentenceAction = Literal["keep", "rewrite", "remove"]


class RewriteFailed(FactReasonerError, RuntimeError):
    """The model's replies for a sentence could not be used (after the repair round and the
    retries): the record's correction fails with this reason."""


# -- planning (pure) ---------------------------------------------------------------------------


_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> set[str]:
    """The lower-cased words (``\\w+``) of ``text``."""
    return {w.lower() for w in _WORD.findall(text)}


def word_overlap(claim: str, sentence: str) -> float:
    """The share of the claim's words found in the sentence: |W(claim) ∩ W(sentence)| / |W(claim)|
    (0 for a claim without words)."""
    claim_words = words(claim)
    if not claim_words:
        return 0.0
    return len(claim_words & words(sentence)) / len(claim_words)


def assign_sentences(claims: Sequence[Sequence[str]], sentences: Sequence[str]) -> list[int]:
    """For each atom (given by one or more spellings: its text, its text before revision), the
    index of the sentence with the largest :func:`word_overlap` over its spellings; the first
    such sentence on a tie. Raises ``ValueError`` when there is no sentence."""
    if not sentences:
        raise ValueError("no sentence to assign atoms to")
    assigned = []
    for spellings in claims:
        scores = [max((word_overlap(s, sentence) for s in spellings if s), default=0.0) for sentence in sentences]
        assigned.append(max(range(len(sentences)), key=lambda i: (scores[i], -i)))
    return assigned


@dataclass(frozen=True)
class CitedEvidence:
    """A context an atom's verdict rests on: the relation and its NLI probability."""

    context: str
    relation: str
    probability: float


@dataclass(frozen=True)
class AtomDecision:
    """What happens to one atom, and the context that justifies it (None: no context does)."""

    atom: str
    text: str
    probability: float
    sentence: int
    action: AtomAction
    evidence: CitedEvidence | None = None


def strongest(evidence: Sequence[Mapping[str, Any]], relation: str) -> CitedEvidence | None:
    """The link of ``relation`` with the largest probability, if that probability is above
    :data:`CONTRADICTION_THRESHOLD` (0.5); else None. ``evidence`` is an output atom's
    ``evidence`` list (``context``, ``relation``, ``probability``)."""
    best = None
    for link in evidence:
        if str(link["relation"]) != relation or float(link["probability"]) <= CONTRADICTION_THRESHOLD:
            continue
        if best is None or float(link["probability"]) > best.probability:
            best = CitedEvidence(str(link["context"]), relation, float(link["probability"]))
    return best


def decide_atom(
    atom: str, text: str, probability: float, evidence: Sequence[Mapping[str, Any]], sentence: int
) -> AtomDecision:
    """keep when P(atom) > 0.5 (cite its strongest entailing context, if one is above 0.5);
    else rewrite when a context contradicts it with P > 0.5 (cite the strongest); else remove."""
    if is_supported(probability):
        return AtomDecision(atom, text, probability, sentence, "keep", strongest(evidence, "entailment"))
    contradiction = strongest(evidence, "contradiction")
    if contradiction is not None:
        return AtomDecision(atom, text, probability, sentence, "rewrite", contradiction)
    return AtomDecision(atom, text, probability, sentence, "remove", None)


@dataclass(frozen=True)
class SentencePlan:
    """One sentence of the response: its atoms' decisions, what happens to it, what it cites."""

    index: int
    text: str
    action: SentenceAction
    atoms: tuple[AtomDecision, ...]
    cited: tuple[str, ...]


def plan_sentences(sentences: Sequence[str], decisions: Sequence[AtomDecision]) -> list[SentencePlan]:
    """keep a sentence without atoms or whose atoms are all kept; remove one whose atoms are all
    removed; rewrite the others. A sentence cites, in atom order and without repeats, the
    contexts of its kept and rewritten atoms (at most :data:`MAX_CITATIONS`)."""
    plans = []
    for index, text in enumerate(sentences):
        own = tuple(d for d in decisions if d.sentence == index)
        actions = {d.action for d in own}
        action: SentenceAction
        if actions <= {"keep"}:
            action = "keep"
        elif actions == {"remove"}:
            action = "remove"
        else:
            action = "rewrite"
        cited = list(dict.fromkeys(d.evidence.context for d in own if d.evidence is not None and d.action != "remove"))
        plans.append(SentencePlan(index, text, action, own, tuple(cited[:MAX_CITATIONS] if action != "remove" else ())))
    return plans


def number_references(cited_per_sentence: Sequence[Sequence[str]]) -> dict[str, int]:
    """Context id → its reference number, 1, 2, … in order of first citation."""
    numbers: dict[str, int] = {}
    for cited in cited_per_sentence:
        for context in cited:
            numbers.setdefault(context, len(numbers) + 1)
    return numbers


_END = re.compile(r"([.!?…]+[\"'”’)]*)$")


def add_citations(sentence: str, numbers: Sequence[int]) -> str:
    """``sentence`` with ``[n]`` markers before its final punctuation
    (``"born in 1942."`` + [2] → ``"born in 1942 [2]."``), or after it when it has none."""
    if not numbers or not sentence:
        return sentence
    markers = "".join(f"[{n}]" for n in numbers)
    match = _END.search(sentence)
    if match is None:
        return f"{sentence} {markers}"
    return f"{sentence[: match.start()].rstrip()} {markers}{match.group(1)}"


def introduced_atoms(
    unsupported: Sequence[Mapping[str, Any]], entailed_by_kept: Sequence[float | None]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split the corrected text's unsupported atoms into those the rewrite *introduced* and those
    it *carried over*.

    An atom is carried over when the atoms the plan kept (those the first assessment found
    supported), read together as a premise, entail it: ``P(entailment) > 0.5``. It restates a
    fact the original response made and the first assessment supported, and its new verdict is
    the judge disagreeing with itself over a rewording — not a new claim. Every other unsupported
    atom, and one whose check could not be judged (``None``), is introduced: the record fails.
    Both lists keep the atoms' fields, with ``carried_over`` set.
    """
    introduced, carried = [], []
    for atom, p in zip(unsupported, entailed_by_kept, strict=True):
        if p is not None and p > 0.5:
            carried.append(dict(atom) | {"carried_over": True, "entailed_by_kept": p})
        else:
            introduced.append(dict(atom) | {"carried_over": False, "entailed_by_kept": p})
    return introduced, carried


def evidence_snippet(context_text: str, claim: str, max_chars: int = SNIPPET_CHARS) -> str:
    """The sentence of a context that shares most words with ``claim`` (:func:`word_overlap` of
    the claim in the sentence; the first on a tie), cut to ``max_chars`` with an ellipsis."""
    sentences = split_sentences(context_text) or [context_text]
    best = max(sentences, key=lambda s: (word_overlap(claim, s), -sentences.index(s)))
    best = " ".join(best.split())
    return best if len(best) <= max_chars else best[: max_chars - 1].rstrip() + "…"


def why(decision: AtomDecision) -> str:
    """One line saying why an atom was rewritten or removed."""
    if decision.action == "rewrite" and decision.evidence is not None:
        return (
            f"not supported (P = {decision.probability:.2f}); context {decision.evidence.context} contradicts it "
            f"(P = {decision.evidence.probability:.2f}) and says what is true"
        )
    if decision.action == "remove":
        return f"not supported (P = {decision.probability:.2f}) and no context says what is true instead"
    return f"supported (P = {decision.probability:.2f})"


# -- rewriting (the model) ----------------------------------------------------------------------


@runtime_checkable
class SentenceRewriter(Protocol):
    """Writes each requested sentence (``""``: nothing of it is left). Raises
    :class:`~fact_reasoner.errors.RecordFailed` when the model could not be asked, and
    :class:`RewriteFailed` when its replies could not be used."""

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[str]: ...


@dataclass
class LLMSentenceRewriter:
    """The rewriter on a chat model: one structured call per sentence (batched), the shared
    repair-and-retry policy (:mod:`fact_reasoner.llm.structured`)."""

    llm: LLMBackend
    retries: int = 1

    def __post_init__(self) -> None:
        from .llm.structured import StructuredCaller

        self._caller = StructuredCaller(self.llm, PROMPT_VERSION, max_tokens=300, retries=self.retries)

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[str]:
        from .llm.correction import build_messages, check_sentence, sentence_schema
        from .llm.structured import StructuredFailure

        if not requests:
            return []
        results = self._caller.ask_many(
            [build_messages(r) for r in requests], [sentence_schema()] * len(requests), [check_sentence] * len(requests)
        )
        transport = [r for r in results if isinstance(r, StructuredFailure) and r.transport]
        if transport:
            raise RecordFailed(
                f"corrector: {len(transport)} of {len(requests)} rewrite call(s) failed: {transport[0].reason}",
                unreachable=all(r.unreachable for r in transport),
            )
        sentences = []
        for request, result in zip(requests, results):
            if isinstance(result, StructuredFailure):
                raise RewriteFailed(f"the rewrite of {request.sentence!r} is unusable: {result.reason}")
            sentences.append(result.value)
        return sentences


# -- the correction of one record ----------------------------------------------------------------


@dataclass
class Correction:
    """What :meth:`Corrector.correct` made of one record (see :meth:`as_dict` for the fields)."""

    status: Literal["corrected", "unchanged", "failed"]
    reason: str | None
    text: str | None
    plain_text: str | None
    references: list[dict[str, Any]]
    sentences: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    before: dict[str, Any]
    after: dict[str, Any] | None
    unsupported_atoms: list[dict[str, Any]] = field(default_factory=list)
    rejected_text: str | None = None
    method: Literal["rewrite", "extractive"] = "rewrite"
    refused_rewrite: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The ``correction`` field of an output row:

        - ``status``: ``corrected``, ``unchanged`` (every atom supported) or ``failed``;
        - ``reason``: why it failed (null otherwise);
        - ``text``: the corrected text with ``[n]`` citations (null when failed), and
          ``plain_text`` (without them: what was re-assessed);
        - ``references``: ``[{n, context, title, snippet, link}]``;
        - ``sentences``: the per-sentence diff ``[{index, action: kept|rewritten|removed,
          original, corrected}]`` (``corrected`` null when removed);
        - ``changes``: every atom rewritten or removed ``[{atom, text, probability, action,
          sentence, why, evidence: [{context, n, relation, probability, snippet}]}]``;
        - ``before`` / ``after``: ``factuality_score``, ``num_atoms``, ``num_true_atoms``,
          ``chars``, ``words`` of the original and of the corrected text (``after`` of a
          failed record describes the rejected text; ``reassessed`` says whether it was
          assessed again);
        - ``unsupported_atoms``: the atoms of the corrected text that are not supported
          ``[{id, text, probability, carried_over, entailed_by_kept}]``: on a failed record the
          introduced ones and the carried-over ones, on a corrected record only carried-over
          ones (facts the first assessment supported, restated);
        - ``rejected_text``: the rewrite that was refused (only when failed);
        - ``method``: ``rewrite`` (the model's sentences) or ``extractive`` (the model's rewrite
          was refused, and the response's own supported sentences passed the check instead);
          with ``extractive``, ``refused_rewrite`` says why the rewrite was refused (``reason``,
          ``text``, ``after``, ``unsupported_atoms``).
        """
        out: dict[str, Any] = {
            "status": self.status,
            "reason": self.reason,
            "text": self.text,
            "plain_text": self.plain_text,
            "references": self.references,
            "sentences": self.sentences,
            "changes": self.changes,
            "before": self.before,
            "after": self.after,
            "unsupported_atoms": self.unsupported_atoms,
            "prompt": PROMPT_VERSION,
        }
        if self.rejected_text is not None:
            out["rejected_text"] = self.rejected_text
        if self.status != "failed":
            out["method"] = self.method
        if self.refused_rewrite is not None:
            out["refused_rewrite"] = self.refused_rewrite
        return out


@dataclass
class _Draft:
    """A corrected text before its check: what :meth:`Corrector._compose` made."""

    text: str
    plain: str
    references: list[dict[str, Any]]
    sentences: list[dict[str, Any]]
    changes: list[dict[str, Any]]

    def correction(
        self,
        status: Literal["corrected", "unchanged"],
        before: dict[str, Any],
        after: dict[str, Any],
        *,
        unsupported_atoms: list[dict[str, Any]] | None = None,
        method: Literal["rewrite", "extractive"] = "rewrite",
        refused: dict[str, Any] | None = None,
    ) -> Correction:
        return Correction(
            status,
            None,
            self.text,
            self.plain,
            self.references,
            self.sentences,
            self.changes,
            before,
            after,
            unsupported_atoms=unsupported_atoms or [],
            method=method,
            refused_rewrite=refused,
        )


def _refusal(introduced: Sequence[Mapping[str, Any]]) -> str:
    listed = "; ".join(f"{u['text']!r} (P = {u['probability']:.2f})" for u in introduced[:5])
    return (
        f"the corrected text has {len(introduced)} atom(s) that no context supports and the kept atoms "
        f"do not state: {listed}{' …' if len(introduced) > 5 else ''}"
    )


def text_size(text: str) -> dict[str, int]:
    """Characters and whitespace-separated words of ``text``."""
    return {"chars": len(text), "words": len(text.split())}


def score_fields(result: OutputRecord | None, text: str, *, reassessed: bool) -> dict[str, Any]:
    """Precision and size of one assessed text (``factuality_score`` null without atoms)."""
    if result is None:
        return {"factuality_score": None, "num_atoms": 0, "num_true_atoms": 0, "reassessed": reassessed} | text_size(
            text
        )
    return {
        "factuality_score": result.factuality_score if result.num_atoms else None,
        "num_atoms": result.num_atoms,
        "num_true_atoms": result.num_true_atoms,
        "reassessed": reassessed,
    } | text_size(text)


def correction_settings(config: PipelineConfig) -> dict[str, Any]:
    """The settings of a ``correct`` run's rows: the assessment's, and the corrector's prompt
    (a resumed run must have the same)."""
    return config.settings() | {"correction": {"prompt": PROMPT_VERSION}}


class Corrector:
    """Assess, plan, rewrite, cite and re-assess one record at a time (see the module docstring).

    ``assessor`` makes both assessments (same settings); ``rewriter`` writes the sentences.
    """

    def __init__(self, assessor: FactReasoner, rewriter: SentenceRewriter) -> None:
        self.assessor = assessor
        self.rewriter = rewriter

    @classmethod
    def from_config(cls, config: PipelineConfig, assessor: FactReasoner | None = None) -> "Corrector":
        """The corrector of ``config``: its assessor, and the rewriter on its language model."""
        from .pipeline import FactReasoner

        assessor = assessor or FactReasoner(config)
        return cls(assessor, LLMSentenceRewriter(assessor.stages.llm()))

    def correct(
        self,
        record: InputRecord | dict,
        *,
        k: int | str | None = None,
        dataset_median_atoms: float | None = None,
        record_key: str | None = None,
    ) -> dict[str, Any]:
        """The output row of one record: its assessment plus ``correction``.

        Raises :class:`~fact_reasoner.errors.RecordFailed` when a stage could not run (a model
        that could not be asked, a record without response text): the record gets no row."""
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        sentences = split_sentences(record.output)
        if not sentences:
            raise RecordFailed("correct: the record has no response text to correct (only atoms)")
        before = self.assessor.assess(record, k=k, dataset_median_atoms=dataset_median_atoms, record_key=record_key)
        row = before.model_dump(mode="json")
        row["settings"] = correction_settings(self.assessor.config)
        contexts = _contexts_used(record, row)
        correction = self._correct(record, before, sentences, contexts, k, dataset_median_atoms)
        row["correction"] = correction.as_dict()
        return row

    def _correct(
        self,
        record: InputRecord,
        before: OutputRecord,
        sentences: list[str],
        contexts: dict[str, Context],
        k: int | str | None,
        median: float | None,
    ) -> Correction:
        spellings = [[a.text, a.original or ""] for a in before.atoms]
        where = assign_sentences(spellings, sentences)
        decisions = [
            decide_atom(a.id, a.text, a.probability, [e.model_dump(mode="json") for e in a.evidence], s)
            for a, s in zip(before.atoms, where)
        ]
        plans = plan_sentences(sentences, decisions)
        before_fields = score_fields(before, record.output, reassessed=True)

        to_rewrite = [p for p in plans if p.action == "rewrite"]
        requests = [self._request(p, contexts, record.input or None) for p in to_rewrite]
        refused: dict[str, Any] | None = None
        try:
            written = dict(zip((p.index for p in to_rewrite), self.rewriter.rewrite(requests)))
        except RewriteFailed as error:
            written, refused = None, {"reason": str(error)}

        draft: _Draft | None = None
        if written is not None:
            draft = self._compose(plans, written, decisions, contexts)
            if not draft.changes:  # every atom supported: the same text, nothing to assess again
                after_fields = before_fields | {"reassessed": False}
                return draft.correction("unchanged", before_fields, after_fields)
            after_fields, introduced, carried = self._check(record, draft.plain, contexts, decisions, k, median)
            if not introduced:
                return draft.correction("corrected", before_fields, after_fields, unsupported_atoms=carried)
            refused = {
                "reason": _refusal(introduced),
                "text": draft.text,
                "after": after_fields,
                "unsupported_atoms": introduced + carried,
            }
        assert refused is not None
        logger.info("rewrite refused: %s", refused["reason"])

        # The fallback: the response's own supported sentences only (no model writes anything,
        # so nothing can be introduced but what the re-assessment now doubts).
        extract = self._compose(plans, {}, decisions, contexts, extractive=True)
        if extract.plain.strip():
            after_fields, introduced, carried = self._check(record, extract.plain, contexts, decisions, k, median)
            if not introduced:
                return extract.correction(
                    "corrected",
                    before_fields,
                    after_fields,
                    unsupported_atoms=carried,
                    method="extractive",
                    refused=refused,
                )
            refused["extractive_reason"] = _refusal(introduced)
        shown = draft or extract  # the refused text's diff and references, for the report
        return Correction(
            "failed",
            refused["reason"]
            + ("; kept sentences only: " + refused["extractive_reason"] if "extractive_reason" in refused else ""),
            None,
            None,
            shown.references,
            shown.sentences,
            shown.changes,
            before_fields,
            refused.get("after"),
            unsupported_atoms=refused.get("unsupported_atoms", []),
            rejected_text=refused.get("text"),
        )

    def _compose(
        self,
        plans: Sequence[SentencePlan],
        written: Mapping[int, str],
        decisions: Sequence[AtomDecision],
        contexts: Mapping[str, Context],
        *,
        extractive: bool = False,
    ) -> "_Draft":
        """The corrected text from the sentence plans: kept sentences word for word, rewritten
        ones from ``written``, removed ones left out — or, ``extractive``, the kept sentences
        only; with citations, references and the per-sentence diff."""
        final: list[tuple[SentencePlan, str]] = []  # sentences left, with their text
        diff = []
        for plan in plans:
            if plan.action == "keep":
                new = plan.text
            elif plan.action == "remove" or extractive:
                new = ""
            else:
                new = written[plan.index]
            if new:
                final.append((plan, new))
            diff.append((plan, new))
        numbers = number_references([p.cited for p, _ in final])
        cited_text = {p.index: add_citations(new, [numbers[c] for c in p.cited]) for p, new in final}
        sentence_diff = [
            {
                "index": plan.index,
                "action": _past(plan.action) if (plan.action == "keep" or new) else "removed",
                "original": plan.text,
                "corrected": cited_text.get(plan.index),
                "atoms": [d.atom for d in plan.atoms],
            }
            for plan, new in diff
        ]
        return _Draft(
            text=" ".join(cited_text[p.index] for p, _ in final),
            plain=" ".join(new for _, new in final),
            references=[self._reference(n, cid, contexts, decisions) for cid, n in numbers.items()],
            sentences=sentence_diff,
            changes=self._changes(decisions, numbers, contexts),
        )

    def _check(
        self,
        record: InputRecord,
        plain: str,
        contexts: Mapping[str, Context],
        decisions: Sequence[AtomDecision],
        k: int | str | None,
        median: float | None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """Assess ``plain`` again (same settings, same contexts): its score fields, and its
        unsupported atoms split into introduced and carried over (:func:`introduced_atoms`)."""
        after = None
        if plain.strip():
            again = InputRecord(input=record.input, output=plain, topic=record.topic, contexts=list(contexts.values()))
            after = self.assessor.assess(again, k=k, dataset_median_atoms=median)
        unsupported = [
            {"id": a.id, "text": a.text, "probability": a.probability}
            for a in (after.atoms if after is not None else [])
            if a.prediction != Label.SUPPORTED
        ]
        kept = [d.text for d in decisions if d.action == "keep"]
        introduced, carried = introduced_atoms(
            unsupported, self._entailed_by(kept, [str(u["text"]) for u in unsupported])
        )
        return score_fields(after, plain, reassessed=after is not None), introduced, carried

    def _entailed_by(self, kept: Sequence[str], claims: Sequence[str]) -> list[float | None]:
        """P(entailment) of each claim given the kept atoms joined as one premise, by the run's
        NLI judge (None for a pair it could not judge, or when nothing was kept)."""
        if not claims or not kept:
            return [None] * len(claims)
        premise = " ".join(kept)
        judged = self.assessor.stages.nli().judge([(premise, claim) for claim in claims])
        return [None if j.failed else j.probabilities.get("entailment", 0.0) for j in judged]

    def _request(self, plan: SentencePlan, contexts: Mapping[str, Context], question: str | None) -> RewriteRequest:
        keep = tuple(d.text for d in plan.atoms if d.action == "keep")
        drop = tuple(d.text for d in plan.atoms if d.action == "remove")
        fix = []
        for d in plan.atoms:
            if d.action == "rewrite" and d.evidence is not None:
                evidence = _snippet(contexts, d.evidence.context, d.text)
                if evidence is None:  # the evidence names a context the record does not hold
                    raise RecordFailed(f"correct: context {d.evidence.context!r} of atom {d.atom!r} has no text")
                fix.append(FactToCorrect(d.text, evidence))
        return RewriteRequest(sentence=plan.text, keep=keep, correct=tuple(fix), drop=drop, question=question)

    @staticmethod
    def _reference(
        n: int, context_id: str, contexts: Mapping[str, Context], decisions: Sequence[AtomDecision]
    ) -> dict[str, Any]:
        context = contexts.get(context_id)
        claims = " ".join(d.text for d in decisions if d.evidence is not None and d.evidence.context == context_id)
        return {
            "n": n,
            "context": context_id,
            "title": context.title if context is not None else None,
            "link": context.link if context is not None else None,
            "snippet": _snippet(contexts, context_id, claims),
        }

    @staticmethod
    def _changes(
        decisions: Sequence[AtomDecision], numbers: Mapping[str, int], contexts: Mapping[str, Context]
    ) -> list[dict[str, Any]]:
        return [
            {
                "atom": d.atom,
                "text": d.text,
                "probability": d.probability,
                "action": d.action,
                "sentence": d.sentence,
                "why": why(d),
                "evidence": []
                if d.evidence is None
                else [
                    {
                        "context": d.evidence.context,
                        "n": numbers.get(d.evidence.context),
                        "relation": d.evidence.relation,
                        "probability": d.evidence.probability,
                        "snippet": _snippet(contexts, d.evidence.context, d.text),
                    }
                ],
            }
            for d in decisions
            if d.action != "keep"
        ]


def _past(action: SentenceAction) -> str:
    return {"keep": "kept", "rewrite": "rewritten", "remove": "removed"}[action]


def _snippet(contexts: Mapping[str, Context], context_id: str, claim: str) -> str | None:
    context = contexts.get(context_id)
    return evidence_snippet(context.text, claim) if context is not None else None


def _contexts_used(record: InputRecord, row: Mapping[str, Any]) -> dict[str, Context]:
    """The contexts the assessment used: the record's own, or those it retrieved (the row's
    ``contexts``). The re-assessment gets exactly these."""
    if record.contexts is not None:
        return {c.id: c for c in record.contexts}
    return {str(c["id"]): Context.model_validate(c) for c in row.get("contexts") or []}


@dataclass(frozen=True)
class CorrectJob(Job[NumberedRecord, dict[str, Any]]):
    """The correction of one record, as any worker does it (the ``correct`` command's job for
    :func:`~fact_reasoner.runner.run_dataset`). Picklable: a Ray actor builds its own
    :class:`Corrector` from ``config``."""

    config: PipelineConfig
    k: int | str
    median: float | None

    def setup(self, config: PipelineConfig) -> Any:
        return Corrector.from_config(config)

    def run(self, state: Any, item: NumberedRecord) -> dict[str, Any]:
        return state.correct(item.record, k=self.k, dataset_median_atoms=self.median, record_key=item.key)


def correction_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Dataset figures of ``correct`` rows: how many records were corrected, unchanged or failed;
    mean precision before and after over the records corrected or unchanged (a record whose
    corrected text has no atom left is left out of the mean after: its precision is undefined);
    the atoms of corrected texts that no context supports (summed over every record, failed ones
    included: that is why they failed); mean length in characters before and after (corrected
    and unchanged records)."""
    corrections = [row["correction"] for row in rows if isinstance(row.get("correction"), Mapping)]
    ok = [c for c in corrections if c["status"] in ("corrected", "unchanged")]
    before = [c["before"]["factuality_score"] for c in ok if c["before"]["factuality_score"] is not None]
    after = [c["after"]["factuality_score"] for c in ok if c["after"] and c["after"]["factuality_score"] is not None]

    def mean(values: Sequence[float]) -> float | None:
        return sum(values) / len(values) if values else None

    return {
        "corrections": {
            "corrected": sum(c["status"] == "corrected" for c in corrections),
            "unchanged": sum(c["status"] == "unchanged" for c in corrections),
            "failed": sum(c["status"] == "failed" for c in corrections),
            "mean_precision_before": mean(before),
            "mean_precision_after": mean(after),
            "unsupported_atoms_after": sum(len(c.get("unsupported_atoms") or []) for c in corrections),
            "introduced_unsupported_atoms": sum(
                sum(not u.get("carried_over", False) for u in c.get("unsupported_atoms") or []) for c in corrections
            ),
            "atoms_rewritten": sum(sum(ch["action"] == "rewrite" for ch in c["changes"]) for c in corrections),
            "atoms_removed": sum(sum(ch["action"] == "remove" for ch in c["changes"]) for c in corrections),
            "mean_chars_before": mean([c["before"]["chars"] for c in ok]),
            "mean_chars_after": mean([c["after"]["chars"] for c in ok if c["after"]]),
        }
    }


__all__ = [
    "AtomDecision",
    "CitedEvidence",
    "Correction",
    "CorrectJob",
    "Corrector",
    "LLMSentenceRewriter",
    "RewriteFailed",
    "SentencePlan",
    "SentenceRewriter",
    "add_citations",
    "assign_sentences",
    "correction_settings",
    "correction_summary",
    "decide_atom",
    "evidence_snippet",
    "introduced_atoms",
    "number_references",
    "plan_sentences",
    "strongest",
    "word_overlap",
]

"""The corrector: a response rewritten to keep what is supported, with citations, and re-assessed.

``fact-reasoner correct`` (:mod:`fact_reasoner.commands.correct`) runs :meth:`Corrector.correct` on
every record. One record goes through:

1. **assess** the response as it is (:meth:`FactReasoner.assess
   <fact_reasoner.reasoner.FactReasoner.assess>`, the run's settings): each atom's posterior and
   the contexts that entail or contradict it;
2. **plan** (pure functions, no model): each atom is *kept* (posterior > 0.5, the S rule of
   :func:`~fact_reasoner.scores.predict_label`), *rewritten* (not supported, and a context
   contradicts it with P > 0.5: that context says what is true) or *removed* (not supported, and
   no context says otherwise); each atom belongs to the sentence it was made from (recorded by
   the atomizer; for atoms a record supplies, the sentence whose words it shares most, a
   pronoun read as the response's subject: :func:`attach_atoms`); a sentence whose atoms are
   all kept is kept word for word, one whose atoms are all removed is removed, any other is
   rewritten;
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

The steps live in their own modules: the planning (pure) in :mod:`fact_reasoner.correction.plan`,
the rewriter in :mod:`fact_reasoner.correction.rewrite`, the ``correction`` field and the dataset
figures in :mod:`fact_reasoner.correction.result`; this module runs them for one record
(:class:`Corrector`, and :class:`CorrectJob` for a dataset run). Every name stays importable from
here.

A record whose atoms are all supported is ``unchanged``: its text gets its citations and is not
assessed again (the same text, the same contexts and settings give the same assessment).

The output row is the assessment of the original response (every field of
:class:`~fact_reasoner.schema.OutputRecord`, so reports and summaries read it as before) plus
``correction`` (:meth:`Correction.as_dict`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import RecordFailed
from ..executors import Job
from ..io import NumberedRecord
from ..llm.correction import FactToCorrect, RewriteRequest
from ..schema import Context, InputRecord, Label, OutputRecord
from ..scores import known_median
from ..settings.config import PipelineConfig
from ..text.sentences import response_sentences
from .plan import (
    AtomDecision,
    SentenceAction,
    SentencePlan,
    add_citations,
    attach_atoms,
    decide_atom,
    evidence_snippet,
    introduced_atoms,
    number_references,
    plan_sentences,
    why,
)
from .result import Correction, Draft, correction_settings, score_fields
from .rewrite import LLMSentenceRewriter, RewriteFailed, SentenceRewriter

if TYPE_CHECKING:  # pragma: no cover
    from ..reasoner import FactReasoner

logger = logging.getLogger(__name__)


def conformal_coverage(correction: Mapping[str, Any]) -> dict[str, Any]:
    """What the conformal guarantee (the row's ``conformal``) covers of a correction: only the
    sentences kept word for word, each of whose claims the filter kept. A rewritten sentence
    says what a contradicting passage says, in the language model's words — no calibration
    covers it, whatever the re-assessment found — and a refused correction delivers nothing."""
    delivered = correction.get("status") in ("corrected", "unchanged")
    sentences = [s for s in correction.get("sentences") or [] if delivered and s.get("action") == "kept"]
    rewritten = [s for s in correction.get("sentences") or [] if delivered and s.get("action") == "rewritten"]
    return {
        "covered_sentences": [s["index"] for s in sentences],
        "covered_claims": [atom for s in sentences for atom in s.get("atoms") or []],
        "rewritten_sentences": [s["index"] for s in rewritten],
        "statement": (
            "The conformal guarantee covers only the sentences kept word for word from the original response "
            f"({len(sentences)}), whose claims the filter kept; the {len(rewritten)} rewritten sentence(s) are the "
            "language model's words for what the passages say: no calibration covers them, they were only "
            "checked by the re-assessment."
            if delivered
            else "No corrected text was delivered: the conformal guarantee covers nothing of it."
        ),
    }


def _refusal(introduced: Sequence[Mapping[str, Any]]) -> str:
    listed = "; ".join(f"{u['text']!r} (P = {u['probability']:.2f})" for u in introduced[:5])
    return (
        f"the corrected text has {len(introduced)} atom(s) that no context supports and the kept atoms "
        f"do not state: {listed}{' …' if len(introduced) > 5 else ''}"
    )


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
        from ..reasoner import FactReasoner

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
        sentences = response_sentences(record.output)
        if not sentences:
            raise RecordFailed("correct: the record has no response text to correct (only atoms)")
        before = self.assessor.assess(record, k=k, dataset_median_atoms=dataset_median_atoms, record_key=record_key)
        row = before.model_dump(mode="json")
        row["settings"] = correction_settings(self.assessor.settings())
        contexts = _contexts_used(record, row)
        # the corrected response is atomized afresh: it is scored against the median the original
        # was (its own atoms' count when it carried them), so that before and after share K's rule
        correction = self._correct(record, before, sentences, contexts, k, known_median(record, dataset_median_atoms))
        row["correction"] = correction.as_dict()
        if isinstance(row.get("conformal"), dict):
            row["correction"]["conformal"] = conformal_coverage(row["correction"])
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
        where = attach_atoms([(a.sentence, [a.text, a.original or ""]) for a in before.atoms], sentences, record.topic)
        decisions = [
            decide_atom(
                a.id,
                a.text,
                a.probability,
                [e.model_dump(mode="json") for e in a.evidence],
                s,
                getattr(a, "kept", None),
            )
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

        draft: Draft | None = None
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
    ) -> "Draft":
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
        return Draft(
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


__all__ = [
    "CorrectJob",
    "Corrector",
]

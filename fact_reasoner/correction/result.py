"""What a correction is, as the output writes it: the ``correction`` field of a ``correct`` row
(:class:`Correction`), the score fields of the texts before and after, the rows' settings, and
the dataset figures of a ``correct`` run (:func:`correction_summary`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..llm.correction import PROMPT_VERSION
from ..schema import OutputRecord

__all__ = [
    "Correction",
    "Draft",
    "correction_settings",
    "correction_summary",
    "failed_corrections",
    "score_fields",
    "text_size",
]


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
class Draft:
    """A corrected text before its check: what :meth:`fact_reasoner.correction.corrector.Corrector._compose` made."""

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


def correction_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a ``correct`` run's rows: the assessment's (its assessor's
    :meth:`~fact_reasoner.reasoner.FactReasoner.settings`), and the corrector's prompt (a resumed
    run must have the same)."""
    return dict(settings) | {"correction": {"prompt": PROMPT_VERSION}}


def failed_corrections(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many rows hold a refused correction (``status: "failed"``): written, with the reason,
    and failures all the same (the run's ``failed_records`` and exit status count them)."""
    return sum(
        isinstance(row.get("correction"), Mapping) and row["correction"].get("status") == "failed" for row in rows
    )


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

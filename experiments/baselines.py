"""Graph-free baselines on the same atoms, contexts and NLI as FactReasoner.

Both judge each atom against the contexts retrieved for it (the FR1 pairs: ``atom.contexts``,
or every context when an atom lists none), premise = context, hypothesis = atom. Atoms are
deduplicated by exact text (first kept), as the graph does, so every assessor scores the same
atoms.

- **FactScore-style** (``factscore``): the atom is S iff at least one of its contexts is judged
  *entailment* (the NLI's arg-max label). Its probability is the largest entailment probability
  over its contexts, P = max_j P_ent(c_j, a) (0 with no contexts). Prediction and probability can
  disagree (an arg-max entailment at P_ent = 0.45): the prediction follows FactScore's rule, the
  probability is only used for Brier score and calibration.
- **NLI vote** (``vote``, VeriScore/FactVerify-style, supported vs contradicted vs undecided):
  each context votes with the probability of its label, entailment for, contradiction against,
  neutral abstains: E = Σ_{label=ent} p_j, C = Σ_{label=con} p_j,
  P = E / (E + C) when E + C > 0, else 0.5 (undecided); S iff P > 0.5, by the factuality
  scores' rule (:func:`fact_reasoner.scores.is_supported`: a P within 1e-9 of 0.5 is NS).

Output rows have the same shape as FactReasoner's :class:`~fact_reasoner.schema.OutputRecord`
(IBM's score fields, ``atoms`` with per-atom verdict and evidence) plus ``assessor``, so tables
and the report treat every assessor alike.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fact_reasoner.measures import brier_score
from fact_reasoner.nli import NLIBackend, NLIJudgement
from fact_reasoner.schema import Atom, InputRecord, Label, RelationType
from fact_reasoner.scores import (
    SUPPORTED_THRESHOLD,
    entropy_terms,
    f1_at_k,
    factual_precision,
    is_supported,
    is_uniform,
    recall_at_k,
    resolve_k,
)

BASELINES = ("factscore", "vote")
ASSESSOR_NAMES = {"factscore": "FactScore", "vote": "NLI-vote"}


@dataclass(frozen=True)
class ContextJudgement:
    """The NLI verdict of one (context ⇒ atom) pair, with entailment/contradiction probabilities."""

    context: str
    label: RelationType
    probability: float
    p_entail: float
    p_contradict: float
    failed: bool = False


def label_probability(judgement: NLIJudgement, label: RelationType) -> float:
    """P(label) of a judgement: from its three-way probabilities when given, else from the
    predicted label's probability p (p for that label, (1 − p)/2 for each of the other two)."""
    if judgement.failed:
        return 0.0
    if judgement.probabilities:
        return float(judgement.probabilities.get(label.value, 0.0))
    return judgement.probability if judgement.label == label else (1.0 - judgement.probability) / 2.0


def factscore_verdict(judgements: Sequence[ContextJudgement]) -> tuple[float, Label]:
    """FactScore rule: S iff any context is judged entailment; P = max P_ent (0 if none)."""
    valid = [j for j in judgements if not j.failed]
    supported = any(j.label == RelationType.ENTAILMENT for j in valid)
    probability = max((j.p_entail for j in valid), default=0.0)
    return probability, Label.SUPPORTED if supported else Label.NOT_SUPPORTED


def vote_verdict(judgements: Sequence[ContextJudgement]) -> tuple[float, Label]:
    """Weighted vote: P = E / (E + C) (0.5 when no context takes a side); S iff ``is_supported(P)``."""
    valid = [j for j in judgements if not j.failed]
    for_ = sum(j.probability for j in valid if j.label == RelationType.ENTAILMENT)
    against = sum(j.probability for j in valid if j.label == RelationType.CONTRADICTION)
    probability = for_ / (for_ + against) if for_ + against > 0 else SUPPORTED_THRESHOLD
    return probability, Label.SUPPORTED if is_supported(probability) else Label.NOT_SUPPORTED


_RULES = {"factscore": factscore_verdict, "vote": vote_verdict}


def atom_pairs(record: InputRecord) -> tuple[list[Atom], dict[str, list[str]]]:
    """Deduplicated atoms (exact text, first kept) and each atom's context ids (FR1's pairs)."""
    atoms, seen = [], set()
    for atom in record.atoms or []:
        if atom.text not in seen:
            seen.add(atom.text)
            atoms.append(atom)
    all_ids = [c.id for c in record.contexts or []]
    return atoms, {a.id: list(a.contexts) if a.contexts is not None else all_ids for a in atoms}


def judge_record(record: InputRecord, nli: NLIBackend) -> tuple[list[Atom], dict[str, list[ContextJudgement]], int]:
    """Run NLI on every (context, atom) pair of the record once; returns atoms, judgements, #pairs."""
    atoms, per_atom = atom_pairs(record)
    texts = {c.id: c.text for c in record.contexts or []}
    pairs = [(cid, atom) for atom in atoms for cid in per_atom[atom.id]]
    verdicts = nli.judge([(texts[cid], atom.text) for cid, atom in pairs]) if pairs else []
    judged: dict[str, list[ContextJudgement]] = {a.id: [] for a in atoms}
    for (cid, atom), j in zip(pairs, verdicts):
        if j.is_unjudged:
            continue
        judged[atom.id].append(
            ContextJudgement(
                context=cid,
                label=j.label,
                probability=j.probability,
                p_entail=label_probability(j, RelationType.ENTAILMENT),
                p_contradict=label_probability(j, RelationType.CONTRADICTION),
                failed=j.failed,
            )
        )
    return atoms, judged, len(pairs)


def baseline_row(
    method: str,
    record: InputRecord,
    atoms: Sequence[Atom],
    judged: dict[str, list[ContextJudgement]],
    *,
    k: int | str,
    dataset_median_atoms: float | None,
    record_key: str,
) -> dict[str, Any]:
    """One output row (OutputRecord-shaped) for ``method`` from already-judged pairs."""
    if method not in _RULES:
        raise ValueError(f"unknown baseline {method!r}; known: {', '.join(BASELINES)}")
    rule = _RULES[method]
    verdicts = []
    for atom in atoms:
        probability, prediction = rule(judged[atom.id])
        evidence = [
            {"context": j.context, "relation": j.label.value, "probability": j.probability}
            for j in sorted(judged[atom.id], key=lambda j: -j.probability)
            if not j.failed and j.label in (RelationType.ENTAILMENT, RelationType.CONTRADICTION)
        ]
        verdicts.append(
            {
                "id": atom.id,
                "text": atom.text,
                "original": atom.original,
                "label": atom.label.value if atom.label else None,
                "probability": probability,
                "prediction": prediction.value,
                "evidence": evidence,
            }
        )
    n = len(verdicts)
    supported = sum(v["prediction"] == "S" for v in verdicts)
    median = dataset_median_atoms if dataset_median_atoms is not None else float(n)
    k_used = resolve_k(k, n, median)
    probabilities = [v["probability"] for v in verdicts]
    terms = entropy_terms(probabilities)
    row: dict[str, Any] = {
        "record_key": record_key,
        "assessor": ASSESSOR_NAMES[method],
        "input": record.input,
        "output": record.output,
        "topic": record.topic,
        "version": None,
        "factuality_score": factual_precision(supported, n),
        "recall_k": recall_at_k(supported, k_used),
        "f1_k": f1_at_k(supported, n, k_used),
        "k": k_used,
        "num_atoms": n,
        "num_contexts": len(record.contexts or []),
        "num_true_atoms": supported,
        "num_false_atoms": n - supported,
        "num_uniform_atoms": sum(is_uniform(p) for p in probabilities),
        "entropy": sum(terms),
        "avg_entropy": sum(terms) / n if n else None,
        "entropy_log_base": "e",
        "avg_prob": sum(probabilities) / n if n else None,
        "marginals": [
            {"variable": v["id"], "probabilities": [1 - v["probability"], v["probability"]]} for v in verdicts
        ],
        "predictions": {v["id"]: v["prediction"] for v in verdicts},
        "atoms": verdicts,
        "engine": {"name": method, "algorithm": method, "exact": True, "converged": True},
    }
    gold = [(v["label"], v["prediction"], v["probability"]) for v in verdicts if v["label"]]
    if gold:
        tp = sum(g == "S" and p == "S" for g, p, _ in gold)
        tn = sum(g == "NS" and p == "NS" for g, p, _ in gold)
        fp = sum(g == "NS" and p == "S" for g, p, _ in gold)
        fn = sum(g == "S" and p == "NS" for g, p, _ in gold)
        row.update(
            gold_true_atoms=tp + fn,
            gold_factuality_score=(tp + fn) / len(gold),
            true_positive=tp,
            true_negative=tn,
            false_positive=fp,
            false_negative=fn,
            brier_score=brier_score([g == "S" for g, _, _ in gold], [q for _, _, q in gold]),
        )
    return row


def assess_baselines(
    record: InputRecord,
    nli: NLIBackend,
    methods: Sequence[str] = BASELINES,
    *,
    k: int | str = "median",
    dataset_median_atoms: float | None = None,
    record_key: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Every requested baseline for one record, sharing one round of NLI calls."""
    start = time.perf_counter()
    atoms, judged, pairs = judge_record(record, nli)
    nli_seconds = time.perf_counter() - start
    rows = {}
    for method in methods:
        row = baseline_row(
            method,
            record,
            atoms,
            judged,
            k=k,
            dataset_median_atoms=dataset_median_atoms,
            record_key=record_key or record.record_key,
        )
        row["timings"] = {"nli": nli_seconds, "total": time.perf_counter() - start}
        row["counters"] = {"nli_pairs": pairs}
        rows[method] = row
    return rows

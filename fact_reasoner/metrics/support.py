"""Claims judged against premises with FactReasoner's FR2 graph — the core of every metric.

``judge_support(claims, premises, nli, engine)`` is FR2 exactly as the pipeline builds it (the
same :func:`~fact_reasoner.stages.judge_and_infer`): one binary variable per claim (prior 0.5)
and per premise (prior 0.9 by default), every claim × every premise judged by NLI (premise →
claim), entailment and contradiction become factors, inference gives the posterior
P(claim is true). Each claim keeps its entailing and contradicting evidence (which premise, how
sure) so a metric can say why.

Which premises: retrieved chunks (faithfulness, context recall), the reference as one premise
(factual-correctness precision) or the response as one premise (factual-correctness recall).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..graph.build import plan_graph
from ..inference import InferenceEngine
from ..nli import NLIBackend, NLIJudgement
from ..schema import Atom, Context, RelationType
from ..scores import is_supported
from ..settings.graph_options import GraphOptions
from ..stages import judge_and_infer


@dataclass(frozen=True)
class Evidence:
    """One factor on a claim: the premise (by position), its relation and probability."""

    premise_index: int
    relation: RelationType
    probability: float


@dataclass(frozen=True)
class ClaimSupport:
    """A claim's posterior and the evidence that produced it."""

    claim: str
    probability: float
    entailing: tuple[Evidence, ...] = ()
    contradicting: tuple[Evidence, ...] = ()
    judged_pairs: int = 0
    failed_pairs: int = 0
    failure_reasons: tuple[str, ...] = ()

    @property
    def judged(self) -> bool:
        """At least one premise gave a usable judgement (a missing relation counts as neutral)."""
        return self.judged_pairs > 0

    @property
    def has_evidence(self) -> bool:
        return bool(self.entailing or self.contradicting)

    @property
    def supported(self) -> bool:
        """The factuality scores' rule (:func:`fact_reasoner.scores.is_supported`): P − 0.5 > 1e-9."""
        return is_supported(self.probability)

    @property
    def best_entailment(self) -> Evidence | None:
        return self.entailing[0] if self.entailing else None

    @property
    def best_contradiction(self) -> Evidence | None:
        return self.contradicting[0] if self.contradicting else None


@dataclass(frozen=True)
class SupportResult:
    """Every claim's support, plus the raw judgements by (claim index, premise index)."""

    claims: tuple[ClaimSupport, ...]
    premises: tuple[str, ...]
    judgements: dict[tuple[int, int], NLIJudgement] = field(default_factory=dict)
    algorithm: str = ""
    exact: bool = True
    converged: bool = True

    @property
    def num_supported(self) -> int:
        return sum(c.supported for c in self.claims)


def judge_support(
    claims: Sequence[str],
    premises: Sequence[str],
    nli: NLIBackend,
    engine: InferenceEngine,
    options: GraphOptions | None = None,
    *,
    max_failed_pairs: float = 0.0,
) -> SupportResult:
    """Posterior and evidence of each claim given the premises, from an FR2 factor graph.

    Duplicate claims (or premises) share one variable, as in the pipeline; every input claim
    gets its own :class:`ClaimSupport` in input order.

    The pipeline's failure policy holds here too: when more NLI calls failed (server down,
    errors after retries) than ``max_failed_pairs`` of the pairs, this raises
    :class:`~fact_reasoner.errors.RecordFailed` (the sample's metric is then NaN with that
    error, never a score without the evidence). Unreadable answers leave the claim unjudged.
    """
    options = options or GraphOptions(version=2)
    if options.version != 2:
        raise ValueError("the metrics use FR2 graphs (claims × premises)")
    atoms = [Atom(id=f"a{i}", text=c) for i, c in enumerate(claims)]
    contexts = [Context(id=f"c{j}", text=p) for j, p in enumerate(premises)]
    plan = plan_graph(atoms, contexts, 2)
    pairs = list(plan.pairs)
    reasoning = judge_and_infer(plan, nli, engine, options, max_failed_pairs=max_failed_pairs)
    judgements = reasoning.judged.judgements
    built, inference = reasoning.built, reasoning.inference

    by_atom: dict[str, list[tuple[int, NLIJudgement]]] = {}
    for (p, h), j in zip(pairs, judgements):
        by_atom.setdefault(h, []).append((int(p[1:]), j))
    evidence: dict[str, list[Evidence]] = {}
    for rel in built.factor_relations:
        evidence.setdefault(rel.target, []).append(Evidence(int(rel.source[1:]), rel.relation, rel.probability))

    out: list[ClaimSupport] = []
    raw: dict[tuple[int, int], NLIJudgement] = {}
    for i in range(len(claims)):
        kept = plan.atom_duplicates.get(f"a{i}", f"a{i}")
        links = sorted(evidence.get(kept, []), key=lambda e: (-e.probability, e.premise_index))
        judged = by_atom.get(kept, [])
        for j_index, judgement in judged:
            raw[(i, j_index)] = judgement
        failures = [j for _, j in judged if j.failed and not j.is_unjudged]
        out.append(
            ClaimSupport(
                claim=claims[i],
                probability=float(inference.marginals[kept]),
                entailing=tuple(e for e in links if e.relation == RelationType.ENTAILMENT),
                contradicting=tuple(e for e in links if e.relation == RelationType.CONTRADICTION),
                judged_pairs=len(judged) - len(failures),
                failed_pairs=len(failures),
                failure_reasons=tuple(dict.fromkeys(j.reason or "failed" for j in failures)),
            )
        )
    # Premises merged by deduplication: report judgements under every copy's index.
    for dropped, kept in plan.context_duplicates.items():
        for i in range(len(claims)):
            if (i, int(kept[1:])) in raw:
                raw[(i, int(dropped[1:]))] = raw[(i, int(kept[1:]))]
    return SupportResult(
        claims=tuple(out),
        premises=tuple(premises),
        judgements=raw,
        algorithm=inference.algorithm,
        exact=inference.exact,
        converged=inference.converged,
    )


__all__ = ["ClaimSupport", "Evidence", "SupportResult", "judge_support"]

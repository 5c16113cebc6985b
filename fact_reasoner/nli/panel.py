"""A panel of NLI judges (``--nli a,b``): every judge judges every pair, and their verdicts are
combined in one of two ways, chosen by the roles the panel gives its judges
(:mod:`fact_reasoner.settings.panel`).

**Factors** (no judge has a role). Each judge's relation becomes its own factor in the graph
(:func:`fact_reasoner.stages.judge_plan` writes one relation per judge for an atom's passages),
so the graph multiplies them: a product of experts, in which judges that agree strengthen the
verdict and judges that disagree weaken it. Where the graph takes one relation per pair (FR3's
context pairs, coherence's atom pairs, the baselines and every reader of the panel's own
verdict) the panel's verdict is the normalised product of the judges' distributions,

    P(l) ∝ ∏_j P_j(l),   l ∈ {entailment, neutral, contradiction}          (:func:`product_of_experts`)

**Roles** (some judge is trusted for entailments only, ``@entailment``, or for contradictions
only, ``@contradiction``; a judge without a role is trusted for both). A passage cannot both
entail and contradict a claim, so the panel asks the contradiction judges first and the
entailment judges about what is left — each entailment judge's entailment *given that the
pair is no contradiction*, its own contradiction mass taken out, since the panel does not
read it:

    c = mean_j P_j(contradiction) over the judges trusted for contradictions,
    e = mean_j P_j(entailment) / (P_j(entailment) + P_j(neutral)) over the judges trusted for entailments,
    P(contradiction) = c,   P(entailment) = (1 − c)·e,   P(neutral) = (1 − c)(1 − e)   (:func:`contradiction_first`)

A contradiction judge that is sure (c > 0.5) decides the pair whatever the entailment judges
say — "X is visible from the Moon" against "X is not visible from the Moon" is a contradiction
even when the entailment judge reads the shared words as entailment — and one that is not lowers
the entailment in proportion. What a judge is not trusted for is never read: the entailment
judge's contradictions and the contradiction judge's entailments do not count. A judge trusted
for both, alone, would give its own distribution back: ``P(E) = (1 − c)·e/(1 − c) = e``.

Each pair's verdict keeps every judge's own (``NLIJudgement.judges``), so the output can show
where they disagreed. A judge that could not judge a pair makes the panel's verdict on it a
failure too (with that judge's reason): a panel verdict without one of its judges is not the
panel's verdict, and :func:`~fact_reasoner.stages.check_judged` counts it like any failure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import SetupError
from ..schema import JudgeVerdict, Relation
from ..settings.panel import Panel, PanelMember
from .base import (
    LABELS,
    NLIBackend,
    NLIJudgement,
    backend_identity,
    batch_invariant,
    describe_judge,
    says_contradictions,
)

__all__ = [
    "OneJudge",
    "PanelNLI",
    "contradiction_first",
    "entailment_given_no_contradiction",
    "has_judges",
    "judge_alone",
    "judge_distribution",
    "judge_names",
    "judges_agree",
    "pair_judges",
    "panel_fields",
    "product_of_experts",
]


def judge_distribution(judgement: NLIJudgement, *, two_way: bool = False) -> dict[str, float]:
    """A judgement's three-way distribution: its ``probabilities`` when the judge gave them,
    else ``probability`` on its label and the rest shared equally by the other two labels.

    A two-way judge (``two_way``: it says supported, ``s``, or not, never contradicted) gives the
    likelihood ``(E, N, C) = (s, 1 − s, 1 − s)``: its "not supported" weighs neutral and
    contradiction alike, so in a product it neither invents a contradiction nor vetoes another
    judge's (its stored P(C) = 0 means "not said", not "impossible")."""
    if judgement.probabilities:
        total = sum(judgement.probabilities.get(label.value, 0.0) for label in LABELS)
        if total > 0:
            distribution = {label.value: judgement.probabilities.get(label.value, 0.0) / total for label in LABELS}
            if two_way:
                s = distribution["entailment"]
                return {"entailment": s, "neutral": 1.0 - s, "contradiction": 1.0 - s}
            return distribution
    rest = (1.0 - judgement.probability) / 2.0
    return {label.value: judgement.probability if label == judgement.label else rest for label in LABELS}


def product_of_experts(distributions: Sequence[Mapping[str, float]]) -> dict[str, float] | None:
    """``P(l) ∝ ∏_j P_j(l)``, normalised over the three labels; None where every label gets 0
    (two judges each certain of a different label: no verdict to give)."""
    product = {label.value: 1.0 for label in LABELS}
    for distribution in distributions:
        for label in product:
            product[label] *= float(distribution.get(label, 0.0))
    total = sum(product.values())
    if not total > 0:
        return None
    return {label: value / total for label, value in product.items()}


def contradiction_first(entailment: Sequence[float], contradiction: Sequence[float]) -> dict[str, float]:
    """The roles rule: with ``e`` the mean of ``entailment`` (the entailment judges'
    P(entailment | no contradiction), :func:`entailment_given_no_contradiction`) and ``c`` the
    mean of ``contradiction`` (the contradiction judges' P(contradiction)): ``P(C) = c``,
    ``P(E) = (1 − c)·e``, ``P(N) = (1 − c)(1 − e)``.

    >>> p = contradiction_first([0.83], [0.9])
    >>> round(p["contradiction"], 3), round(p["entailment"], 3), round(p["neutral"], 3)
    (0.9, 0.083, 0.017)
    """
    if not entailment or not contradiction:
        raise ValueError("the roles rule needs a judge for entailments and one for contradictions")
    e = sum(entailment) / len(entailment)
    c = sum(contradiction) / len(contradiction)
    return {"entailment": (1.0 - c) * e, "neutral": (1.0 - c) * (1.0 - e), "contradiction": c}


def entailment_given_no_contradiction(distribution: Mapping[str, float]) -> float:
    """``P(E | not C) = P(E) / (P(E) + P(N))`` (0 where the judge put everything on
    contradiction): an entailment judge's reading with its contradiction mass taken out.

    >>> entailment_given_no_contradiction({"entailment": 0.04, "neutral": 0.05, "contradiction": 0.91})
    0.4444444444444445
    """
    rest = distribution["entailment"] + distribution["neutral"]
    return distribution["entailment"] / rest if rest > 0 else 0.0


def judges_agree(judges: Mapping[str, NLIJudgement | JudgeVerdict]) -> bool:
    """Whether every judge gave the same label (failed judgements disagree with any label); a
    judgement or the verdict the output shows of it."""
    labels = {None if j.failed else (j.label if isinstance(j, NLIJudgement) else j.relation) for j in judges.values()}
    return len(labels) == 1 and None not in labels


class PanelNLI:
    """The judges of ``panel`` (each a backend, usually behind its own pair cache), combined as
    the module docstring says. ``members`` are ``(member, backend)`` in the panel's order."""

    name = "panel"

    def __init__(self, panel: Panel, backends: Sequence[NLIBackend]):
        if len(backends) != len(panel.members):
            raise ValueError(f"a panel of {len(panel.members)} judges needs as many backends, not {len(backends)}")
        if not panel.is_panel:
            raise ValueError("a panel needs two judges or more")
        self.panel = panel
        self.members: tuple[tuple[PanelMember, NLIBackend], ...] = tuple(zip(panel.members, backends))
        self.combine = panel.combine
        #: the judges that say supported or not only (nli.base.two_way): never asked for contradictions
        self.two_way = {m.label: not says_contradictions(b) for m, b in self.members}
        self.entailment_judges = [m.label for m, _ in self.members if m.gives("entailment")]
        self.contradiction_judges = [
            m.label for m, _ in self.members if m.gives("contradiction") and not self.two_way[m.label]
        ]
        #: what the roles rule reads of each judge (the verdict keeps it, so the output can show
        #: how the panel's figure is made); None for a panel of factors
        self.roles: dict[str, str] | None = None
        if self.combine == "roles":
            self.roles = {
                m.label: "both"
                if m.label in self.entailment_judges and m.label in self.contradiction_judges
                else ("entailment" if m.label in self.entailment_judges else "contradiction")
                for m, _ in self.members
            }
        if self.combine == "roles" and not self.contradiction_judges:
            two_way = ", ".join(label for label, only in self.two_way.items() if only)
            raise SetupError(
                f"--nli {panel.spec}: no judge of the panel gives contradictions ({two_way} says supported or not "
                "only); give the contradictions to a three-way judge, e.g. cross-encoder@contradiction"
            )

    @property
    def identity(self) -> str:
        judges = ";".join(f"{m.label}@{m.role}={backend_identity(b)}" for m, b in self.members)
        return f"panel:{self.combine}:[{judges}]"

    @property
    def description(self) -> str:
        """``panel (roles): cross-encoder … for entailments · specialist … for contradictions``."""
        roles = {"both": "", "entailment": " for entailments", "contradiction": " for contradictions"}
        judges = " · ".join(f"{describe_judge(b)}{roles[m.role]}" for m, b in self.members)
        return f"panel ({self.combine}): {judges}"

    @property
    def batch_invariant(self) -> bool:
        """Batch-invariant when every judge is (:func:`~fact_reasoner.nli.base.batch_invariant`)."""
        return all(batch_invariant(backend) for _, backend in self.members)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Every judge judges every pair; the panel's verdict per pair, with each judge's own."""
        verdicts = [backend.judge(pairs) for _, backend in self.members]
        for verdict, (member, _) in zip(verdicts, self.members):
            if len(verdict) != len(pairs):
                raise RuntimeError(
                    f"NLI judge {member.label} returned {len(verdict)} judgements for {len(pairs)} pairs"
                )
        out = []
        for i in range(len(pairs)):
            judges = {member.label: verdict[i] for (member, _), verdict in zip(self.members, verdicts)}
            out.append(self.combined(judges))
        return out

    def combined(self, judges: Mapping[str, NLIJudgement]) -> NLIJudgement:
        """The panel's verdict on one pair from its judges' (keyed by label, in panel order)."""
        failed = [(label, j) for label, j in judges.items() if j.failed]
        if failed:
            if all(j.is_unjudged for _, j in failed) and len(failed) == len(judges):
                return NLIJudgement.unjudged()
            label, first = failed[0]
            failure = NLIJudgement.failure(
                f"{label}: {first.reason}",
                transport=any(j.transport for _, j in failed),
                unreachable=all(j.unreachable for _, j in failed),
            )
            return self._with_judges(failure, judges)
        distributions = {label: judge_distribution(j, two_way=self.two_way[label]) for label, j in judges.items()}
        if self.combine == "roles":
            probabilities: dict[str, float] | None = contradiction_first(
                [entailment_given_no_contradiction(distributions[label]) for label in self.entailment_judges],
                [distributions[label]["contradiction"] for label in self.contradiction_judges],
            )
        else:
            probabilities = product_of_experts(list(distributions.values()))
        if probabilities is None:
            return self._with_judges(NLIJudgement.failure("the judges are each certain of a different label"), judges)
        return self._with_judges(NLIJudgement.from_probabilities(probabilities), judges)

    def stats(self) -> dict[str, Any]:
        """Each judge's counters, prefixed with its name (``cross_encoder_backend_pairs``), and
        their sums where the judges count the same thing (``backend_pairs``, ``backend_seconds``)."""
        stats: dict[str, Any] = {}
        for member, backend in self.members:
            inner = getattr(backend, "stats", None)
            if not callable(inner):
                continue
            prefix = re.sub(r"[^0-9A-Za-z]+", "_", member.label).strip("_")
            for key, value in inner().items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    stats[f"{prefix}_{key}"] = value
                    if key in _SUMMED:
                        stats[key] = stats.get(key, 0) + value
        return stats

    # the pair cache's counters, summed over the judges (what the experiments read of a judge)
    def _summed(self, counter: str) -> float:
        return sum(float(getattr(b, counter, 0)) for _, b in self.members)

    @property
    def requested(self) -> int:
        return int(self._summed("requested"))

    @property
    def hits(self) -> int:
        return int(self._summed("hits"))

    @property
    def backend_pairs(self) -> int:
        return int(self._summed("backend_pairs"))

    @property
    def seconds(self) -> float:
        return self._summed("seconds")

    def _with_judges(self, judgement: NLIJudgement, judges: Mapping[str, NLIJudgement]) -> NLIJudgement:
        return replace(judgement, judges=dict(judges), panel=self.combine, roles=self.roles)


#: counters every judge keeps that mean the same summed over the panel
_SUMMED = frozenset({"backend_pairs", "backend_seconds", "pair_cache_hits"})


# -- a panel's relations, as the graph and the output read them ------------------------------


def has_judges(relations: Iterable[Relation]) -> bool:
    """Whether a panel judged any of ``relations`` (they carry each judge's verdict)."""
    return any(r.judges for r in relations)


def judge_names(relations: Iterable[Relation]) -> list[str]:
    """The panel's judges, in the order the relations name them."""
    names: dict[str, None] = {}
    for relation in relations:
        names.update(dict.fromkeys(relation.judges or ()))
    return list(names)


def judge_alone(relations: Sequence[Relation], name: str) -> list[Relation]:
    """The relations judge ``name`` alone would have given: one per pair, its own label and
    probability (or its own failure) where the panel judged the pair — also where another judge
    failed on it —, the relation as it is where no panel judged it."""
    out: list[Relation] = []
    seen: set[tuple[str, str]] = set()
    for relation in relations:
        pair = (relation.source, relation.target)
        if pair in seen:  # a panel of factors wrote one relation per judge
            continue
        seen.add(pair)
        own = (relation.judges or {}).get(name)
        if own is None:
            out.append(relation.model_copy(update={"judges": None, "judge": None}))
            continue
        out.append(
            Relation.model_construct(
                source=relation.source,
                target=relation.target,
                relation=own.relation,
                probability=own.probability,
                probabilities=None,
                failed=bool(own.failed),
                reason="this judge failed" if own.failed else None,
                judges=None,
                judge=None,
            )
        )
    return out


def pair_judges(relations: Iterable[Relation]) -> dict[tuple[str, str], dict[str, JudgeVerdict]]:
    """``{(premise, hypothesis): each judge's verdict}`` for the pairs a panel judged."""
    return {(r.source, r.target): r.judges for r in relations if r.judges}


def panel_fields(
    panel: Mapping[tuple[str, str], Mapping[str, JudgeVerdict]], source: str, target: str, judge: str | None
) -> dict[str, Any]:
    """What a piece of evidence on the pair (``source``, ``target``) shows of the panel: each
    judge's verdict, whether they agreed (the same label, none failed) and, for a panel of
    factors, whose factor it is; nothing for a pair no panel judged."""
    judges = panel.get((source, target))
    if not judges:
        return {}
    fields: dict[str, Any] = {"judges": dict(judges), "agreed": judges_agree(judges)}
    if judge is not None:
        fields["judge"] = judge
    return fields


class OneJudge:
    """One judge of a panel as a backend of its own: the panel judges (each judge's verdicts
    cached as usual) and this gives judge ``name``'s verdict. What a metric computed "with that
    judge alone" reads, so that the panel's and each judge's figures come from the same
    verdicts."""

    def __init__(self, panel: NLIBackend, name: str):
        self.panel = panel
        self.name = name

    @property
    def identity(self) -> str:
        return f"{backend_identity(self.panel)}:judge={self.name}"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        out = []
        for judgement in self.panel.judge(pairs):
            own = (judgement.judges or {}).get(self.name)
            out.append(judgement if own is None else own)
        return out

"""How the factor graph is built: :class:`GraphOptions`, the ``graph`` group of the settings.

Declared here, apart from the builder (:mod:`fact_reasoner.graph.build`), so that the settings (:mod:`fact_reasoner.settings.config`) import no graph code: they are the ground
floor every stage stands on.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .fields import Cosine, OpenProbability, option

__all__ = [
    "DEFAULT_CLAMP",
    "PAPER_GRAPH",
    "CoherencePairs",
    "ContradictionRule",
    "EntailmentRule",
    "FactorTables",
    "GraphPreset",
    "GraphOptions",
    "Version",
]

Version = Literal[1, 2, 3]
#: which atom–context contradictions become factors (GraphOptions.contradictions)
ContradictionRule = Literal["sentence", "same-attribute", "any"]
#: which atom–context entailments become factors (GraphOptions.entailments)
EntailmentRule = Literal["sentence", "same-subject", "any"]
#: a set of graph settings chosen together (GraphOptions.preset)
GraphPreset = Literal["default", "paper"]
#: which family of factor tables (GraphOptions.factor_tables; factors.py)
FactorTables = Literal["priors", "paper"]
#: which atom pairs coherence judges: ``similar`` (the similarity gate only) or ``comparable``
#: (the comparability gate of :mod:`fact_reasoner.atoms.frames`, then the similarity gate)
CoherencePairs = Literal["comparable", "similar"]
#: probabilities are clamped into [clamp, 1 − clamp] so that no factor table holds a zero
DEFAULT_CLAMP = 1e-6
#: ``--graph paper``: the graph of the FactReasoner paper (Marinescu et al., 2025) — its Table 1
#: factor tables, every entailment and contradiction a factor whatever its probability, and the
#: context prior its text gives (0.99; IBM's code uses 0.9). Paper Example 1 gives 0.3179 with it.
PAPER_GRAPH: dict[str, Any] = {
    "factor_tables": "paper",
    "contradictions": "any",
    "entailments": "any",
    "min_relation_probability": 0.0,
    "context_prior": 0.99,
}


class GraphOptions(BaseModel):
    """How the factor graph is built from the judged relations.

    ``context_prior`` defaults to 0.9 (IBM's code; the paper's text says 0.99).
    ``factor_tables`` picks the family of tables (``factors.py``): ``paper`` (the paper's
    Table 1) or ``priors``, in which the rows for a false premise carry the target's prior (π =
    ``atom_prior`` for atoms, ``context_prior`` for contexts). ``use_priors`` (a boolean, the
    name IBM's tool and earlier versions used) is accepted as input and read as
    ``factor_tables``.

    ``min_relation_probability`` (default 0.5; 0 makes every entailment and contradiction a
    factor, as in the paper) drops relations whose predicted label has probability p ≤ the
    threshold, as if neutral. Why: with three labels the arg-max can have p < 0.5, and then
    both table families favour the *false* atom for an "entailment" (paper: (p, p, 1−p, p);
    priors: the true-source row (1−p, p)) — a weak "entailment" would count as evidence
    against the claim, a weak "contradiction" for it. 0.5 removes exactly those: a label the
    judge gives no more than even odds.

    ``contradictions`` (``same-attribute``, ``sentence`` or ``any``) says which atom–context
    contradictions become factors: ``any`` (the paper) every one; ``same-attribute`` only those
    where some sentence of the context speaks about the atom's attribute with a value or a
    negation that can disagree (:func:`fact_reasoner.atoms.frames.same_attribute`); ``sentence``
    only those whose deciding sentence, read with a parser, says something else of the claim's
    attribute (:mod:`fact_reasoner.screening.checks`); the others count as neutral and are counted.

    ``entailments`` (``same-subject``, ``sentence`` or ``any``) says which atom–context
    entailments become factors: ``same-subject`` only those whose passage or title names the
    atom's subject (:func:`fact_reasoner.atoms.frames.names_subject`); ``sentence`` only those whose
    deciding sentence states the claim's subject, numbers, names, polarity and direction without a
    hedge the claim drops — one that states the opposite is turned into a contradiction
    (:mod:`fact_reasoner.screening.checks`); the others count as neutral and are counted.

    These three rules (the floor, ``contradictions``, ``entailments``) filter the project's own
    judge's noise; they are applied by the relation screen, a stage of its own between the judge
    and the graph (:mod:`fact_reasoner.screening`). Relations a record supplies are data: they are used as given unless
    ``filter_supplied_relations``; a supplied entailment, contradiction or equivalence with
    p ≤ 0.5 is then an input error (:func:`fact_reasoner.graph.build.build_graph`), since both table
    families read it as evidence the other way.

    ``preset`` sets several of them at once (:data:`PAPER_GRAPH`); a setting given beside it
    wins.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: ClassVar[str] = "factor graph"

    version: Version = option(3, "FR1 (per-atom contexts), FR2 (all contexts) or FR3 (FR2 + context-context)")
    factor_tables: FactorTables = option(
        "priors",
        "the factor tables: `priors` (a false source leaves its target at the target's prior, so each "
        "relation is P(target | source): no evidence from a context that the graph believes false) or "
        "`paper` (the paper's Table 1: an implication from a false source is satisfied whatever the "
        "target; reproduces the paper)",
        switches={"--use-priors": "priors", "--use_priors": "priors", "--paper-tables": "paper"},
    )
    context_prior: OpenProbability = option(
        0.9,
        "prior P(context is true) (IBM's code uses 0.9; the paper's text says 0.99)",
    )
    atom_prior: OpenProbability = option(0.5, "prior P(atom is true)")
    clamp: Annotated[float, Field(gt=0.0, lt=0.5)] = option(
        DEFAULT_CLAMP,
        "probabilities are clamped into [clamp, 1 - clamp] so no table has a zero",
        cli=False,
    )
    min_relation_probability: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = option(
        0.5,
        "drop entailments/contradictions whose NLI probability is at most this, as if neutral (0.5: a label the "
        "judge gives no more than even odds, which the tables would read as evidence the other way; 0 keeps "
        "all, as the paper)",
    )
    contradictions: ContradictionRule = option(
        "same-attribute",
        "which atom-context contradictions become factors: `same-attribute` (only where a sentence of the "
        "context speaks about the atom's attribute with a conflicting value of the same kind, or negates it; "
        "e.g. 'born in Ulm in 1879' against 'born in 1880', not 'died in 1955 in Princeton' against 'born in "
        "1879'; the others count as neutral: counters.contradictions_other_attribute), `sentence` (the same "
        "question read with an English parser on the passage's deciding sentence, e.g. 'won the Nobel Prize in "
        "1925' against 'received the 1921 Nobel Prize'; docs/judges.md, 'The relation screen') or `any` (every "
        "one, as the paper)",
    )
    entailments: EntailmentRule = option(
        "same-subject",
        "which atom-context entailments become factors: `same-subject` (only where the passage or its title names "
        "the atom's subject, e.g. not 'Penicillin was discovered by Alexander Fleming' for 'Marie Curie discovered "
        "penicillin'; the others count as neutral: counters.entailments_other_subject), `sentence` (only where the "
        "passage's deciding sentence, read with an English parser, states the claim's subject, numbers, names, "
        "polarity and direction without a hedge the claim drops; one that states the opposite, 'lower' for "
        "'higher', becomes a contradiction; docs/judges.md, 'The relation screen') or `any` (every one, as the "
        "paper)",
    )
    filter_supplied_relations: bool = option(
        False,
        "also apply the rules for the judge's noise (--min-relation-probability, --contradictions, --entailments) "
        "to the relations a record supplies; by default supplied relations are data, used as given",
        omit_default=True,
    )
    preset: GraphPreset = option(
        "default",
        "a set of graph settings at once: `paper` is the FactReasoner paper's graph (Table 1 factor tables, every "
        "entailment and contradiction a factor whatever its probability, context prior 0.99 as the paper's text "
        "says, where IBM's code uses 0.9); a graph setting given beside it wins",
        dest="graph_preset",
        flags=["--graph"],
        omit_default=True,
    )
    # Coherence (atom–atom factors, fact_reasoner/graph/coherence.py). Declared only_when themselves
    # on: with coherence off they are left out of the output's settings and the resume
    # fingerprint, so outputs written before the option existed still resume.
    coherence: bool = option(
        False,
        "also judge atoms of the response against each other (NLI both ways) and add atom-atom factors, "
        "so two atoms that contradict each other cannot both be confidently true; adds the output "
        "fields `coherence` and `contradicting_pairs`",
        only_when=("coherence", True),
    )
    coherence_min_similarity: Cosine = option(
        0.3,
        "with --coherence: judge only atom pairs whose sentence-embedding cosine is at least this "
        "(-1 judges every pair; pruned pairs are counted in counters.coherence_pairs_dissimilar)",
        only_when=("coherence", True),
    )
    coherence_pairs: CoherencePairs = option(
        "comparable",
        "with --coherence: which atom pairs are judged: `comparable` (only pairs that talk about the same "
        "attribute with different values, or one negating the other, e.g. 'born in 1949' / 'born in 1942'; "
        "then the similarity gate) or `similar` (the similarity gate alone); pairs left out are counted in "
        "counters.coherence_pairs_incomparable",
        only_when=("coherence", True),
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        """``preset paper``: the settings of :data:`PAPER_GRAPH` that are not given."""
        if isinstance(data, dict) and data.get("preset") == "paper":
            data = dict(data)
            for key, value in PAPER_GRAPH.items():
                if data.get(key) is None:
                    data[key] = value
        return data

    @model_validator(mode="before")
    @classmethod
    def _use_priors(cls, data: Any) -> Any:
        """``use_priors: true/false`` (IBM's name, and this tool's before ``factor_tables``)."""
        if isinstance(data, dict) and "use_priors" in data:
            data = dict(data)
            tables = "priors" if data.pop("use_priors") else "paper"
            if data.setdefault("factor_tables", tables) != tables:
                raise ValueError(f"use_priors and factor_tables {data['factor_tables']!r} disagree")
        return data

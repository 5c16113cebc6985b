"""Screening the judge's relations: the stage between the NLI judge and the factor graph.

The judge proposes, the passage disposes. Each atom–context entailment or contradiction the
judge gave is **kept**, **set aside** (no factor: the graph reads it as neutral) or **turned**
(an entailment whose deciding sentence states the opposite becomes a contradiction), each with
its reason, by the rules :class:`~fact_reasoner.settings.graph_options.GraphOptions` chooses:

- the relation floor (``min_relation_probability``): a label with p ≤ the floor is set aside;
- ``entailments``: ``sentence`` (the parser's checks of the deciding sentence,
  :mod:`fact_reasoner.screening.checks`), ``same-subject`` (the word rule,
  :mod:`fact_reasoner.screening.words`) or ``any``;
- ``contradictions``: ``sentence``, ``same-attribute`` or ``any``.

They filter the project's own judge's noise: relations a record supplies are data and pass
through unless ``filter_supplied_relations``. Context–context relations (FR3) and atom–atom ones
(coherence) pass through. What the stage gives the graph (:class:`Screening`) is the relations
as the graph should read them, plus what it decided, for the output's explanations and the
run's counters; the graph builder itself reads no English.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..schema import Atom, Context, Relation, RelationType
from .relations import UnusedRelation

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.graph_options import GraphOptions
    from .reading import Claim, Statement

__all__ = ["PlannedPairs", "RelationNote", "Screening", "screen_relations", "uses_parser"]


def _decides(relation: Relation) -> float:
    """P(E) + P(C) of the judge's distribution (the relation's own probability when the judge
    gave no distribution), clipped below 1."""
    probabilities = relation.probabilities or {}
    if "entailment" in probabilities and "contradiction" in probabilities:
        return min(float(probabilities["entailment"]) + float(probabilities["contradiction"]), 1.0 - 1e-6)
    return relation.probability


_SCREENED = (RelationType.ENTAILMENT, RelationType.CONTRADICTION)
_SUBJECT_COUNTERS = (
    "entailments_same_subject",
    "entailments_other_subject",
    "entailments_subject_from_atom",
    "entailments_subject_from_sentence",
    "entailments_subject_from_topic",
    "entailments_subject_unknown",
)


@dataclass(frozen=True)
class RelationNote:
    """What the screen saw of one relation that became a factor: the deciding ``sentence`` and,
    for a turned entailment, the judge's label and why it was turned."""

    sentence: str | None = None
    #: the judge's label, where the screen turned it (an entailment read as a contradiction)
    judged: RelationType | None = None
    #: what the screen read against the claim (a turned entailment, a contradiction it confirmed)
    reason: str | None = None


@dataclass(frozen=True)
class Screening:
    """The stage's output: ``relations`` as the graph reads them (as given, neutral where set
    aside, contradiction where turned), the ``unused`` ones with why, a note per factor relation
    (keyed by the plan's ids: ``(source, target, judge)``) and the ``counters``."""

    relations: tuple[Relation, ...]
    unused: tuple["UnusedRelation", ...] = ()
    notes: dict[tuple[str, str, str | None], RelationNote] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)


class PlannedPairs(Protocol):
    """What the screen reads of a graph's plan (:class:`~fact_reasoner.graph.factor_graph.GraphPlan`
    is one): the atoms and contexts, the duplicates dropped for them, the record's topic and the
    response's sentences."""

    @property
    def atoms(self) -> tuple[Atom, ...]: ...
    @property
    def contexts(self) -> tuple[Context, ...]: ...
    @property
    def atom_duplicates(self) -> dict[str, str]: ...
    @property
    def context_duplicates(self) -> dict[str, str]: ...
    @property
    def topic(self) -> str | None: ...
    @property
    def sentences(self) -> tuple[str, ...]: ...


def uses_parser(options: "GraphOptions") -> bool:
    """Whether these settings read passages with the parser (``sentence`` for either rule)."""
    return "sentence" in (options.entailments, options.contradictions)


def screen_relations(
    plan: "PlannedPairs", relations: Iterable[Relation], options: "GraphOptions", *, supplied: bool = False
) -> Screening:
    """Screen the judge's relations of ``plan`` by ``options``'s rules (module docstring).
    ``supplied``: the relations came with the record; they pass through unless
    ``options.filter_supplied_relations``."""
    relations = tuple(relations)
    if supplied and not options.filter_supplied_relations:
        return Screening(relations)
    return _Screen(plan, options).run(relations)


class _Screen:
    #: entailment checks or findings to pass over (none; an experiment measures what each does
    #: by setting this: ``experiments/screen_ablation.py``)
    skip: tuple[str, ...] = ()

    def __init__(self, plan: "PlannedPairs", options: "GraphOptions") -> None:
        self.plan = plan
        self.options = options
        self.atoms = {a.id: a for a in plan.atoms}
        self.contexts = {c.id: c for c in plan.contexts}
        for dropped, kept in plan.atom_duplicates.items():
            if kept in self.atoms:
                self.atoms.setdefault(dropped, self.atoms[kept])
        for dropped, kept in plan.context_duplicates.items():
            if kept in self.contexts:
                self.contexts.setdefault(dropped, self.contexts[kept])
        # a rule that is on counts from zero; one that is off counts nothing
        self.counts: Counter[str] = Counter()
        if options.entailments == "same-subject":
            self.counts.update(dict.fromkeys(_SUBJECT_COUNTERS, 0))
        if options.contradictions == "same-attribute":
            self.counts.update(dict.fromkeys(("contradictions_same_attribute", "contradictions_other_attribute"), 0))
        for kind, rule in (("entailments", options.entailments), ("contradictions", options.contradictions)):
            if rule == "sentence":
                actions = ("kept", "set_aside", "turned") if kind == "entailments" else ("kept", "set_aside")
                self.counts.update(dict.fromkeys((f"screen_{kind}_{action}" for action in actions), 0))
        self.unused: list[UnusedRelation] = []
        self.notes: dict[tuple[str, str, str | None], RelationNote] = {}

    def run(self, relations: tuple[Relation, ...]) -> Screening:
        out = [self.relation(r) for r in relations]
        return Screening(tuple(out), tuple(self.unused), self.notes, dict(self.counts))

    def relation(self, relation: Relation) -> Relation:
        atom = self.atoms.get(relation.target)
        context = self.contexts.get(relation.source)
        if atom is None or context is None or relation.failed or relation.relation not in _SCREENED:
            return relation
        rule = self.options.entailments if relation.relation == RelationType.ENTAILMENT else self.options.contradictions
        if rule == "sentence":
            relation = self.sentence_rule(relation, atom, context)
            return self.floor(relation) if relation.relation in _SCREENED else relation
        # the word rules read no sentence, but the row quotes the one the relation rests on
        from .words import deciding_sentence

        relation = relation.model_copy(update={"sentence": deciding_sentence(atom.text, context.text)})
        relation = self.floor(relation)
        if relation.relation not in _SCREENED:
            return relation
        if relation.relation == RelationType.ENTAILMENT:
            relation = self.entailment(relation, atom, context)
        else:
            relation = self.contradiction(relation, atom, context)
        if relation.relation in _SCREENED:  # a factor
            self.note(relation, RelationNote(relation.sentence))
        return relation

    def floor(self, relation: Relation) -> Relation:
        """The relation floor: a label with p ≤ ``min_relation_probability`` is set aside."""
        floor = self.options.min_relation_probability
        if floor > 0 and relation.probability <= floor:
            self.counts["relations_below_floor"] += 1
            return self.set_aside(relation, "below the floor", "--min-relation-probability", relation.sentence)
        return relation

    # -- the rules ---------------------------------------------------------------------------

    def entailment(self, relation: Relation, atom: Atom, context: Context) -> Relation:
        """``--entailments same-subject`` (the word rule) or ``any``."""
        if self.options.entailments != "same-subject":
            return relation
        from .words import another_subject

        other, source, subject = another_subject(atom, context, self.sentence_of(atom), self.plan.topic)
        self.counts[f"entailments_subject_{'unknown' if source == 'none' else 'from_' + source}"] += 1
        self.counts["entailments_other_subject" if other else "entailments_same_subject"] += 1
        if other:
            return self.set_aside(
                relation, f"the passage never names {subject}", "--entailments same-subject", relation.sentence
            )
        return relation

    def contradiction(self, relation: Relation, atom: Atom, context: Context) -> Relation:
        """``--contradictions same-attribute`` (the word rule) or ``any``."""
        if self.options.contradictions != "same-attribute":
            return relation
        from .words import another_attribute

        other = another_attribute(atom, context)
        self.counts["contradictions_other_attribute" if other else "contradictions_same_attribute"] += 1
        if other:
            return self.set_aside(relation, "another attribute", "--contradictions same-attribute", relation.sentence)
        return relation

    def sentence_rule(self, relation: Relation, atom: Atom, context: Context) -> Relation:
        """``--entailments sentence`` / ``--contradictions sentence``: the deciding sentence's
        checks (:mod:`fact_reasoner.screening.checks`). Where the sentence states the opposite of
        the claim (a turned entailment, a contradiction whose conflict the parser reads), the
        factor's probability is the judge's probability that the sentence decides the claim at
        all, P(E) + P(C): the judge saw the sentence speak to the claim, the parser reads which
        way."""
        from .checks import check_contradiction, check_entailment

        claim, window, passage = self.read(atom, context)
        entailment = relation.relation == RelationType.ENTAILMENT
        kind = "entailments" if entailment else "contradictions"
        setting = f"--{kind} sentence"
        if window is None:
            return relation
        sentence = window.text
        if entailment:
            finding = check_entailment(claim, window, passage, context.title, self.skip)
        else:
            finding = check_contradiction(claim, window, passage, context.title)
        if finding is not None and finding.action == "set aside":
            self.counts[f"screen_{kind}_set_aside"] += 1
            self.counts[f"screen_{kind}_set_aside_{finding.check}"] += 1
            return self.set_aside(relation, finding.reason, setting, sentence)
        # a stated opposite takes the judge's P(E) + P(C); one read from a weak judgement (p at
        # or below the floor) only for a polarity the parser reads on the claim's own predicate
        # ("did not attend" / "attended"), not for a value or a name it could have misplaced. A
        # contradiction the parser confirms on the claim's doer ("born in 1906" / "born in 1910"),
        # or by polarity or an opposite word, is as sure as a turned entailment.
        weak = relation.probability <= self.options.min_relation_probability
        polarity = finding is not None and finding.check == "negation"
        if finding is not None and finding.action == "turned" and (polarity or not weak):
            self.counts[f"screen_{kind}_turned"] += 1
            self.counts[f"screen_{kind}_turned_{finding.check}"] += 1
            turned = relation.model_copy(
                update={"relation": RelationType.CONTRADICTION, "probability": _decides(relation), "sentence": sentence}
            )
            self.note(turned, RelationNote(sentence, relation.relation, finding.reason))
            return turned
        # kept: as the judge gave it (the floor still applies), or a contradiction with what the
        # sentence says against the claim
        self.counts[f"screen_{kind}_kept"] += 1
        said = finding.reason if finding is not None and not entailment else None
        confirmed = said is not None and finding is not None and finding.check in ("negation", "direction", "numbers")
        probability = max(relation.probability, _decides(relation)) if confirmed else relation.probability
        kept = relation.model_copy(update={"probability": probability, "sentence": sentence})
        self.note(kept, RelationNote(sentence, None, said))
        return kept

    # -- decisions ---------------------------------------------------------------------------

    def set_aside(self, relation: Relation, reason: str, rule: str, sentence: str | None = None) -> Relation:
        self.unused.append(
            UnusedRelation(
                relation.source,
                relation.target,
                relation.relation,
                relation.probability,
                reason,
                relation.judge,
                rule,
                sentence,
            )
        )
        return relation.model_copy(update={"relation": RelationType.NEUTRAL})

    def note(self, relation: Relation, note: RelationNote) -> None:
        atom, context = self.atoms[relation.target], self.contexts[relation.source]
        self.notes[(context.id, atom.id, relation.judge)] = note

    # -- reading -----------------------------------------------------------------------------

    def sentence_of(self, atom: Atom) -> str | None:
        index = atom.sentence
        sentences = self.plan.sentences
        return sentences[index] if index is not None and index < len(sentences) else None

    def read(self, atom: Atom, context: Context) -> tuple["Claim", "Statement | None", tuple["Statement", ...]]:
        from .checks import deciding_window
        from .reading import read_claim, read_passage, referent_of

        claim = read_claim(atom.text, referent_of(self.sentence_of(atom), self.plan.topic))
        passage = read_passage(context.text, context.title)
        return claim, deciding_window(claim, passage), passage

"""The data model: input records, atoms, contexts, NLI relations and output records.

Input records follow IBM FactReasoner's files (``input``, ``output``, ``topic``, ``atoms``,
``contexts``) plus our ``relations`` extension. Unknown fields are kept, so a record read and
written again loses nothing. Output records use IBM's field names for everything IBM reports
and add our own fields beside them (see :class:`OutputRecord`).
"""

from __future__ import annotations

from collections import Counter
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator

from .hashing import content_key


class Label(str, Enum):
    """A gold or predicted verdict for one atom: supported (S) or not supported (NS)."""

    SUPPORTED = "S"
    NOT_SUPPORTED = "NS"


class RelationType(str, Enum):
    """The NLI relation of a premise (source) towards a hypothesis (target)."""

    ENTAILMENT = "entailment"
    CONTRADICTION = "contradiction"
    NEUTRAL = "neutral"
    EQUIVALENCE = "equivalence"


class _Open(BaseModel):
    """A model that keeps fields it does not know (IBM files carry extras such as ``cat``)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Atom(_Open):
    """An atomic claim of the response."""

    id: str
    text: str
    original: str | None = None
    label: Label | None = Field(default=None, description="gold label, used for evaluation only")
    contexts: list[str] | None = Field(
        default=None, description="ids of the contexts retrieved for this atom (FR1 uses them)"
    )
    sentence: int | None = Field(
        default=None,
        ge=0,
        description="the response sentence the atom was made from (0-based, as fact_reasoner.text.sentences.response_sentences "
        "splits it): recorded by the atomizer, kept by the reviser; `correct` attaches the atom there",
    )

    @field_validator("label", mode="before")
    @classmethod
    def _normalise_label(cls, value: Any) -> Any:
        # Human-labelled files spell labels in several ways; IR atoms are dropped by the
        # dataset preparation, never silently mapped to S or NS here.
        if isinstance(value, str):
            value = value.strip().upper()
            if value == "":
                return None
        return value


def context_id(position: int) -> str:
    """The id of a context given without one: ``c<position>``, its 0-based position in the list
    (the ids ``fact-reasoner ragas``, ``--contexts`` files and :func:`~fact_reasoner.testing.assert_factual`
    give too)."""
    return f"c{position}"


def with_context_ids(items: Any) -> Any:
    """``items`` with each context given as its text alone (a string, as ragas, DeepEval and most
    RAG code hold them) or as an object without an ``id`` made a ``{id, text…}`` object, the id
    :func:`context_id` of its position; anything else (a :class:`Context`, an object with an
    ``id``, a value that is not a list) is left for validation to accept or refuse.

    >>> with_context_ids(["Paris is in France.", {"text": "Rome is in Italy."}])
    [{'id': 'c0', 'text': 'Paris is in France.'}, {'id': 'c1', 'text': 'Rome is in Italy.'}]
    """
    if not isinstance(items, list):
        return items
    return [
        {"id": context_id(i), "text": item}
        if isinstance(item, str)
        else {"id": context_id(i), **item}
        if isinstance(item, dict) and "id" not in item
        else item
        for i, item in enumerate(items)
    ]


class Context(_Open):
    """An evidence passage."""

    id: str
    text: str
    title: str | None = None
    snippet: str | None = None
    link: str | None = None


class JudgeVerdict(BaseModel):
    """One judge's verdict on a pair, where a panel of judges (``--nli a,b``) judged it: its label
    and that label's probability, its whole distribution (``probabilities``: entailment, neutral,
    contradiction) and, in a panel with roles, what the panel's rule read of it (``role``:
    ``entailment``, its P(E) / (P(E) + P(N)); ``contradiction``, its P(C); or ``both``)."""

    relation: RelationType
    probability: float
    failed: bool | None = None
    probabilities: dict[str, float] | None = None
    role: Literal["entailment", "contradiction", "both"] | None = None

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: Any) -> dict[str, Any]:
        return _without_none(handler(self), ("failed", "probabilities", "role"))


class _PanelFields(BaseModel):
    """Leaves out what a panel adds to a piece of evidence where no panel judged it: each
    judge's verdict on the passage (``judges``), whether they all gave the same label
    (``agreed``) and, where each judge's relation is its own factor, whose this one is
    (``judge``), so that a single judge's rows read as before panels existed; likewise what the
    sentence screen adds where it read no sentence (``sentence``, ``judged``, ``screen``)."""

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: Any) -> dict[str, Any]:
        return _without_none(handler(self), ("judge", "judges", "agreed", "sentence", "judged", "screen"))


def _without_none(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    for key in keys:
        if data.get(key) is None:
            data.pop(key, None)
    return data


class Relation(_Open):
    """An NLI verdict: ``source`` (premise) towards ``target`` (hypothesis).

    ``probability`` is the probability of the predicted ``relation``. ``probabilities`` holds
    all three label probabilities when the judge gives them. A judgement that failed (a model
    error, an unparsable answer) is kept with ``failed=True`` and a ``reason``; the graph
    treats it as neutral so it never becomes a confident factor.
    """

    source: str
    target: str
    relation: RelationType
    probability: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)  # NaN: "a finite number"
    probabilities: dict[str, float] | None = None
    failed: bool = False
    reason: str | None = None
    #: judged by a panel (``--nli a,b``): each judge's verdict on the pair, by the judge's name
    judges: dict[str, JudgeVerdict] | None = None
    #: a panel that gives each judge its own factor: the judge whose relation this is
    judge: str | None = None
    #: the passage sentence (or two) the relation rests on, as the sentence screen found it
    #: (``--entailments sentence``: :mod:`fact_reasoner.screening`)
    sentence: str | None = None

    @field_validator("relation", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class InputRecord(_Open):
    """One response to assess, with whatever of atoms / contexts / relations is already known."""

    input: str = Field(default="", description="the prompt or question")
    output: str = Field(default="", description="the response to assess")
    topic: str | None = None
    atoms: list[Atom] | None = None
    contexts: list[Context] | None = None
    relations: list[Relation] | None = None

    @field_validator("contexts", mode="before")
    @classmethod
    def _contexts_as_given(cls, value: Any) -> Any:
        """Contexts may be plain strings or objects without ids (:func:`with_context_ids`)."""
        return with_context_ids(value)

    @model_validator(mode="after")
    def _check_references(self) -> "InputRecord":
        if self.atoms is None and not self.output.strip():
            raise ValueError("no response to assess: `output` is empty or missing and the record has no `atoms`")
        atom_ids = [a.id for a in self.atoms or []]
        context_ids = [c.id for c in self.contexts or []]
        _require_unique(atom_ids, "atom")
        _require_unique(context_ids, "context")
        clash = set(atom_ids) & set(context_ids)
        if clash:
            raise ValueError(f"ids used both for an atom and a context: {sorted(clash)}")
        known_contexts = set(context_ids)
        for atom in self.atoms or []:
            missing = [c for c in atom.contexts or [] if c not in known_contexts]
            if missing and self.contexts is not None:
                raise ValueError(f"atom {atom.id!r} lists unknown contexts {missing}")
        known = set(atom_ids) | known_contexts
        for relation in self.relations or []:
            for end in (relation.source, relation.target):
                if end not in known:
                    raise ValueError(f"relation {relation.source}->{relation.target} names unknown id {end!r}")
        return self

    @property
    def record_key(self) -> str:
        """A key of the whole record (every field): used to skip records already written when a
        run resumes; a changed atom, context or relation gives a new key."""
        return content_key(self.model_dump(mode="json", exclude_none=True))


def _require_unique(ids: list[str], what: str) -> None:
    counts = Counter(ids)
    duplicates = sorted(i for i, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate {what} ids: {duplicates}")


class EvidenceLink(_PanelFields):
    """One factor that touched an atom: which context, which relation, how sure (and, from a
    panel, each judge's verdict). With the sentence screen (``--entailments sentence``):
    ``sentence``, the passage sentence it rests on; for an entailment the screen turned into a
    contradiction, ``judged`` (the judge's own label) and ``screen`` (what the sentence says
    against the claim: "the sentence says lower, not higher"), which a contradiction the screen
    confirmed also carries."""

    context: str
    relation: RelationType
    probability: float
    judge: str | None = None
    judges: dict[str, JudgeVerdict] | None = None
    agreed: bool | None = None
    sentence: str | None = None
    judged: RelationType | None = None
    screen: str | None = None


class UnusedEvidence(_PanelFields):
    """An entailment or contradiction the judge gave that the graph did not use, and why
    (``below the floor``; the sentence screen's reason, "the sentence names Alexander Fleming,
    not Marie Curie"; the word rules' ``another attribute``, "the passage never names Marie
    Curie"), with the
    passage ``sentence`` the screen read where it read one: shown so that a user can see why a
    claim they expected to be contradicted (or supported) was not."""

    context: str
    relation: RelationType
    probability: float
    reason: str
    judge: str | None = None
    judges: dict[str, JudgeVerdict] | None = None
    agreed: bool | None = None
    sentence: str | None = None


class AtomVerdict(BaseModel):
    """What the assessment concluded about one atom, and why.

    ``evidence`` lists the factors that touched the atom; ``unused_evidence`` the judge's
    entailments and contradictions that the graph's rules left out, with the reason (absent
    when there are none); ``no_evidence`` is true when no factor touched the atom, so its
    posterior is its prior (0.5, NS) — nothing supported or contradicted it, which the summary
    counts apart from atoms judged NS on evidence.

    With ``--skip-uncheckable`` each verdict also carries ``checkworthy`` (bool) and, for an
    uncheckable atom, ``uncheckable_reason`` (extra fields, absent otherwise).

    A baseline pipeline (:mod:`fact_reasoner.pipelines`) adds its judgement's details as extra
    fields (``judgement``, ``evidence_ids``, ``raw_judgement``, ``model_calls`` …)."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    original: str | None = None
    label: Label | None = None
    probability: float = Field(description="posterior P(atom is true)")
    prediction: Label
    evidence: list[EvidenceLink] = Field(default_factory=list)
    unused_evidence: list[UnusedEvidence] | None = None
    no_evidence: bool | None = None
    sentence: int | None = Field(default=None, description="the response sentence the atom was made from, if known")

    @model_serializer(mode="wrap")
    def _leave_out_absent(self, handler: Any) -> dict[str, Any]:
        """``unused_evidence``, ``no_evidence`` and ``sentence`` only where they say something (a
        row without them reads as before)."""
        data = handler(self)
        for key in ("unused_evidence", "no_evidence", "sentence"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


class Marginal(BaseModel):
    variable: str
    probabilities: tuple[float, float]


class EngineDiagnostics(BaseModel):
    """How the posterior marginals were obtained."""

    name: str
    algorithm: str
    exact: bool
    converged: bool
    iterations: int = 0
    seconds: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)


class ContradictingPair(BaseModel):
    """Two atoms of one response that NLI judged to contradict each other (``--coherence``).

    ``atoms`` and ``texts`` in the same order; ``probability`` is P(contradiction), the larger
    of the two directions judged a contradiction; ``posteriors`` the posterior P(atom is true)
    of each atom, with the atom–atom factors in the graph.
    """

    atoms: tuple[str, str]
    texts: tuple[str, str]
    probability: float
    posteriors: tuple[float, float]


#: Output fields added with ``--coherence`` (absent without it, so the rows are unchanged):
#: ``coherence`` (float, 1 − the largest P(contradiction) between two atoms, 1 when none; see
#: :func:`fact_reasoner.graph.coherence.coherence_score`) and ``contradicting_pairs`` (a list of
#: :class:`ContradictingPair` as JSON, most probable first).
COHERENCE_FIELD = "coherence"
CONTRADICTING_PAIRS_FIELD = "contradicting_pairs"


class OutputRecord(_Open):
    """The assessment of one input record.

    IBM's field names are kept as they are (``factuality_score`` … ``references``); our own
    additions are ``recall_k``, ``f1_k``, ``k`` (with ``k_rule`` and ``k_reason``: the rule that
    gave K and why, :func:`fact_reasoner.scores.choose_k`), ``atoms`` (per-atom verdict and evidence),
    ``brier_score``, ``engine``, ``timings`` and ``version`` (the FR graph; null in a baseline's
    row, which builds none). With ``--coherence`` a row also
    has ``coherence`` and ``contradicting_pairs`` (:data:`COHERENCE_FIELD`,
    :data:`CONTRADICTING_PAIRS_FIELD`, :class:`ContradictingPair`).

    With ``--abstention on``: ``abstained`` (and ``abstention_reason``); an abstention has no
    ``factuality_score``, ``recall_k`` or ``f1_k`` (null). With ``--gamma``: ``length_penalty``
    and ``unpenalized_factuality_score`` (``factuality_score`` is the penalised one).
    """

    model_config = ConfigDict(extra="allow")

    record_key: str
    input: str
    output: str
    topic: str | None = None
    version: Literal[1, 2, 3] | None
    factuality_score: float | None  # None: an abstention (no precision)
    recall_k: float | None
    f1_k: float | None
    k: int
    k_rule: Literal["fixed", "median", "half"] | None = None
    k_reason: str | None = None
    num_atoms: int
    num_contexts: int
    num_true_atoms: int
    num_false_atoms: int
    num_uniform_atoms: int
    entropy: float
    avg_entropy: float
    entropy_log_base: Literal["e"] = "e"
    avg_prob: float
    marginals: list[Marginal]
    predictions: dict[str, Label]
    atoms: list[AtomVerdict]
    gold_factuality_score: float | None = None
    gold_true_atoms: int | None = None
    true_positive: int | None = None
    true_negative: int | None = None
    false_positive: int | None = None
    false_negative: int | None = None
    references: list[str] | None = None
    brier_score: float | None = None
    engine: EngineDiagnostics
    timings: dict[str, float] = Field(default_factory=dict)
    counters: dict[str, float] = Field(default_factory=dict)

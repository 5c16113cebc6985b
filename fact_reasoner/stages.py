"""The stages of one configuration, and the one judge → build → infer sequence.

:class:`Stages` builds each stage from a :class:`~fact_reasoner.settings.config.PipelineConfig` on first
use — or takes it ready-made — and keeps it: the LLM, the NLI backend (behind the pair cache),
the atomizer, the reviser, the retriever, the inference engine and the sentence embedder. The
pipeline (:class:`~fact_reasoner.reasoner.FactReasoner`) and the RAG metrics
(:class:`~fact_reasoner.metrics.context.MetricContext`) both hold one, so a stage is built the
same way wherever it is used.

:func:`judge_and_infer` is the core both run: the NLI pairs a plan lists are judged, the
judged relations become a factor graph, and an engine gives the posterior marginals. Both run
it with the same failure policy (:func:`check_judged`): when more NLI calls failed than
``max_failed_pairs`` allows, the record (or the metric's sample) fails with
:class:`~fact_reasoner.errors.RecordFailed` instead of being scored without its evidence.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import NoEvidence, RecordFailed, StageUnavailable
from .graph.build import build_graph
from .graph.factor_graph import BuiltGraph, GraphPlan
from .inference import InferenceEngine, InferenceResult, make_engine
from .nli import NLIBackend, NLIJudgement, PrecomputedNLI
from .schema import JudgeVerdict, Relation, RelationType
from .screening import screen_relations, uses_parser
from .settings.graph_options import GraphOptions
from .settings.registry import Entry, Extra, install_hint, require_extras

if TYPE_CHECKING:  # pragma: no cover
    from .atoms.atomizer import AtomizerBackend
    from .atoms.checkworthy import AbstentionDetector, CheckworthyClassifier
    from .atoms.grounding import CheckedAtoms
    from .atoms.reviser import ReviserBackend
    from .embeddings import Embedder
    from .llm.base import LLMBackend
    from .retrieval.base import Retriever
    from .schema import InputRecord
    from .settings.config import PipelineConfig

__all__ = [
    "JudgedPlan",
    "Reasoning",
    "Stages",
    "available",
    "check_judged",
    "judge_and_build",
    "judge_and_infer",
    "judge_plan",
    "screen_and_build",
    "tidy_count",
]


def available() -> dict[str, list[str]]:
    """What is registered, by kind: inference ``engines``, ``retrievers`` (``--service-type``),
    ``nli`` backends, ``llm_backends`` and RAG ``metrics`` (:func:`fact_reasoner.settings.registry.available`).

    Each kind also has its own ``available_<kind>()`` function beside its factory
    (``make_engine``, ``make_retriever``, ``make_nli``, ``make_llm``, ``make_metric``).
    """
    from .settings.registry import available as registered

    return registered()


class Stages:
    """Every stage of a configuration, built on first use.

    Parameters
    ----------
    config:
        The settings each missing stage is built from.
    nli, engine, atomizer, reviser, retriever, llm, embedder:
        Ready-made stages that replace what ``config`` would build.
    """

    def __init__(
        self,
        config: "PipelineConfig",
        *,
        nli: NLIBackend | None = None,
        engine: InferenceEngine | None = None,
        atomizer: "AtomizerBackend | None" = None,
        reviser: "ReviserBackend | None" = None,
        retriever: "Retriever | None" = None,
        llm: "LLMBackend | None" = None,
        embedder: "Embedder | None" = None,
    ) -> None:
        self.config = config
        self._nli = nli
        self._engine = engine
        self._atomizer = atomizer
        self._reviser = reviser
        self._retriever = retriever
        self._llm = llm
        self._embedder = embedder
        self._checkworthy: CheckworthyClassifier | None = None
        self._used_record_relations = False
        self._abstention: AbstentionDetector | None = None

    @property
    def engine(self) -> InferenceEngine:
        if self._engine is None:
            self._engine = make_engine(self.config.engine.name, **self.config.engine.engine_kwargs())
        return self._engine

    def llm(self) -> "LLMBackend":
        if self._llm is None:
            try:
                from .llm import make_llm
            except ImportError as error:  # pragma: no cover - depends on installed extras
                raise StageUnavailable(
                    f"the language model needs the llm extra: {install_hint('llm')} ({error})"
                ) from error
            self._llm = make_llm(self.config)
        return self._llm

    def nli(self) -> NLIBackend:
        """The model NLI backend ``--nli`` settled on (``config.models.nli_choice.model``; ``auto``
        → the default judge), behind the pair cache; :class:`StageUnavailable` when the choice
        builds none (``precomputed``)."""
        if self._nli is None:
            from .nli.factory import make_nli

            self._nli = make_nli(self.config, self.llm)
        return self._nli

    @property
    def has_model_judge(self) -> bool:
        """Whether a model NLI backend is at hand: given to these stages, or built already (with
        ``--nli precomputed`` none is built, so a caller without relations must be given one)."""
        return self._nli is not None

    def judge_description(self) -> str | None:
        """The NLI judge as a person names it (:func:`~fact_reasoner.nli.base.describe_judge`),
        once it has been built; the records' own relations with ``--nli precomputed``; else None."""
        own = "the records' own relations"
        if self.config.models.nli_choice.model is None:
            return own
        if self._nli is None:
            return own if self._used_record_relations else None
        from .nli.base import describe_judge

        return describe_judge(self._nli) + (f"; {own} where given" if self._used_record_relations else "")

    def uses_record_relations(self, record: "InputRecord") -> bool:
        """Whether ``record`` is judged by its own ``relations`` instead of the NLI model: always
        with ``--nli precomputed``, with ``auto`` when it carries some
        (:meth:`NLIChoice.uses_record_relations <fact_reasoner.settings.config.NLIChoice.uses_record_relations>`)."""
        return self.config.models.nli_choice.uses_record_relations(record.relations)

    def require_relations(self, record: "InputRecord") -> None:
        """Raise :class:`~fact_reasoner.errors.RecordFailed` for a record that no judge can judge:
        ``--nli`` builds no model (``precomputed``) and the record carries no ``relations``.
        Scoring it would count every pair as neutral: a record without its NLI is not assessed."""
        if self.config.models.nli_choice.model is None and record.relations is None:
            raise RecordFailed(f"--nli {self.config.models.nli}: the record has no `relations` (its NLI is missing)")

    def nli_for(self, record: "InputRecord", texts: Mapping[str, str]) -> NLIBackend:
        """The NLI judge of one record: its own relations (:meth:`uses_record_relations`), over
        ``texts`` (id → text), else the model backend behind the pair cache (:meth:`nli`)."""
        if self.uses_record_relations(record):
            self._used_record_relations = True
            return PrecomputedNLI(record.relations or [], texts)
        return self.nli()

    def atomizer(self) -> "AtomizerBackend":
        if self._atomizer is None:
            from .atoms.atomizer import make_atomizer

            self._atomizer = make_atomizer(self.config, self.llm())
        return self._atomizer

    def reviser(self) -> "ReviserBackend":
        if self._reviser is None:
            from .atoms.reviser import make_reviser

            self._reviser = make_reviser(self.config, self.llm())
        return self._reviser

    def atoms(self, record: "InputRecord", timings: dict[str, float]) -> "CheckedAtoms":
        """The atoms of ``record``: those it carries, as given (``checked`` False), else the
        atomizer's, revised (``--no-revise``: not) and checked against the response and the
        question (:func:`fact_reasoner.atoms.grounding.check_atoms`: ungrounded atoms set aside unless
        ``--keep-ungrounded-atoms``, atoms that do not stand alone marked)."""
        from .atoms.grounding import CheckedAtoms, check_atoms

        if record.atoms is not None:
            return CheckedAtoms(list(record.atoms), checked=False)
        if not record.output.strip():
            return CheckedAtoms([])
        with timed(timings, "atomize"):
            atoms = self.atomizer().atomize(record.output, question=record.input or None)
        if self.config.models.revise and atoms:
            with timed(timings, "revise"):
                reviser = self.reviser()
                # the record's topic helps resolve "he"/"she" sentences after the name; a reviser
                # of the earlier protocol (revise(atoms, response)) is called as before
                atoms = (
                    reviser.revise(atoms, record.output, topic=record.topic)
                    if record.topic
                    else reviser.revise(atoms, record.output)
                )
        return check_atoms(
            atoms, record.output, record.input or None, keep_ungrounded=self.config.models.keep_ungrounded_atoms
        )

    def retriever(self) -> "Retriever":
        if self._retriever is None:
            from .retrieval import RetrievalError, make_retriever

            try:
                self._retriever = make_retriever(self.config)
            except RetrievalError as error:  # no store, a bad collection: every record would fail
                raise StageUnavailable(str(error)) from error
        return self._retriever

    def checkworthy(self) -> "CheckworthyClassifier":
        """The atom classifier of ``--checkworthy`` (``llm`` asks the LLM backend)."""
        if self._checkworthy is None:
            from .atoms.checkworthy import make_classifier

            self._checkworthy = make_classifier(self.config, self._checkworthy_llm())
        return self._checkworthy

    def abstention(self) -> "AbstentionDetector":
        """The abstention detector of ``--checkworthy`` (``llm`` asks the LLM backend)."""
        if self._abstention is None:
            from .atoms.checkworthy import make_abstention_detector

            self._abstention = make_abstention_detector(self.config, self._checkworthy_llm())
        return self._abstention

    def _checkworthy_llm(self) -> "LLMBackend | None":
        """The LLM backend, for a ``--checkworthy`` choice whose registration uses it."""
        from .atoms.checkworthy import CHECKWORTHY

        return self.llm() if "llm" in CHECKWORTHY.entry(self.config.scores.checkworthy).uses else None

    def embedder(self) -> "Embedder":
        if self._embedder is None:
            from .embeddings import shared_embedder

            self._embedder = shared_embedder(threads=self.config.models.threads)
        return self._embedder

    def preflight(
        self,
        *,
        atomize: bool = False,
        retrieve: bool = False,
        judge: bool = False,
        llm: bool = False,
        embed: bool = False,
    ) -> None:
        """Check before any record that the stages a run needs can be set up: the engine (its
        options, merlin's binary), the extras each chosen backend declares in its registry
        (retriever, NLI backend, LLM backend), the atomizer's package, and the backends' own
        start-up checks (the web search's key).

        ``llm`` and ``embed``: the run asks the language model / the sentence embedder itself
        (RAG metrics). Raises :class:`StageUnavailable` (naming the extra to install, and what else
        the backend needs: a checker's weights) or the check's or the engine's own error (a
        checker's ``--nli-model`` missing or no model of its kind), so a run stops once at start-up,
        before any progress bar or output, instead of failing every record the same way.
        """
        from .llm import language_model_extras
        from .nli.factory import NLI_BACKENDS
        from .retrieval.base import RETRIEVERS

        self.engine  # noqa: B018 - building it checks the engine's options now
        config = self.config
        needed: list[tuple[str, Extra]] = []  # (what needs it, the extra)
        also_needs: dict[str, str] = {}  # what it needs besides its packages (a checker's weights)
        checks: list[Entry[Any]] = []
        uses_llm = (atomize and self._atomizer is None) or llm
        if retrieve and self._retriever is None:
            service = config.retrieval.service_type
            if service in RETRIEVERS:  # a module:callable path declares nothing
                entry = RETRIEVERS.entry(service)
                needed += [(f"--service-type {service}", extra) for extra in entry.extras]
                checks.append(entry)
                uses_llm |= "llm" in entry.uses
            uses_llm |= config.retrieval.query_builder or config.retrieval.summarise_contexts
        if atomize and self._atomizer is None:
            needed.append(("the atomizer", Extra("pysbd", "llm")))
        if judge and config.models.nli_mode == "fast" and config.models.nli_gate == "embedding":
            embed = True  # the similarity gate of --nli-mode fast
        if embed and self._embedder is None:
            from .embeddings import EMBEDDER_EXTRAS

            needed += [("the sentence embedder", extra) for extra in EMBEDDER_EXTRAS]
        if judge and uses_parser(config.graph):
            from .screening.parser import PARSER_PACKAGE

            rule = "--entailments sentence" if config.graph.entailments == "sentence" else "--contradictions sentence"
            needed += [(rule, Extra("spacy", "parser")), (rule, Extra(PARSER_PACKAGE, "parser"))]
        if judge and self._nli is None:
            for member in config.models.nli_choice.judges:  # one, or each judge of a panel
                nli_entry = NLI_BACKENDS.entry(member.name)
                needed += [(f"--nli {member.name}", extra) for extra in nli_entry.extras]
                if nli_entry.also_needs:
                    also_needs[f"--nli {member.name}"] = nli_entry.also_needs
                checks.append(nli_entry)
                uses_llm |= "llm" in nli_entry.uses
        scores = config.scores
        if scores.skip_uncheckable or scores.abstention == "on":
            from .atoms.checkworthy import CHECKWORTHY

            uses_llm |= "llm" in CHECKWORTHY.entry(scores.checkworthy).uses
        if uses_llm and self._llm is None:
            needed += language_model_extras(config)
        require_extras(needed, also_needs)
        for entry in checks:
            entry.run_check(config)

    def stats(self) -> dict[str, float]:
        """Cumulative counters (calls, cache hits, seconds…) of the stages built so far, each
        prefixed with its stage (``nli_pairs``, ``llm_cache_hits``…)."""
        counters: dict[str, float] = {}
        for name, stage in (
            ("llm", self._llm),
            ("nli", self._nli),
            ("atomizer", self._atomizer),
            ("reviser", self._reviser),
            ("retrieval", self._retriever),
            ("checkworthy", self._checkworthy),
        ):
            stats = getattr(stage, "stats", None)
            if callable(stats):
                for key, value in stats().items():
                    if isinstance(value, (int, float)):
                        counters[key if key.startswith(f"{name}_") else f"{name}_{key}"] = value
        return counters


def tidy_count(value: float) -> float | int:
    """A counter as the output writes it: counts stay integers, seconds keep their fraction
    (rounded to the microsecond)."""
    return int(value) if float(value).is_integer() else round(float(value), 6)


# -- judge → build → infer -------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedPlan:
    """The relations judged for a plan's pairs (unjudged pairs left out) and every judgement.

    ``reverse_skipped``: reverse context pairs that ``--nli-mode fast`` deferred and did not
    judge (:func:`~fact_reasoner.graph.pair_selection.reverse_needed`)."""

    relations: list[Relation]
    judgements: list[NLIJudgement]
    reverse_skipped: int = 0

    @property
    def failed(self) -> int:
        """Pairs whose judgement failed (an unjudged pair — no verdict exists — is not a failure)."""
        return sum(j.failed and not j.is_unjudged for j in self.judgements)

    @property
    def call_failures(self) -> list[NLIJudgement]:
        """Failures because the model could not be asked (not unreadable answers)."""
        return [j for j in self.judgements if j.failed and j.transport]


@dataclass(frozen=True)
class Reasoning:
    """Everything :func:`judge_and_infer` made: the judgements, the graph and the marginals."""

    judged: JudgedPlan
    built: BuiltGraph
    inference: InferenceResult


def require_evidence(record: "InputRecord", service_type: str) -> None:
    """No evidence, no score: raise :class:`~fact_reasoner.errors.NoEvidence` for a record that
    has no contexts and no retriever to find any (``--service-type supplied``, the default), before
    any model runs — scored, every claim would stay at its prior and the record would get a
    precision of 0 for nothing checked."""
    if record.contexts or service_type != "supplied":
        return
    given = "an empty `contexts` list" if record.contexts is not None else "no `contexts`"
    raise NoEvidence(
        f"no evidence: the record has {given} and no retriever is set (--service-type supplied uses the "
        "record's own contexts); give it contexts or choose a retriever (--service-type bm25, chroma, hybrid, "
        "wikipedia or google); nothing was checked, so nothing is scored"
    )


def judge_plan(plan: GraphPlan, nli: NLIBackend) -> JudgedPlan:
    """Judge the (premise, hypothesis) pairs the plan lists (and, with coherence, its atom
    pairs); a pair the backend has no verdict for (``unjudged``) gets no relation, so the graph
    counts it as missing.

    A panel's verdict (:class:`~fact_reasoner.nli.panel.PanelNLI`) carries each judge's: they
    go into the relation's ``judges``; where the panel gives each judge its own factor
    (``factors``), an atom's passage gets one relation per judge (``judge``), and every other
    pair the panel's combined verdict."""
    texts = plan.texts
    pairs: Sequence[tuple[str, str]] = plan.pairs + plan.atom_pairs
    if not pairs:
        return JudgedPlan([], [])
    judgements = _judge_texts(nli, [(texts[p], texts[h]) for p, h in pairs])
    if len(judgements) != len(pairs):
        raise RuntimeError(f"NLI backend returned {len(judgements)} judgements for {len(pairs)} pairs")
    atoms = {a.id for a in plan.atoms} | set(plan.atom_duplicates)
    relations: list[Relation] = []
    for (premise, hypothesis), j in zip(pairs, judgements):
        if j.is_unjudged:
            continue
        judges = judge_verdicts(j)
        if j.panel == "factors" and judges and not j.failed and hypothesis in atoms and premise not in atoms:
            relations += [
                _relation(premise, hypothesis, own, judges=judges, judge=name) for name, own in (j.judges or {}).items()
            ]
        else:
            relations.append(_relation(premise, hypothesis, j, judges=judges))
    return JudgedPlan(relations, list(judgements))


#: pairs sent to the judge at a time while stage progress is shown (:func:`_judge_texts`)
PROGRESS_CHUNK_PAIRS = 256


def _judge_texts(nli: NLIBackend, pairs: list[tuple[str, str]]) -> list[NLIJudgement]:
    """``nli.judge(pairs)``; while stage progress is shown (:func:`fact_reasoner.progress.stages_shown`),
    in chunks of :data:`PROGRESS_CHUNK_PAIRS` so that a bar can count the pairs judged — only for
    a judge whose verdicts do not depend on the pairs judged with them (a bar must not change one)."""
    from .nli.base import batch_invariant
    from .progress import stage_progress, stage_progress_active

    if isinstance(nli, PrecomputedNLI):  # the record's own relations: nothing to wait for
        return nli.judge(pairs)
    if not stage_progress_active() or len(pairs) <= PROGRESS_CHUNK_PAIRS or not batch_invariant(nli):
        with stage_progress("judge", len(pairs), unit="pair") as advance:
            judgements = nli.judge(pairs)
            advance(len(pairs))
        return judgements
    judgements = []
    with stage_progress("judge", len(pairs), unit="pair") as advance:
        for start in range(0, len(pairs), PROGRESS_CHUNK_PAIRS):
            chunk = pairs[start : start + PROGRESS_CHUNK_PAIRS]
            judgements += nli.judge(chunk)
            advance(len(chunk))
    return judgements


def judge_verdicts(judgement: NLIJudgement) -> dict[str, JudgeVerdict] | None:
    """A panel's verdict's judges as the output shows them (None for a single judge's): each
    judge's label and probability, its whole distribution and, in a roles panel, what the rule
    read of it, so that the panel's figure can be recomputed from the row."""
    if judgement.judges is None:
        return None
    roles = judgement.roles or {}
    return {
        name: JudgeVerdict.model_construct(
            relation=RelationType(j.label),
            probability=j.probability,
            failed=j.failed or None,
            probabilities=dict(j.probabilities) or None,
            role=roles.get(name),  # type: ignore[arg-type]  # the panel's roles (nli.panel)
        )
        for name, j in judgement.judges.items()
    }


def _relation(
    premise: str, hypothesis: str, j: NLIJudgement, *, judges: dict[str, JudgeVerdict] | None, judge: str | None = None
) -> Relation:
    # model_construct: the judgements were validated by the backend; an FR3 graph has tens of
    # thousands of pairs, whose validation would cost more than the inference.
    return Relation.model_construct(
        source=premise,
        target=hypothesis,
        relation=RelationType(j.label),
        probability=j.probability,
        probabilities=j.probabilities or None,
        failed=j.failed,
        reason=j.reason,
        judges=judges,
        judge=judge,
    )


def check_judged(judged: JudgedPlan, pairs: int, max_failed_pairs: float) -> None:
    """The one failure policy of judging: raise :class:`~fact_reasoner.errors.RecordFailed`
    when the NLI calls that could not be made (server down, errors after retries) are more than
    ``max_failed_pairs`` of the ``pairs``; counting them as neutral would score the record
    without its evidence. Unreadable answers never fail (they are neutral and counted)."""
    calls = judged.call_failures
    if calls and len(calls) > max_failed_pairs * pairs:
        raise RecordFailed(
            f"NLI: {len(calls)} of {pairs} pair(s) could not be judged "
            f"(more than --max-failed-pairs {max_failed_pairs:g}): {calls[0].reason}",
            unreachable=all(j.unreachable for j in calls),
        )


@contextmanager
def timed(timings: dict[str, float] | None, stage: str) -> Iterator[None]:
    """Add the seconds the block takes to ``timings[stage]`` (nothing when ``timings`` is None)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if timings is not None:
            timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


def judge_and_build(
    plan: GraphPlan,
    nli: NLIBackend,
    options: GraphOptions | None = None,
    *,
    max_failed_pairs: float = 0.0,
    timings: dict[str, float] | None = None,
    deferred_reverse: Sequence[tuple[tuple[str, str], tuple[str, str]]] = (),
) -> tuple[JudgedPlan, BuiltGraph]:
    """Judge the plan's pairs (failing as :func:`check_judged` says) and build its factor graph.

    ``deferred_reverse`` (``--nli-mode fast``): ``(forward, reverse)`` context pairs whose
    reverse is judged afterwards, only where the forward judgement leaves the factor open; the
    built graph's plan lists the reverse pairs that were judged.
    ``timings`` gets the seconds of ``nli`` and ``build``."""
    with timed(timings, "nli"):
        judged = judge_plan(plan, nli)
        if deferred_reverse:
            judged, plan = _judge_reverse(plan, judged, nli, deferred_reverse)
    check_judged(judged, len(plan.pairs) + len(plan.atom_pairs), max_failed_pairs)
    built = screen_and_build(
        plan,
        judged.relations,
        options or GraphOptions(version=plan.version),
        supplied=bool(getattr(nli, "supplies_relations", False)),
        timings=timings,
    )
    return judged, built


def screen_and_build(
    plan: GraphPlan,
    relations: Sequence[Relation],
    options: GraphOptions | None = None,
    *,
    supplied: bool = False,
    timings: dict[str, float] | None = None,
) -> BuiltGraph:
    """Screen the judged relations (:func:`~fact_reasoner.screening.screen_relations`: what the
    graph uses of each, and why) and build the factor graph from what the screen gives.
    ``timings`` gets the seconds of ``screen`` and ``build``."""
    options = options or GraphOptions(version=plan.version)
    with timed(timings, "screen"):
        screening = screen_relations(plan, relations, options, supplied=supplied)
    with timed(timings, "build"):
        return build_graph(plan, screening.relations, options, supplied=supplied, screening=screening)


def _judge_reverse(
    plan: GraphPlan,
    judged: JudgedPlan,
    nli: NLIBackend,
    deferred_reverse: Sequence[tuple[tuple[str, str], tuple[str, str]]],
) -> tuple[JudgedPlan, GraphPlan]:
    """Judge the deferred reverse pairs that :func:`~fact_reasoner.graph.pair_selection.reverse_pairs_needed`
    asks for; the plan gains exactly those pairs."""
    from dataclasses import replace

    from .graph.pair_selection import reverse_pairs_needed

    needed = reverse_pairs_needed(judged.relations, deferred_reverse)
    plan = replace(plan, pairs=plan.pairs + tuple(needed))
    more = judge_plan(replace(plan, pairs=tuple(needed), atom_pairs=()), nli)  # atom pairs: judged once
    return (
        JudgedPlan(
            judged.relations + more.relations,
            judged.judgements + more.judgements,
            reverse_skipped=len(deferred_reverse) - len(needed),
        ),
        plan,
    )


def judge_and_infer(
    plan: GraphPlan,
    nli: NLIBackend,
    engine: InferenceEngine,
    options: GraphOptions | None = None,
    *,
    max_failed_pairs: float = 0.0,
    timings: dict[str, float] | None = None,
    deferred_reverse: Sequence[tuple[tuple[str, str], tuple[str, str]]] = (),
) -> Reasoning:
    """Judge the plan's pairs, build its factor graph and infer the marginals: the core that
    the pipeline and the RAG metrics both run.

    Raises :class:`~fact_reasoner.errors.RecordFailed` when more NLI calls failed than
    ``max_failed_pairs`` (a share of the pairs) allows. ``timings`` gets the seconds of
    ``nli``, ``build`` and ``infer``."""
    judged, built = judge_and_build(
        plan, nli, options, max_failed_pairs=max_failed_pairs, timings=timings, deferred_reverse=deferred_reverse
    )
    with timed(timings, "infer"):
        inference = engine.infer(built.graph)
    return Reasoning(judged, built, inference)

"""The pipeline: atomize → revise → retrieve → NLI → graph → infer → score.

:class:`FactReasoner` is the Python entry point; the CLI is a thin layer over it::

    from fact_reasoner import FactReasoner, PipelineConfig
    assessor = FactReasoner(PipelineConfig(version=3))
    result = assessor.assess({"input": "...", "output": "...", "atoms": [...], "contexts": [...],
                              "relations": [...]})
    result.factuality_score, [a.probability for a in result.atoms]

Stages run only for what a record lacks: atoms missing → atomizer (+ reviser); contexts
missing → retriever; relations missing → the NLI backend. Each stage is created lazily from
:class:`~fact_reasoner.config.PipelineConfig` (or passed in ready-made), so a record that
carries everything needs no language model at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from .atomizer import AtomizerBackend
from .config import PipelineConfig
from .errors import RecordFailed
from .graph import BuiltGraph, GraphPlan, ignored_relations, plan_graph
from .inference import InferenceEngine, InferenceResult
from .llm.base import LLMBackend
from .nli import NLIBackend, PrecomputedNLI
from .retrieval.base import Retriever
from .reviser import ReviserBackend
from .schema import (
    Atom,
    AtomVerdict,
    Context,
    EngineDiagnostics,
    EvidenceLink,
    InputRecord,
    Marginal,
    OutputRecord,
)
from .scores import predict_label, resolve_k, score_record
from .stages import JudgedPlan, Stages, StageUnavailable, judge_and_build, judge_and_infer, timed

logger = logging.getLogger(__name__)


class GraphBuild(NamedTuple):
    """What :meth:`FactReasoner.build` made: the graph, seconds per stage, NLI pair counts."""

    built: BuiltGraph
    timings: dict[str, float]
    nli_counts: dict[str, int]


class FactReasoner:
    """Assess the factuality of responses with a factor graph over atoms and contexts.

    Parameters
    ----------
    config:
        Every setting (version, priors, engine, models…); defaults run FR3 with the native
        engine.
    nli, engine, atomizer, reviser, retriever, llm:
        Ready-made stages that override what ``config`` would build.
    """

    def __init__(
        self,
        config: PipelineConfig | None = None,
        *,
        nli: NLIBackend | None = None,
        engine: InferenceEngine | None = None,
        atomizer: AtomizerBackend | None = None,
        reviser: ReviserBackend | None = None,
        retriever: Retriever | None = None,
        llm: LLMBackend | None = None,
    ) -> None:
        self.config = config or PipelineConfig()
        self.stages = Stages(
            self.config,
            nli=nli,
            engine=engine,
            atomizer=atomizer,
            reviser=reviser,
            retriever=retriever,
            llm=llm,
        )

    @property
    def engine(self) -> InferenceEngine:
        return self.stages.engine

    def stage_stats(self) -> dict[str, float]:
        """Cumulative counters (calls, cache hits/misses, seconds…) of the stages built so far."""
        return self.stages.stats()

    def preflight(self, records: Sequence[InputRecord]) -> None:
        """Check once, before any of ``records`` is assessed, that the stages they need can be
        set up (:meth:`Stages.preflight <fact_reasoner.stages.Stages.preflight>`)."""
        from .runner import needs_model_nli

        self.stages.preflight(
            atomize=any(r.atoms is None for r in records),
            retrieve=any(r.contexts is None for r in records),
            judge=any(needs_model_nli(self.config, r) for r in records),
        )

    # -- the assessment ------------------------------------------------------------------

    def assess(
        self,
        record: InputRecord | dict,
        *,
        k: int | str | None = None,
        dataset_median_atoms: float | None = None,
        record_key: str | None = None,
    ) -> OutputRecord:
        """Assess one record and return its :class:`~fact_reasoner.schema.OutputRecord`.

        ``k`` (an integer, ``"median"`` or ``"half"``) overrides ``config.scores.k`` for R@K/F1@K;
        ``"median"`` uses ``dataset_median_atoms`` when given, else this record's own atom
        count (the median of a one-record dataset).

        A record that carries its atoms, contexts and relations needs no model:

        >>> from fact_reasoner import FactReasoner, PipelineConfig
        >>> record = {
        ...     "input": "Tell me about Marie Curie.",
        ...     "output": "Marie Curie was a physicist. She was born in Paris.",
        ...     "atoms": [
        ...         {"id": "a0", "text": "Marie Curie was a physicist."},
        ...         {"id": "a1", "text": "Marie Curie was born in Paris."},
        ...     ],
        ...     "contexts": [{"id": "c0", "text": "Marie Curie was a Polish physicist, born in Warsaw."}],
        ...     "relations": [
        ...         {"source": "c0", "target": "a0", "relation": "entailment", "probability": 0.9},
        ...         {"source": "c0", "target": "a1", "relation": "contradiction", "probability": 0.8},
        ...     ],
        ... }
        >>> assessor = FactReasoner(PipelineConfig(version=1, nli="precomputed", use_cache=False))
        >>> result = assessor.assess(record)
        >>> [(atom.id, atom.prediction.value, round(atom.probability, 3)) for atom in result.atoms]
        [('a0', 'S', 0.803), ('a1', 'NS', 0.273)]
        >>> result.factuality_score
        0.5
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        counters_before = self.stage_stats()
        timings: dict[str, float] = {}
        plan, nli = self._plan(record, timings)
        reasoning = judge_and_infer(
            plan,
            nli,
            self.engine,
            self.config.graph,
            max_failed_pairs=self.config.models.max_failed_pairs,
            timings=timings,
        )
        built, inference = reasoning.built, reasoning.inference
        nli_counts = self._nli_counts(record, plan, reasoning.judged)
        with timed(timings, "score"):
            output = self._output(record, built, inference, k, dataset_median_atoms, record_key)
        output.timings = timings | {"total": sum(timings.values())}
        counters_after = self.stage_stats()
        output.counters = (
            nli_counts
            | {
                "missing_pairs": built.missing_pairs,
                "failed_pairs": built.failed_pairs,
                "factors": built.graph.num_factors,
            }
            | {key: _tidy(value - counters_before.get(key, 0)) for key, value in counters_after.items()}
        )
        return output

    def build(self, record: InputRecord | dict) -> GraphBuild:
        """Run every stage up to the factor graph (no inference); also returns timings and NLI counts.

        Useful on its own to export the graph (e.g. as a UAI file) without running an engine.
        Judging and building are those of :meth:`assess` (:func:`~fact_reasoner.stages.judge_and_build`,
        the same failure policy).
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        timings: dict[str, float] = {}
        plan, nli = self._plan(record, timings)
        judged, built = judge_and_build(
            plan, nli, self.config.graph, max_failed_pairs=self.config.models.max_failed_pairs, timings=timings
        )
        return GraphBuild(built, timings, self._nli_counts(record, plan, judged))

    def _plan(self, record: InputRecord, timings: dict[str, float]) -> tuple[GraphPlan, NLIBackend]:
        """Atoms and contexts (atomizing, revising, retrieving what the record lacks), the graph's
        plan, and the NLI backend that judges its pairs."""
        if self.config.models.nli == "precomputed" and record.relations is None:
            # scoring it would count every pair as neutral: a record without its NLI is not assessed
            raise RecordFailed("--nli precomputed: the record has no `relations` (its NLI is missing)")
        atoms = self._atoms(record, timings)
        contexts, atoms = self._contexts(record, atoms, timings)
        if atoms and not contexts:
            _warn_once(
                "no_contexts",
                f"a record with {len(atoms)} atom(s) has no contexts: every atom stays at its prior "
                "(not supported); further ones are only counted (summary: records_without_contexts)",
            )
        plan = plan_graph(atoms, contexts, self.config.graph.version)
        # no pairs: nothing is judged, so no NLI model is built for it
        nli = self._nli_for(record, plan) if plan.pairs else PrecomputedNLI([], plan.texts)
        return plan, nli

    def _nli_counts(self, record: InputRecord, plan: GraphPlan, judged: JudgedPlan) -> dict[str, int]:
        counts = {
            "nli_pairs": len(plan.pairs),
            "nli_failed": judged.failed,
            "nli_call_failures": len(judged.call_failures),
        }
        if record.relations and self._uses_record_relations(record):
            for reason, n in ignored_relations(plan, record.relations).items():
                counts[f"ignored_relations_{reason}"] = n
                _warn_once(
                    reason,
                    f"{n} of the record's relations are not used by FR{plan.version} ({reason.replace('_', ' ')}); "
                    "further ones are only counted (counters.ignored_relations_*)",
                )
        return counts

    def _atoms(self, record: InputRecord, timings: dict[str, float]) -> list[Atom]:
        if record.atoms is not None:
            return list(record.atoms)
        if not record.output.strip():
            return []
        with timed(timings, "atomize"):
            atoms = self.stages.atomizer().atomize(record.output, question=record.input or None)
        if self.config.models.revise and atoms:
            with timed(timings, "revise"):
                atoms = self.stages.reviser().revise(atoms, record.output)
        return atoms

    def _contexts(
        self, record: InputRecord, atoms: list[Atom], timings: dict[str, float]
    ) -> tuple[list[Context], list[Atom]]:
        if record.contexts is not None or self.config.retrieval.service_type == "supplied":
            return list(record.contexts or []), atoms
        from .retrieval import retrieve_for_record

        c = self.config.retrieval
        query_builder = summariser = None
        if c.query_builder or c.summarise_contexts:
            from .retrieval.llm_tools import ContextSummariser, QueryBuilder

            query_builder = QueryBuilder(self.stages.llm()) if c.query_builder else None
            summariser = ContextSummariser(self.stages.llm()) if c.summarise_contexts else None
        with timed(timings, "retrieve"):
            contexts, per_atom = retrieve_for_record(
                atoms,
                record.input or None,
                self.stages.retriever(),
                c.top_k,
                include_question=c.retrieve_question,
                topic=record.topic,
                topic_filter=c.topic_filter,
                topic_in_query=c.topic_in_query,
                query_builder=query_builder,
                summariser=summariser,
            )
        atoms = [a.model_copy(update={"contexts": per_atom.get(a.id, [])}) for a in atoms]
        return contexts, atoms

    def _uses_record_relations(self, record: InputRecord) -> bool:
        kind = self.config.models.nli
        return kind == "precomputed" or (kind == "auto" and record.relations is not None)

    def _nli_for(self, record: InputRecord, plan: GraphPlan) -> NLIBackend:
        """The record's own relations (``precomputed``, or ``auto`` when it carries some), else
        the model backend."""
        if self._uses_record_relations(record):
            return PrecomputedNLI(record.relations or [], plan.texts)
        return self.stages.nli()

    def _output(
        self,
        record: InputRecord,
        built: BuiltGraph,
        inference: InferenceResult,
        k: int | str | None,
        dataset_median_atoms: float | None,
        record_key: str | None,
    ) -> OutputRecord:
        atom_ids = built.atom_variables
        probabilities = {a: float(inference.marginals[a]) for a in atom_ids}
        n = len(atom_ids)
        median = dataset_median_atoms if dataset_median_atoms is not None else float(n)
        k = resolve_k(self.config.scores.k if k is None else k, n, median)
        gold = {a.id: a.label for a in built.plan.atoms}
        scores = score_record(probabilities, k, gold if any(gold.values()) else None)

        evidence: dict[str, list[EvidenceLink]] = {a: [] for a in atom_ids}
        for rel in built.factor_relations:
            if rel.target in evidence:
                evidence[rel.target].append(
                    EvidenceLink(context=rel.source, relation=rel.relation, probability=rel.probability)
                )
        verdicts = [
            AtomVerdict(
                id=atom.id,
                text=atom.text,
                original=atom.original,
                label=atom.label,
                probability=probabilities[atom.id],
                prediction=predict_label(probabilities[atom.id]),
                evidence=sorted(evidence[atom.id], key=lambda e: -e.probability),
            )
            for atom in built.plan.atoms
        ]
        marginals = [Marginal(variable=v, probabilities=(1.0 - p, p)) for v, p in sorted(inference.marginals.items())]
        fields = scores.as_fields()
        extra: dict[str, Any] = {}
        if built.plan.atom_duplicates:
            extra["duplicate_atoms"] = built.plan.atom_duplicates
        if built.plan.context_duplicates:
            extra["duplicate_contexts"] = built.plan.context_duplicates
        if record.contexts is None and built.plan.contexts:
            # retrieved here: show the evidence itself (title, link, snippet, text, where from)
            extra["contexts"] = [c.model_dump(mode="json", exclude_none=True) for c in built.plan.contexts]
        links = [c.link for c in built.plan.contexts if c.link]
        return OutputRecord(
            record_key=record_key or record.record_key,
            input=record.input,
            output=record.output,
            topic=record.topic,
            version=self.config.graph.version,
            num_contexts=len(built.context_variables),
            marginals=marginals,
            predictions={v.id: v.prediction for v in verdicts},
            atoms=verdicts,
            references=links or None,
            engine=EngineDiagnostics(
                name=getattr(self.engine, "name", type(self.engine).__name__),
                algorithm=inference.algorithm,
                exact=inference.exact,
                converged=inference.converged,
                iterations=inference.iterations,
                seconds=inference.seconds,
                details=inference.details,
            ),
            settings=self.settings(),
            **fields,
            **extra,
        )

    def settings(self) -> dict[str, Any]:
        """The settings that change results (derived from the config); a resumed run must match."""
        return self.config.settings()


_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    """Log a warning the first time ``key`` comes up in this process."""
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def _tidy(value: float) -> float | int:
    """Counts stay integers in the output; seconds keep their fraction."""
    return int(value) if float(value).is_integer() else round(float(value), 6)


__all__ = ["FactReasoner", "GraphBuild", "StageUnavailable"]

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

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .config import PipelineConfig
from .errors import SetupError
from .graph import BuiltGraph, build_graph, plan_graph
from .inference import InferenceEngine, InferenceResult, make_engine
from .nli import NLIBackend, PrecomputedNLI
from .schema import (
    Atom,
    AtomVerdict,
    EngineDiagnostics,
    EvidenceLink,
    InputRecord,
    Marginal,
    OutputRecord,
    Relation,
    RelationType,
)
from .scores import predict_label, resolve_k, score_record


class StageUnavailable(SetupError):
    """A record needs a stage (atomizer, retriever, NLI model) that cannot be set up."""


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
        atomizer: Any | None = None,
        reviser: Any | None = None,
        retriever: Any | None = None,
        llm: Any | None = None,
    ) -> None:
        self.config = config or PipelineConfig()
        self._graph_options = self.config.graph_options()
        self._nli = nli
        self._engine = engine
        self._atomizer = atomizer
        self._reviser = reviser
        self._retriever = retriever
        self._llm = llm

    # -- stages, built on first use -------------------------------------------------------

    @property
    def engine(self) -> InferenceEngine:
        if self._engine is None:
            self._engine = make_engine(self.config.engine, **self.config.engine_options)
        return self._engine

    def llm(self) -> Any:
        if self._llm is None:
            from .llm import make_llm  # the language-model layer is optional

            self._llm = make_llm(self.config)
        return self._llm

    def model_nli(self) -> NLIBackend:
        """The NLI backend used for pairs that no precomputed relation covers."""
        if self._nli is None:
            if self.config.nli == "precomputed":
                raise StageUnavailable("--nli precomputed needs records that carry `relations`")
            name = "llm" if self.config.nli == "auto" else self.config.nli
            config = self.config.model_copy(update={"nli": name})
            try:
                from .nli.factory import make_nli
            except ImportError as error:  # pragma: no cover - depends on installed extras
                raise StageUnavailable(f"NLI backend {name!r} is not available: {error}") from error
            self._nli = make_nli(config, self.llm)
        return self._nli

    def atomizer(self) -> Any:
        if self._atomizer is None:
            from .atomizer import make_atomizer

            self._atomizer = make_atomizer(self.config, self.llm())
        return self._atomizer

    def reviser(self) -> Any:
        if self._reviser is None:
            from .reviser import make_reviser

            self._reviser = make_reviser(self.config, self.llm())
        return self._reviser

    def retriever(self) -> Any:
        if self._retriever is None:
            from .retrieval import make_retriever

            self._retriever = make_retriever(self.config)
        return self._retriever

    def stage_stats(self) -> dict[str, float]:
        """Cumulative counters (calls, cache hits/misses, seconds…) of stages that keep them."""
        counters: dict[str, float] = {}
        stages = (
            ("llm", self._llm),
            ("nli", self._nli),
            ("atomizer", self._atomizer),
            ("reviser", self._reviser),
            ("retrieval", self._retriever),
        )
        for name, stage in stages:
            stats = getattr(stage, "stats", None)
            if callable(stats):
                for key, value in stats().items():
                    if isinstance(value, (int, float)):
                        label = key if key.startswith(f"{name}_") else f"{name}_{key}"
                        counters[label] = value
        return counters

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

        ``k`` (an integer, ``"median"`` or ``"half"``) overrides ``config.k`` for R@K/F1@K;
        ``"median"`` uses ``dataset_median_atoms`` when given, else this record's own atom
        count (the median of a one-record dataset).
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        counters_before = self.stage_stats()
        built, timings, nli_counts = self.build(record)
        with _timed(timings, "infer"):
            inference = self.engine.infer(built.graph)
        with _timed(timings, "score"):
            output = self._output(record, built, inference, k, dataset_median_atoms, record_key)
        output.timings = timings | {"total": sum(timings.values())}
        counters_after = self.stage_stats()
        output.counters = nli_counts | {
            "missing_pairs": built.missing_pairs,
            "failed_pairs": built.failed_pairs,
            "factors": built.graph.num_factors,
        } | {key: _tidy(value - counters_before.get(key, 0)) for key, value in counters_after.items()}
        return output

    def build(self, record: InputRecord | dict) -> tuple[BuiltGraph, dict[str, float], dict[str, int]]:
        """Run every stage up to the factor graph (no inference); also returns timings and NLI counts.

        Useful on its own to export the graph (e.g. as a UAI file) without running an engine.
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        timings: dict[str, float] = {}
        atoms = self._atoms(record, timings)
        contexts, atoms = self._contexts(record, atoms, timings)
        plan = plan_graph(atoms, contexts, self.config.version)
        with _timed(timings, "nli"):
            relations, nli_counts = self._relations(record, plan, atoms, contexts)
        with _timed(timings, "build"):
            built = build_graph(plan, relations, self._graph_options)
        return built, timings, nli_counts

    def _atoms(self, record: InputRecord, timings: dict[str, float]) -> list[Atom]:
        if record.atoms is not None:
            return list(record.atoms)
        if not record.output.strip():
            return []
        with _timed(timings, "atomize"):
            atoms = self.atomizer().atomize(record.output, question=record.input or None)
        if self.config.revise and atoms:
            with _timed(timings, "revise"):
                atoms = self.reviser().revise(atoms, record.output)
        return atoms

    def _contexts(self, record: InputRecord, atoms: list[Atom], timings: dict[str, float]):
        if record.contexts is not None or self.config.service_type == "supplied":
            return list(record.contexts or []), atoms
        from .retrieval import retrieve_for_record

        c = self.config
        query_builder = summariser = None
        if c.query_builder or c.summarise_contexts:
            from .retrieval.llm_tools import ContextSummariser, QueryBuilder

            query_builder = QueryBuilder(self.llm()) if c.query_builder else None
            summariser = ContextSummariser(self.llm()) if c.summarise_contexts else None
        with _timed(timings, "retrieve"):
            contexts, per_atom = retrieve_for_record(
                atoms,
                record.input or None,
                self.retriever(),
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

    def _relations(self, record, plan, atoms, contexts) -> tuple[list[Relation], dict[str, int]]:
        texts = {a.id: a.text for a in atoms} | {c.id: c.text for c in contexts}
        pairs = list(plan.pairs)
        text_pairs = [(texts[p], texts[h]) for p, h in pairs]
        use_record = self.config.nli == "precomputed" or (
            self.config.nli == "auto" and record.relations is not None
        )
        backend: NLIBackend
        if use_record:
            backend = PrecomputedNLI(record.relations or [], texts)
        elif not pairs:
            return [], {"nli_pairs": 0}
        else:
            backend = self.model_nli()
        judgements = backend.judge(text_pairs)
        # model_construct: these come straight from a backend, validated there; 60k pairs of an
        # FR3 graph would otherwise spend more time in validation than in inference
        relations = [
            Relation.model_construct(
                source=premise,
                target=hypothesis,
                relation=RelationType(j.label),
                probability=j.probability,
                probabilities=j.probabilities or None,
                failed=j.failed,
                reason=j.reason,
            )
            for (premise, hypothesis), j in zip(pairs, judgements)
            if not j.is_unjudged  # left out: build_graph counts the pair as missing
        ]
        counts = {
            "nli_pairs": len(pairs),
            "nli_failed": sum(j.failed and not j.is_unjudged for j in judgements),
        }
        return relations, counts

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
        k = resolve_k(self.config.k if k is None else k, n, median)
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
        marginals = [
            Marginal(variable=v, probabilities=(1.0 - p, p))
            for v, p in sorted(inference.marginals.items())
        ]
        fields = scores.as_fields()
        extra: dict[str, Any] = {}
        if built.plan.atom_duplicates:
            extra["duplicate_atoms"] = built.plan.atom_duplicates
        if built.plan.context_duplicates:
            extra["duplicate_contexts"] = built.plan.context_duplicates
        links = [c.link for c in built.plan.contexts if c.link]
        return OutputRecord(
            record_key=record_key or record.record_key,
            input=record.input,
            output=record.output,
            topic=record.topic,
            version=self.config.version,
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
        """The settings that change results; a resumed run must use the same ones."""
        c = self.config
        return {
            "version": c.version,
            "use_priors": c.use_priors,
            "context_prior": c.context_prior,
            "atom_prior": c.atom_prior,
            "k": c.k,
            "engine": c.engine,
            "nli": c.nli,
            "nli_model": c.nli_model,
            "nli_prompt_version": c.nli_prompt_version,
        }


def _tidy(value: float) -> float | int:
    """Counts stay integers in the output; seconds keep their fraction."""
    return int(value) if float(value).is_integer() else round(float(value), 6)


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


__all__ = ["FactReasoner", "StageUnavailable"]

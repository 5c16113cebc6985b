"""The pipeline: atomize → revise → retrieve → NLI → graph → infer → score.

:class:`FactReasoner` is the Python entry point; the CLI is a thin layer over it::

    from fact_reasoner import FactReasoner, PipelineConfig
    assessor = FactReasoner(PipelineConfig(version=3))
    result = assessor.assess({"input": "...", "output": "...", "atoms": [...], "contexts": [...],
                              "relations": [...]})
    result.factuality_score, [a.probability for a in result.atoms]

Stages run only for what a record lacks: atoms missing → atomizer (+ reviser); contexts
missing → retriever; relations missing → the NLI backend. Each stage is created lazily from
:class:`~fact_reasoner.settings.config.PipelineConfig` (or passed in ready-made), so a record that
carries everything needs no language model at all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

from .atoms.atomizer import AtomizerBackend
from .atoms.checkworthy import CheckworthyVerdict
from .atoms.grounding import FRAGMENT_FIELD, UNGROUNDED_FIELD, CheckedAtoms, atom_marks
from .atoms.reviser import ReviserBackend
from .conformal import LoadedFilter, load_filter
from .errors import NoEvidence
from .graph.build import ignored_relations, plan_graph
from .graph.coherence import check_coherence_judged, coherence_counters, coherence_score, contradicting_pairs
from .graph.coherence_pairs import plan_atom_pairs
from .graph.factor_graph import BuiltGraph, GraphPlan
from .graph.pair_selection import (
    GATE_DEFAULT_THRESHOLDS,
    PairSelection,
    embedding_similarities,
    lexical_similarities,
    select_pairs,
)
from .inference import InferenceEngine, InferenceResult
from .llm.base import LLMBackend
from .nli import NLIBackend, PrecomputedNLI
from .nli.panel import has_judges, judge_alone, judge_names, judges_agree, pair_judges, panel_fields
from .retrieval.base import Retriever
from .schema import (
    COHERENCE_FIELD,
    CONTRADICTING_PAIRS_FIELD,
    Atom,
    AtomVerdict,
    Context,
    EngineDiagnostics,
    EvidenceLink,
    InputRecord,
    Marginal,
    OutputRecord,
    UnusedEvidence,
)
from .scores import assessment_row, factual_precision, is_supported, length_penalty, predict_label
from .screening.relations import unused_reason
from .settings.config import PipelineConfig
from .stages import (
    JudgedPlan,
    Stages,
    judge_and_build,
    judge_and_infer,
    require_evidence,
    screen_and_build,
    tidy_count,
    timed,
)
from .text.sentences import response_sentences

if TYPE_CHECKING:  # pragma: no cover
    from .embeddings import Embedder

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
    nli, engine, atomizer, reviser, retriever, llm, embedder:
        Ready-made stages that override what ``config`` would build (the embedder serves the
        similarity gate of ``--nli-mode fast``).

    With ``config.scores.conformal`` (``--conformal FILE``) the filter is read and checked
    against the settings here, before any record (:class:`~fact_reasoner.errors.ConformalError`
    when it was fitted on posteriors made otherwise), and every row gets it applied
    (:meth:`~fact_reasoner.conformal.ConformalFilter.row_fields`).
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
        embedder: "Embedder | None" = None,
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
            embedder=embedder,
        )
        self.conformal: LoadedFilter | None = None
        if self.config.scores.conformal is not None:
            self.conformal = load_filter(self.config.scores.conformal)
            self.conformal.filter.check(self.config.settings(), source=f"--conformal {self.conformal.path}")

    @property
    def engine(self) -> InferenceEngine:
        return self.stages.engine

    def stage_stats(self) -> dict[str, float]:
        """Cumulative counters (calls, cache hits/misses, seconds…) of the stages built so far."""
        return self.stages.stats()

    def preflight(self, records: Sequence[InputRecord]) -> None:
        """Check once, before any of ``records`` is assessed, that the stages they need can be
        set up (:meth:`Stages.preflight <fact_reasoner.stages.Stages.preflight>`)."""
        self.stages.preflight(
            atomize=any(r.atoms is None for r in records),
            retrieve=any(r.contexts is None for r in records),
            judge=not all(self.stages.uses_record_relations(r) for r in records),
            embed=self.config.graph.coherence and self.config.graph.coherence_min_similarity > -1,  # the pair gate
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
        ``"median"`` uses ``dataset_median_atoms`` when given, else the count of the atoms the
        record carries (the median of a one-record dataset), else — atoms made here —
        max(n // 2, 1), as the command does: one rule, :func:`~fact_reasoner.scores.choose_k`,
        whose rule and reason the row writes (``k_rule``, ``k_reason``).

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
        [('a0', 'S', 0.86), ('a1', 'NS', 0.23)]
        >>> result.factuality_score
        0.5
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        counters_before = self.stage_stats()
        timings: dict[str, float] = {}
        abstention = self._abstention(record, timings)
        selection, nli, checked = self._plan(record, timings, abstained=abstention is not None)
        reasoning = judge_and_infer(
            selection.plan,
            nli,
            self.engine,
            self.config.graph,
            max_failed_pairs=self.config.models.max_failed_pairs,
            timings=timings,
            deferred_reverse=selection.deferred_reverse,
        )
        built, inference = reasoning.built, reasoning.inference
        if self.config.graph.coherence:
            check_coherence_judged(built)
        nli_counts = self._nli_counts(record, built.plan, reasoning.judged) | _selection_counts(
            selection, reasoning.judged
        )
        checkworthy = self._checkworthy(record, built.plan.atoms, timings)
        with timed(timings, "score"):
            output = self._output(
                record, built, inference, k, dataset_median_atoms, record_key, checkworthy, reasoning.judged
            )
            if has_judges(reasoning.judged.relations):
                output.by_judge = self._by_judge(built, reasoning.judged, checkworthy)  # type: ignore[attr-defined]
        if checked.ungrounded:
            setattr(output, UNGROUNDED_FIELD, checked.listed())
        if checked.fragments:
            setattr(output, FRAGMENT_FIELD, checked.listed_fragments())
        if self.config.scores.abstention == "on":
            _mark_abstention(output, abstention)
        if selection.merged_contexts:
            output.merged_contexts = selection.merged_contexts  # type: ignore[attr-defined]
        if self.conformal is not None:
            _apply_conformal(output, self.conformal, atoms_made_here=record.atoms is None)
        output.timings = timings | {"total": sum(timings.values())}
        counters_after = self.stage_stats()
        output.counters = (
            nli_counts
            | {
                "missing_pairs": built.missing_pairs,
                "failed_pairs": built.failed_pairs,
                "factors": built.graph.num_factors,
            }
            | built.rule_counters()
            | (coherence_counters(built) if self.config.graph.coherence else {})
            | {key: tidy_count(value - counters_before.get(key, 0)) for key, value in counters_after.items()}
        )
        if checkworthy is not None:
            output.counters["uncheckable_atoms"] = sum(not v.checkworthy for v in checkworthy.values())
        output.counters.update(checked.counters())
        return output

    def _abstention(self, record: InputRecord, timings: dict[str, float]) -> str | None:
        """Why the response declines to answer (``--abstention on``), else None."""
        if self.config.scores.abstention != "on" or not record.output.strip():
            return None
        with timed(timings, "abstention"):
            return self.stages.abstention().abstention(record.output)

    def _checkworthy(
        self, record: InputRecord, atoms: Sequence[Atom], timings: dict[str, float]
    ) -> dict[str, CheckworthyVerdict] | None:
        """``{atom id: verdict}`` with ``--skip-uncheckable``, else None."""
        if not self.config.scores.skip_uncheckable:
            return None
        with timed(timings, "checkworthy"):
            verdicts = self.stages.checkworthy().classify([a.text for a in atoms], response=record.output or None)
        if len(verdicts) != len(atoms):  # a classifier that breaks the protocol must not shift verdicts
            raise RuntimeError(f"checkworthy classifier returned {len(verdicts)} verdicts for {len(atoms)} atoms")
        return {atom.id: verdict for atom, verdict in zip(atoms, verdicts)}

    def build(self, record: InputRecord | dict) -> GraphBuild:
        """Run every stage up to the factor graph (no inference); also returns timings and NLI counts.

        Useful on its own to export the graph (e.g. as a UAI file) without running an engine.
        Judging and building are those of :meth:`assess` (:func:`~fact_reasoner.stages.judge_and_build`,
        the same failure policy).
        """
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        timings: dict[str, float] = {}
        selection, nli, _ = self._plan(record, timings)
        judged, built = judge_and_build(
            selection.plan,
            nli,
            self.config.graph,
            max_failed_pairs=self.config.models.max_failed_pairs,
            timings=timings,
            deferred_reverse=selection.deferred_reverse,
        )
        return GraphBuild(
            built, timings, self._nli_counts(record, built.plan, judged) | _selection_counts(selection, judged)
        )

    def _plan(
        self, record: InputRecord, timings: dict[str, float], *, abstained: bool = False
    ) -> tuple[PairSelection, NLIBackend, CheckedAtoms]:
        """Atoms and contexts (atomizing, revising, retrieving what the record lacks), the graph's
        plan with the pairs ``--nli-mode`` judges, the NLI backend that judges them, and the
        atoms with their checks (:meth:`Stages.atoms <fact_reasoner.stages.Stages.atoms>`). An
        abstention is not atomized (it states nothing to check); atoms it carries are assessed
        as usual."""
        nothing_to_judge = abstained and record.atoms is None
        if not nothing_to_judge:
            self.stages.require_relations(record)
            require_evidence(record, self.config.retrieval.service_type)  # before any model runs
        checked = CheckedAtoms([], checked=False) if nothing_to_judge else self.stages.atoms(record, timings)
        atoms = checked.judged
        contexts, atoms = self._contexts(record, atoms, timings) if atoms or not abstained else ([], [])
        if atoms and not contexts:
            raise NoEvidence(
                f"no evidence: the retriever ({self.config.retrieval.service_type}) found no context for any of the "
                f"record's {len(atoms)} atom(s); nothing was checked, so nothing is scored"
            )
        # the same-subject rule reads an atom that opens without a name by its sentence (atoms
        # made here: the atomizer's split) or by the record's topic
        sentences = response_sentences(record.output) if checked.checked and atoms else ()
        plan = plan_graph(atoms, contexts, self.config.graph.version, topic=record.topic, sentences=sentences)
        selection = self._select_pairs(plan, atoms, timings)
        plan = selection.plan
        if self.config.graph.coherence:
            gate = self.config.graph.coherence_min_similarity
            with timed(timings, "coherence_pairs"):
                rule = self.config.graph.coherence_pairs
                plan = plan_atom_pairs(plan, self.stages.embedder() if gate > -1 else None, gate, rule)
            selection = replace(selection, plan=plan)
        # no pairs: nothing is judged, so no NLI model is built for it
        judged = plan.pairs or plan.atom_pairs
        nli = self.stages.nli_for(record, plan.texts) if judged else PrecomputedNLI([], plan.texts)
        return selection, nli, checked

    def _select_pairs(self, plan: GraphPlan, atoms: list[Atom], timings: dict[str, float]) -> PairSelection:
        """``--nli-mode``: the plan as it is (all), or only the pairs that can matter (fast)."""
        models = self.config.models
        if models.nli_mode != "fast" or plan.version == 1 or not plan.pairs:
            return PairSelection(plan)
        with timed(timings, "select_pairs"):
            atom_texts = [a.text for a in plan.atoms]
            context_texts = [c.text for c in plan.contexts]
            if models.nli_gate == "embedding":
                embedder = self.stages.embedder()
                similarities = embedding_similarities(embedder.encode(atom_texts), embedder.encode(context_texts))
            else:
                similarities = lexical_similarities(atom_texts, context_texts)
            threshold = models.nli_gate_threshold
            return select_pairs(
                plan,
                atoms,
                similarities,
                mode="fast",
                threshold=GATE_DEFAULT_THRESHOLDS[models.nli_gate] if threshold is None else threshold,
                neighbour_window=models.nli_neighbour_window,
            )

    def _nli_counts(self, record: InputRecord, plan: GraphPlan, judged: JudgedPlan) -> dict[str, int]:
        counts = {
            "nli_pairs": len(plan.pairs),
            "nli_failed": judged.failed,
            "nli_call_failures": len(judged.call_failures),
        }
        by_panel = [j.judges for j in judged.judgements if j.judges is not None and not j.failed]
        if by_panel:  # a panel: the pairs on which its judges gave the same label, and the others
            agreed = sum(judges_agree(judges) for judges in by_panel)
            counts |= {"nli_judges_agreed": agreed, "nli_judges_disagreed": len(by_panel) - agreed}
        if record.relations and self.stages.uses_record_relations(record):
            atom_pairs = set(plan.atom_pairs)  # used with coherence, so not ignored
            given = [r for r in record.relations if (r.source, r.target) not in atom_pairs]
            for reason, n in ignored_relations(plan, given).items():
                counts[f"ignored_relations_{reason}"] = n
                about = record.topic or " ".join(record.input.split()[:8]) or "(no input)"
                _warn_once(
                    reason,
                    f"the record {about!r}: {n} of its {len(given)} relation{'' if len(given) == 1 else 's'} "
                    f"{'is' if n == 1 else 'are'} not used by FR{plan.version} ({reason.replace('_', ' ')}); "
                    "such relations of other records are only counted (counters.ignored_relations_*), "
                    "and a dataset run lists the records at its end",
                )
        return counts

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

    def _output(
        self,
        record: InputRecord,
        built: BuiltGraph,
        inference: InferenceResult,
        k: int | str | None,
        dataset_median_atoms: float | None,
        record_key: str | None,
        checkworthy: dict[str, CheckworthyVerdict] | None = None,
        judged: JudgedPlan | None = None,
    ) -> OutputRecord:
        atom_ids = built.atom_variables
        panel = pair_judges(judged.relations) if judged is not None else {}
        probabilities = {a: float(inference.marginals[a]) for a in atom_ids}
        # --skip-uncheckable: the scores (precision, R@K, F1@K, K, gold agreement) count the
        # checkworthy atoms only; every atom keeps its verdict below
        scored = {a: p for a, p in probabilities.items() if checkworthy is None or checkworthy[a].checkworthy}

        evidence: dict[str, list[EvidenceLink]] = {a: [] for a in atom_ids}
        notes = built.relation_notes
        for rel in built.factor_relations:
            if rel.target in evidence and rel.source not in evidence:  # atom-atom: contradicting_pairs
                note = notes.get((rel.source, rel.target, rel.judge))
                evidence[rel.target].append(
                    EvidenceLink(
                        context=rel.source,
                        relation=rel.relation,
                        probability=rel.probability,
                        **panel_fields(panel, rel.source, rel.target, rel.judge),
                        **({} if note is None else _note_fields(note)),
                    )
                )
        unused: dict[str, list[UnusedEvidence]] = {a: [] for a in atom_ids}
        for left_out in built.unused_relations:
            if left_out.target in unused:
                unused[left_out.target].append(
                    UnusedEvidence(
                        context=left_out.source,
                        relation=left_out.relation,
                        probability=left_out.probability,
                        reason=unused_reason(left_out.reason, left_out.rule),
                        **panel_fields(panel, left_out.source, left_out.target, left_out.judge),
                        **({"sentence": left_out.sentence} if left_out.sentence else {}),
                    )
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
                unused_evidence=sorted(unused[atom.id], key=lambda e: -e.probability) or None,
                no_evidence=not evidence[atom.id] or None,
                sentence=atom.sentence,
                **_checkworthy_fields(checkworthy, atom.id),
                **atom_marks(atom),
            )
            for atom in built.plan.atoms
        ]
        marginals = [Marginal(variable=v, probabilities=(1.0 - p, p)) for v, p in sorted(inference.marginals.items())]
        extra: dict[str, Any] = {}
        if built.plan.atom_duplicates:
            extra["duplicate_atoms"] = built.plan.atom_duplicates
        if built.plan.context_duplicates:
            extra["duplicate_contexts"] = built.plan.context_duplicates
        if record.contexts is None and built.plan.contexts:
            # retrieved here: show the evidence itself (title, link, snippet, text, where from)
            extra["contexts"] = [c.model_dump(mode="json", exclude_none=True) for c in built.plan.contexts]
        if self.config.graph.coherence:
            pairs = contradicting_pairs(built, probabilities)
            extra[COHERENCE_FIELD] = coherence_score(pair.probability for pair in pairs)
            extra[CONTRADICTING_PAIRS_FIELD] = [pair.model_dump(mode="json") for pair in pairs]
        links = [c.link for c in built.plan.contexts if c.link]
        return assessment_row(
            record,
            verdicts,
            scored,
            self.config.scores,
            k=k,
            dataset_median_atoms=dataset_median_atoms,
            record_key=record_key,
            version=self.config.graph.version,
            num_contexts=len(built.context_variables),
            marginals=marginals,
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
            **extra,
        )

    def _by_judge(
        self, built: BuiltGraph, judged: JudgedPlan, checkworthy: dict[str, CheckworthyVerdict] | None
    ) -> dict[str, dict[str, Any]]:
        """Each panel judge alone through the same graph and engine: its factual precision and
        every atom's P(true) in the row's atom order (what the summary sets beside the panel's)."""
        out: dict[str, dict[str, Any]] = {}
        for name in judge_names(judged.relations):
            alone = screen_and_build(built.plan, judge_alone(judged.relations, name), self.config.graph)
            marginals = self.engine.infer(alone.graph).marginals
            probabilities = [float(marginals[a.id]) for a in built.plan.atoms]
            scored = [
                p
                for a, p in zip(built.plan.atoms, probabilities)
                if checkworthy is None or checkworthy[a.id].checkworthy
            ]
            precision = factual_precision(sum(is_supported(p) for p in scored), len(scored)) if scored else None
            gamma = self.config.scores.gamma
            if precision is not None and gamma > 0:  # penalised as the row's own score is (--gamma)
                precision *= length_penalty(len(scored), gamma)
            out[name] = {"factuality_score": precision, "probabilities": [round(p, 6) for p in probabilities]}
        return out

    def settings(self) -> dict[str, Any]:
        """The settings that change results (derived from the config); a resumed run must match.
        With ``--conformal FILE`` the file's SHA-256 is written beside its name
        (``scores.conformal_sha256``): a filter fitted again into the same file is another filter,
        whose rows are not mixed with these."""
        settings = self.config.settings()
        if self.conformal is not None:
            settings.setdefault("scores", {})["conformal_sha256"] = self.conformal.sha256
        return settings


def _note_fields(note: Any) -> dict[str, Any]:
    """An evidence link's fields from the relation screen's note: the deciding sentence, and for
    a turned entailment the judge's own label and what the sentence says against the claim."""
    fields: dict[str, Any] = {}
    if note.sentence:
        fields["sentence"] = note.sentence
    if note.judged is not None:
        fields["judged"] = note.judged
    if note.reason:
        fields["screen"] = note.reason
    return fields


def _checkworthy_fields(checkworthy: dict[str, CheckworthyVerdict] | None, atom_id: str) -> dict[str, Any]:
    """An atom's ``checkworthy`` and ``uncheckable_reason`` fields (none without a classifier)."""
    if checkworthy is None:
        return {}
    verdict = checkworthy[atom_id]
    return {
        "checkworthy": verdict.checkworthy,
        **({} if verdict.checkworthy else {"uncheckable_reason": verdict.reason}),
    }


def _apply_conformal(output: OutputRecord, loaded: LoadedFilter, *, atoms_made_here: bool) -> None:
    """``--conformal``: each atom's ``kept`` and the row's ``conformal`` field (the kept claims,
    the retention, the guarantee in words; :meth:`ConformalFilter.row_fields
    <fact_reasoner.conformal.ConformalFilter.row_fields>`)."""
    flags, field = loaded.filter.row_fields(
        [(atom.id, atom.text, atom.probability) for atom in output.atoms],
        file=loaded.path,
        sha256=loaded.sha256,
        atoms_made_here=atoms_made_here,
    )
    for atom, keep in zip(output.atoms, flags):
        atom.kept = keep  # type: ignore[attr-defined]
    output.conformal = field  # type: ignore[attr-defined]


def _mark_abstention(output: OutputRecord, reason: str | None) -> None:
    """``abstained`` on every row (``--abstention on``); an abstention gets no precision, R@K or
    F1@K — null, never 0 — and says why."""
    output.abstained = reason is not None  # type: ignore[attr-defined]
    if reason is not None:
        output.abstention_reason = reason  # type: ignore[attr-defined]
        output.factuality_score = output.recall_k = output.f1_k = None
        for name in ("unpenalized_factuality_score", "length_penalty"):
            if hasattr(output, name):
                setattr(output, name, None)


_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    """Log a warning the first time ``key`` comes up in this process."""
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def _selection_counts(selection: PairSelection, judged: JudgedPlan) -> dict[str, int]:
    """``--nli-mode fast``'s counters: pairs kept and pruned by reason (nothing for ``all``)."""
    if not selection.counts:
        return {}
    counts = dict(selection.counts)
    if selection.plan.version == 3:
        counts["nli_pruned_reverse"] = judged.reverse_skipped
    return counts


__all__ = [
    "FactReasoner",
    "GraphBuild",
]

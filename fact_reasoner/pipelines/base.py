"""What every baseline pipeline shares: the assessor protocol, evidence, the two support judges
and the output row.

A pipeline is an **assessor**: anything with the :class:`Assessor` protocol (``config``,
``preflight(records)``, ``assess(record, …) -> OutputRecord``, ``settings()``,
``stage_stats()``), so the runner (:func:`fact_reasoner.runner.run_dataset`), the command line
and the experiment runner treat FactReasoner and the baselines alike.

:class:`BaselinePipeline` is the skeleton of the three baselines: the claims to check
(:meth:`~BaselinePipeline.claims`, the record's atoms by default), one
:class:`AtomJudgement` per claim (:meth:`~BaselinePipeline.judge_atom`, the pipeline's own
part), then the row. A claim's judgement is

- ``supported`` / ``unsupported`` with a probability: 1 or 0 for the LLM judge (the papers
  read a label, not a probability), max P(entailment) over the claim's passages for the NLI
  judge (:func:`nli_support`: supported iff that maximum > 0.5, by
  :func:`fact_reasoner.scores.is_supported`);
- **failed** when no judgement could be read: the LLM's answer stayed unreadable after
  :data:`UNPARSEABLE_RETRIES` more tries, or no NLI verdict exists for any of its passages.
  A failed claim is neither S nor NS: it is left out of the scores (precision = S / judged
  claims), listed under ``failed_atoms`` with its reason and counted (``counters.failed_atoms``);
  a record whose claims all failed fails (:class:`~fact_reasoner.errors.RecordFailed`).

A model that cannot be asked at all (server down, errors after the backend's retries) fails
the record; a claim without any passage is NS without asking (``counters.atoms_without_evidence``),
as FactReasoner leaves such an atom at its prior.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from ..atoms.grounding import FRAGMENT_FIELD, UNGROUNDED_FIELD, atom_marks
from ..errors import RecordFailed
from ..graph.build import deduplicate_by_text
from ..llm.base import ChatRequest, LLMBackend, LLMError
from ..nli import NLIBackend, NLIJudgement
from ..schema import (
    Atom,
    AtomVerdict,
    Context,
    EngineDiagnostics,
    InputRecord,
    OutputRecord,
    RelationType,
)
from ..scores import assessment_row, is_supported, predict_label
from ..stages import Stages, require_evidence, tidy_count, timed

if TYPE_CHECKING:  # pragma: no cover
    from ..retrieval.base import Retriever
    from ..settings.config import PipelineConfig

logger = logging.getLogger(__name__)

#: the ``scores`` settings a baseline uses: K of R@K / F1@K and FActScore's length penalty γ
BASELINE_SCORE_SETTINGS = ("k", "gamma")
#: the settings groups a baseline does not use: it builds no graph and runs no inference engine
BASELINE_UNUSED_GROUPS = ("graph", "engine")

__all__ = [
    "RETRY_TEMPERATURE",
    "UNPARSEABLE_RETRIES",
    "Asked",
    "Assessor",
    "AtomJudgement",
    "BaselinePipeline",
    "EvidenceSource",
    "ask",
    "entailment_probability",
    "format_passages",
    "nli_support",
]

#: a reply that cannot be read is asked again this many times before the claim fails
UNPARSEABLE_RETRIES = 1
#: the retry samples (another seed, some temperature): at temperature 0 a local model would
#: repeat the same unreadable reply
RETRY_TEMPERATURE = 0.7

T = TypeVar("T")


@runtime_checkable
class Assessor(Protocol):
    """What the runner and the command line need from a pipeline."""

    config: PipelineConfig

    def preflight(self, records: Sequence[InputRecord]) -> None: ...

    def assess(
        self,
        record: InputRecord | dict,
        *,
        k: int | str | None = None,
        dataset_median_atoms: float | None = None,
        record_key: str | None = None,
    ) -> OutputRecord: ...

    def settings(self) -> dict[str, Any]: ...

    def stage_stats(self) -> dict[str, float]: ...


@dataclass(frozen=True)
class AtomJudgement:
    """The verdict of a baseline on one claim, and why.

    ``supported`` is None when the judgement failed (``failure`` says why); ``probability`` is
    P(supported) as the judge gives it (1/0 for an LLM label, max P(entailment) for the NLI
    judge); ``evidence`` the ids of the passages the judge saw; ``raw`` the judge's own words (the
    LLM's last reply, or the NLI probabilities per passage); ``llm_calls`` the requests sent to
    the LLM for this claim (queries, judgements and retries; a cached reply counts as a call),
    ``nli_pairs`` the (passage, claim) pairs given to the NLI judge; ``queries`` the search
    queries used.
    """

    atom: Atom
    supported: bool | None
    probability: float | None
    evidence: tuple[str, ...] = ()
    raw: str | None = None
    llm_calls: int = 0
    nli_pairs: int = 0
    queries: tuple[str, ...] = ()
    failure: str | None = None

    def __post_init__(self) -> None:
        # a verdict without its probability would be scored as some number nobody computed
        if self.supported is not None and self.probability is None:
            raise ValueError(f"atom {self.atom.id}: a verdict ({self.supported}) without its probability")

    @property
    def failed(self) -> bool:
        return self.supported is None

    def details(self) -> dict[str, Any]:
        """The fields added to the atom's row (:class:`~fact_reasoner.schema.AtomVerdict` extras)."""
        out: dict[str, Any] = {
            "judgement": "failed" if self.failed else ("supported" if self.supported else "unsupported"),
            "evidence_ids": list(self.evidence),
            "raw_judgement": self.raw,
            "model_calls": self.llm_calls + self.nli_pairs,
            "llm_calls": self.llm_calls,
            "nli_pairs": self.nli_pairs,
        }
        if self.queries:
            out["queries"] = list(self.queries)
        if self.failure:
            out["failure"] = self.failure
        return out


@dataclass(frozen=True)
class Asked(Generic[T]):
    """What :func:`ask` got: the parsed value (None: unreadable after every try), the last reply
    and the number of requests sent."""

    value: T | None
    raw: str
    calls: int


def ask(
    llm: LLMBackend,
    request: ChatRequest,
    parse: Callable[[str], T | None],
    *,
    retries: int = UNPARSEABLE_RETRIES,
) -> Asked[T]:
    """Send ``request`` and parse the reply; an unreadable reply (``parse`` gives None) is asked
    again up to ``retries`` times (seed + attempt, temperature :data:`RETRY_TEMPERATURE`).

    An :class:`~fact_reasoner.llm.base.LLMError` (the model could not be asked) propagates."""
    raw = ""
    for attempt in range(retries + 1):
        sent = request if attempt == 0 else replace(request, seed=request.seed + attempt, temperature=RETRY_TEMPERATURE)
        raw = llm.chat(sent).text
        value = parse(raw)
        if value is not None:
            return Asked(value, raw, attempt + 1)
        logger.warning(
            "unreadable reply to %s (try %d of %d): %r", request.prompt_version, attempt + 1, retries + 1, raw[:200]
        )
    return Asked(None, raw, retries + 1)


def format_passages(passages: Sequence[Context]) -> str:
    """Passages as the prompts show them: ``Title: …`` then the text, one blank line between."""
    blocks = []
    for passage in passages:
        title = f"Title: {passage.title}\n" if passage.title else ""
        blocks.append(f"{title}Text: {passage.text.strip()}")
    return "\n\n".join(blocks)


# -- the NLI judge ---------------------------------------------------------------------------


def entailment_probability(judgement: NLIJudgement) -> float:
    """P(entailment) of one NLI verdict: its three-way probability when given, else the
    predicted label's probability p when that label is entailment and (1 − p)/2 otherwise."""
    if judgement.probabilities:
        return float(judgement.probabilities.get(RelationType.ENTAILMENT.value, 0.0))
    if judgement.label == RelationType.ENTAILMENT:
        return float(judgement.probability)
    return (1.0 - float(judgement.probability)) / 2.0


def nli_support(nli: NLIBackend, atom: Atom, passages: Sequence[Context], queries: Sequence[str] = ()) -> AtomJudgement:
    """The NLI judge: P = max_j P(entailment | passage_j ⇒ claim); supported iff P > 0.5
    (:func:`~fact_reasoner.scores.is_supported`). Failed verdicts and pairs without a verdict
    are left out of the maximum; with none left the claim fails. A pair the model could not be
    asked fails the record."""
    judgements = nli.judge([(passage.text, atom.text) for passage in passages])
    unasked = [j for j in judgements if j.failed and j.transport]
    if unasked:
        raise RecordFailed(
            f"NLI: {len(unasked)} of {len(passages)} pair(s) of atom {atom.id!r} could not be judged: {unasked[0].reason}",
            unreachable=all(j.unreachable for j in unasked),
        )
    valid = [(passage, j) for passage, j in zip(passages, judgements) if not j.failed]
    evidence = tuple(p.id for p in passages)
    per_passage = "; ".join(f"{p.id}: {entailment_probability(j):.3f}" for p, j in valid)
    if not valid:
        reasons = sorted({j.reason or "no verdict" for j in judgements})
        return AtomJudgement(
            atom, None, None, evidence, None, nli_pairs=len(passages), queries=tuple(queries),
            failure=f"no NLI verdict for any of its {len(passages)} passage(s) ({'; '.join(reasons)})",
        )  # fmt: skip
    best_passage, best = max(valid, key=lambda pair: entailment_probability(pair[1]))
    p = entailment_probability(best)
    raw = f"max P(entailment) = {p:.3f} ({best_passage.id}); per passage: {per_passage}"
    return AtomJudgement(atom, is_supported(p), p, evidence, raw, nli_pairs=len(passages), queries=tuple(queries))


# -- evidence ---------------------------------------------------------------------------------


class EvidenceSource:
    """The passages of one record's claims.

    - A record that carries ``contexts``: a claim's own context list (``atom.contexts``, the
      passages retrieved for it) when it has one; otherwise a search over the record's contexts
      (BM25, :class:`~fact_reasoner.retrieval.retrievers.SuppliedRetriever`) with the query.
    - A record without contexts: the configured retriever (``--service-type``, through the
      retrieval cache), each passage named ``<prefix>_<rank>``; ``--service-type supplied``
      gives no passages.
    """

    def __init__(self, record: InputRecord, config: PipelineConfig, retriever: Callable[[], Retriever]) -> None:
        self.record = record
        self.config = config
        self._retriever = retriever
        self._by_id = {c.id: c for c in record.contexts or []}
        self._supplied: Any = None
        #: passages retrieved here (not the record's own), by id
        self.retrieved: dict[str, Context] = {}

    def listed(self, atom: Atom) -> list[Context] | None:
        """The claim's own contexts, when the record lists some for it."""
        if self.record.contexts is not None and atom.contexts:
            return [self._by_id[c] for c in atom.contexts]
        return None

    def search(self, query: str, k: int, prefix: str) -> list[Context]:
        """The ``k`` best passages for ``query`` (ids ``<prefix>_<rank>`` when retrieved here)."""
        from ..retrieval.records import topic_query

        retrieval = self.config.retrieval
        if retrieval.topic_in_query:
            query = topic_query(query, self.record.topic)
        if self.record.contexts is not None:
            if not self.record.contexts:
                return []
            if self._supplied is None:
                from ..retrieval.retrievers import SuppliedRetriever

                self._supplied = SuppliedRetriever(self.record.contexts)
            return [self._by_id[found.id] for found in self._supplied.retrieve(query, k)]
        if retrieval.service_type == "supplied":
            return []
        topic = self.record.topic if retrieval.topic_filter else None
        found = self._retriever().retrieve(query, k, topic=topic)
        contexts = [passage.to_context(f"{prefix}_{rank}") for rank, passage in enumerate(found)]
        self.retrieved.update({c.id: c for c in contexts})
        return contexts


# -- the skeleton ----------------------------------------------------------------------------


@dataclass
class _RecordCounts:
    """What one record cost, beside the stages' own counters."""

    counts: dict[str, int] = field(default_factory=dict)
    #: the atoms set aside as ungrounded, and the clauses without a claim, as the output lists them
    ungrounded: list[dict[str, str]] = field(default_factory=list)
    fragments: list[dict[str, str]] = field(default_factory=list)

    def add(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount


class BaselinePipeline:
    """A baseline: claims → one :class:`AtomJudgement` each → the output row.

    Parameters
    ----------
    config:
        Every setting; ``config.pipeline`` holds the judge and the pipeline's own options.
    llm, nli, retriever, atomizer, reviser:
        Ready-made stages that replace what ``config`` would build.
    """

    #: the ``--pipeline`` name
    name: ClassVar[str] = ""
    #: what the record being assessed cost so far (``claim_llm_calls`` counts into
    #: ``pipeline_llm_calls``); reset by :meth:`assess`
    counts: _RecordCounts

    def __init__(
        self,
        config: PipelineConfig | None = None,
        *,
        llm: LLMBackend | None = None,
        nli: NLIBackend | None = None,
        retriever: Retriever | None = None,
        **stages: Any,
    ) -> None:
        from ..settings.config import PipelineConfig

        self.config = config or PipelineConfig(pipeline=self.name)
        if self.config.pipeline.name != self.name:
            self.config = self.config.with_options(pipeline=self.name)
        self.stages = Stages(self.config, llm=llm, nli=nli, retriever=retriever, **stages)

    @property
    def judge(self) -> str:
        """``llm`` or ``nli`` (``--pipeline-judge``)."""
        return self.config.pipeline.judge

    def settings(self) -> dict[str, Any]:
        """The settings that change this pipeline's results (derived from the config); a resumed
        run must match. A baseline builds no graph and runs no engine, so the ``graph`` and
        ``engine`` groups are not among them, and of the ``scores`` group only K and γ
        (``--skip-uncheckable`` and ``--abstention`` are refused for a baseline when the
        configuration is validated)."""
        settings: dict[str, Any] = {}
        for group, values in self.config.settings().items():
            if group == "scores":
                values = {key: value for key, value in values.items() if key in BASELINE_SCORE_SETTINGS}
            if group not in BASELINE_UNUSED_GROUPS and values:
                settings[group] = values
        return settings

    def stage_stats(self) -> dict[str, float]:
        return self.stages.stats()

    def uses_llm(self, record: InputRecord) -> bool:
        """Whether the record's assessment asks the LLM (the judge, queries, claim extraction)."""
        return self.judge == "llm"

    def preflight(self, records: Sequence[InputRecord]) -> None:
        """Check once, before any record, that the stages the records need can be set up."""
        retrieve = any(r.contexts is None for r in records) and self.config.retrieval.service_type != "supplied"
        self.stages.preflight(
            retrieve=retrieve,
            judge=self.judge == "nli" and not all(self.stages.uses_record_relations(r) for r in records),
            llm=any(self.uses_llm(r) for r in records),
        )

    # -- per record ---------------------------------------------------------------------------

    def claims(self, record: InputRecord, timings: dict[str, float]) -> list[Atom]:
        """The claims to check: the record's atoms, else the atomizer's (and reviser's), less
        those set aside as ungrounded (listed and counted: :meth:`Stages.atoms
        <fact_reasoner.stages.Stages.atoms>`)."""
        checked = self.stages.atoms(record, timings)
        for key, amount in checked.counters().items():
            self.counts.add(key, amount)
        self.counts.ungrounded = checked.listed()
        self.counts.fragments = checked.listed_fragments()
        return deduplicate_by_text(checked.judged).kept

    def row_fields(self, record: InputRecord) -> dict[str, Any]:
        """Fields a pipeline adds to its rows (VeriScore: where its claims came from)."""
        return {}

    def judge_atom(self, atom: Atom, record: InputRecord, evidence: EvidenceSource) -> AtomJudgement:
        """The pipeline's own part: evidence and a verdict for one claim."""
        raise NotImplementedError

    def nli_for(self, record: InputRecord) -> NLIBackend:
        """The NLI judge: the record's own relations (``--nli precomputed``, or ``auto`` when it
        carries some), else the model backend behind the pair cache."""
        texts = {a.id: a.text for a in record.atoms or []} | {c.id: c.text for c in record.contexts or []}
        return self.stages.nli_for(record, texts)

    def assess(
        self,
        record: InputRecord | dict,
        *,
        k: int | str | None = None,
        dataset_median_atoms: float | None = None,
        record_key: str | None = None,
    ) -> OutputRecord:
        """Assess one record (the module docstring says how); raises
        :class:`~fact_reasoner.errors.RecordFailed` when the model cannot be asked or every claim's
        judgement failed."""
        if not isinstance(record, InputRecord):
            record = InputRecord.model_validate(record)
        if self.judge == "nli":
            self.stages.require_relations(record)
        require_evidence(record, self.config.retrieval.service_type)  # before any model runs
        before = self.stage_stats()
        timings: dict[str, float] = {}
        counts = self.counts = _RecordCounts()
        start = time.perf_counter()
        try:
            atoms = self.claims(record, timings)
            evidence = EvidenceSource(record, self.config, self.stages.retriever)
            judgements = []
            with timed(timings, "judge"):
                for atom in atoms:
                    judgements.append(self.judge_atom(atom, record, evidence))
        except LLMError as error:
            raise RecordFailed(
                f"{self.name}: the language model could not be asked: {error}", unreachable=error.unreachable
            ) from error
        failed = [j for j in judgements if j.failed]
        for j in failed:
            logger.warning("%s: atom %s could not be judged: %s", self.name, j.atom.id, j.failure)
        if judgements and len(failed) == len(judgements):
            raise RecordFailed(f"{self.name}: every one of the {len(judgements)} claim(s) failed: {failed[0].failure}")
        counts.add("failed_atoms", len(failed))
        counts.add("atoms_without_evidence", sum(1 for j in judgements if not j.failed and not j.evidence))
        counts.add("pipeline_llm_calls", sum(j.llm_calls for j in judgements) + counts.counts.get("claim_llm_calls", 0))
        counts.add("pipeline_nli_pairs", sum(j.nli_pairs for j in judgements))
        counts.add("claims", len(judgements))
        output = self._output(record, judgements, evidence, k, dataset_median_atoms, record_key)
        timings["total"] = time.perf_counter() - start
        output.timings = timings
        after = self.stage_stats()
        output.counters = counts.counts | {
            key: tidy_count(value - before.get(key, 0)) for key, value in after.items() if value != before.get(key, 0)
        }
        return output

    def _output(
        self,
        record: InputRecord,
        judgements: list[AtomJudgement],
        evidence: EvidenceSource,
        k: int | str | None,
        dataset_median_atoms: float | None,
        record_key: str | None,
    ) -> OutputRecord:
        scored = [j for j in judgements if not j.failed]
        probabilities = {j.atom.id: float(j.probability) for j in scored if j.probability is not None}
        verdicts = [
            AtomVerdict(
                id=j.atom.id,
                text=j.atom.text,
                original=j.atom.original,
                label=j.atom.label,
                probability=probabilities[j.atom.id],
                prediction=predict_label(probabilities[j.atom.id]),
                sentence=j.atom.sentence,
                **j.details(),
                **atom_marks(j.atom),
            )
            for j in scored
        ]
        used = sorted({c for j in judgements for c in j.evidence})
        extra: dict[str, Any] = {"pipeline": self.name, "judge": self.judge} | self.row_fields(record)
        if any(j.failed for j in judgements):
            extra["failed_atoms"] = [
                {"id": j.atom.id, "text": j.atom.text, "label": j.atom.label, **j.details()}
                for j in judgements
                if j.failed
            ]
        if self.counts.ungrounded:
            extra[UNGROUNDED_FIELD] = self.counts.ungrounded
        if self.counts.fragments:
            extra[FRAGMENT_FIELD] = self.counts.fragments
        if evidence.retrieved:
            extra["contexts"] = [c.model_dump(mode="json", exclude_none=True) for c in evidence.retrieved.values()]
        return assessment_row(
            record,
            verdicts,
            probabilities,
            self.config.scores,
            k=k,
            dataset_median_atoms=dataset_median_atoms,
            record_key=record_key,
            num_contexts=len(used),  # no graph: version stays null
            engine=EngineDiagnostics(name=self.name, algorithm=f"{self.name}-{self.judge}", exact=True, converged=True),
            settings=self.settings(),
            **extra,
        )

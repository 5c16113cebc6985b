"""Every setting of the pipeline, declared once.

:class:`PipelineConfig` nests one group of options per concern::

    PipelineConfig
    ├── pipeline   PipelineOptions   which assessment pipeline, and the baselines' options
    ├── graph      GraphOptions      FR version, priors, relation threshold (fact_reasoner.graph)
    ├── scores     ScoreOptions      K of R@K / F1@K, checkworthy atoms, abstention, length penalty γ
    ├── engine     EngineOptions     inference engine and its options (those engines declare)
    ├── models     ModelOptions      LLM backend, NLI backend, atomizer and reviser prompts
    ├── retrieval  RetrievalOptions  where contexts come from
    ├── cache      CacheOptions      model-call cache
    ├── execution  ExecutionOptions  where records run: this process, or Ray actors
    └── gate       GateOptions       the CI gate (--fail-under): run control, never a result

Each field carries its default, its constraint and its description. Everything else is derived
from these declarations:

- the command-line flags of ``fact-reasoner``, ``fact-reasoner ragas`` and the experiment
  runner (:mod:`fact_reasoner.cli_options`: the flag is the field's ``dest`` with dashes, its
  help is the description, its default is the field's default);
- the ``settings`` written into every output line and compared on resume
  (:meth:`PipelineConfig.settings`: every field that can change a result);
- the stages: each factory (``make_llm``, ``make_nli``, ``make_atomizer``, ``make_reviser``,
  ``make_retriever``, ``make_engine``) reads the group it needs.

Shorthand: any field may be given at the top level by its ``dest`` (the name of its flag),
so ``PipelineConfig(version=2, nli="align", engine="pgmpy")`` is
``PipelineConfig(graph={"version": 2}, models={"nli": "align"}, engine={"name": "pgmpy"})``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from .fields import option
from .graph import GraphOptions
from .registry import registry

__all__ = [
    "CacheOptions",
    "EngineOptions",
    "ExecutionOptions",
    "GateOptions",
    "GraphOptions",
    "ModelOptions",
    "PipelineConfig",
    "PipelineOptions",
    "RetrievalOptions",
    "ScoreOptions",
    "default_cache_dir",
    "default_models_dir",
    "option",
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

#: the web services' default endpoints (``--search-url``, ``--wikipedia-url``)
DEFAULT_SEARCH_URL = "https://google.serper.dev/search"
DEFAULT_WIKIPEDIA_URL = "https://en.wikipedia.org/w/api.php"


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    #: title of the group in ``--help``
    title: ClassVar[str] = ""


class ScoreOptions(_Group):
    """How the factuality scores are computed from the posteriors."""

    title: ClassVar[str] = "scores"

    k: Annotated[KRule, Field(union_mode="left_to_right")] = option(
        "median",
        "K of R@K and F1@K: an integer, 'median' (the median number of atoms over the dataset, the "
        "paper's choice) or 'half' (max(n // 2, 1) per response, IBM's newest code)",
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
    checkworthy: Literal["rules", "llm"] = option(
        "rules",
        "with --skip-uncheckable, --abstention: what decides: rules (patterns, no model; "
        "fact_reasoner.checkworthy) or llm (one structured call per response with the LLM backend; "
        "an unreadable answer fails the record)",
        omit_default=True,
    )
    abstention: Literal["off", "on"] = option(
        "off",
        "on: a response that declines to answer ('I could not find information about …') is reported "
        "as an abstention (abstained: true, no precision) and the summary gives the respond ratio; "
        "detected by --checkworthy",
        omit_default=True,
    )
    gamma: Annotated[float, Field(ge=0.0)] = option(
        0.0,
        "FActScore's length penalty: a response with |A| < G atoms has its precision multiplied by "
        "exp(1 - G/|A|) (FActScore uses 10; 0: off)",
        metavar="G",
        omit_default=True,
    )

    @field_validator("k")
    @classmethod
    def _positive(cls, value: KRule) -> KRule:
        if isinstance(value, int) and value < 1:
            raise ValueError("K must be a positive integer, 'median' or 'half'")
        return value


class _EngineOptionsBase(_Group):
    """The inference engine that turns the factor graph into posterior marginals.

    The engines' own settings (a binary's path, an algorithm …) are not declared here:
    each engine declares them in its registration (:data:`fact_reasoner.inference.ENGINES`),
    and :data:`EngineOptions` adds them as fields (so as flags and settings)."""

    title: ClassVar[str] = "inference"

    name: str = option("native", "inference engine", dest="engine", registry="engines")
    options: dict[str, Any] = option(
        {},
        "engine-specific option KEY=VALUE, e.g. method=lbp (repeatable)",
        dest="engine_options",
        flags=("--engine-option",),
        metavar="KEY=VALUE",
        parse="key_value",
    )

    @field_validator("name")
    @classmethod
    def _registered(cls, value: str) -> str:
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


def _engine_options_model() -> type[_EngineOptionsBase]:
    """:class:`_EngineOptionsBase` plus one field per option the registered engines declare."""
    fields: dict[str, Any] = {
        declared.name: (declared.annotation, declared.field) for declared in registry("engines").options()
    }
    return create_model(
        "EngineOptions", __base__=_EngineOptionsBase, __module__=__name__, __doc__=_EngineOptionsBase.__doc__, **fields
    )


if TYPE_CHECKING:
    EngineOptions = _EngineOptionsBase
else:
    EngineOptions = _engine_options_model()


class _PipelineOptionsBase(_Group):
    """Which assessment pipeline runs: FactReasoner's factor graph (the default) or a baseline
    (:mod:`fact_reasoner.pipelines`). The baselines' own settings are declared in their
    registration (:data:`fact_reasoner.pipelines.PIPELINES`) and added as fields by
    :data:`PipelineOptions`, each counted in the settings only when its pipeline runs."""

    title: ClassVar[str] = "pipeline"

    name: str = option("factreasoner", "assessment pipeline", dest="pipeline", registry="pipelines", closed=True)
    judge: Literal["llm", "nli"] = option(
        "llm",
        "factscore, veriscore, factverify: who judges support: 'llm' (the paper's prompt to the LLM "
        "backend) or 'nli' (the NLI backend: supported iff max P(entailment) over the atom's passages > 0.5)",
        dest="pipeline_judge",
        only_when=("name", ("factscore", "veriscore", "factverify")),
    )

    @field_validator("name")
    @classmethod
    def _registered(cls, value: str) -> str:
        return _one_of(registry("pipelines").available(), value)


def _pipeline_options_model() -> type[_PipelineOptionsBase]:
    """:class:`_PipelineOptionsBase` plus one field per option the registered pipelines declare."""
    fields: dict[str, Any] = {
        declared.name: (declared.annotation, declared.field) for declared in registry("pipelines").options()
    }
    return create_model(
        "PipelineOptions",
        __base__=_PipelineOptionsBase,
        __module__=__name__,
        __doc__=_PipelineOptionsBase.__doc__,
        **fields,
    )


if TYPE_CHECKING:
    PipelineOptions = _PipelineOptionsBase
else:
    PipelineOptions = _pipeline_options_model()


#: NLI backends that cannot be the cascade's second judge (they judge no pair themselves)
NOT_A_SECOND_JUDGE = ("auto", "cascade", "precomputed")


class ModelOptions(_Group):
    """The language model, the NLI judge, and the atomizer and reviser prompts."""

    title: ClassVar[str] = "language model and NLI"

    backend: str = option("local", "LLM backend", registry="llm_backends", closed=True)
    model: str | None = option(
        None,
        "model: for local, qwen2.5-coder-1.5b-instruct (default), smollm2-135m-instruct or a .gguf path; "
        "for openai, the server's model name (or FACT_REASONER_MODEL)",
        aliases=("--model_id",),
    )
    base_url: str | None = option(None, "OpenAI-compatible base URL (or FACT_REASONER_BASE_URL)")
    llm_timeout: Annotated[float, Field(gt=0)] = option(
        120.0, "openai backend: seconds to wait for one reply", affects_results=False
    )
    llm_retries: Annotated[int, Field(ge=0)] = option(
        5,
        "openai backend: retries of a failed call (connection errors, 429, 5xx), with backoff",
        affects_results=False,
    )
    threads: Annotated[int, Field(ge=1)] | None = option(
        None,
        "CPU threads for the local models (default: all cores; the local LLM then generates "
        "tokens with as many as the load average leaves idle, at least 1)",
        affects_results=False,
    )
    nli: str = option("auto", "NLI backend", registry="nli", closed=True)
    nli_model: str | None = option(
        None,
        "model folder for align or cross-encoder (default: the one the package ships); cross-encoder "
        "also takes a hub id already in the local cache",
    )
    nli_cascade_second: str = option(
        "llm",
        "cascade: the NLI backend that judges the pairs the cross-encoder is unsure of",
        registry="nli",
        only_when=("nli", "cascade"),
    )
    nli_cascade_band: Annotated[float, Field(ge=0.0, le=0.5)] = option(
        0.02,
        "cascade: a pair goes to the second judge when the cross-encoder's P(entailment) or "
        "P(contradiction) lies within this distance of 0.5 (0.02: between 0.48 and 0.52, about 4 % "
        "of FActScore pairs; 0.3 sends about 65 %; 0: never)",
        only_when=("nli", "cascade"),
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
    nli_gate_threshold: Annotated[float, Field(ge=-1.0, le=1.0)] | None = option(
        None,
        "fast: pairs whose similarity is at least this are judged even when no nearby atom "
        "retrieved the context (default: 0.2 for the embedding gate, 0.1 for the lexical one, which is not measured)",
        only_when=("nli_mode", "fast"),
    )
    nli_neighbour_window: Annotated[int, Field(ge=0)] = option(
        1,
        "fast: an atom is also judged against the contexts retrieved for the atoms up to this many "
        "places before or after it",
        only_when=("nli_mode", "fast"),
    )
    nli_prompt_version: Literal["v1", "v2"] = option("v1", "prompt of the LLM judge")
    nli_calibrate: bool = option(False, "contextual calibration of the LLM judge")
    nli_samples: Annotated[int, Field(ge=1)] = option(
        5,
        "self-consistency samples when the LLM backend gives no logprobs",
    )
    max_failed_pairs: Annotated[float, Field(ge=0.0, le=1.0)] = option(
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
    reviser_prompt_version: Literal["v1", "v2"] = option(
        "v2",
        "prompt of the reviser: v2 (only atoms with a pronoun, a partial name or no name are "
        "revised) or v1 (every atom)",
    )
    revise: bool = option(True, "skip the reviser", flags=("--no-revise",))
    keep_ungrounded_atoms: bool = option(
        False,
        "judge and score the atoms the atomizer made whose numbers or proper names are in neither "
        "the response nor the question (by default they are not judged: listed in ungrounded_atoms "
        "with the reason, counted, left out of the scores; fact_reasoner.grounding)",
    )

    @field_validator("backend")
    @classmethod
    def _registered_backend(cls, value: str) -> str:
        return _one_of(registry("llm_backends").available(), value)

    @field_validator("nli")
    @classmethod
    def _registered_nli(cls, value: str) -> str:
        return _one_of(registry("nli").available(), value)

    @field_validator("nli_mode")
    @classmethod
    def _ibm_mode_name(cls, value: str) -> str:
        return "all" if value == "all_pairs" else value

    @field_validator("nli_cascade_second")
    @classmethod
    def _registered_second_judge(cls, value: str) -> str:
        return _one_of([name for name in registry("nli").available() if name not in NOT_A_SECOND_JUDGE], value)


def _one_of(names: list[str], value: str) -> str:
    """``value`` if it is one of the registered ``names``; else the error pydantic gives for a
    fixed set of choices (these settings had one before their registries), naming them all."""
    if value in names:
        return value
    quoted = [repr(name) for name in names]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise ValueError(f"Input should be {listed}")


class RetrievalOptions(_Group):
    """Where contexts come from for records that carry none."""

    title: ClassVar[str] = "retrieval (records without contexts)"

    service_type: str = option(
        "supplied",
        "where contexts come from: a registered retriever or a module:factory path",
        registry="retrievers",
    )
    top_k: Annotated[int, Field(ge=1)] = option(5, "contexts per atom")
    store: str | None = option(None, "retrieval store directory (see `fact-reasoner index`)")
    collection: str | None = option(None, "collection name in the store (default: default)")
    topic_filter: bool = option(False, "search only passages whose topic is the record's topic")
    topic_in_query: bool = option(False, "prefix the topic to each atom's query when the atom does not name it")
    retrieve_question: bool = option(False, "also retrieve contexts for the question (ids c_q_<j>)")
    query_builder: bool = option(False, "let the LLM rewrite each atom into a search query")
    summarise_contexts: bool = option(
        False,
        "let the LLM summarise each context for its atom and drop irrelevant ones; its confidence "
        "scales the context prior",
    )
    search_url: str = option(
        DEFAULT_SEARCH_URL,
        "google: Serper-compatible search endpoint (POST {q, num}, key from $SERPER_API_KEY in "
        "X-API-KEY), e.g. a proxy or a compatible service",
        metavar="URL",
    )
    wikipedia_url: str = option(DEFAULT_WIKIPEDIA_URL, "wikipedia: MediaWiki API endpoint (api.php)", metavar="URL")
    fetch_pages: bool = option(
        True,
        "google: use the search snippets only, do not download the linked pages",
        flags=("--no-fetch-pages",),
    )
    passage_chars: Annotated[int, Field(ge=100)] = option(
        1000,
        "google, wikipedia: pages are cut into passages of whole sentences of at most this many characters",
    )
    max_page_bytes: Annotated[int, Field(ge=1000)] = option(
        5_000_000,
        "google: largest page downloaded; a larger one is replaced by its search snippet",
    )
    web_concurrency: Annotated[int, Field(ge=1)] = option(
        8, "google, wikipedia: requests in flight per host", affects_results=False
    )
    web_timeout: Annotated[float, Field(gt=0)] = option(
        20.0, "google, wikipedia: seconds to wait for an answer (connect and read)", affects_results=False
    )
    web_retries: Annotated[int, Field(ge=0)] = option(
        3,
        "google, wikipedia: retries of a request that got 429/5xx or (searches) no answer, with backoff "
        "honouring Retry-After",
        affects_results=False,
    )


class CacheOptions(_Group):
    """The persistent model-call cache (LLM calls, NLI judgements, retrieval)."""

    title: ClassVar[str] = "cache"

    cache_dir: Path = option(
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


class ExecutionOptions(_Group):
    """Where the records of a dataset run are assessed: in this process, or spread over Ray actors
    (:mod:`fact_reasoner.executors`). None of these can change a result."""

    title: ClassVar[str] = "execution"

    executor: Literal["local", "ray"] = option(
        "local",
        "where records are assessed: local (this process, in input order) or ray (batches sent to Ray "
        "actors, each holding its own stages; needs the distributed extra; results come back in "
        "completion order)",
        affects_results=False,
    )
    ray_address: str | None = option(
        None,
        "ray: the cluster to use; default: start a local Ray instance on this machine; 'auto' joins the "
        "cluster that `ray start` runs here; ray://HOST:10001 connects through Ray Client",
        affects_results=False,
    )
    workers: Annotated[int, Field(ge=1)] | None = option(
        None,
        "ray: number of actors (default: one per CPU of the cluster)",
        affects_results=False,
    )
    batch_size: Annotated[int, Field(ge=1)] = option(
        4,
        "ray: records sent to an actor at a time (larger batches cost less in messages, smaller ones "
        "balance better and lose less work when a worker dies)",
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


class PipelineConfig(BaseModel):
    """Every setting of a :class:`~fact_reasoner.pipeline.FactReasoner`, one group per concern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pipeline: PipelineOptions = Field(default_factory=PipelineOptions)
    graph: GraphOptions = Field(default_factory=GraphOptions)
    scores: ScoreOptions = Field(default_factory=ScoreOptions)
    engine: EngineOptions = Field(default_factory=EngineOptions)
    models: ModelOptions = Field(default_factory=ModelOptions)
    retrieval: RetrievalOptions = Field(default_factory=RetrievalOptions)
    cache: CacheOptions = Field(default_factory=CacheOptions)
    execution: ExecutionOptions = Field(default_factory=ExecutionOptions)
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
    #: ``use_priors`` (now ``factor_tables``; :class:`~fact_reasoner.graph.GraphOptions` maps it)
    RENAMED: ClassVar[dict[str, str]] = {"use_priors": "graph"}

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
                if affects_results(field) and applies(field, dumped) and not _omitted(field, dumped[name])
            }
            if kept:
                out[group_name] = kept
        if out.get("models", {}).get("nli") == "auto":
            # `auto` names a choice that changes between releases (the LLM judge until the
            # cross-encoder's version 3): the backend it stands for is written beside it, so that
            # an output judged by another one is refused on resume instead of mixed with this.
            from .nli.factory import DEFAULT_NLI

            out["models"]["nli_auto"] = DEFAULT_NLI
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


# -- field metadata --------------------------------------------------------------------------


def affects_results(field: Any) -> bool:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return bool(extra.get("affects_results", True))


def _omitted(field: Any, value: Any) -> bool:
    """True for a field declared ``omit_default`` whose value is its default."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return bool(extra.get("omit_default")) and value == field.get_default(call_default_factory=True)


def applies(field: Any, group_values: dict[str, Any]) -> bool:
    """False when the field is declared ``only_when=(other, value)`` and ``other`` is not ``value``
    (or not one of the values, when a list of them is given)."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    condition = extra.get("only_when")
    if condition is None:
        return True
    wanted = condition[1]
    current = group_values.get(condition[0])
    return current in wanted if isinstance(wanted, (list, tuple)) else current == wanted


def field_dest(name: str, field: Any) -> str:
    """The flat name of a field: its flag without dashes, and its top-level shorthand key."""
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return str(extra.get("dest") or name)


def field_owners() -> dict[str, tuple[str, str]]:
    """``dest`` → (group, field name) for every field of every group."""
    owners: dict[str, tuple[str, str]] = {}
    for group_name in PipelineConfig.GROUPS:
        model = PipelineConfig.model_fields[group_name].annotation
        for name, field in model.model_fields.items():  # type: ignore[union-attr]
            dest = field_dest(name, field)
            if dest in owners:  # pragma: no cover - a declaration error
                raise TypeError(f"two settings share the name {dest!r}")
            owners[dest] = (group_name, name)
    return owners

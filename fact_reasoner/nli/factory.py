"""``make_nli(config, llm_factory)``: the NLI backend ``--nli`` settled on
(``config.models.nli_choice``, :class:`~fact_reasoner.settings.config.NLIChoice`, decided when
the configuration was validated).

The backends are :data:`NLI_BACKENDS` (a :class:`~fact_reasoner.settings.registry.Registry`; installed
packages add theirs through the ``fact_reasoner.nli`` entry-point group). Each factory is
called as ``factory(models, llm_factory)``: ``models`` is the configuration's ``models`` group
(:class:`~fact_reasoner.settings.config.ModelOptions`: every NLI setting, the backends' own
ones included), the only settings a judge reads, as the graph builder reads only
:class:`~fact_reasoner.settings.graph_options.GraphOptions`:

- ``auto`` (the default): the record's relations where it carries them, else :data:`DEFAULT_NLI`,
  the shipped cross-encoder — chosen by measurement: it separates supported from unsupported
  atoms better than the LLM judge and gives FR2 the smaller precision error, many times faster,
  while the LLM judge ranks atoms better (AUROC); the figures are in the documentation's
  "Choosing the NLI judge" (``docs/judges.md``) and ``docs/measurements.md``.
- ``llm``: :class:`~fact_reasoner.nli.llm_judge.LLMJudgeNLI`
  with ``models.nli_prompt_version``; the chat model comes from ``llm_factory()`` so nothing is
  loaded unless NLI actually runs.
- ``cross-encoder``: ``fact_reasoner.nli.cross_encoder.make_cross_encoder(models)`` (imported
  lazily): the MiniLM cross-encoder the package ships, or the model folder
  ``models.nli_model`` names; ONNX Runtime and tokenizers (the ``nli`` extra), no torch.
- ``align``: :class:`~fact_reasoner.nli.align.AlignNLI`, the small alignment-feature classifier
  the package ships (``models.nli_model`` names another model folder); needs the sentence
  embedder of the ``retrieval`` extra.
- ``specialist``: the contradiction specialist the package ships
  (``fact_reasoner/models/nli-minilm-l6-contradictions``, its ``MODEL_CARD.md``), a
  cross-encoder run as ``cross-encoder`` is; made for a panel's contradictions
  (``--nli cross-encoder@entailment,specialist@contradiction``, :mod:`~fact_reasoner.nli.panel`).
- ``cascade``: :class:`~fact_reasoner.nli.cascade.CascadeNLI`: the cross-encoder (``--nli-model``
  names its model) decides the pairs it is sure of, ``models.nli_cascade_second`` (the LLM
  judge by default) the pairs whose P(entailment) or P(contradiction) lies within
  ``nli_cascade_band`` of 0.5.
- ``precomputed``: built by the pipeline from each record's ``relations``; not here.

``auto`` and ``precomputed`` declare that they use the records' relations (``uses=("relations",)``);
with the ``auto`` entry's ``resolves_to`` that is all :class:`NLIChoice
<fact_reasoner.settings.config.NLIChoice>` reads to settle a choice.

Each backend's own settings (the model folder, the cascade's second judge and band, the LLM
judge's prompt, calibration and samples) are declared in its registration below
(:class:`~fact_reasoner.settings.registry.Option`): they join the ``models`` group of the configuration
(``models.nli_samples``), its flags and its settings.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field

from ..embeddings import EMBEDDER_EXTRAS
from ..errors import SetupError, StageUnavailable
from ..settings.fields import Count, PathText, one_of, option
from ..settings.registry import Extra, Option, Registry, require_extras
from .base import NLIBackend
from .cache import CachedNLI
from .checkers import CHECKER_EXTRAS, weights_hint

if TYPE_CHECKING:
    from ..llm.base import LLMBackend
    from ..settings.config import ModelOptions, PipelineConfig
    from ..settings.panel import PanelMember

#: what ``--nli auto`` uses for pairs that no record relation covers (chosen by measurement:
#: see the module docstring)
DEFAULT_NLI = "cross-encoder"

#: what the cross-encoder (and so the cascade, which runs it first) imports
CROSS_ENCODER_EXTRAS = (Extra("onnxruntime", "nli"), Extra("tokenizers", "nli"))

#: every NLI backend (``--nli`` takes any of these names)
NLI_BACKENDS: Registry[NLIBackend] = Registry("nli", noun="NLI backend", entry_point_group="fact_reasoner.nli")

#: NLI backends that cannot be the cascade's second judge (they judge no pair themselves)
NOT_A_SECOND_JUDGE = ("auto", "cascade", "precomputed")


def _second_judge(value: str) -> str:
    return one_of([name for name in NLI_BACKENDS.available() if name not in NOT_A_SECOND_JUDGE], value)


# -- the backends' settings (the ``models`` group), in the order --help lists them

NLI_MODEL = Option(
    "nli_model",
    PathText | None,
    option(
        None,
        "model folder for align or cross-encoder (default: the one the package ships), or for minicheck, "
        "factcg, hhem (required); cross-encoder and these also take a hub id already in the local cache",
    ),
    after="nli",
)
NLI_SENTENCES = Option(
    "nli_sentences",
    Literal["off", "contradictions", "all"],
    option(
        "contradictions",
        "cross-encoder: judge a short passage of several sentences sentence by sentence (a sentence that opens "
        "with a pronoun together with the one before it): entailment from the best sentence, contradiction only "
        "from a sentence about the claim's attribute; `contradictions` re-judges so only the pairs the whole "
        "passage calls contradiction (about as fast as `off`), `all` every such pair (about 0.8x the pairs/s), "
        "`off` judges the passage whole",
        only_when=("nli", ["auto", "cross-encoder", "cascade", "specialist"]),
    ),
    after="nli_model",
)
CASCADE_OPTIONS = (
    Option(
        "nli_cascade_second",
        Annotated[str, AfterValidator(_second_judge)],
        option(
            "llm",
            "cascade: the NLI backend that judges the pairs the cross-encoder is unsure of",
            registry="nli",
            only_when=("nli", "cascade"),
        ),
        after="nli",
    ),
    Option(
        "nli_cascade_band",
        Annotated[float, Field(ge=0.0, le=0.5, allow_inf_nan=False)],
        option(
            0.02,
            "cascade: a pair goes to the second judge when the cross-encoder's P(entailment) or "
            "P(contradiction) lies within this distance of 0.5 (0.02: between 0.48 and 0.52; 0: never; "
            "the share of pairs each band sends is measured in the docs' judges page)",
            only_when=("nli", "cascade"),
        ),
        after="nli",
    ),
)
# listed after the pair selection's settings, where they stood before backends declared them
LLM_JUDGE_OPTIONS = (
    Option(
        "nli_prompt_version",
        Literal["v1", "v2", "minicheck", "granite-guardian"],
        option(
            "v1",
            "prompt of the LLM judge; minicheck and granite-guardian: the published prompts of Bespoke-MiniCheck-7B "
            "and Granite Guardian 3.3 on a server (--backend openai --base-url URL), entailment or not",
        ),
        after="nli_neighbour_window",
    ),
    Option(
        "nli_guardian_server",
        Literal["vllm", "llama.cpp", "ollama"],
        option(
            "vllm",
            "granite-guardian prompt: the server, which decides how the document and the criterion are sent "
            "(vllm, llama.cpp: the chat template's arguments; ollama: its template's roles)",
            only_when=("nli_prompt_version", "granite-guardian"),
        ),
        after="nli_neighbour_window",
    ),
    Option(
        "nli_calibrate", bool, option(False, "contextual calibration of the LLM judge"), after="nli_neighbour_window"
    ),
    Option(
        "nli_samples",
        Count,
        option(5, "self-consistency samples when the LLM backend gives no logprobs"),
        after="nli_neighbour_window",
    ),
)


def _make_llm_judge(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    from .llm_judge import LLMJudgeNLI, LLMJudgeOptions

    options = LLMJudgeOptions(
        prompt_version=models.nli_prompt_version,
        calibrate=models.nli_calibrate,
        samples=models.nli_samples,
        server=models.nli_guardian_server,
    )
    return LLMJudgeNLI(llm_factory(), options)


def _make_align(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    from .align import make_align

    return make_align(models)


def _make_cross_encoder(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    from .cross_encoder import make_cross_encoder

    return make_cross_encoder(models)


def _make_specialist(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    from .cross_encoder import make_specialist

    return make_specialist(models)


def _make_cascade(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    from .cascade import CascadeNLI
    from .cross_encoder import make_cross_encoder

    # --nli-model names the fast judge's model, not the second judge's
    second_models = models.model_copy(update={"nli": models.nli_cascade_second, "nli_model": None})
    second = NLI_BACKENDS.make(models.nli_cascade_second, second_models, llm_factory)
    band = (0.5 - models.nli_cascade_band, 0.5 + models.nli_cascade_band)
    return CascadeNLI(make_cross_encoder(models), second, band=band)


def model_folder_problem(
    model: str | None, *, any_of: tuple[str, ...] = (), all_of: tuple[str, ...] = ()
) -> str | None:
    """What is wrong with ``--nli-model`` as a model folder of a judge that reads one, or None: a
    path to nothing, a file, a folder without ``any_of`` of its files or ``all_of`` them. None for
    no model (the shipped one) and for a name that is no path (a hub id, looked up in the local
    cache when the judge is built)."""
    if model is None:
        return None
    path = Path(model).expanduser()
    if path.is_dir():
        lacking = [name for name in all_of if not (path / name).is_file()]
        if any_of and not any((path / name).is_file() for name in any_of):
            lacking.append(" or ".join(any_of))
        return f"{path} is no model folder: it has no {', '.join(lacking)}" if lacking else None
    if path.exists():
        return f"{path} is a file; --nli-model takes a model folder"
    if os.sep in model or model.startswith((".", "~")):
        return f"{path}: no such folder"
    return None


#: what a model folder of each judge that reads one holds (a cross-encoder: an ONNX export or a
#: transformers folder; align: its classifier)
MODEL_FILES: dict[str, dict[str, tuple[str, ...]]] = {
    "cross-encoder": {"any_of": ("model.onnx", "config.json")},
    "cascade": {"any_of": ("model.onnx", "config.json")},
    "align": {"all_of": ("config.json", "weights.npz")},
}


def _check_model_folder(name: str) -> "Callable[[PipelineConfig], None]":
    """Start-up check of a shipped judge that ``--nli-model`` (or a panel member's ``=MODEL``)
    can point elsewhere: a folder that is no model of its kind is refused before any record
    (:func:`model_folder_problem`), not met by every record as the judge's load error."""

    def check(config: "PipelineConfig") -> None:
        for member in config.models.nli_choice.judges:
            if member.name == name:
                problem = model_folder_problem(member_models(config.models, member).nli_model, **MODEL_FILES[name])
                if problem:
                    raise SetupError(f"--nli {name}: {problem}")

    return check


def _check_cascade(config: "PipelineConfig") -> None:
    """Start-up check of ``cascade``: its cross-encoder's model folder, the second judge's extras
    (and its language model's)."""
    from ..llm import language_model_extras

    _check_model_folder("cascade")(config)
    second = config.models.nli_cascade_second
    entry = NLI_BACKENDS.entry(second)
    needed = [(f"--nli-cascade-second {second}", extra) for extra in entry.extras]
    if "llm" in entry.uses:
        needed += language_model_extras(config)
    require_extras(needed)


def _precomputed(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    raise ValueError("the 'precomputed' NLI backend is built per record from its relations (PrecomputedNLI)")


def _auto(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    return NLI_BACKENDS.make(DEFAULT_NLI, models, llm_factory)


NLI_BACKENDS.register(
    "auto",
    _auto,
    description=f"the record's relations if present, else {DEFAULT_NLI}",
    uses=("relations",),
    builtin=True,
    resolves_to=DEFAULT_NLI,
)
NLI_BACKENDS.register(
    "llm",
    _make_llm_judge,
    description="the LLM judge (the configured language model)",
    uses=("llm",),
    options=LLM_JUDGE_OPTIONS,
    builtin=True,
)
NLI_BACKENDS.register(
    "align",
    _make_align,
    description="the shipped alignment classifier (sentence embedder)",
    extras=EMBEDDER_EXTRAS,
    options=(NLI_MODEL,),
    check=_check_model_folder("align"),
    builtin=True,
)
NLI_BACKENDS.register(
    "cross-encoder",
    _make_cross_encoder,
    description="the shipped MiniLM NLI model (ONNX Runtime: fast)",
    extras=CROSS_ENCODER_EXTRAS,
    options=(NLI_MODEL, NLI_SENTENCES),
    check=_check_model_folder("cross-encoder"),
    builtin=True,
)
NLI_BACKENDS.register(
    "specialist",
    _make_specialist,
    description="the contradiction specialist the package ships (a MiniLM cross-encoder trained on negation, "
    "substitution and role swaps): a panel's judge for contradictions, e.g. cross-encoder@entailment,"
    "specialist@contradiction",
    extras=CROSS_ENCODER_EXTRAS,
    options=(NLI_SENTENCES,),
    builtin=True,
)
NLI_BACKENDS.register(
    "cascade",
    _make_cascade,
    description="the cross-encoder, and a second judge (--nli-cascade-second) for the pairs it is unsure of",
    extras=CROSS_ENCODER_EXTRAS,
    options=(NLI_MODEL, NLI_SENTENCES, *CASCADE_OPTIONS),
    check=_check_cascade,
    builtin=True,
)
NLI_BACKENDS.register(
    "precomputed",
    _precomputed,
    description="the relations each record carries (no model)",
    uses=("relations",),
    builtin=True,
)


def _make_checker(name: str) -> "Callable[[ModelOptions, Callable[[], LLMBackend]], NLIBackend]":
    def make(models: "ModelOptions", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
        from .checkers import make_checker

        return make_checker(name, models)

    return make


def _check_checker(name: str) -> "Callable[[PipelineConfig], None]":
    """Start-up check of a checker: each judge ``name`` of the run has a model folder that is
    one (:func:`~fact_reasoner.nli.checkers.check_model`), so that a missing ``--nli-model`` or a
    folder of another kind is refused before any record, not when the judge is built."""

    def check(config: "PipelineConfig") -> None:
        from .checkers import check_model

        for member in config.models.nli_choice.judges:
            if member.name == name:
                check_model(name, member_models(config.models, member).nli_model)

    return check


for _name, _description in (
    ("minicheck", "MiniCheck (RoBERTa-L, DeBERTa-v3-L or Flan-T5-L) from --nli-model; entailment or not"),
    ("factcg", "FactCG-DeBERTa-v3-L from --nli-model; entailment or not"),
    ("hhem", "Vectara's HHEM-2.1-Open from --nli-model; entailment or not"),
):
    NLI_BACKENDS.register(
        _name,
        _make_checker(_name),
        description=_description,
        extras=CHECKER_EXTRAS,
        options=(NLI_MODEL,),
        check=_check_checker(_name),
        also_needs=weights_hint(_name),
        builtin=True,
    )


def make_nli(config: "PipelineConfig", llm_factory: "Callable[[], LLMBackend] | None" = None) -> NLIBackend:
    """The configured model backend behind the NLI pair cache (persistent unless
    ``config.cache.use_cache`` is off; then a memo for this process only). For a panel
    (``--nli a,b``) each judge has its own place in the cache, under its own identity, so a
    judge's verdicts are shared with the runs that use it alone; the panel combines them
    (:class:`~fact_reasoner.nli.panel.PanelNLI`).

    ``llm_factory`` gives the chat model of the LLM judge (default: ``make_llm(config)``),
    called only if that judge is the backend.
    """
    cache = None
    if config.cache.use_cache:
        from ..cache import ModelCache

        cache = ModelCache.in_dir(config.cache.cache_dir)
    return _build(config, llm_factory, lambda backend: CachedNLI(backend, cache))


def make_model_nli(config: "PipelineConfig", llm_factory: "Callable[[], LLMBackend] | None" = None) -> NLIBackend:
    """The bare model backend ``--nli`` settled on (``config.models.nli_choice.model``: ``auto``
    → :data:`DEFAULT_NLI`; a panel's judges with no cache of their own), with no cache in
    front. Raises :class:`~fact_reasoner.errors.StageUnavailable` for a choice that builds no
    model (``precomputed``)."""
    return _build(config, llm_factory, lambda backend: backend)


def _build(
    config: "PipelineConfig",
    llm_factory: "Callable[[], LLMBackend] | None",
    wrap: "Callable[[NLIBackend], NLIBackend]",
) -> NLIBackend:
    choice = config.models.nli_choice
    if choice.panel is None:
        raise StageUnavailable(f"--nli {config.models.nli} needs records that carry `relations`")
    if llm_factory is None:
        from ..llm import make_llm

        def llm_factory() -> "LLMBackend":
            return make_llm(config)

    models = config.models
    if not choice.panel.is_panel:
        member = choice.panel.members[0]
        if member.model:
            models = models.model_copy(update={"nli_model": member.model})
        return wrap(NLI_BACKENDS.make(member.name, models, llm_factory))
    from .cross_encoder import share_text_memo
    from .panel import PanelNLI

    backends = [
        wrap(NLI_BACKENDS.make(member.name, member_models(models, member), llm_factory))
        for member in choice.panel.members
    ]
    share_text_memo(backends)  # judges that read text alike cut and tokenise each pair once
    return PanelNLI(choice.panel, backends)


def takes_model(name: str) -> bool:
    """Whether the NLI backend ``name`` reads a model folder (``--nli-model``)."""
    return NLI_MODEL.name in NLI_BACKENDS.entry(name).option_names


def member_models(models: "ModelOptions", member: "PanelMember") -> "ModelOptions":
    """The ``models`` group one judge of a panel is built from: ``nli`` its own name, and
    ``nli_model`` its own model (``NAME=PATH``), else ``--nli-model`` when it is the panel's one
    judge that reads a model and names none (the configuration refuses ``--nli-model`` otherwise)."""
    model = member.model
    if model is None and takes_model(member.name) and models.nli_model is not None:
        model = models.nli_model
    return models.model_copy(update={"nli": member.name, "nli_model": model})

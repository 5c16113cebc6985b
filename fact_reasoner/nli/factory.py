"""``make_nli(config, llm_factory)``: the NLI backend named by ``config.models.nli``.

- ``llm`` (``auto`` means :data:`DEFAULT_NLI`): :class:`~fact_reasoner.nli.llm_judge.LLMJudgeNLI`
  with ``config.models.nli_prompt_version``; the chat model comes from ``llm_factory()`` so nothing is
  loaded unless NLI actually runs.
- ``cross-encoder``: ``fact_reasoner.nli.cross_encoder.make_cross_encoder(config)`` (imported
  lazily): the MiniLM cross-encoder the package ships, or the model folder
  ``config.models.nli_model`` names; ONNX Runtime and tokenizers (the ``nli`` extra), no torch.
- ``align``: :class:`~fact_reasoner.nli.align.AlignNLI`, the small alignment-feature classifier
  the package ships (``config.models.nli_model`` names another model folder); needs the sentence
  embedder of the ``retrieval`` extra.
- ``precomputed``: built by the pipeline from each record's ``relations``; not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import NLIBackend
from .cache import CachedNLI

if TYPE_CHECKING:
    from ..config import PipelineConfig
    from ..llm.base import LLMBackend

NLI_CHOICES = ("llm", "align", "cross-encoder", "precomputed", "auto")
#: what ``--nli auto`` uses for pairs that no record relation covers
DEFAULT_NLI = "llm"


def available_nli() -> list[str]:
    """The values ``--nli`` takes."""
    return list(NLI_CHOICES)


def make_nli(config: "PipelineConfig", llm_factory: "Callable[[], LLMBackend] | None" = None) -> CachedNLI:
    """The configured model backend behind the NLI pair cache (persistent unless
    ``config.cache.use_cache`` is off; then a memo for this process only).

    ``llm_factory`` gives the chat model of the LLM judge (default: ``make_llm(config)``),
    called only if that judge is the backend.
    """
    cache = None
    if config.cache.use_cache:
        from ..cache import ModelCache

        cache = ModelCache.in_dir(config.cache.cache_dir)
    return CachedNLI(make_model_nli(config, llm_factory), cache)


def make_model_nli(config: "PipelineConfig", llm_factory: "Callable[[], LLMBackend] | None" = None) -> NLIBackend:
    """The bare model backend named by ``config.models.nli`` (no cache in front)."""
    if llm_factory is None:
        from ..llm import make_llm

        def llm_factory() -> "LLMBackend":
            return make_llm(config)

    kind: str = config.models.nli
    if kind == "auto":
        kind = DEFAULT_NLI
    if kind == "llm":
        from .llm_judge import LLMJudgeNLI, LLMJudgeOptions

        options = LLMJudgeOptions(
            prompt_version=config.models.nli_prompt_version,
            calibrate=config.models.nli_calibrate,
            samples=config.models.nli_samples,
        )
        return LLMJudgeNLI(llm_factory(), options)
    if kind == "align":
        from .align import make_align

        return make_align(config)
    if kind == "cross-encoder":
        from .cross_encoder import make_cross_encoder

        return make_cross_encoder(config)
    if kind == "precomputed":
        raise ValueError("the 'precomputed' NLI backend is built per record from its relations (PrecomputedNLI)")
    raise ValueError(f"unknown NLI backend {kind!r}: use one of {', '.join(NLI_CHOICES)}")

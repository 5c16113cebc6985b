"""``make_nli(config, llm_factory)``: the NLI backend named by ``config.nli``.

- ``llm`` (and ``auto``, which means ``llm`` here): :class:`~fact_reasoner.nli.llm_judge.LLMJudgeNLI`
  with ``config.nli_prompt_version``; the chat model comes from ``llm_factory()`` so nothing is
  loaded unless NLI actually runs.
- ``cross-encoder``: ``fact_reasoner.nli.cross_encoder.make_cross_encoder(config)`` (imported
  lazily; needs transformers and a local model given by ``config.nli_model``).
- ``align``: :class:`~fact_reasoner.nli.align.AlignNLI`, the small alignment-feature classifier
  the package ships (``config.nli_model`` names another model folder); needs the sentence
  embedder of the ``retrieval`` extra.
- ``precomputed``: built by the pipeline from each record's ``relations``; not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import NLIBackend

if TYPE_CHECKING:
    from ..config import PipelineConfig
    from ..llm.base import LLMBackend

NLI_CHOICES = ("llm", "align", "cross-encoder", "precomputed", "auto")


def make_nli(config: "PipelineConfig", llm_factory: "Callable[[], LLMBackend]") -> NLIBackend:
    kind = config.nli
    if kind in ("llm", "auto"):
        from .llm_judge import LLMJudgeNLI, LLMJudgeOptions

        options = LLMJudgeOptions(
            prompt_version=config.nli_prompt_version,
            # optional config fields (added by the CLI when it offers them)
            calibrate=bool(getattr(config, "nli_calibrate", False)),
            samples=int(getattr(config, "nli_samples", 5) or 5),
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

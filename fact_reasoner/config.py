"""One configuration object for the whole pipeline, filled from the CLI or by hand.

Each stage's factory reads the fields it needs:

- ``fact_reasoner.llm.make_llm(config)`` → the chat backend (``local`` | ``openai``);
- ``fact_reasoner.nli.make_nli(config, llm_factory)`` → the NLI backend;
- ``fact_reasoner.atomizer.make_atomizer(config, llm)`` / ``fact_reasoner.reviser.make_reviser(config, llm)``;
- ``fact_reasoner.retrieval.make_retriever(config)`` → the retriever;
- ``fact_reasoner.inference.make_engine(config.engine, **config.engine_options)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .graph import GraphOptions


def default_cache_dir() -> Path:
    """Per-user cache (models, model-call cache): ``$FACT_REASONER_CACHE`` or ``~/.cache/fact_reasoner``."""
    import os

    return Path(os.environ.get("FACT_REASONER_CACHE", Path.home() / ".cache" / "fact_reasoner"))


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # graph
    version: Literal[1, 2, 3] = 3
    use_priors: bool = False
    context_prior: float = 0.9
    atom_prior: float = 0.5
    # relations whose label probability is ≤ this are dropped (0: all kept, as in the paper)
    min_relation_probability: float = 0.0
    # scores: an int, "median" (over the dataset) or "half" (max(n // 2, 1) per response)
    k: int | Literal["median", "half"] = "median"
    # inference
    engine: str = "native"
    engine_options: dict[str, Any] = Field(default_factory=dict)
    # language model
    backend: Literal["local", "openai"] = "local"
    model: str | None = None
    base_url: str | None = None
    threads: int | None = None
    # NLI
    nli: str = "auto"
    nli_model: str | None = None
    nli_prompt_version: str = "v1"
    nli_calibrate: bool = False  # contextual calibration of the LLM judge
    nli_samples: int = 5  # self-consistency samples for backends without logprobs
    # atomizer / reviser
    atomizer_prompt_version: str = "v1"
    reviser_prompt_version: str = "v1"
    revise: bool = True
    # retrieval
    service_type: str = "supplied"
    top_k: int = 5
    store: str | None = None
    collection: str | None = None
    topic_filter: bool = False  # search only passages whose topic is the record's topic
    topic_in_query: bool = False  # prefix the topic to atoms that do not name it
    retrieve_question: bool = False  # also retrieve for the question (ids c_q_<j>)
    query_builder: bool = False  # LLM rewrites each atom into a search query
    summarise_contexts: bool = False  # LLM summarises contexts, drops irrelevant ones
    # model-call cache
    cache_dir: Path = Field(default_factory=default_cache_dir)
    use_cache: bool = True

    def graph_options(self) -> GraphOptions:
        return GraphOptions(
            version=self.version,
            use_priors=self.use_priors,
            context_prior=self.context_prior,
            atom_prior=self.atom_prior,
            min_relation_probability=self.min_relation_probability,
        )

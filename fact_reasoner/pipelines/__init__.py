"""Assessment pipelines: FactReasoner (the default) and three baselines as their papers define them.

``--pipeline`` chooses one (:data:`PIPELINES`, the ``pipelines`` kind of
:mod:`fact_reasoner.settings.registry`):

- ``factreasoner``: atomize → revise → retrieve → NLI → factor graph → inference
  (:class:`fact_reasoner.reasoner.FactReasoner`, FR1/FR2/FR3 by ``--version``);
- ``factscore`` (FActScore, Min et al. 2023): per atom, passages retrieved for it, then
  "True or False?" (:mod:`.factscore`);
- ``veriscore`` (VeriScore, Song et al. 2024): only *verifiable* claims extracted from the
  response (or the record's atoms, ``--veriscore-claims``), evidence per claim, then
  supported / unsupported (:mod:`.veriscore`);
- ``factverify`` (SAFE, Wei et al. 2024): per atom, several search steps (the LLM writes a query,
  passages are retrieved and appended, repeat), then a rating (:mod:`.factverify`).

The baselines share atoms, retrievers, LLM backends, the model-call cache and the runner with
FactReasoner, and write the same output rows (:mod:`.base`). Their support judgement is the
paper's LLM prompt by default, or the NLI backend (``--pipeline-judge nli``: supported iff
max P(entailment) over the atom's passages > 0.5).

Outside packages add a pipeline with an entry point in the group ``fact_reasoner.pipelines``,
pointing to a factory ``factory(config) -> assessor`` (the protocol in :mod:`.base`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from ..settings.fields import option
from ..settings.registry import Option, Registry

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import PipelineConfig

__all__ = ["BASELINES", "DEFAULT_PIPELINE", "PIPELINES", "make_pipeline"]

#: the pipeline a configuration runs unless told otherwise
DEFAULT_PIPELINE = "factreasoner"
#: the baseline pipelines of this package (their options apply only to them)
BASELINES = ("factscore", "veriscore", "factverify")

PIPELINES: Registry[Any] = Registry("pipelines", noun="pipeline", entry_point_group="fact_reasoner.pipelines")

PIPELINES.register(
    DEFAULT_PIPELINE,
    "fact_reasoner.reasoner:FactReasoner",
    description="factor graph over atoms and contexts (FR1/FR2/FR3, --version)",
    builtin=True,
)
PIPELINES.register(
    "factscore",
    "fact_reasoner.pipelines.factscore:FactScorePipeline",
    description="FActScore: per atom, its passages and 'True or False?'",
    builtin=True,
    uses=("llm", "retriever"),
)
PIPELINES.register(
    "veriscore",
    "fact_reasoner.pipelines.veriscore:VeriScorePipeline",
    description="VeriScore: verifiable claims only, evidence per claim, supported/unsupported",
    builtin=True,
    uses=("llm", "retriever"),
    options=[
        Option(
            "veriscore_claims",
            Literal["given", "extract"],
            option(
                "given",
                "veriscore: 'given' uses the record's atoms when it carries some (extracts otherwise); "
                "'extract' always extracts the verifiable claims from the response with the LLM",
                only_when=("name", "veriscore"),
            ),
        )
    ],
)
PIPELINES.register(
    "factverify",
    "fact_reasoner.pipelines.factverify:FactVerifyPipeline",
    description="FactVerify (SAFE): per atom, LLM-written search queries over several steps, then a rating",
    builtin=True,
    uses=("llm", "retriever"),
    options=[
        Option(
            "factverify_steps",
            Annotated[int, Field(ge=1, le=10)],
            option(
                3, "factverify: search steps per atom (one LLM-written query each)", only_when=("name", "factverify")
            ),
        ),
        Option(
            "factverify_results",
            Annotated[int, Field(ge=1, le=20)],
            option(3, "factverify: passages kept per search step", only_when=("name", "factverify")),
        ),
    ],
)


def make_pipeline(config: PipelineConfig | None = None, **stages: Any) -> Any:
    """The assessor of ``config.pipeline.name`` (a :class:`~fact_reasoner.reasoner.FactReasoner`
    for ``factreasoner``), with ready-made ``stages`` (``llm=``, ``nli=``, ``retriever=`` …)."""
    from ..settings.config import PipelineConfig

    config = config or PipelineConfig()
    return PIPELINES.make(config.pipeline.name, config, **stages)

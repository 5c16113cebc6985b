"""fact_reasoner: probabilistic factuality assessment after FactReasoner (FR1, FR2, FR3).

The pipeline is atomize → revise → retrieve → NLI → graph → infer → score; each stage is a
module behind a small protocol so it can be swapped::

    from fact_reasoner import FactReasoner, PipelineConfig
    result = FactReasoner(PipelineConfig(version=3)).assess(record)

``available()`` lists what is registered (engines, retrievers, NLI backends, LLM backends,
metrics); each kind is built by its ``make_*`` factory from a :class:`PipelineConfig`.
"""

from .graph.build import build_graph, plan_graph
from .graph.factor_graph import FactorGraph
from .inference import make_engine
from .reasoner import FactReasoner, GraphBuild
from .schema import Atom, Context, InputRecord, OutputRecord, Relation
from .settings.config import PipelineConfig
from .settings.graph_options import GraphOptions
from .stages import Stages, available
from .version import __version__ as __version__  # the alias re-exports it (PEP 484)

__all__ = [
    "Atom",
    "Context",
    "FactReasoner",
    "FactorGraph",
    "GraphBuild",
    "GraphOptions",
    "InputRecord",
    "OutputRecord",
    "PipelineConfig",
    "Relation",
    "Stages",
    "available",
    "build_graph",
    "make_engine",
    "plan_graph",
]

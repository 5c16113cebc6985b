"""fact_reasoner: probabilistic factuality assessment after FactReasoner (FR1, FR2, FR3).

The pipeline is atomize → revise → retrieve → NLI → graph → infer → score; each stage is a
module behind a small protocol so it can be swapped::

    from fact_reasoner import FactReasoner, PipelineConfig
    result = FactReasoner(PipelineConfig(version=3)).assess(record)
"""

from .config import PipelineConfig
from .graph import FactorGraph, GraphOptions, build_graph, plan_graph
from .pipeline import FactReasoner
from .schema import Atom, Context, InputRecord, OutputRecord, Relation

__version__ = "0.1.0"

__all__ = [
    "Atom",
    "Context",
    "FactReasoner",
    "FactorGraph",
    "GraphOptions",
    "InputRecord",
    "OutputRecord",
    "PipelineConfig",
    "Relation",
    "build_graph",
    "plan_graph",
]

"""Inference engines over :class:`~fact_reasoner.graph.factor_graph.FactorGraph`.

Registered engines:

- ``native`` (default): exact conditioning/enumeration when affordable, otherwise an
  approximation checked against exact inference (see :mod:`.native`).
- ``pgmpy``: pgmpy's own exact inference where it is correct, a clear refusal otherwise.
- ``brute-force``: full enumeration, for small graphs and checks.
- ``merlin``: the compiled merlin binary through UAI files (:mod:`merlin_bridge`, which
  registers itself and its options from :mod:`merlin_bridge.plugin`).
"""

from .base import (
    ENGINES,
    InferenceEngine,
    InferenceError,
    InferenceResult,
    available_engines,
    make_engine,
    register_engine,
)
from .brute_force import BruteForceEngine, brute_force_marginals

ENGINES.register(
    "native",
    "fact_reasoner.inference.native:NativeEngine",
    description="exact when affordable, else an approximation checked against exact inference",
    builtin=True,
)
ENGINES.register(
    "pgmpy",
    "fact_reasoner.inference.pgmpy_engine:PgmpyEngine",
    description="pgmpy's exact inference where it is correct, a clear refusal otherwise",
    builtin=True,
)
ENGINES.register(
    "brute-force", BruteForceEngine, description="full enumeration, for small graphs and checks", builtin=True
)

DEFAULT_ENGINE = "native"

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "BruteForceEngine",
    "InferenceEngine",
    "InferenceError",
    "InferenceResult",
    "available_engines",
    "brute_force_marginals",
    "make_engine",
    "register_engine",
]

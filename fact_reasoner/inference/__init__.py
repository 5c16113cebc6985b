"""Inference engines over :class:`~fact_reasoner.graph.FactorGraph`.

Registered engines:

- ``native`` (default): exact conditioning/enumeration when affordable, otherwise an
  approximation checked against exact inference (see :mod:`.native`).
- ``pgmpy``: pgmpy's own exact inference where it is correct, a clear refusal otherwise.
- ``brute-force``: full enumeration, for small graphs and checks.
- ``merlin``: the compiled merlin binary through UAI files (:mod:`merlin_bridge`).
"""

from .base import (
    InferenceEngine,
    InferenceError,
    InferenceResult,
    available_engines,
    make_engine,
    register_engine,
)
from .brute_force import BruteForceEngine, brute_force_marginals

register_engine("brute-force", BruteForceEngine)
register_engine("native", "fact_reasoner.inference.native:NativeEngine")
register_engine("pgmpy", "fact_reasoner.inference.pgmpy_engine:PgmpyEngine")
register_engine("merlin", "merlin_bridge.engine:MerlinEngine")

DEFAULT_ENGINE = "native"

__all__ = [
    "DEFAULT_ENGINE",
    "BruteForceEngine",
    "InferenceEngine",
    "InferenceError",
    "InferenceResult",
    "available_engines",
    "brute_force_marginals",
    "make_engine",
    "register_engine",
]

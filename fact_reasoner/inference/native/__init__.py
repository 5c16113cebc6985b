"""The native engine: exact inference by conditioning on a vertex cover, loopy BP, and
parallel-tempering Gibbs samplers for graphs where loopy BP is unreliable.

Every pairwise binary model is first rewritten exactly in Ising form, log P̃(x) = const + h·x
+ Σ J_st x_s x_t; each algorithm works on that form, one module each:

- :mod:`.ising` — the Ising form (:class:`IsingModel`, :func:`ising_model`) and the shared
  maths (softplus, sigmoid, the coupling message);
- :mod:`.covers` — small vertex covers (König's theorem on bipartite graphs, greedy otherwise);
- :mod:`.exact` — exact marginals and log Z by enumerating a cover's states
  (:func:`exact_by_cover`);
- :mod:`.bp` — loopy BP with several starts, the Bethe free energy, frustration
  (:func:`loopy_bp`, :func:`bethe_log_partition`, :func:`frustration_gauge`);
- :mod:`.sampling` — the collapsed and the chromatic tempered Gibbs samplers and their
  shared replica exchange;
- :mod:`.engine` — :class:`NativeEngine`, which picks one of them per connected component.
"""

from .bp import (
    DENSE_BP_MAX_VARIABLES,
    DENSE_BP_MIN_DENSITY,
    BPResult,
    bethe_log_partition,
    frustration,
    frustration_gauge,
    loopy_bp,
)
from .covers import two_colouring, vertex_cover
from .engine import Method, NativeEngine
from .exact import DEFAULT_MAX_EXACT_COVER, exact_by_cover
from .ising import IsingModel, ising_model
from .sampling import (
    COLLAPSED_MAX_ENTRIES,
    ReplicaExchange,
    SamplerResult,
    chromatic_tempered_gibbs,
    collapsed_tempered_gibbs,
    greedy_colouring,
)

__all__ = [
    "COLLAPSED_MAX_ENTRIES",
    "DEFAULT_MAX_EXACT_COVER",
    "DENSE_BP_MAX_VARIABLES",
    "DENSE_BP_MIN_DENSITY",
    "BPResult",
    "IsingModel",
    "Method",
    "NativeEngine",
    "ReplicaExchange",
    "SamplerResult",
    "bethe_log_partition",
    "chromatic_tempered_gibbs",
    "collapsed_tempered_gibbs",
    "exact_by_cover",
    "frustration",
    "frustration_gauge",
    "greedy_colouring",
    "ising_model",
    "loopy_bp",
    "two_colouring",
    "vertex_cover",
]

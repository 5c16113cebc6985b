"""Bridge from fact_reasoner's factor graph to IBM's merlin inference engine (C++).

- :mod:`merlin_bridge.uai`: UAI ``MARKOV`` writer/reader, evidence files, the explicit
  variable index ↔ name map (index = position in the sorted names).
- :mod:`merlin_bridge.runner`: find merlin (``--merlin-path`` / ``MERLIN_PATH``), run it with a
  timeout in a private directory, parse ``OUT.MAR.json`` / ``OUT.MAR``.
- :mod:`merlin_bridge.engine`: :class:`MerlinEngine`, registered as the ``merlin`` engine.
- :mod:`merlin_bridge.reference_solver`: an exact Python stand-in with merlin's command line
  and output formats, for tests without the binary.

merlin is not shipped or built by this project; users compile it (see the README).
"""

from .errors import (
    MerlinError,
    MerlinExitError,
    MerlinNotFoundError,
    MerlinOutputError,
    MerlinTimeoutError,
    MerlinUnderflowError,
    MerlinVariableMismatchError,
)
from .uai import export_graph, load_exported, read_evidence, read_uai, read_variable_map, record_stem

__all__ = [
    "MerlinError",
    "MerlinExitError",
    "MerlinNotFoundError",
    "MerlinOutputError",
    "MerlinTimeoutError",
    "MerlinUnderflowError",
    "MerlinVariableMismatchError",
    "export_graph",
    "load_exported",
    "read_evidence",
    "read_uai",
    "read_variable_map",
    "record_stem",
]

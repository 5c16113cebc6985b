"""merlin as an inference engine of fact_reasoner: its registration and its settings.

Everything the core knows about merlin comes from here, as it would from an outside package:
the ``merlin`` engine in :data:`fact_reasoner.inference.ENGINES`, and the options it adds to
the ``engine`` group of :class:`~fact_reasoner.settings.config.PipelineConfig` (so the flags
``--merlin-path``, ``--merlin-algorithm``, ``--ibound``, ``--iterations``, ``--merlin-timeout``
and ``--keep-uai``). Each option is passed to :class:`~merlin_bridge.engine.MerlinEngine` only
when set, under the keyword ``argument`` names.
"""

from __future__ import annotations

from typing import Literal

from fact_reasoner.inference.base import ENGINES
from fact_reasoner.settings.fields import Count, PathName, PathText, Seconds, option
from fact_reasoner.settings.registry import Option

#: merlin's inference algorithms. Declared here, not in :mod:`.runner`: this module
#: may be loaded while ``merlin_bridge`` itself is still importing fact_reasoner, so it imports
#: nothing from its own package.
ALGORITHMS = ("wmb", "bte", "cte", "ijgp", "lbp", "gibbs")

MerlinAlgorithm = Literal[ALGORITHMS]  # type: ignore[valid-type]

MERLIN_OPTIONS = (
    Option("merlin_path", PathText | None, option(None, "merlin binary (or set MERLIN_PATH)", affects_results=False)),
    Option(
        "merlin_algorithm",
        MerlinAlgorithm | None,
        option(None, "merlin algorithm (default wmb)"),
        argument="algorithm",
    ),
    Option("ibound", Count | None, option(None, "merlin i-bound (default 6)")),
    Option("iterations", Count | None, option(None, "merlin iterations")),
    Option(
        "merlin_timeout",
        Seconds | None,
        option(None, "seconds before merlin is stopped", affects_results=False),
        argument="timeout",
    ),
    Option(
        "keep_uai", PathName | None, option(None, "keep merlin's UAI files in this directory", affects_results=False)
    ),
)

ENGINES.register(
    "merlin",
    "merlin_bridge.engine:MerlinEngine",
    description="IBM's compiled merlin binary through UAI files (--merlin-path or MERLIN_PATH)",
    options=MERLIN_OPTIONS,
    builtin=True,
    origin="merlin_bridge.plugin",
)

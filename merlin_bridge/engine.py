"""The ``merlin`` inference engine: the factor graph through a UAI file to the merlin binary.

``infer(graph)`` writes the graph (tables rescaled to a maximum of 1, see
:func:`merlin_bridge.uai.graph_to_uai_model`) into a private temporary directory, runs merlin
for MAR, maps the marginals back from UAI indices (sorted names) to variable names, and
removes the directory. With ``keep_uai=DIR`` the files (model, evidence, variable map and
merlin's output) are also copied to ``DIR/model_NNNN.*``, on success and on failure.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path

from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import InferenceResult

from .errors import MerlinError
from .runner import ALGORITHMS, OUTPUT_FORMATS, find_merlin, run_merlin
from .uai import export_graph, read_variable_map

#: Algorithms that are exact whatever the graph (bucket/cluster tree elimination).
EXACT_ALGORITHMS = ("bte", "cte")


class MerlinEngine:
    """Marginals from the compiled merlin binary (``--engine merlin``).

    Args:
        merlin_path: the binary; default ``$MERLIN_PATH``.
        algorithm: ``wmb`` (default), ``bte``, ``cte``, ``ijgp``, ``lbp`` or ``gibbs``.
        ibound: mini-bucket i-bound (WMB/IJGP); WMB is exact when the induced width ≤ it.
        iterations: merlin's ``--iterations`` (omitted when ``None``: merlin's default, 10).
        timeout: seconds before merlin is killed (:class:`MerlinTimeoutError`).
        output_format: ``json`` (``OUT.MAR.json``) or ``uai`` (``OUT.MAR``).
        keep_uai: directory where each run's files are kept, for debugging or other solvers.
        rescale: divide every table by its maximum before writing (default on), so that ln Z
            of a large graph does not underflow merlin's ``exp(ln Z) == 0`` status test.

    The binary is looked up when the engine is made, so a wrong path fails before any record
    is processed. Every failure raises a :class:`~merlin_bridge.errors.MerlinError`
    (an :class:`~fact_reasoner.inference.InferenceError`), never numbers.
    """

    name = "merlin"

    def __init__(
        self,
        merlin_path: str | None = None,
        algorithm: str = "wmb",
        ibound: int = 6,
        iterations: int | None = None,
        timeout: float = 600.0,
        output_format: str = "json",
        keep_uai: str | None = None,
        rescale: bool = True,
    ) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"merlin algorithm must be one of {', '.join(ALGORITHMS)}, not {algorithm!r}")
        if output_format not in OUTPUT_FORMATS:
            raise ValueError(f"merlin output format must be json or uai, not {output_format!r}")
        if ibound < 1:
            raise ValueError(f"ibound must be at least 1, not {ibound}")
        if iterations is not None and iterations < 0:
            raise ValueError(f"iterations must be non-negative, not {iterations}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        self.binary = find_merlin(merlin_path)
        self.algorithm = algorithm
        self.ibound = ibound
        self.iterations = iterations
        self.timeout = timeout
        self.output_format = output_format
        self.keep_uai = Path(keep_uai) if keep_uai else None
        self.rescale = rescale
        self._kept = 0

    def infer(self, graph: FactorGraph) -> InferenceResult:
        """P(x_v = 1) for every variable, from one merlin MAR run."""
        start = time.perf_counter()
        algorithm = f"merlin-{self.algorithm}"
        if graph.num_variables == 0:
            return InferenceResult({}, algorithm, exact=True, log_partition=0.0)
        workdir = Path(tempfile.mkdtemp(prefix="merlin_bridge_"))
        stem = workdir / "model"
        try:
            paths = export_graph(graph, stem, rescale=self.rescale)
            variables = read_variable_map(paths[2])
            try:
                run = run_merlin(
                    self.binary,
                    paths[0],
                    paths[1],
                    workdir / "out",
                    len(variables.variables),
                    algorithm=self.algorithm,
                    ibound=self.ibound,
                    iterations=self.iterations,
                    output_format=self.output_format,
                    timeout=self.timeout,
                )
            finally:
                self._keep(workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        p_true = {name: probs[1] for name, probs in zip(variables.variables, run.output.marginals)}
        reported_exact = run.reports_exact
        exact = self.algorithm in EXACT_ALGORITHMS or (self.algorithm == "wmb" and reported_exact is True)
        log_z = run.output.log_partition + variables.log_scale
        return InferenceResult(
            marginals={name: p_true[name] for name in graph.variables},
            algorithm=algorithm,
            exact=exact,
            converged=True,
            iterations=int(run.output.iterations or 0),
            seconds=time.perf_counter() - start,
            log_partition=log_z if math.isfinite(log_z) else None,
            details={
                "merlin": str(self.binary),
                "ibound": self.ibound,
                "induced_width": run.induced_width,
                "merlin_reports_exact": reported_exact,
                "merlin_seconds": run.seconds,
                "output_format": self.output_format,
                "precision": "merlin prints marginals with 6 decimals",
                "command": " ".join(run.command),
            },
        )

    def _keep(self, workdir: Path) -> None:
        """Copy this run's files to ``keep_uai`` as ``model_NNNN.*`` (never overwriting)."""
        if self.keep_uai is None:
            return
        self.keep_uai.mkdir(parents=True, exist_ok=True)
        while True:
            self._kept += 1
            prefix = f"model_{self._kept:04d}"
            if not any(self.keep_uai.glob(prefix + ".*")):
                break
        for path in sorted(workdir.iterdir()):
            # model.uai -> model_0001.uai, out.MAR.json -> model_0001.MAR.json
            rest = path.name.split(".", 1)[1]
            shutil.copy2(path, self.keep_uai / f"{prefix}.{rest}")


__all__ = ["MerlinEngine", "MerlinError"]

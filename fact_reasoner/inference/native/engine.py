"""The native engine: exact cover enumeration when affordable, otherwise loopy BP or sampling.

Per connected component (an isolated variable keeps its prior exactly):

- ``"exact"`` (and ``"auto"`` when the vertex cover is at most ``max_exact_cover``):
  enumeration of the cover's states with the rest summed out, :func:`~.exact.exact_by_cover`.
- ``"lbp"``: loopy belief propagation on every component (exact on trees), :func:`~.bp.loopy_bp`.
- ``"sampler"``: the collapsed tempered Gibbs sampler on a vertex cover,
  :func:`~.sampling.collapsed_tempered_gibbs` (the chromatic one when the cover's dense
  matrices would be too large).
- ``"auto"`` (default): exact when the cover is at most ``max_exact_cover``; otherwise the
  sampler when the couplings are frustrated (contradictory cycles carry a noticeable share of
  the coupling weight); otherwise loopy BP from zero messages, checked from three more starts
  (the flip of its state and the two truth assignments the relations agree with best), and
  the sampler instead when a start does not converge or two fixed points are rivals (similar
  Bethe free energy). The measurements behind these choices are in
  ``scripts/benchmark_inference.py``.

Atom–atom factors (``--coherence``): nothing here assumes that atoms are independent given
the contexts. The cover is computed from the component's actual edges (:func:`~.covers.vertex_cover`),
so when atoms are joined to each other the graph is usually no longer bipartite, the cover
is the greedy one and must contain at least one end of every atom–atom edge: it grows by
about the size of a vertex cover of the atom–atom graph. While it stays within
``max_exact_cover`` the result is still exact enumeration (``exact: true``); beyond it the
component goes to loopy BP or the sampler and the output says ``exact: false``. The tree
rule (BP exact when a component has V − 1 edges) holds for any pairwise graph. With
atom–atom factors loopy BP is noticeably less accurate than the sampler
(``method="sampler"``) against exact inference; ``tests/inference/test_engines_coherence.py``
bounds both errors (figures in ``docs/measurements.md``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ...graph.factor_graph import FactorGraph
from ..base import InferenceError, InferenceResult
from .bp import BPResult, frustration_gauge, loopy_bp
from .covers import vertex_cover
from .exact import DEFAULT_MAX_EXACT_COVER, exact_by_cover
from .ising import IsingModel, ising_model, sigmoid
from .sampling import (
    COLLAPSED_MAX_ENTRIES,
    DEFAULT_BETA_MIN,
    DEFAULT_MIN_SWEEPS,
    DEFAULT_REPLICAS,
    DEFAULT_SWEEPS,
    DEFAULT_TARGET_STD_ERROR,
    DEFAULT_TEMPERATURES,
    DEFAULT_TIME_BUDGET,
    chromatic_tempered_gibbs,
    collapsed_tempered_gibbs,
)

Method = Literal["auto", "exact", "lbp", "sampler"]

logger = logging.getLogger(__name__)


@dataclass
class _ComponentOutcome:
    p: np.ndarray
    algorithm: str
    exact: bool
    converged: bool
    iterations: int
    log_partition: float | None
    info: dict[str, Any] = field(default_factory=dict)


class NativeEngine:
    """Exact cover enumeration when affordable; otherwise loopy BP or the tempered sampler.

    Options:
        method: ``"auto"`` (default), ``"exact"`` (refuses covers above ``max_exact_cover``),
            ``"lbp"`` (loopy BP on every component; exact on trees) or ``"sampler"``.
        max_exact_cover: largest cover enumerated exactly (default
            :data:`DEFAULT_MAX_EXACT_COVER`, chosen by measurement).
        damping, tolerance, max_iterations: loopy BP settings (``damping`` is applied once
            undamped updates stop contracting, and from the first iteration to a start that
            did not converge that way, see :func:`~.bp.loopy_bp`).
        frustration_threshold: in ``"auto"``, frustrated share of |J| above which loopy BP is
            not trusted and the sampler runs (random-label graphs measure ≈0.3–0.5, graphs
            whose relations mostly agree ≈0.05–0.25).
        mode_margin: in ``"auto"``, Bethe log Z gap (nats) below which two loopy BP fixed
            points are rivals (the sampler runs).
        sweeps, min_sweeps, replicas, temperatures, beta_min, time_budget, target_std_error:
            sampler settings (``beta_min``: the hottest inverse temperature) — at most
            ``sweeps`` sweeps and about ``time_budget`` seconds per component; it stops early
            once every marginal's standard error across the independent replicas is at most
            ``target_std_error`` (after ``min_sweeps``). ``converged`` is reported when that
            standard error is at most 0.01. With ``replicas=1`` there is no standard error:
            the sampler runs to ``sweeps`` or ``time_budget``, ``replica_std_error`` is
            ``None`` and ``converged`` is false; with ``temperatures=1`` no swap is proposed
            and ``swap_rate`` is ``None``. ``seed`` makes it repeatable.
    """

    name = "native"

    def __init__(
        self,
        *,
        method: Method = "auto",
        max_exact_cover: int = DEFAULT_MAX_EXACT_COVER,
        damping: float = 0.5,
        tolerance: float = 1e-7,
        max_iterations: int = 300,
        frustration_threshold: float = 0.3,
        mode_margin: float = 5.0,
        sweeps: int = DEFAULT_SWEEPS,
        min_sweeps: int = DEFAULT_MIN_SWEEPS,
        replicas: int = DEFAULT_REPLICAS,
        temperatures: int = DEFAULT_TEMPERATURES,
        beta_min: float = DEFAULT_BETA_MIN,
        time_budget: float = DEFAULT_TIME_BUDGET,
        target_std_error: float = DEFAULT_TARGET_STD_ERROR,
        seed: int | None = 0,
        chunk_elements: int = 1 << 18,
    ) -> None:
        if method not in ("auto", "exact", "lbp", "sampler"):
            raise ValueError(f"method must be auto, exact, lbp or sampler, not {method!r}")
        if max_exact_cover < 0 or max_exact_cover > 40:
            raise ValueError("max_exact_cover must lie in [0, 40]")
        if not 0.0 <= damping < 1.0:
            raise ValueError("damping must lie in [0, 1)")
        if tolerance <= 0 or max_iterations < 1:
            raise ValueError("tolerance must be positive and max_iterations at least 1")
        if sweeps < 1 or min_sweeps < 0 or replicas < 1 or temperatures < 1:
            raise ValueError("sweeps, replicas and temperatures must be at least 1, min_sweeps ≥ 0")
        if time_budget <= 0 or target_std_error <= 0:
            raise ValueError("time_budget and target_std_error must be positive")
        if not 0.0 < beta_min <= 1.0:
            raise ValueError("beta_min must lie in (0, 1]")
        self.method = method
        self.max_exact_cover = max_exact_cover
        self.damping = damping
        self.tolerance = tolerance
        self.max_iterations = max_iterations
        self.frustration_threshold = frustration_threshold
        self.mode_margin = mode_margin
        self.sweeps = sweeps
        self.min_sweeps = min_sweeps
        self.replicas = replicas
        self.temperatures = temperatures
        self.beta_min = beta_min
        self.time_budget = time_budget
        self.target_std_error = target_std_error
        self.seed = seed
        self.chunk_elements = chunk_elements

    def infer(self, graph: FactorGraph) -> InferenceResult:
        start = time.perf_counter()
        rng = np.random.default_rng(self.seed)
        p = graph.prior.astype(float).copy()
        log_z: float | None = 0.0
        exact = converged = True
        iterations = 0
        algorithms: dict[str, int] = {}
        components = []
        isolated = 0
        members_list = graph.components()
        for members in members_list:
            if len(members) == 1:
                isolated += 1  # no factor: the marginal is the prior, exactly (adds 0 to ln Z)
                continue
            sub = graph if len(members_list) == 1 else graph.subgraph(members)
            model = ising_model(sub)
            outcome = self._component(model, rng)
            p[members] = outcome.p
            exact &= outcome.exact
            converged &= outcome.converged
            iterations = max(iterations, outcome.iterations)
            if log_z is not None and outcome.log_partition is not None:
                log_z += outcome.log_partition
            else:
                log_z = None
            algorithms[outcome.algorithm] = algorithms.get(outcome.algorithm, 0) + 1
            components.append({"variables": int(len(members)), "algorithm": outcome.algorithm, **outcome.info})
        if isolated:
            algorithms["prior"] = isolated
        if not np.all(np.isfinite(p)):
            raise InferenceError("inference produced a non-finite marginal")
        algorithm = "+".join(sorted(algorithms)) if algorithms else "prior"
        return InferenceResult(
            marginals=dict(zip(graph.variables, np.clip(p, 0.0, 1.0).tolist())),
            algorithm=algorithm,
            exact=bool(exact),
            converged=bool(converged),
            iterations=int(iterations),
            seconds=time.perf_counter() - start,
            log_partition=float(log_z) if (log_z is not None and exact) else None,
            details={
                "method": self.method,
                "max_exact_cover": self.max_exact_cover,
                "isolated_variables": isolated,
                "components": components,
            },
        )

    # ---- per component

    def _component(self, model: IsingModel, rng: np.random.Generator) -> _ComponentOutcome:
        v, e = model.num_variables, len(model.s)
        is_tree = e == v - 1  # a connected component with V−1 edges has no cycle
        if self.method == "lbp" or (is_tree and self.method == "auto"):
            return self._bp(model, is_tree)
        if self.method == "sampler":
            return self._sample(model, rng, {})
        cover, how = vertex_cover(model, self.max_exact_cover)
        info: dict[str, Any] = {"cover": None if cover is None else int(len(cover)), "cover_method": how}
        if cover is not None and len(cover) <= self.max_exact_cover:
            p, log_z = exact_by_cover(model, cover, self.chunk_elements)
            return _ComponentOutcome(p, "exact-cover", True, True, 0, log_z, info)
        if self.method == "exact":
            size = f"more than {self.max_exact_cover}" if cover is None else str(len(cover))
            raise InferenceError(
                f"exact inference needs a vertex cover of {size} variables on a component of "
                f"{v} variables; the limit is max_exact_cover={self.max_exact_cover} "
                "(each extra variable doubles the time); use method='auto'"
            )
        # Cheapest test first: frustrated couplings make loopy BP unreliable whatever it does,
        # so BP is not even run then.
        frustrated, gauge = frustration_gauge(model)
        info["frustration"] = round(frustrated, 4)
        if frustrated > self.frustration_threshold:
            info["sampler_reason"] = f"frustrated couplings ({frustrated:.3f} of |J|)"
            logger.debug("component of %d variables: sampling, %s", v, info["sampler_reason"])
            return self._sample(model, rng, info, cover if cover is not None and len(cover) else None)
        bp = self._bp(model, False, gauge=gauge)
        info |= bp.info
        reasons = []
        if not bp.converged:
            reasons.append("loopy BP did not converge from every start")
        if bp.info.get("rival_fixed_points"):
            reasons.append("loopy BP has rival fixed points of similar Bethe free energy")
        if not reasons:
            bp.info = info
            return bp
        info["sampler_reason"] = "; ".join(reasons)
        logger.debug("component of %d variables: sampling, %s", v, info["sampler_reason"])
        # iterations = the sampler's sweeps; the BP iterations spent deciding are in the info
        return self._sample(model, rng, info, cover if cover is not None and len(cover) else None)

    def _bp(self, model: IsingModel, is_tree: bool, gauge: np.ndarray | None = None) -> _ComponentOutcome:
        """Loopy BP from zero messages; with a ``gauge``, checked from three more starts.

        The check starts are the flip of the state the first run settled in and the two
        truth assignments the couplings agree with best (``gauge`` and its flip): on a dense,
        barely frustrated graph these are the candidate modes of the posterior, and a start
        that is already a self-consistent state converges in a few iterations. The fixed point
        with the best Bethe log Z is kept. Fixed points that differ from it by more than 1e-3
        and lie within ``mode_margin`` nats of its Bethe log Z are rivals: the posterior is
        multimodal and a single fixed point cannot represent it. The check is skipped when the
        first run did not converge (the caller samples then). A start counts as not converged
        only when damping from its first iteration did not converge either (see
        :func:`~.bp.loopy_bp`).
        """
        settings: dict[str, Any] = dict(
            # undamped flooding BP is exact on a tree after (diameter + 1) sweeps
            damping=0.0 if is_tree else self.damping,
            tolerance=self.tolerance,
            max_iterations=self.max_iterations,
        )
        result = loopy_bp(model, **settings)
        info: dict[str, Any] = {"bp_layout": result.layout, "bp_iterations": result.iterations}
        iterations = result.iterations
        check = gauge is not None and bool(result.converged.all())
        if gauge is not None and check:
            settled = (result.log_odds[0] > 0).astype(float)
            runs = [result]
            # one start at a time: R × V × V batches fall out of cache and run slower than R runs
            for start in (1.0 - settled, (gauge > 0).astype(float), (gauge < 0).astype(float)):
                runs.append(loopy_bp(model, starts=start[None, :], **settings))
                iterations += runs[-1].iterations
            result = BPResult(
                np.vstack([run.log_odds for run in runs]),
                np.concatenate([run.converged for run in runs]),
                iterations,
                np.concatenate([run.max_change for run in runs]),
                np.concatenate([run.bethe for run in runs]),
                result.layout,
                sum(run.damped_restarts for run in runs),
            )
            info["bp_iterations"] = iterations
        if result.damped_restarts:
            info["bp_damped_restarts"] = result.damped_restarts
        beliefs = sigmoid(result.log_odds)
        info["bp_max_change"] = float(result.max_change.max())
        best = 0
        if check:
            bethe = np.where(result.converged, result.bethe, -np.inf)
            best = int(np.argmax(bethe)) if result.converged.any() else 0
            distinct = np.abs(beliefs - beliefs[best]).max(axis=1) > 1e-3
            rivals = distinct & result.converged & (bethe > bethe[best] - self.mode_margin)
            info |= {
                "bp_starts": len(beliefs),
                "bp_fixed_points": int(1 + len({tuple(np.round(b, 3)) for b in beliefs[distinct & result.converged]})),
                "bethe_log_z": [round(float(x), 3) for x in result.bethe],
                "rival_fixed_points": int(rivals.sum()),
            }
        converged = bool(result.converged.all())
        exact = is_tree and converged
        name = "belief-propagation-tree" if is_tree else "loopy-bp"
        return _ComponentOutcome(beliefs[best], name, exact, converged, iterations, None, info)

    def _sample(
        self,
        model: IsingModel,
        rng: np.random.Generator,
        info: dict[str, Any],
        cover: np.ndarray | None = None,
    ) -> _ComponentOutcome:
        """The collapsed tempered sampler on a vertex cover (chromatic one if too large)."""
        if cover is None:
            found, how = vertex_cover(model)
            assert found is not None  # without a limit a cover is always found
            cover = found
            info = info | {"cover": int(len(cover)), "cover_method": how}
        k = len(cover)
        if k * (model.num_variables) <= COLLAPSED_MAX_ENTRIES:
            result = collapsed_tempered_gibbs(
                model,
                cover,
                rng,
                max_sweeps=self.sweeps,
                min_sweeps=self.min_sweeps,
                replicas=self.replicas,
                temperatures=self.temperatures,
                beta_min=self.beta_min,
                time_budget=self.time_budget,
                target_std_error=self.target_std_error,
            )
            sampler = f"collapsed on {k} cover variables"
        else:
            result = chromatic_tempered_gibbs(
                model,
                rng,
                sweeps=self.sweeps,
                burn_in=min(self.min_sweeps, self.sweeps),
                replicas=self.replicas,
                temperatures=self.temperatures,
                beta_min=self.beta_min,
                time_budget=self.time_budget,
            )
            sampler = "chromatic (every variable sampled)"
        info = info | {
            "sampler": sampler,
            "sweeps": result.sweeps,
            "sampler_seconds": round(result.seconds, 3),
            "stopped_by": result.stopped_by,
            # None (null in JSON) where undefined: one replica, or one temperature
            "replica_std_error": None if result.spread is None else round(result.spread, 5),
            "swap_rate": None if result.swap_rate is None else round(result.swap_rate, 3),
        }
        # "converged": independent replicas agree to within 0.01 (standard error); with one
        # replica there is nothing to check that against, so it is not claimed
        converged = result.spread is not None and result.spread <= 0.01
        return _ComponentOutcome(result.p, "tempered-gibbs", False, converged, result.sweeps, None, info)

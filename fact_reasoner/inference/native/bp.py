"""Loopy belief propagation on the Ising form, its Bethe free energy, and a frustration measure.

Sum-product loopy BP on log-odds messages::

    m_{s→t} = softplus(θ_{s\\t} + J_st) − softplus(θ_{s\\t}),   θ_{s\\t} = h_s + Σ_{r≠t} m_{r→s},

flooding schedule, undamped until the updates stop contracting and damped in the log-odds
domain from then on. Dense graphs (FR2/FR3 with every pair judged) use V × V message matrices,
sparse ones edge lists. Exact on forests. Several starts can run at once; the Bethe estimate of
log Z ranks the fixed points they reach.

Loopy BP is reliable when the couplings are nearly unfrustrated (all relations consistent with
one truth assignment); :func:`frustration_gauge` measures how far a model is from that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import breadth_first_order, minimum_spanning_tree

from .ising import IsingModel, coupling_message, sigmoid, softplus


@dataclass
class BPResult:
    log_odds: np.ndarray  # (R, V) beliefs, one row per start
    converged: np.ndarray  # (R,) bool
    iterations: int
    max_change: np.ndarray  # (R,)
    bethe: np.ndarray  # (R,) Bethe estimate of log Z at the final messages
    layout: str = "sparse"  # "dense" (V × V message matrices) or "sparse" (edge lists)
    damped_restarts: int = 0  # starts run again damped from the first iteration (see loopy_bp)


#: Dense message matrices are used when the graph has at least this share of all possible
#: edges (FR2/FR3 with every pair judged: 0.4–0.9) and at most DENSE_BP_MAX_VARIABLES
#: variables. Contiguous V × V arithmetic avoids the gathers and scatter-adds of the edge-list
#: form, and runs such graphs in well under half the time (``docs/measurements.md``).
DENSE_BP_MIN_DENSITY = 0.25
DENSE_BP_MAX_VARIABLES = 1000


def _use_dense(model: IsingModel, dense: bool | None) -> bool:
    if dense is not None:
        return dense
    v = model.num_variables
    return 1 < v <= DENSE_BP_MAX_VARIABLES and 2 * len(model.s) >= DENSE_BP_MIN_DENSITY * v * (v - 1)


def loopy_bp(
    model: IsingModel,
    *,
    damping: float = 0.5,
    tolerance: float = 1e-8,
    max_iterations: int = 500,
    starts: np.ndarray | None = None,
    adaptive: bool = True,
    dense: bool | None = None,
) -> BPResult:
    """Sum-product loopy BP in log-odds form, for R starting points at once.

    ``starts`` (R, V) in [0, 1] sets the initial messages as if every sender were sure of that
    state: m_{s→t} = softplus(θ + J) − softplus(θ) with θ = ±8 — different starts can reach
    different fixed points, which is how unreliability is detected; a NaN row means zero
    messages. ``None``: one start with zero messages.

    Update m ← (1 − d)·m_new + d·m_old. With ``adaptive`` each start runs undamped (d = 0)
    until its largest message change grows from one iteration to the next (oscillation), and
    with d = ``damping`` from then on; damping changes the path, not the fixed points, and
    undamped flooding converges in a few iterations on the well-determined dense graphs that
    dominate FR2/FR3. Stops when every start changed no message by more than ``tolerance``.
    ``dense``: V × V message matrices (``None``: chosen by density, see
    :data:`DENSE_BP_MIN_DENSITY`).

    A start that the adaptive schedule leaves unconverged after ``max_iterations`` is run
    again from its initial messages with d = ``damping`` from the first iteration (counted in
    ``damped_restarts``; ``iterations`` then counts both runs), and that result replaces the
    first where it converges. The restart is there because where the undamped phase ends is
    decided by comparing two message changes in a transient that, from a saturated start, is
    chaotic: a difference in the last bit of a sum or an exp (another numpy build, another
    CPU's SIMD kernels) moves the switch, and from some switch points the damped iteration is
    caught in a limit cycle. Damping from the first iteration follows a stable path: on the
    graphs where the adaptive schedule failed, no last-bit perturbation of h changed whether
    it converged.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError("damping must lie in [0, 1)")
    if starts is None:
        starts = np.full((1, model.num_variables), np.nan)
    use_dense = _use_dense(model, dense) and len(model.s) > 0
    result = _flooding_bp(model, starts, damping, adaptive, tolerance, max_iterations, use_dense)
    failed = np.flatnonzero(~result.converged)
    if adaptive and damping and len(failed):
        retry = _flooding_bp(model, starts[failed], damping, False, tolerance, max_iterations, use_dense)
        fixed = failed[retry.converged]  # where the restart fails too, the first run's state stays
        result.log_odds[fixed] = retry.log_odds[retry.converged]
        result.converged[fixed] = True
        result.max_change[fixed] = retry.max_change[retry.converged]
        result.bethe[fixed] = retry.bethe[retry.converged]
        result.iterations += retry.iterations
        result.damped_restarts = len(failed)
    return result


def _flooding_bp(
    model: IsingModel,
    starts: np.ndarray,
    damping: float,
    adaptive: bool,
    tolerance: float,
    max_iterations: int,
    use_dense: bool,
) -> BPResult:
    """One run of :func:`loopy_bp`'s flooding iteration from ``starts`` (R, V), no restart."""
    v, s, t, coupling = model.num_variables, model.s, model.t, model.J
    r = len(starts)
    theta0 = np.where(starts >= 0.5, 8.0, -8.0)
    known = ~np.isnan(starts)
    d = np.full(r, 0.0 if adaptive else damping)
    converged = np.zeros(r, dtype=bool)
    change = np.full(r, np.inf)
    iterations = 0
    if use_dense:
        exp_j = model.dense_exp_coupling
        # messages[r, a, b] = m_{a→b}; zero where there is no edge (J = 0 makes it stay 0)
        init = np.broadcast_to(np.where(known, theta0, 0.0)[:, :, None], (r, v, v)).copy()
        messages = (
            np.where(known[:, :, None], coupling_message(init, exp_j), 0.0) if known.any() else np.zeros((r, v, v))
        )
        for iterations in range(1, max_iterations + 1):  # noqa: B007 - the count is read after the loop
            belief = model.h + messages.sum(axis=1)
            cavity = belief[:, :, None] - messages.transpose(0, 2, 1)  # θ_{a\b} = B_a − m_{b→a}
            new = coupling_message(cavity, exp_j)
            step = new - messages
            previous, change = change, np.abs(step).reshape(r, -1).max(axis=1)
            if adaptive and damping:
                d = np.where(change > previous, damping, d)
            messages = messages + (1.0 - d)[:, None, None] * step
            converged = change <= tolerance
            if converged.all():
                break
        belief = model.h + messages.sum(axis=1)
        to_t, to_s = messages[:, s, t], messages[:, t, s]
    else:
        row_offset = (np.arange(r) * v)[:, None]
        flat_t, flat_s = (t + row_offset).ravel(), (s + row_offset).ravel()

        def incoming(into_t: np.ndarray, into_s: np.ndarray) -> np.ndarray:
            """Σ of the messages each variable receives, per start: (R, V)."""
            total = np.bincount(flat_t, into_t.ravel(), minlength=r * v)
            total += np.bincount(flat_s, into_s.ravel(), minlength=r * v)
            return total.reshape(r, v)

        to_t = np.where(known[:, s], softplus(theta0[:, s] + coupling) - softplus(theta0[:, s]), 0.0)
        to_s = np.where(known[:, t], softplus(theta0[:, t] + coupling) - softplus(theta0[:, t]), 0.0)
        exp_coupling = np.exp(coupling)
        for iterations in range(1, max_iterations + 1):  # noqa: B007 - the count is read after the loop
            belief = model.h + incoming(to_t, to_s)
            step_t = coupling_message(belief[:, s] - to_s, exp_coupling) - to_t
            step_s = coupling_message(belief[:, t] - to_t, exp_coupling) - to_s
            previous = change
            change = np.maximum(np.abs(step_t).max(axis=1, initial=0), np.abs(step_s).max(axis=1, initial=0))
            if adaptive and damping:
                d = np.where(change > previous, damping, d)
            keep = (1.0 - d)[:, None]
            to_t = to_t + keep * step_t
            to_s = to_s + keep * step_s
            converged = change <= tolerance
            if converged.all():
                break
        belief = model.h + incoming(to_t, to_s)
    return BPResult(
        belief,
        converged,
        iterations,
        change,
        bethe_log_partition(model, belief, to_t, to_s),
        "dense" if use_dense else "sparse",
    )


def bethe_log_partition(model: IsingModel, belief: np.ndarray, to_t: np.ndarray, to_s: np.ndarray) -> np.ndarray:
    r"""−F_Bethe at the current messages, one value per start (R,).

    −F = Σ_e Σ b_e (log ψ_e − log b_e) + Σ_v Σ b_v log φ_v + Σ_v (d_v − 1) H(b_v) + const, with
    b_v = σ(B_v) and b_e(x_s, x_t) ∝ exp(J x_s x_t + a x_s + b x_t), where the cavity fields
    a = θ_{s\t} = B_s − m_{t→s} and b = θ_{t\s} already hold h (so φ is counted once, in b_v).
    In closed form the edge term is log Z_e − a·b_e(x_s=1) − b·b_e(x_t=1) with
    log Z_e = log(1 + e^a + e^b + e^{a+b+J}) = softplus(a) + softplus(b + μ(a)),
    b_e(x_t=1) = σ(b + μ(a)), b_e(x_s=1) = σ(a + μ(b)), μ(θ) = softplus(θ + J) − softplus(θ).
    At a fixed point it approximates log Z; it ranks the fixed points that different starts
    reach.
    """
    s, t, coupling = model.s, model.t, model.J
    edge = np.empty(len(belief))
    for row in range(len(belief)):  # one start at a time: the (E,) temporaries stay in cache
        cav_s = belief[row, s] - to_s[row]
        cav_t = belief[row, t] - to_t[row]
        into_t = cav_t + softplus(cav_s + coupling) - softplus(cav_s)  # b + μ(a)
        into_s = cav_s + softplus(cav_t + coupling) - softplus(cav_t)  # a + μ(b)
        terms = softplus(cav_s) + softplus(into_t) - cav_s * sigmoid(into_s) - cav_t * sigmoid(into_t)
        edge[row] = terms.sum()
    p = sigmoid(belief)
    entropy_v = -(p * np.log(np.clip(p, 1e-300, 1)) + (1 - p) * np.log(np.clip(1 - p, 1e-300, 1)))
    degree = np.bincount(np.r_[s, t], minlength=model.num_variables)
    # single-variable terms: E_b[h x] and the Bethe entropy correction (1 − d_v) H(b_v);
    # edge terms already contain each end's entropy once, hence (1 − d_v) not −d_v
    unary = (p * model.h).sum(axis=1) + ((1 - degree) * entropy_v).sum(axis=1)
    return model.const + edge + unary


def _prim_gauge(signed: np.ndarray) -> np.ndarray:
    """Signs propagated along a maximum-|J| spanning forest grown by Prim's algorithm (dense J)."""
    v = len(signed)
    # the same weights |J| + 1e-12 as the sparse construction, so that both pick the same forest
    weight = np.abs(signed) + np.where(signed != 0, 1e-12, 0.0)
    gauge = np.ones(v)
    key = np.zeros(v)  # best |J| linking each variable to the tree so far (0: none)
    parent = -np.ones(v, dtype=np.int64)
    outside = np.ones(v, dtype=bool)
    for _ in range(v):
        u = int(np.argmax(np.where(outside, key, -1.0)))
        if key[u] > 0:  # else u starts a new tree of the forest, with sign +1
            gauge[u] = gauge[parent[u]] * (1.0 if signed[u, parent[u]] >= 0 else -1.0)
        outside[u] = False
        better = outside & (weight[u] > key)
        key[better] = weight[u, better]
        parent[better] = u
    return gauge


def frustration_gauge(model: IsingModel, dense: bool | None = None) -> tuple[float, np.ndarray]:
    """Share of |J| on couplings that disagree with the best gauge found, and that gauge.

    A model is unfrustrated when signs σ_v ∈ {±1} exist with σ_s σ_t sign(J_st) > 0 for every
    edge (all relations consistent with one truth assignment); then loopy BP is reliable. The
    gauge is fixed along a maximum-|J| spanning forest, then improved by a few majority moves;
    edges that disagree with it close contradictory cycles. Returns their |J| share
    (0 = unfrustrated) and σ (V,) — the truth assignment, up to a global flip per component,
    that the relations agree with best. ``dense``: dense J and Prim's algorithm (``None``: by
    density, as in :func:`loopy_bp`); otherwise sparse matrices and scipy's spanning tree.
    """
    v, s, t, coupling = model.num_variables, model.s, model.t, model.J
    gauge = np.ones(v)
    if len(s) == 0:
        return 0.0, gauge
    weight = np.abs(coupling) + 1e-12
    if _use_dense(model, dense):
        signed = model.dense_coupling
        gauge = _prim_gauge(signed)
    else:
        signed = model.coupling_matrix()
        tree = minimum_spanning_tree(sparse.csr_matrix((-weight, (s, t)), shape=(v, v))).tocoo()
        tree_sign = np.where(np.asarray(signed[tree.row, tree.col]).ravel() >= 0, 1.0, -1.0)
        forest = sparse.csr_matrix((tree_sign, (tree.row, tree.col)), shape=(v, v))
        forest = (forest + forest.T).tocsr()
        seen = np.zeros(v, dtype=bool)
        for root in range(v):
            if seen[root]:
                continue
            order, pred = breadth_first_order(forest, root, directed=False)
            seen[order] = True
            children = order[1:]
            step = np.asarray(forest[children, pred[children]]).ravel()  # sign of the tree edge
            for node, parent, sign in zip(children.tolist(), pred[children].tolist(), step.tolist()):
                gauge[node] = gauge[parent] * sign  # BFS order: parents are set first
    # improve the gauge by zero-temperature majority moves, keeping the best seen
    best = float(weight[gauge[s] * gauge[t] * coupling < 0].sum())
    for sweep in range(10):
        proposal = np.where(signed @ gauge >= 0, 1.0, -1.0)
        flip = (proposal != gauge) & (np.arange(v) % 2 == sweep % 2)  # half the flips: no 2-cycles
        candidate = np.where(flip, proposal, gauge)
        value = float(weight[candidate[s] * candidate[t] * coupling < 0].sum())
        if value < best:
            best, gauge = value, candidate
        elif not flip.any():
            break
    return best / float(weight.sum()), gauge


def frustration(model: IsingModel) -> float:
    """The frustrated share of |J| from :func:`frustration_gauge`."""
    return frustration_gauge(model)[0]

"""The native engine: exact inference by conditioning on a vertex cover, loopy BP, and a
parallel-tempering Gibbs sampler for graphs where loopy BP is unreliable.

Every pairwise binary model is first rewritten in *Ising form* (exactly, no approximation)::

    log P̃(x) = const + Σ_v h_v x_v + Σ_{(s,t)} J_st x_s x_t ,   x ∈ {0, 1}^V

with, for a table L = log table_e and prior p_v,
``h_v = log(p_v/(1−p_v)) + Σ_e [L10 − L00 (v = source) or L01 − L00 (v = target)]`` and
``J_e = L11 − L10 − L01 + L00``; parallel factors on the same pair are merged (J's add up).

Exact (``method="exact"``, and ``"auto"`` when the cover is small). Let C be a vertex cover of
a connected component and U the other variables: U is an independent set, so given x_C the
x_u are independent and can be summed out in closed form::

    log w(x_C) = Σ_{c∈C} h_c x_c + Σ_{c<c'} J_cc' x_c x_c' + Σ_{u∈U} softplus(d_u(x_C)),
    d_u(x_C)  = h_u + Σ_c J_uc x_c ,
    Z = e^const Σ_{x_C} w(x_C),   P(x_c=1) = E_w[x_c],   P(x_u=1) = E_w[σ(d_u(x_C))].

The 2^|C| states are enumerated in chunks (numpy, log space with a running maximum). C is a
minimum vertex cover for bipartite components (FR1/FR2: Hopcroft–Karp matching + König's
theorem) and the complement of a greedy minimum-degree independent set otherwise (for FR3 the
atoms form an independent set, so C ⊆ contexts).

Approximate (cover larger than ``max_exact_cover``):

- ``"lbp"``: sum-product loopy belief propagation on log-odds messages,
  ``m_{s→t} = softplus(θ_{s\\t} + J_st) − softplus(θ_{s\\t})`` with the cavity field
  ``θ_{s\\t} = h_s + Σ_{r≠t} m_{r→s}``, flooding schedule, undamped until the updates stop
  contracting and damped in the log-odds domain from then on. Dense graphs (FR2/FR3) use
  V × V message matrices, sparse ones edge lists. Exact on forests.
- ``"sampler"``: Gibbs sampling on the vertex cover C with the independent rest U summed out
  exactly (the same collapse as the exact path: on FR3 only contexts are sampled, never atoms),
  many chains at once as a batch: independent replicas, each a ladder of inverse temperatures
  β with swaps between neighbours (parallel tempering). Estimates are Rao-Blackwellised:
  P(x_u=1) ≈ mean σ(d_u(x_C)), P(x_c=1) ≈ mean of its conditional, at β = 1. It stops when
  the replicas agree (standard error), on a time budget, or after a number of sweeps.
- ``"auto"`` (default): exact when the cover is at most ``max_exact_cover``; otherwise the
  sampler when the couplings are frustrated (contradictory cycles carry a noticeable share of
  the coupling weight); otherwise loopy BP from zero messages, checked from three more starts
  (the flip of its state and the two truth assignments the relations agree with best), and
  the sampler instead when a start does not converge or two fixed points are rivals (similar
  Bethe free energy). The measurements behind these choices are in
  ``scripts/benchmark_inference.py``.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import breadth_first_order, maximum_bipartite_matching

from ..graph import FactorGraph
from .base import InferenceError, InferenceResult

Method = Literal["auto", "exact", "lbp", "sampler"]

#: Largest vertex cover enumerated exactly by default. Measured on the 2-core CPU this project
#: runs on (``scripts/benchmark_inference.py --cover-timing``): 2^20 states with 40 summed-out
#: variables take ≈0.5 s, 2^22 with 60 take ≈3 s; each extra cover variable doubles the time.
DEFAULT_MAX_EXACT_COVER = 22


# --------------------------------------------------------------------------------------------
# Ising form


@dataclass(frozen=True)
class IsingModel:
    """log P̃(x) = const + h·x + Σ_e J_e x_s(e) x_t(e), with s < t and no repeated pair."""

    h: np.ndarray
    const: float
    s: np.ndarray
    t: np.ndarray
    J: np.ndarray

    @property
    def num_variables(self) -> int:
        return len(self.h)

    def log_weight(self, x: np.ndarray) -> np.ndarray:
        """log P̃(x) − const for states ``x`` of shape (..., V)."""
        return x @ self.h + (x[..., self.s] * x[..., self.t]) @ self.J

    @cached_property
    def dense_coupling(self) -> np.ndarray:
        """Symmetric dense J (V × V), zero where there is no edge; computed once."""
        j = np.zeros((self.num_variables, self.num_variables))
        j[self.s, self.t] = self.J
        j[self.t, self.s] = self.J
        return j

    @cached_property
    def dense_exp_coupling(self) -> np.ndarray:
        """e^J for :attr:`dense_coupling` (1 where there is no edge)."""
        return np.exp(self.dense_coupling)

    def coupling_matrix(self) -> sparse.csr_matrix:
        """Symmetric sparse J (V × V)."""
        v = self.num_variables
        rows = np.concatenate([self.s, self.t])
        cols = np.concatenate([self.t, self.s])
        return sparse.csr_matrix((np.concatenate([self.J, self.J]), (rows, cols)), shape=(v, v))


def ising_model(graph: FactorGraph) -> IsingModel:
    """The exact Ising form of ``graph`` (see the module docstring for the formula)."""
    p = graph.prior
    if np.any((p <= 0) | (p >= 1)):
        raise InferenceError("unary priors must lie strictly between 0 and 1")
    if graph.num_factors and np.any(graph.tables <= 0):
        raise InferenceError("factor tables must be strictly positive (clamp the probabilities)")
    h = np.log(p) - np.log1p(-p)
    const = float(np.log1p(-p).sum())
    s, t = graph.source.astype(np.int64), graph.target.astype(np.int64)
    if graph.num_factors == 0:
        empty = np.zeros(0, dtype=np.int64)
        return IsingModel(h, const, empty, empty, np.zeros(0))
    log_t = np.log(graph.tables)
    l00, l01, l10, l11 = log_t[:, 0, 0], log_t[:, 0, 1], log_t[:, 1, 0], log_t[:, 1, 1]
    const += float(l00.sum())
    h = h + np.bincount(s, l10 - l00, minlength=len(h)) + np.bincount(t, l01 - l00, minlength=len(h))
    coupling = l11 - l10 - l01 + l00
    lo, hi = np.minimum(s, t), np.maximum(s, t)
    key = lo * len(h) + hi
    unique, inverse = np.unique(key, return_inverse=True)
    merged = np.bincount(inverse, coupling, minlength=len(unique))
    return IsingModel(h, const, unique // len(h), unique % len(h), merged)


def _softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), stable for any x."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


# --------------------------------------------------------------------------------------------
# Vertex covers


def _two_colouring(v: int, s: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """0/1 colour per vertex if the graph is bipartite, else ``None`` (BFS parity)."""
    adjacency = sparse.csr_matrix((np.ones(2 * len(s)), (np.r_[s, t], np.r_[t, s])), shape=(v, v))
    colour = -np.ones(v, dtype=np.int64)
    for root in range(v):
        if colour[root] >= 0:
            continue
        order, predecessors = breadth_first_order(adjacency, root, directed=False)
        colour[root] = 0
        for node in order[1:]:  # BFS order: a predecessor is coloured before its children
            colour[node] = 1 - colour[predecessors[node]]
    if np.any(colour[s] == colour[t]):
        return None
    return colour


def _koenig_cover(v: int, s: np.ndarray, t: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """Minimum vertex cover of a bipartite graph (Hopcroft–Karp matching + König's theorem).

    With L = colour 0, R = colour 1 and Z the vertices reachable from unmatched L vertices by
    alternating paths, the cover is (L \\ Z) ∪ (R ∩ Z).
    """
    left = np.flatnonzero(colour == 0)
    right = np.flatnonzero(colour == 1)
    li = -np.ones(v, dtype=np.int64)
    li[left] = np.arange(len(left))
    li[right] = np.arange(len(right))
    a = np.where(colour[s] == 0, s, t)  # the left end of each edge
    b = np.where(colour[s] == 0, t, s)
    bi = sparse.csr_matrix((np.ones(len(a)), (li[a], li[b])), shape=(len(left), len(right)))
    match_of_left = maximum_bipartite_matching(bi, perm_type="column")  # right index or -1
    match_of_right = -np.ones(len(right), dtype=np.int64)
    matched = match_of_left >= 0
    match_of_right[match_of_left[matched]] = np.flatnonzero(matched)
    visited_left = ~matched
    visited_right = np.zeros(len(right), dtype=bool)
    frontier = list(np.flatnonzero(~matched))
    indptr, indices = bi.indptr, bi.indices
    while frontier:
        nxt = []
        for u in frontier:  # non-matching edges L→R, then matching edges R→L
            for r in indices[indptr[u] : indptr[u + 1]]:
                if not visited_right[r]:
                    visited_right[r] = True
                    m = match_of_right[r]
                    if m >= 0 and not visited_left[m]:
                        visited_left[m] = True
                        nxt.append(m)
        frontier = nxt
    return np.sort(np.concatenate([left[~visited_left], right[visited_right]]))


def _greedy_cover(v: int, s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Complement of a greedy minimum-degree maximal independent set, minus redundant vertices."""
    neighbours: list[set[int]] = [set() for _ in range(v)]
    for a, b in zip(s.tolist(), t.tolist()):
        neighbours[a].add(b)
        neighbours[b].add(a)
    degree = [len(n) for n in neighbours]
    alive = [True] * v
    heap = [(degree[i], i) for i in range(v)]
    heapq.heapify(heap)
    independent = []
    while heap:
        d, u = heapq.heappop(heap)
        if not alive[u] or d != degree[u]:
            continue
        independent.append(u)
        alive[u] = False
        for w in neighbours[u]:
            if alive[w]:
                alive[w] = False
                for x in neighbours[w]:
                    if alive[x]:
                        degree[x] -= 1
                        heapq.heappush(heap, (degree[x], x))
    in_cover = np.ones(v, dtype=bool)
    in_cover[independent] = False
    for u in np.flatnonzero(in_cover):  # drop cover vertices whose neighbours are all covered
        if all(in_cover[w] for w in neighbours[u]):
            in_cover[u] = False
    return np.flatnonzero(in_cover)


def vertex_cover(model: IsingModel, limit: int | None = None) -> tuple[np.ndarray | None, str]:
    """A small vertex cover and how it was found; ``None`` if it surely exceeds ``limit``.

    Lower bound used to skip the search on large graphs: |C| ≥ E / max degree.
    """
    v, s, t = model.num_variables, model.s, model.t
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64), "empty"
    if limit is not None:
        degree = np.bincount(np.r_[s, t], minlength=v)
        if len(s) / degree.max() > limit:
            return None, "lower bound"
    colour = _two_colouring(v, s, t)
    if colour is not None:
        return _koenig_cover(v, s, t, colour), "minimum (bipartite, König)"
    return _greedy_cover(v, s, t), "greedy (minimum-degree independent set)"


# --------------------------------------------------------------------------------------------
# Exact enumeration over a cover


def _bits(count: int, width: int, start: int = 0) -> np.ndarray:
    """Rows = states start..start+count−1 as 0/1 floats, most significant bit first."""
    if width == 0:
        return np.zeros((count, 0))
    states = np.arange(start, start + count, dtype=np.int64)
    return ((states[:, None] >> np.arange(width - 1, -1, -1)) & 1).astype(float)


def exact_by_cover(
    model: IsingModel,
    cover: np.ndarray,
    chunk_elements: int = 1 << 18,
    factorise_exponentials: bool = True,
) -> tuple[np.ndarray, float]:
    """Exact P(x_v = 1) and log Z by enumerating the 2^|cover| states (module docstring)."""
    v = model.num_variables
    cover = np.asarray(cover, dtype=np.int64)
    in_cover = np.zeros(v, dtype=bool)
    in_cover[cover] = True
    rest = np.flatnonzero(~in_cover)
    if np.any(~in_cover[model.s] & ~in_cover[model.t]):
        raise ValueError("not a vertex cover: an edge joins two uncovered variables")
    k, n_rest = len(cover), len(rest)
    pos = -np.ones(v, dtype=np.int64)
    pos[cover] = np.arange(k)
    pos[rest] = np.arange(n_rest)
    both = in_cover[model.s] & in_cover[model.t]
    j_cc = np.zeros((k, k))  # upper-or-lower entries; the quadratic form counts each edge once
    np.add.at(j_cc, (pos[model.s[both]], pos[model.t[both]]), model.J[both])
    j_cc = np.triu(j_cc) + np.tril(j_cc).T - np.diag(np.diag(j_cc))
    one = ~both
    u_end = np.where(in_cover[model.s[one]], model.t[one], model.s[one])
    c_end = np.where(in_cover[model.s[one]], model.s[one], model.t[one])
    j_uc = np.zeros((n_rest, k))
    np.add.at(j_uc, (pos[u_end], pos[c_end]), model.J[one])
    h_c, h_u = model.h[cover], model.h[rest]

    cols = n_rest + 1
    k_lo = int(min(k, max(0, np.floor(np.log2(max(chunk_elements // cols, 1))))))
    k_hi = k - k_lo
    lo, hi = slice(k_hi, k), slice(0, k_hi)
    x_lo = _bits(2**k_lo, k_lo)
    d_lo = x_lo @ j_uc[:, lo].T  # (2^k_lo, |U|)
    e_lo = x_lo @ h_c[lo] + np.einsum("ri,ij,rj->r", x_lo, j_cc[lo, lo], x_lo)
    batch = max(1, chunk_elements // (2**k_lo * cols))
    # |d_u| ≤ |h_u| + Σ_c |J_uc| < 600 keeps e^{±d} finite, so exponentials can be factorised
    fast = factorise_exponentials and n_rest > 0 and float((np.abs(h_u) + np.abs(j_uc).sum(axis=1)).max()) < 600.0
    exp_d_lo = np.exp(d_lo) if fast else None

    log_scale = -np.inf  # running maximum of log w
    total = 0.0
    sum_lo = np.zeros(k_lo)
    sum_hi = np.zeros(k_hi)
    sum_u = np.zeros(n_rest)
    for start in range(0, 2**k_hi, batch):
        count = min(batch, 2**k_hi - start)
        x_hi = _bits(count, k_hi, start)
        off_u = h_u + x_hi @ j_uc[:, hi].T  # (B, |U|)
        e_hi = x_hi @ h_c[hi] + np.einsum("bi,ij,bj->b", x_hi, j_cc[hi, hi], x_hi)
        cross = (x_hi @ j_cc[hi, lo]) @ x_lo.T  # (B, 2^k_lo)
        log_w = e_hi[:, None] + e_lo[None, :] + cross
        if fast:
            # e^{d} = e^{d_lo} · e^{offset}: one product per element instead of an exp
            odds = exp_d_lo[None, :, :] * np.exp(off_u)[:, None, :]
            one_plus = 1.0 + odds
            log_w += np.log(one_plus).sum(axis=2)
        else:
            d = d_lo[None, :, :] + off_u[:, None, :]
            e = np.exp(-np.abs(d))
            log_w += (np.maximum(d, 0.0) + np.log1p(e)).sum(axis=2)
        top = float(log_w.max())
        if top > log_scale:
            factor = np.exp(log_scale - top) if np.isfinite(log_scale) else 0.0
            total, sum_lo, sum_hi, sum_u = total * factor, sum_lo * factor, sum_hi * factor, sum_u * factor
            log_scale = top
        w = np.exp(log_w - log_scale)
        total += w.sum()
        sum_lo += w.sum(axis=0) @ x_lo
        sum_hi += w.sum(axis=1) @ x_hi
        sigma = odds / one_plus if fast else np.where(d >= 0, 1.0, e) / (1.0 + e)
        sum_u += np.einsum("br,bru->u", w, sigma)
    p = np.empty(v)
    p[cover[hi]] = sum_hi / total
    p[cover[lo]] = sum_lo / total
    p[rest] = sum_u / total
    return p, model.const + log_scale + float(np.log(total))


# --------------------------------------------------------------------------------------------
# Loopy belief propagation


@dataclass
class BPResult:
    log_odds: np.ndarray  # (R, V) beliefs, one row per start
    converged: np.ndarray  # (R,) bool
    iterations: int
    max_change: np.ndarray  # (R,)
    bethe: np.ndarray  # (R,) Bethe estimate of log Z at the final messages
    layout: str = "sparse"  # "dense" (V × V message matrices) or "sparse" (edge lists)


#: Dense message matrices are used when the graph has at least this share of all possible
#: edges (FR2/FR3 with every pair judged: 0.4–0.9) and at most DENSE_BP_MAX_VARIABLES
#: variables. Contiguous V × V arithmetic avoids the gathers and scatter-adds of the edge-list
#: form: on FR3 100 × 200, 27 damped iterations took 0.035 s dense vs 0.087 s as edge lists
#: (one start, minimum of 7 runs on the shared 2-core machine).
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
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError("damping must lie in [0, 1)")
    v, s, t, coupling = model.num_variables, model.s, model.t, model.J
    if starts is None:
        starts = np.full((1, v), np.nan)
    r = len(starts)
    theta0 = np.where(starts >= 0.5, 8.0, -8.0)
    known = ~np.isnan(starts)
    d = np.full(r, 0.0 if adaptive else damping)
    converged = np.zeros(r, dtype=bool)
    change = np.full(r, np.inf)
    iterations = 0
    use_dense = _use_dense(model, dense) and len(s) > 0
    if use_dense:
        exp_j = model.dense_exp_coupling
        # messages[r, a, b] = m_{a→b}; zero where there is no edge (J = 0 makes it stay 0)
        init = np.broadcast_to(np.where(known, theta0, 0.0)[:, :, None], (r, v, v)).copy()
        messages = np.where(known[:, :, None], _bp_message(init, exp_j), 0.0) if known.any() else np.zeros((r, v, v))
        for iterations in range(1, max_iterations + 1):
            belief = model.h + messages.sum(axis=1)
            cavity = belief[:, :, None] - messages.transpose(0, 2, 1)  # θ_{a\b} = B_a − m_{b→a}
            new = _bp_message(cavity, exp_j)
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

        to_t = np.where(known[:, s], _softplus(theta0[:, s] + coupling) - _softplus(theta0[:, s]), 0.0)
        to_s = np.where(known[:, t], _softplus(theta0[:, t] + coupling) - _softplus(theta0[:, t]), 0.0)
        exp_coupling = np.exp(coupling)
        for iterations in range(1, max_iterations + 1):
            belief = model.h + incoming(to_t, to_s)
            step_t = _bp_message(belief[:, s] - to_s, exp_coupling) - to_t
            step_s = _bp_message(belief[:, t] - to_t, exp_coupling) - to_s
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


def _bp_message(cavity: np.ndarray, exp_coupling: np.ndarray) -> np.ndarray:
    """softplus(θ + J) − softplus(θ) = log((1 + e^θ e^J) / (1 + e^θ)); overwrites ``cavity``.

    One exp and one log per message. θ is clipped to ±60: beyond that the message equals J
    (or 0) to within e^{−60 + |J|}, far below the tolerance.
    """
    odds = np.exp(np.clip(cavity, -60.0, 60.0, out=cavity), out=cavity)  # cavity is a temporary
    ratio = odds * exp_coupling
    ratio += 1.0
    odds += 1.0
    ratio /= odds
    return np.log(ratio, out=ratio)


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
        into_t = cav_t + _softplus(cav_s + coupling) - _softplus(cav_s)  # b + μ(a)
        into_s = cav_s + _softplus(cav_t + coupling) - _softplus(cav_t)  # a + μ(b)
        terms = _softplus(cav_s) + _softplus(into_t) - cav_s * _sigmoid(into_s) - cav_t * _sigmoid(into_t)
        edge[row] = terms.sum()
    p = _sigmoid(belief)
    entropy_v = -(p * np.log(np.clip(p, 1e-300, 1)) + (1 - p) * np.log(np.clip(1 - p, 1e-300, 1)))
    degree = np.bincount(np.r_[s, t], minlength=model.num_variables)
    # single-variable terms: E_b[h x] and the Bethe entropy correction (1 − d_v) H(b_v);
    # edge terms already contain each end's entropy once, hence (1 − d_v) not −d_v
    unary = (p * model.h).sum(axis=1) + ((1 - degree) * entropy_v).sum(axis=1)
    return model.const + edge + unary


def _prim_gauge(signed: np.ndarray) -> np.ndarray:
    """Signs propagated along a maximum-|J| spanning forest grown by Prim's algorithm (dense J)."""
    v = len(signed)
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
    from scipy.sparse.csgraph import minimum_spanning_tree

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


# --------------------------------------------------------------------------------------------
# Parallel-tempering Gibbs sampler


def greedy_colouring(model: IsingModel) -> list[np.ndarray]:
    """Colour classes (no edge inside a class), largest-degree-first greedy colouring."""
    v = model.num_variables
    if len(model.s) == 0:
        return [np.arange(v)]
    colour = _two_colouring(v, model.s, model.t)
    if colour is not None:
        return [np.flatnonzero(colour == c) for c in (0, 1) if np.any(colour == c)]
    neighbours: list[list[int]] = [[] for _ in range(v)]
    for a, b in zip(model.s.tolist(), model.t.tolist()):
        neighbours[a].append(b)
        neighbours[b].append(a)
    colours = -np.ones(v, dtype=np.int64)
    for u in sorted(range(v), key=lambda i: -len(neighbours[i])):
        used = {colours[w] for w in neighbours[u]}
        c = 0
        while c in used:
            c += 1
        colours[u] = c
    return [np.flatnonzero(colours == c) for c in range(colours.max() + 1)]


@dataclass
class SamplerResult:
    p: np.ndarray
    sweeps: int
    spread: float  # max over variables of the std. error across independent replicas
    swap_rate: float
    replicas: int
    temperatures: int
    seconds: float = 0.0
    stopped_by: str = "sweeps"  # "std-error", "time budget" or "sweeps"
    cover: int = 0  # variables sampled (the rest are summed out); 0 for the chromatic sampler


#: The collapsed sampler keeps dense J_CC (k × k) and J_CU (k × |U|); above this many entries
#: the chromatic sampler (sparse couplings) runs instead.
COLLAPSED_MAX_ENTRIES = 4_000_000


def _cover_and_rest(model: IsingModel, cover: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    in_cover = np.zeros(model.num_variables, dtype=bool)
    in_cover[cover] = True
    return np.flatnonzero(in_cover), np.flatnonzero(~in_cover)


def collapsed_tempered_gibbs(
    model: IsingModel,
    cover: np.ndarray,
    rng: np.random.Generator,
    *,
    max_sweeps: int = 4000,
    min_sweeps: int = 200,
    replicas: int = 16,
    temperatures: int = 8,
    beta_min: float = 0.005,
    time_budget: float = 3.0,
    target_std_error: float = 0.005,
    check_every: int = 25,
    dtype: type = np.float32,
) -> SamplerResult:
    """Gibbs sampling on a vertex cover C with the independent rest U summed out exactly.

    Given x_C the x_u (u ∈ U) are independent, so they are collapsed out of the chain
    (as in :func:`exact_by_cover`) and the chain runs on the k = |C| cover variables under

        log w(x_C) = Σ_c h_c x_c + Σ_{c<c'} J_cc' x_c x_c' + Σ_u softplus(a_u),
        a_u = h_u + Σ_c J_cu x_c .

    Single-site heat-bath update of c (all chains at once, C in a fixed order):
    logit_c = h_c + Σ_{c'} J_cc' x_c' + Σ_u [softplus(a_u^{−c} + J_cu) − softplus(a_u^{−c})],
    x_c = 1 iff logit(uniform) < β·logit_c; a and the C-fields are then updated by the change.
    On FR3 graphs C ⊆ contexts, and the atoms — the variables that matter — are never sampled:
    their estimates are Rao-Blackwellised, P(x_u=1) ≈ mean σ(a_u), and likewise
    P(x_c=1) ≈ mean σ(logit_c), both at β = 1.

    ``replicas`` independent ladders of ``temperatures`` inverse temperatures β geometrically
    spaced from 1 to ``beta_min`` (target ∝ w^β); after every sweep neighbouring temperatures
    (odd/even pairs alternately) swap states with probability min(1, e^{(β_i − β_j)(E_j − E_i)}),
    E = log w. Sweeps are recorded in blocks of ``check_every``; after each block the first
    quarter of the blocks is dropped as burn-in and the standard error of every marginal across
    the replicas (std/√replicas) is computed. The run stops when the largest standard error is
    at most ``target_std_error`` (after ``min_sweeps``), at the end of the sweep during which
    ``time_budget`` seconds have passed (at least one sweep runs), or after ``max_sweeps``.

    The chains run in ``dtype`` (float32 by default: the exp/log per step are faster, and
    sampling needs no more precision; float64 when some |J_cu| > 25, where e^{60+|J|} would
    overflow float32); the running fields are recomputed from the states after every block, so
    rounding cannot accumulate. Estimates are summed in float64.
    """
    start_time = time.perf_counter()
    v = model.num_variables
    cover, rest = _cover_and_rest(model, cover)
    k, n_rest = len(cover), len(rest)
    pos = -np.ones(v, dtype=np.int64)
    pos[cover] = np.arange(k)
    pos[rest] = np.arange(n_rest)
    in_cover = np.zeros(v, dtype=bool)
    in_cover[cover] = True
    if np.any(~in_cover[model.s] & ~in_cover[model.t]):
        raise ValueError("not a vertex cover: an edge joins two uncovered variables")
    both = in_cover[model.s] & in_cover[model.t]
    j_cc = np.zeros((k, k))
    np.add.at(j_cc, (pos[model.s[both]], pos[model.t[both]]), model.J[both])
    j_cc = j_cc + j_cc.T  # symmetric, zero diagonal
    one = ~both
    c_end = np.where(in_cover[model.s[one]], model.s[one], model.t[one])
    u_end = np.where(in_cover[model.s[one]], model.t[one], model.s[one])
    j_cu = np.zeros((k, n_rest))
    np.add.at(j_cu, (pos[c_end], pos[u_end]), model.J[one])
    j_cc64, j_cu64, h_c64, h_u64 = j_cc, j_cu, model.h[cover], model.h[rest]
    if np.dtype(dtype).itemsize < 8 and n_rest and float(np.abs(j_cu).max()) > 25.0:
        # the messages clip cavities at ±60, and e^{60 + |J|} must stay below float32's 3e38
        dtype = np.float64
    j_cc, j_cu = j_cc.astype(dtype), j_cu.astype(dtype)
    exp_j_cu = np.exp(j_cu)
    h_c, h_u = model.h[cover].astype(dtype), model.h[rest].astype(dtype)

    betas = beta_min ** (np.arange(temperatures) / max(temperatures - 1, 1))
    chains = replicas * temperatures
    beta = np.tile(betas, replicas).astype(dtype)  # chain i has temperature i % temperatures
    cold = np.arange(replicas) * temperatures
    x = (rng.random((chains, k)) < _sigmoid(h_c)).astype(dtype)
    field_c = h_c + x @ j_cc  # (chains, k): h_c + Σ_c' J_cc' x_c'
    pre_u = h_u + x @ j_cu  # (chains, |U|): a_u
    block_sums: list[np.ndarray] = []  # per block: (replicas, V) sums of Rao-Blackwell terms
    block_sweeps: list[int] = []
    block = np.zeros((replicas, v))
    swaps_tried = swaps_done = 0
    sweeps = 0
    spread = float("inf")
    stopped_by = "sweeps"
    p = np.full(v, np.nan)
    while sweeps < max_sweeps:
        threshold = rng.random((chains, k))
        threshold = (np.log(threshold) - np.log1p(-threshold)).astype(dtype)  # x = 1 iff logit(u) < β·logit
        for c in range(k):
            old = x[:, c]
            # a_u without c's term, then Σ_u softplus(a + J_cu) − softplus(a) in message form
            without = pre_u - old[:, None] * j_cu[c] if n_rest else pre_u
            logit = field_c[:, c] + (_bp_message(without, exp_j_cu[c]).sum(axis=1) if n_rest else 0.0)
            block[:, cover[c]] += _sigmoid(logit[cold])
            new = (threshold[:, c] < beta * logit).astype(dtype)
            delta = new - old
            if delta.any():
                changed = np.flatnonzero(delta)
                step = delta[changed, None]
                if n_rest:
                    pre_u[changed] += step * j_cu[c]
                field_c[changed] += step * j_cc[c]
                x[changed, c] = new[changed]
        if n_rest:
            block[:, rest] += _sigmoid(pre_u[cold])
        sweeps += 1
        if temperatures > 1:
            # E = log w(x_C), in float64 (exact from the states; only its differences matter)
            x64 = x.astype(np.float64)
            energy = x64 @ h_c64 + 0.5 * np.einsum("ik,ik->i", x64 @ j_cc64, x64)
            if n_rest:
                energy += _softplus(h_u64 + x64 @ j_cu64).sum(axis=1)
            energy = energy.reshape(replicas, temperatures)
            i = np.arange(sweeps % 2, temperatures - 1, 2)
            if len(i):
                gain = (betas[i] - betas[i + 1]) * (energy[:, i + 1] - energy[:, i])
                accept = np.log(rng.random(gain.shape)) < gain
                swaps_tried += accept.size
                swaps_done += int(accept.sum())
                if accept.any():
                    order = np.arange(chains).reshape(replicas, temperatures)
                    rr, ii = np.nonzero(accept)
                    order[rr, i[ii]], order[rr, i[ii] + 1] = order[rr, i[ii] + 1], order[rr, i[ii]]
                    order = order.ravel()
                    x, field_c, pre_u = x[order], field_c[order], pre_u[order]
        out_of_time = time.perf_counter() - start_time > time_budget
        if sweeps % check_every == 0 or sweeps == max_sweeps or out_of_time:
            field_c = h_c + x @ j_cc  # exact again: no drift from the incremental updates
            pre_u = h_u + x @ j_cu
            block_sums.append(block)
            block_sweeps.append(sweeps - sum(block_sweeps))
            block = np.zeros((replicas, v))
            first_kept = len(block_sums) // 4  # the first quarter of the blocks is burn-in
            per_replica = np.sum(block_sums[first_kept:], axis=0) / sum(block_sweeps[first_kept:])
            p = per_replica.mean(axis=0)
            spread = float(per_replica.std(axis=0, ddof=1).max() / np.sqrt(replicas)) if replicas > 1 else float("inf")
            if sweeps >= min_sweeps and spread <= target_std_error:
                stopped_by = "std-error"
                break
            if out_of_time:
                stopped_by = "time budget"
                break
    return SamplerResult(
        p=p,
        sweeps=sweeps,
        spread=spread,
        swap_rate=swaps_done / swaps_tried if swaps_tried else float("nan"),
        replicas=replicas,
        temperatures=temperatures,
        seconds=time.perf_counter() - start_time,
        stopped_by=stopped_by,
        cover=k,
    )


def chromatic_tempered_gibbs(
    model: IsingModel,
    rng: np.random.Generator,
    *,
    sweeps: int = 600,
    burn_in: int = 100,
    replicas: int = 16,
    temperatures: int = 8,
    beta_min: float = 0.1,
    time_budget: float = float("inf"),
) -> SamplerResult:
    """Parallel-tempering Gibbs sampling over colour classes, Rao-Blackwellised marginals.

    The fallback for components too large for :func:`collapsed_tempered_gibbs`'s dense
    matrices: every variable is sampled, a colour class (no edge inside) at a time.

    ``replicas`` independent ladders of ``temperatures`` inverse temperatures geometrically
    spaced from 1 down to ``beta_min``; one sweep updates every colour class in turn for all
    chains at once (x_v = 1 iff logit(u) < β·field_v, u uniform), then proposes swaps between
    neighbouring temperatures (odd/even pairs alternately), accepted with probability
    min(1, exp((β_i − β_j)(E_j − E_i))), E = log P̃ − const. Stops after ``burn_in + sweeps``
    sweeps or, once past the burn-in, when ``time_budget`` seconds have passed.
    """
    start_time = time.perf_counter()
    stopped_by = "sweeps"
    done = 0
    v = model.num_variables
    classes = greedy_colouring(model)
    coupling = model.coupling_matrix()
    dense = v <= 4000
    matrix = coupling.toarray() if dense else coupling.tocsr()
    betas = beta_min ** (np.arange(temperatures) / max(temperatures - 1, 1))
    chains = replicas * temperatures
    beta = np.tile(betas, replicas)[:, None]  # chain c has temperature c % temperatures
    x = (rng.random((chains, v)) < _sigmoid(model.h)).astype(float)
    cold = np.arange(replicas) * temperatures
    cold_fields = np.zeros((replicas, v))  # Σ over kept sweeps of σ(field) at β = 1
    kept = 0
    swaps_tried = swaps_done = 0
    for sweep in range(sweeps + burn_in):
        record = sweep >= burn_in
        u = rng.random((chains, v))
        threshold = np.log(u) - np.log1p(-u)  # logit(u): x = 1 iff logit(u) < β·field
        for members in classes:
            if dense:
                field_ = model.h[members] + x @ matrix[:, members]
            else:
                field_ = model.h[members] + (matrix[members] @ x.T).T
            if record:
                cold_fields[:, members] += _sigmoid(field_[cold])
            x[:, members] = threshold[:, members] < beta * field_
        done += 1
        if record:
            kept += 1
        if temperatures > 1:
            if dense:
                energy = x @ model.h + 0.5 * np.einsum("cv,cv->c", x @ matrix, x)
            else:
                energy = x @ model.h + 0.5 * np.einsum("cv,cv->c", (matrix @ x.T).T, x)
            energy = energy.reshape(replicas, temperatures)
            i = np.arange(sweep % 2, temperatures - 1, 2)
            if len(i):
                delta = (betas[i] - betas[i + 1]) * (energy[:, i + 1] - energy[:, i])
                accept = np.log(rng.random(delta.shape)) < delta
                swaps_tried += accept.size
                swaps_done += int(accept.sum())
                xr = x.reshape(replicas, temperatures, v)
                rr, ii = np.nonzero(accept)
                a, b = xr[rr, i[ii]].copy(), xr[rr, i[ii] + 1].copy()
                xr[rr, i[ii]], xr[rr, i[ii] + 1] = b, a
        if record and time.perf_counter() - start_time > time_budget:
            stopped_by = "time budget"
            break
    per_replica = cold_fields / max(kept, 1)
    p = per_replica.mean(axis=0)
    spread = float(per_replica.std(axis=0, ddof=1).max() / np.sqrt(replicas)) if replicas > 1 else float("nan")
    return SamplerResult(
        p=p,
        sweeps=done,
        spread=spread,
        swap_rate=swaps_done / swaps_tried if swaps_tried else float("nan"),
        replicas=replicas,
        temperatures=temperatures,
        seconds=time.perf_counter() - start_time,
        stopped_by=stopped_by,
    )


# --------------------------------------------------------------------------------------------
# The engine


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
            undamped updates stop contracting, see :func:`loopy_bp`).
        frustration_threshold: in ``"auto"``, frustrated share of |J| above which loopy BP is
            not trusted and the sampler runs (random-label graphs measure ≈0.3–0.5, graphs
            whose relations mostly agree ≈0.05–0.25).
        mode_margin: in ``"auto"``, Bethe log Z gap (nats) below which two loopy BP fixed
            points are rivals (the sampler runs).
        sweeps, min_sweeps, replicas, temperatures, beta_min, time_budget, target_std_error:
            sampler settings (``beta_min``: the hottest inverse temperature) — at most ``sweeps`` sweeps and about ``time_budget`` seconds per
            component; it stops early once every marginal's standard error across the
            independent replicas is at most ``target_std_error`` (after ``min_sweeps``).
            ``converged`` is reported when that standard error is at most 0.01. ``seed`` makes
            it repeatable.
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
        sweeps: int = 4000,
        min_sweeps: int = 200,
        replicas: int = 16,
        temperatures: int = 8,
        beta_min: float = 0.005,
        time_budget: float = 3.0,
        target_std_error: float = 0.005,
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
        log_z = 0.0
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
            size = "more than %d" % self.max_exact_cover if cover is None else str(len(cover))
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
        first run did not converge (the caller samples then).
        """
        settings = dict(
            # undamped flooding BP is exact on a tree after (diameter + 1) sweeps
            damping=0.0 if is_tree else self.damping,
            tolerance=self.tolerance,
            max_iterations=self.max_iterations,
        )
        result = loopy_bp(model, **settings)
        info: dict[str, Any] = {"bp_layout": result.layout, "bp_iterations": result.iterations}
        iterations = result.iterations
        check = gauge is not None and bool(result.converged.all())
        if check:
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
            )
            info["bp_iterations"] = iterations
        beliefs = _sigmoid(result.log_odds)
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
            cover, how = vertex_cover(model)
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
            "replica_std_error": round(result.spread, 5),
            "swap_rate": round(result.swap_rate, 3),
        }
        # "converged": independent replicas agree to within 0.01 (standard error)
        converged = bool(result.spread <= 0.01)
        return _ComponentOutcome(result.p, "tempered-gibbs", False, converged, result.sweeps, None, info)

"""Parallel-tempering Gibbs samplers, for components where loopy BP is unreliable.

Both run many chains at once as a batch: ``replicas`` independent ladders of ``temperatures``
inverse temperatures β, geometrically spaced from 1 down to ``beta_min`` (chain i samples
∝ P̃^β), with swaps between neighbouring temperatures (replica exchange). Estimates are
Rao-Blackwellised: the mean conditional probability at β = 1 rather than the mean state.
The ladders and their swaps are one implementation, :class:`ReplicaExchange`, used by both.

- :func:`collapsed_tempered_gibbs` samples only a vertex cover C; the independent rest U is
  summed out exactly (the same collapse as :func:`~.exact.exact_by_cover`: on FR3 only
  contexts are sampled, never atoms). It stops when the replicas agree (standard error), on a
  time budget, or after a number of sweeps.
- :func:`chromatic_tempered_gibbs` samples every variable, a colour class at a time, with
  sparse couplings: the fallback for components too large for the collapsed sampler's dense
  matrices.

Two diagnostics are undefined in degenerate settings and are then ``None`` in both samplers
(``null`` in JSON output), never a number: the standard error across replicas with a single
replica (there is nothing to compare it with), and the swap acceptance rate when no swap was
proposed (always so with a single temperature).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .covers import split_by_cover, two_colouring
from .ising import IsingModel, coupling_message, sigmoid, softplus


def greedy_colouring(model: IsingModel) -> list[np.ndarray]:
    """Colour classes (no edge inside a class), largest-degree-first greedy colouring."""
    v = model.num_variables
    if len(model.s) == 0:
        return [np.arange(v)]
    colour = two_colouring(v, model.s, model.t)
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
    """Marginals from a tempered sampler, and how the run went."""

    p: np.ndarray
    sweeps: int
    #: max over variables of the standard error across independent replicas; ``None`` with
    #: one replica (undefined)
    spread: float | None
    #: share of the proposed swaps that were accepted; ``None`` when none was proposed (always
    #: with one temperature)
    swap_rate: float | None
    replicas: int
    temperatures: int
    seconds: float = 0.0
    stopped_by: str = "sweeps"  # "std-error", "time budget" or "sweeps"
    cover: int = 0  # variables sampled (the rest are summed out); 0 for the chromatic sampler


class ReplicaExchange:
    """``replicas`` independent ladders of ``temperatures`` inverse temperatures, with swaps.

    β_i = beta_min^{i/(T−1)}, i = 0…T−1, from 1 (the chain that is recorded) down to
    ``beta_min``. The chains of all ladders form one batch: chain c belongs to ladder
    c // T and runs at β_{c mod T}. After a sweep the pairs (i, i+1) with i of the given
    parity (odd and even pairs alternately, so every pair is proposed every other sweep)
    exchange states with probability min(1, e^{(β_i − β_{i+1})(E_{i+1} − E_i)}), E = log P̃
    at β = 1 (up to a constant): the Metropolis rule that keeps every chain's target ∝ P̃^β.
    """

    def __init__(self, replicas: int, temperatures: int, beta_min: float) -> None:
        self.replicas = replicas
        self.temperatures = temperatures
        self.betas = beta_min ** (np.arange(temperatures) / max(temperatures - 1, 1))
        self.proposed = 0
        self.accepted = 0

    @property
    def chains(self) -> int:
        return self.replicas * self.temperatures

    @property
    def chain_betas(self) -> np.ndarray:
        """β of every chain, (chains,)."""
        return np.tile(self.betas, self.replicas)

    @property
    def cold_chains(self) -> np.ndarray:
        """The chain at β = 1 of every ladder, (replicas,)."""
        return np.arange(self.replicas) * self.temperatures

    def swap(
        self,
        states: np.ndarray,
        log_weight: Callable[[np.ndarray], np.ndarray],
        parity: int,
        rng: np.random.Generator,
    ) -> np.ndarray | None:
        """Propose the swaps of the pairs of ``parity``; the new order of the chains, or ``None``.

        ``log_weight(states)`` gives E for every chain, (chains,); it is evaluated only when a
        swap is proposed. The caller reorders its per-chain arrays (``states`` included) by the
        returned permutation; ``None`` means no state moved.
        """
        if self.temperatures < 2:
            return None
        i = np.arange(parity % 2, self.temperatures - 1, 2)
        if not len(i):
            return None
        energy = log_weight(states).reshape(self.replicas, self.temperatures)
        gain = (self.betas[i] - self.betas[i + 1]) * (energy[:, i + 1] - energy[:, i])
        accept = np.log(rng.random(gain.shape)) < gain
        self.proposed += accept.size
        self.accepted += int(accept.sum())
        if not accept.any():
            return None
        order = np.arange(self.chains).reshape(self.replicas, self.temperatures)
        rr, ii = np.nonzero(accept)
        order[rr, i[ii]], order[rr, i[ii] + 1] = order[rr, i[ii] + 1], order[rr, i[ii]]
        return order.ravel()

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / proposed swaps; ``None`` when none was proposed (always with one temperature)."""
        return self.accepted / self.proposed if self.proposed else None


def replica_std_error(per_replica: np.ndarray) -> float | None:
    """max_v std_r(p_rv) / √R over (R, V) per-replica estimates; ``None`` for R = 1."""
    replicas = len(per_replica)
    if replicas < 2:
        return None  # a standard deviation of one value is undefined (ddof=1 would give NaN)
    return float(per_replica.std(axis=0, ddof=1).max() / np.sqrt(replicas))


# The sampler's defaults, also the native engine's (its options pass through to the sampler):
# one place, so that the engine's documented defaults and the sampler's cannot drift apart.
DEFAULT_SWEEPS = 4000
DEFAULT_MIN_SWEEPS = 200
DEFAULT_REPLICAS = 16
DEFAULT_TEMPERATURES = 8
DEFAULT_BETA_MIN = 0.005
DEFAULT_TIME_BUDGET = 3.0
DEFAULT_TARGET_STD_ERROR = 0.005

#: The collapsed sampler keeps dense J_CC (k × k) and J_CU (k × |U|); above this many entries
#: the chromatic sampler (sparse couplings) runs instead.
COLLAPSED_MAX_ENTRIES = 4_000_000


def collapsed_tempered_gibbs(
    model: IsingModel,
    cover: np.ndarray,
    rng: np.random.Generator,
    *,
    max_sweeps: int = DEFAULT_SWEEPS,
    min_sweeps: int = DEFAULT_MIN_SWEEPS,
    replicas: int = DEFAULT_REPLICAS,
    temperatures: int = DEFAULT_TEMPERATURES,
    beta_min: float = DEFAULT_BETA_MIN,
    time_budget: float = DEFAULT_TIME_BUDGET,
    target_std_error: float = DEFAULT_TARGET_STD_ERROR,
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

    ``replicas`` independent ladders of ``temperatures`` inverse temperatures (target ∝ w^β),
    with swaps between neighbours after every sweep (:class:`ReplicaExchange`, E = log w).
    Sweeps are recorded in blocks of ``check_every``; after each block the first quarter of
    the blocks is dropped as burn-in and the standard error of every marginal across the
    replicas (std/√replicas) is computed. The run stops when the largest standard error is at
    most ``target_std_error`` (after ``min_sweeps``), at the end of the sweep during which
    ``time_budget`` seconds have passed (at least one sweep runs), or after ``max_sweeps``.
    With one replica there is no standard error (``spread`` is ``None``), so the run never
    stops on it.

    The chains run in ``dtype`` (float32 by default: the exp/log per step are faster, and
    sampling needs no more precision; float64 when some |J_cu| > 25, where e^{60+|J|} would
    overflow float32); the running fields are recomputed from the states after every block, so
    rounding cannot accumulate. Estimates are summed in float64.
    """
    start_time = time.perf_counter()
    v = model.num_variables
    split = split_by_cover(model, np.unique(np.asarray(cover, dtype=np.int64)))
    cover, rest, j_cc, j_cu = split.cover, split.rest, split.j_cc, split.j_cu
    k, n_rest = len(cover), len(rest)
    j_cc64, j_cu64, h_c64, h_u64 = j_cc, j_cu, model.h[cover], model.h[rest]
    if np.dtype(dtype).itemsize < 8 and n_rest and float(np.abs(j_cu).max()) > 25.0:
        # the messages clip cavities at ±60, and e^{60 + |J|} must stay below float32's 3e38
        dtype = np.float64
    j_cc, j_cu = j_cc.astype(dtype), j_cu.astype(dtype)
    exp_j_cu = np.exp(j_cu)
    h_c, h_u = model.h[cover].astype(dtype), model.h[rest].astype(dtype)

    ladder = ReplicaExchange(replicas, temperatures, beta_min)
    chains = ladder.chains
    beta: np.ndarray = ladder.chain_betas.astype(dtype)
    cold = ladder.cold_chains
    x: np.ndarray = (rng.random((chains, k)) < sigmoid(h_c)).astype(dtype)
    field_c = h_c + x @ j_cc  # (chains, k): h_c + Σ_c' J_cc' x_c'
    pre_u = h_u + x @ j_cu  # (chains, |U|): a_u
    block_sums: list[np.ndarray] = []  # per block: (replicas, V) sums of Rao-Blackwell terms
    block_sweeps: list[int] = []
    block = np.zeros((replicas, v))
    sweeps = 0
    spread: float | None = None
    stopped_by = "sweeps"
    p = np.full(v, np.nan)

    def log_weight(states: np.ndarray) -> np.ndarray:
        """E = log w(x_C) per chain, in float64 from the states (only differences of E matter)."""
        x64 = states.astype(np.float64)
        energy = x64 @ h_c64 + 0.5 * np.einsum("ik,ik->i", x64 @ j_cc64, x64)
        if n_rest:
            energy += softplus(h_u64 + x64 @ j_cu64).sum(axis=1)
        return energy

    while sweeps < max_sweeps:
        threshold = rng.random((chains, k))
        threshold = (np.log(threshold) - np.log1p(-threshold)).astype(dtype)  # x = 1 iff logit(u) < β·logit
        for c in range(k):
            old = x[:, c]
            # a_u without c's term, then Σ_u softplus(a + J_cu) − softplus(a) in message form
            without = pre_u - old[:, None] * j_cu[c] if n_rest else pre_u
            logit = field_c[:, c] + (coupling_message(without, exp_j_cu[c]).sum(axis=1) if n_rest else 0.0)
            block[:, cover[c]] += sigmoid(logit[cold])
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
            block[:, rest] += sigmoid(pre_u[cold])
        sweeps += 1
        order = ladder.swap(x, log_weight, sweeps, rng)
        if order is not None:
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
            spread = replica_std_error(per_replica)
            if sweeps >= min_sweeps and spread is not None and spread <= target_std_error:
                stopped_by = "std-error"
                break
            if out_of_time:
                stopped_by = "time budget"
                break
    return SamplerResult(
        p=p,
        sweeps=sweeps,
        spread=spread,
        swap_rate=ladder.acceptance_rate,
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
    replicas: int = DEFAULT_REPLICAS,
    temperatures: int = DEFAULT_TEMPERATURES,
    beta_min: float = 0.1,
    time_budget: float = float("inf"),
) -> SamplerResult:
    """Parallel-tempering Gibbs sampling over colour classes, Rao-Blackwellised marginals.

    The fallback for components too large for :func:`collapsed_tempered_gibbs`'s dense
    matrices: every variable is sampled, a colour class (no edge inside) at a time.

    ``replicas`` independent ladders of ``temperatures`` inverse temperatures; one sweep
    updates every colour class in turn for all chains at once (x_v = 1 iff
    logit(u) < β·field_v, u uniform), then proposes swaps between neighbouring temperatures
    (:class:`ReplicaExchange`, E = log P̃ − const). Stops after ``burn_in + sweeps`` sweeps or,
    once past the burn-in, when ``time_budget`` seconds have passed. ``spread`` is the standard
    error across the replicas at the end (``None`` with one replica).
    """
    start_time = time.perf_counter()
    stopped_by = "sweeps"
    done = 0
    v = model.num_variables
    classes = greedy_colouring(model)
    coupling = model.coupling_matrix()
    dense = v <= 4000
    matrix = coupling.toarray() if dense else coupling.tocsr()
    ladder = ReplicaExchange(replicas, temperatures, beta_min)
    chains = ladder.chains
    beta = ladder.chain_betas[:, None]
    x = (rng.random((chains, v)) < sigmoid(model.h)).astype(float)
    cold = ladder.cold_chains
    cold_fields = np.zeros((replicas, v))  # Σ over kept sweeps of σ(field) at β = 1
    kept = 0

    def log_weight(states: np.ndarray) -> np.ndarray:
        """E = log P̃(x) − const per chain."""
        coupled = states @ matrix if dense else (matrix @ states.T).T
        return states @ model.h + 0.5 * np.einsum("cv,cv->c", coupled, states)

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
                cold_fields[:, members] += sigmoid(field_[cold])
            x[:, members] = threshold[:, members] < beta * field_
        done += 1
        if record:
            kept += 1
        order = ladder.swap(x, log_weight, sweep, rng)
        if order is not None:
            x = x[order]
        if record and time.perf_counter() - start_time > time_budget:
            stopped_by = "time budget"
            break
    per_replica = cold_fields / max(kept, 1)
    p = per_replica.mean(axis=0)
    spread = replica_std_error(per_replica)
    return SamplerResult(
        p=p,
        sweeps=done,
        spread=spread,
        swap_rate=ladder.acceptance_rate,
        replicas=replicas,
        temperatures=temperatures,
        seconds=time.perf_counter() - start_time,
        stopped_by=stopped_by,
    )

"""Exact marginals and log Z by enumerating the states of a vertex cover.

Let C be a vertex cover of a connected component and U the other variables: U is an
independent set, so given x_C the x_u are independent and can be summed out in closed form::

    log w(x_C) = Σ_{c∈C} h_c x_c + Σ_{c<c'} J_cc' x_c x_c' + Σ_{u∈U} softplus(d_u(x_C)),
    d_u(x_C)  = h_u + Σ_c J_uc x_c ,
    Z = e^const Σ_{x_C} w(x_C),   P(x_c=1) = E_w[x_c],   P(x_u=1) = E_w[σ(d_u(x_C))].

The 2^|C| states are enumerated in chunks (numpy, log space with a running maximum).
"""

from __future__ import annotations

import numpy as np

from .covers import split_by_cover
from .ising import IsingModel

#: Largest vertex cover enumerated exactly by default: each extra cover variable doubles the
#: time, and 2^22 states take seconds on a 2-core CPU (``python -m scripts.benchmark_inference
#: --cover-timing``; the figures in ``docs/measurements.md``).
DEFAULT_MAX_EXACT_COVER = 22


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
    """Exact P(x_v = 1) and log Z by enumerating the 2^|cover| states (module docstring).

    The cover's states are split into low and high bits: the fields of all low states (as many
    as fit ``chunk_elements`` together with their |U| summed-out fields) are computed once, and
    each chunk of high states combines with all of them by broadcasting.
    """
    split = split_by_cover(model, cover)
    cover, rest = split.cover, split.rest
    k, n_rest = len(cover), len(rest)
    j_cc = np.triu(split.j_cc)  # the quadratic form x·j_cc·x then counts each edge once
    j_uc = np.ascontiguousarray(split.j_cu.T)
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
        if exp_d_lo is not None:
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
            # rescale what has been summed so far to the new maximum: no overflow, no underflow
            factor = np.exp(log_scale - top) if np.isfinite(log_scale) else 0.0
            total, sum_lo, sum_hi, sum_u = total * factor, sum_lo * factor, sum_hi * factor, sum_u * factor
            log_scale = top
        w = np.exp(log_w - log_scale)
        total += w.sum()
        sum_lo += w.sum(axis=0) @ x_lo
        sum_hi += w.sum(axis=1) @ x_hi
        sigma = odds / one_plus if fast else np.where(d >= 0, 1.0, e) / (1.0 + e)
        sum_u += np.einsum("br,bru->u", w, sigma)
    p = np.empty(model.num_variables)
    p[cover[hi]] = sum_hi / total
    p[cover[lo]] = sum_lo / total
    p[rest] = sum_u / total
    return p, model.const + log_scale + float(np.log(total))

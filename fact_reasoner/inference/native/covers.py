"""Small vertex covers of the coupling graph, for exact enumeration and the collapsed sampler.

A vertex cover C touches every edge, so the other variables U form an independent set: given
x_C they are independent and can be summed out in closed form. The smaller C, the cheaper:
exact enumeration costs 2^|C|. For a bipartite coupling graph (FR1/FR2: atoms on one side,
contexts on the other) a minimum cover is found exactly with a maximum matching and König's
theorem; otherwise the cover is the complement of a greedy independent set (for FR3 the atoms
form an independent set, so C ⊆ contexts; with ``--coherence`` atoms joined to each other
are no longer independent and some of them enter the cover).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import breadth_first_order, maximum_bipartite_matching

from .ising import IsingModel


def two_colouring(v: int, s: np.ndarray, t: np.ndarray) -> np.ndarray | None:
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
            continue  # a stale heap entry: u was removed or its degree dropped since
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
    for vertex in np.flatnonzero(in_cover):  # drop cover vertices whose neighbours are all covered
        if all(in_cover[w] for w in neighbours[vertex]):
            in_cover[vertex] = False
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
    colour = two_colouring(v, s, t)
    if colour is not None:
        return _koenig_cover(v, s, t, colour), "minimum (bipartite, König)"
    return _greedy_cover(v, s, t), "greedy (minimum-degree independent set)"


@dataclass(frozen=True)
class CoverSplit:
    """The couplings of a model split by a vertex cover C and the independent rest U."""

    cover: np.ndarray  # (k,) variable indices, in the order given
    rest: np.ndarray  # (|U|,) the other variables, ascending
    j_cc: np.ndarray  # (k, k) couplings inside the cover, symmetric, zero diagonal
    j_cu: np.ndarray  # (k, |U|) couplings between the cover and the rest


def split_by_cover(model: IsingModel, cover: np.ndarray) -> CoverSplit:
    """Dense J_CC and J_CU for ``cover``; a ``ValueError`` if it misses an edge."""
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
    j_cc = np.zeros((k, k))
    np.add.at(j_cc, (pos[model.s[both]], pos[model.t[both]]), model.J[both])
    one = ~both
    c_end = np.where(in_cover[model.s[one]], model.s[one], model.t[one])
    u_end = np.where(in_cover[model.s[one]], model.t[one], model.s[one])
    j_cu = np.zeros((k, n_rest))
    np.add.at(j_cu, (pos[c_end], pos[u_end]), model.J[one])
    return CoverSplit(cover, rest, j_cc + j_cc.T, j_cu)

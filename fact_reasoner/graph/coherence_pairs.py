"""Which atom pairs coherence judges (``--coherence``): the comparability gate, then the
similarity gate; the pairs left out are counted. Why these gates: :mod:`fact_reasoner.graph.coherence`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..atoms.frames import comparable_pair_mask
from ..settings.graph_options import CoherencePairs
from .factor_graph import GraphPlan

if TYPE_CHECKING:  # pragma: no cover
    from ..embeddings import Embedder

__all__ = [
    "plan_atom_pairs",
    "select_atom_pairs",
]


def select_atom_pairs(
    atom_ids: Sequence[str],
    embeddings: np.ndarray | None,
    min_similarity: float,
    candidates: np.ndarray | None = None,
) -> tuple[tuple[tuple[str, str], ...], int]:
    """The ordered atom pairs to judge (both directions of each unordered pair i < j whose
    cosine cos(e_i, e_j) = e_i·e_j / (|e_i| |e_j|) ≥ ``min_similarity``) and how many ordered
    pairs the similarity gate pruned.

    ``candidates`` (one boolean per unordered pair, ``numpy.triu_indices`` order, e.g.
    :func:`comparable_pair_mask`) restricts the pairs first; those it excludes are not counted
    here. ``embeddings`` (one row per atom) may be ``None`` when ``min_similarity`` ≤ −1, where
    no pair can be pruned, or when no candidate is left.
    """
    n = len(atom_ids)
    if n < 2:
        return (), 0
    upper_i, upper_j = np.triu_indices(n, k=1)
    allowed = np.ones(len(upper_i), dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    if len(allowed) != len(upper_i):
        raise ValueError(f"select_atom_pairs needs one candidate flag per unordered pair ({len(upper_i)})")
    if min_similarity <= -1.0 or not allowed.any():
        keep = allowed
    else:
        if embeddings is None or len(embeddings) != n:
            raise ValueError(f"select_atom_pairs needs one embedding per atom ({n})")
        vectors = np.asarray(embeddings, dtype=float)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0  # a zero vector has cosine 0 with everything
        unit = vectors / norms[:, None]
        cosine = (unit @ unit.T)[upper_i, upper_j]
        keep = allowed & (cosine >= min_similarity)
    pairs: list[tuple[str, str]] = []
    for i, j in zip(upper_i[keep].tolist(), upper_j[keep].tolist()):
        pairs += [(atom_ids[i], atom_ids[j]), (atom_ids[j], atom_ids[i])]
    return tuple(pairs), 2 * int((allowed & ~keep).sum())


def plan_atom_pairs(
    plan: GraphPlan,
    embedder: "Embedder | None",
    min_similarity: float,
    pairs: CoherencePairs = "similar",
) -> GraphPlan:
    """``plan`` with the atom pairs that coherence judges: with ``pairs="comparable"`` the
    comparability gate first (:func:`comparable_pair_mask`), then the similarity gate
    (:func:`select_atom_pairs`). ``atom_pairs_pruned`` counts both, ``atom_pairs_incomparable``
    the first.

    The embedder is used only when the similarity gate can prune (``min_similarity`` > −1) and
    some pair is left for it."""
    if pairs not in ("comparable", "similar"):
        raise ValueError(f"unknown coherence pair rule {pairs!r} (comparable or similar)")
    ids = [a.id for a in plan.atoms]
    candidates = comparable_pair_mask([a.text for a in plan.atoms]) if pairs == "comparable" and len(ids) > 1 else None
    incomparable = 0 if candidates is None else 2 * int((~candidates).sum())
    embeddings = None
    if min_similarity > -1.0 and len(ids) > 1 and (candidates is None or candidates.any()):
        if embedder is None:
            raise ValueError("the coherence similarity gate needs a sentence embedder (or min_similarity -1)")
        embeddings = embedder.encode([a.text for a in plan.atoms])
    selected, dissimilar = select_atom_pairs(ids, embeddings, min_similarity, candidates)
    return dataclasses.replace(
        plan, atom_pairs=selected, atom_pairs_pruned=incomparable + dissimilar, atom_pairs_incomparable=incomparable
    )

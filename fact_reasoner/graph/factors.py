"""Factor tables of the FactReasoner graph (the paper's Table 1 and the prior-carrying family), as pure functions.

Every pairwise table is a 2×2 array ``table[x, y]`` over (X = source, Y = target), value 1 =
true. Listed in row-major order the entries are (X=0,Y=0), (X=0,Y=1), (X=1,Y=0), (X=1,Y=1).
``p`` is the probability of the predicted relation, clamped to ``[eps, 1 - eps]`` so that no
table holds a zero that could make the partition function vanish.

Atom–context relations use the paper's Table 1 or the prior-carrying family
(:func:`relation_tables`); relations between two atoms of one response (``--coherence``) use
their own tables (:func:`atom_contradiction_table`, :func:`atom_entailment_table`), read as a
mixture of "the relation holds" and "no constraint": why, in :mod:`fact_reasoner.graph.coherence`.
"""

from __future__ import annotations

import numpy as np

from ..settings.graph_options import DEFAULT_CLAMP


def clamp_probability(p: float | np.ndarray, eps: float = DEFAULT_CLAMP) -> float | np.ndarray:
    """Clamp ``p`` into ``[eps, 1 - eps]``; NaN is rejected because it would poison Z."""
    arr = np.asarray(p, dtype=float)
    if np.isnan(arr).any():
        raise ValueError("a relation probability is NaN")
    clipped = np.clip(arr, eps, 1.0 - eps)
    return float(clipped) if np.ndim(clipped) == 0 else clipped


def entailment_factor(p: float, prior: float | None = None) -> np.ndarray:
    """X ⇒ Y with probability ``p``.

    Without priors (paper Table 1): ``[[p, p], [1-p, p]]`` — only X=1, Y=0 is penalised.
    With priors, the rows for X=0 carry the target's prior π instead:
    ``[[1-π, π], [1-p, p]]`` (π = 0.5 for an atom, the context prior for a context).
    """
    low = np.array([p, p]) if prior is None else np.array([1.0 - prior, prior])
    return np.array([low, [1.0 - p, p]])


def contradiction_factor(p: float, prior: float | None = None) -> np.ndarray:
    """X ⇒ ¬Y with probability ``p``.

    Without priors: ``[[p, p], [p, 1-p]]`` — only X=1, Y=1 is penalised.
    With priors: ``[[1-π, π], [p, 1-p]]``.
    """
    low = np.array([p, p]) if prior is None else np.array([1.0 - prior, prior])
    return np.array([low, [p, 1.0 - p]])


def equivalence_factor(p: float) -> np.ndarray:
    """X ⇔ Y with probability ``p``: ``[[p, 1-p], [1-p, p]]`` (the same with or without priors)."""
    return np.array([[p, 1.0 - p], [1.0 - p, p]])


def relation_tables(relations: np.ndarray, probabilities: np.ndarray, target_priors: np.ndarray | None) -> np.ndarray:
    """Vectorised tables for many relations at once.

    ``relations`` holds codes 0 = entailment, 1 = contradiction, 2 = equivalence;
    ``target_priors`` holds π per relation, or is ``None`` for the no-priors family.
    Returns an array of shape ``(E, 2, 2)`` equal, row by row, to the scalar functions above.
    """
    p = np.asarray(probabilities, dtype=float)
    e = len(p)
    tables = np.empty((e, 2, 2))
    if target_priors is None:
        tables[:, 0, 0] = p
        tables[:, 0, 1] = p
    else:
        pi = np.asarray(target_priors, dtype=float)
        tables[:, 0, 0] = 1.0 - pi
        tables[:, 0, 1] = pi
    ent = relations == 0
    con = relations == 1
    eqv = relations == 2
    tables[ent, 1, 0] = 1.0 - p[ent]
    tables[ent, 1, 1] = p[ent]
    tables[con, 1, 0] = p[con]
    tables[con, 1, 1] = 1.0 - p[con]
    tables[eqv, 0, 0] = p[eqv]
    tables[eqv, 0, 1] = 1.0 - p[eqv]
    tables[eqv, 1, 0] = 1.0 - p[eqv]
    tables[eqv, 1, 1] = p[eqv]
    return tables


def atom_contradiction_table(p: float) -> np.ndarray:
    """X and Y contradict each other with probability p: ``[[1, 1], [1, 1 − p]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0, 1.0 - p]])


def atom_entailment_table(p: float) -> np.ndarray:
    """X ⇒ Y with probability p: ``[[1, 1], [1 − p, 1]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0 - p, 1.0]])

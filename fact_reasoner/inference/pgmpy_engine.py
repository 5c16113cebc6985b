"""The ``pgmpy`` engine: pgmpy's exact variable elimination, used only where it is correct.

What pgmpy 1.1.2 does on FactReasoner graphs (measured when this engine was written, re-checked in
``tests/inference/test_engines.py``):

- ``BeliefPropagationWithMessagePassing`` is for trees only (RecursionError on FR graphs);
- ``BeliefPropagation`` (junction tree) crashes on a variable without edges and on
  disconnected graphs, runs out of memory from FR2 30×60, and can return wrong marginals
  without an error (its calibration check compares unnormalised beliefs with an absolute
  tolerance) — so it is never used here;
- ``VariableElimination`` is correct but returns unnormalised factors for Markov networks and
  its cost grows as 2^(induced width).

So this engine runs ``VariableElimination`` on each connected component separately (isolated
variables get their prior, exactly), one query per variable, normalises each result and
checks it (finite, positive mass). Before running it estimates the induced width of the
component with the min-fill heuristic and refuses, with :class:`InferenceError`, components
wider than ``max_width`` (default 16): beyond that pgmpy takes from seconds to hours and
gigabytes of memory. The ``native`` engine handles those graphs.
"""

from __future__ import annotations

import time
import warnings

import networkx as nx
import numpy as np

from ..graph.factor_graph import FactorGraph
from .base import InferenceError, InferenceResult

DEFAULT_MAX_WIDTH = 16


def induced_width(graph: FactorGraph, members: np.ndarray) -> int:
    """Induced width of the component ``members`` under the min-fill-in elimination heuristic."""
    from networkx.algorithms.approximation import treewidth_min_fill_in

    inside = set(members.tolist())
    g = nx.Graph()
    g.add_nodes_from(inside)
    g.add_edges_from((int(s), int(t)) for s, t in zip(graph.source, graph.target) if s in inside)
    width, _ = treewidth_min_fill_in(g)
    return int(width)


def min_fill_order(graph: FactorGraph, members: np.ndarray) -> list[int]:
    """Positions (in ``members``) in greedy min-fill elimination order."""
    position = {int(v): k for k, v in enumerate(members.tolist())}
    neighbours: dict[int, set[int]] = {k: set() for k in range(len(members))}
    for s, t in zip(graph.source.tolist(), graph.target.tolist()):
        if s in position and t in position:
            neighbours[position[s]].add(position[t])
            neighbours[position[t]].add(position[s])
    order = []
    while neighbours:

        def fill(u: int) -> int:
            nb = list(neighbours[u])
            return sum(1 for a in range(len(nb)) for b in range(a + 1, len(nb)) if nb[b] not in neighbours[nb[a]])

        u = min(neighbours, key=lambda k: (fill(k), len(neighbours[k])))
        nb = neighbours.pop(u)
        for a in nb:
            neighbours[a] |= nb - {a}
            neighbours[a].discard(u)
        order.append(u)
    return order


class PgmpyEngine:
    """pgmpy ``VariableElimination`` per connected component, normalised and checked.

    Options:
        max_width: refuse a component whose estimated induced width exceeds this.
        max_variables: refuse a component with more variables than this (one elimination
            per variable; pgmpy's Python overhead makes larger components slow).
        elimination_order: recorded only; the order is this module's greedy min-fill.
    """

    name = "pgmpy"

    def __init__(
        self,
        *,
        max_width: int = DEFAULT_MAX_WIDTH,
        max_variables: int = 400,
        elimination_order: str = "MinFill",
    ) -> None:
        if max_width < 1 or max_variables < 1:
            raise ValueError("max_width and max_variables must be positive")
        self.max_width = max_width
        self.max_variables = max_variables
        self.elimination_order = elimination_order

    def infer(self, graph: FactorGraph) -> InferenceResult:
        start = time.perf_counter()
        try:
            from pgmpy.inference import VariableElimination
        except ImportError as exc:  # pragma: no cover - pgmpy is a core dependency
            raise InferenceError("the pgmpy engine needs the 'pgmpy' package") from exc

        p = graph.prior.astype(float).copy()
        log_z = 0.0
        components = []
        isolated = 0
        for members in graph.components():
            if len(members) == 1:
                isolated += 1
                continue
            width = induced_width(graph, members)
            names = [graph.variables[i] for i in members]
            if width > self.max_width or len(members) > self.max_variables:
                raise InferenceError(
                    f"pgmpy engine refuses a component of {len(members)} variables with induced "
                    f"width ≈{width} (limits: width {self.max_width}, {self.max_variables} "
                    "variables): pgmpy's exact inference would take too long or too much memory "
                    "there, and its BeliefPropagation can return wrong marginals silently. "
                    "Use --engine native."
                )
            network = graph.subgraph(members).to_pgmpy()
            inference = VariableElimination(network)
            # one min-fill order for the component, computed once (pgmpy would recompute it
            # per query, which dominates its run time); each query eliminates the others in it
            order = [names[j] for j in min_fill_order(graph, members)]
            mass = []
            for i, name in zip(members, names):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    factor = inference.query(
                        [name], elimination_order=[x for x in order if x != name], show_progress=False
                    )
                values = np.asarray(factor.values, dtype=float).reshape(-1)
                # state order of the result: pgmpy names states 0, 1 for cardinality-2 factors
                states = factor.state_names.get(name, [0, 1])
                total = float(values.sum())
                if not np.isfinite(total) or total <= 0:
                    raise InferenceError(f"pgmpy returned no probability mass for {name!r}")
                p[i] = float(values[list(states).index(1)] / total)
                mass.append(total)
            # VariableElimination on a Markov network returns Σ_{x_{-v}} P̃(x): its total mass
            # is the component's Z; every query must agree on it
            if max(mass) - min(mass) > 1e-6 * max(mass):
                raise InferenceError("pgmpy's variable elimination gave inconsistent partition functions")
            log_z += float(np.log(mass[0]))
            components.append({"variables": int(len(members)), "induced_width": width})
        if not np.all(np.isfinite(p)):
            raise InferenceError("pgmpy produced a non-finite marginal")
        return InferenceResult(
            marginals=dict(zip(graph.variables, p.tolist())),
            algorithm="pgmpy-variable-elimination" if components else "prior",
            exact=True,
            converged=True,
            iterations=0,
            seconds=time.perf_counter() - start,
            log_partition=log_z,
            details={
                "elimination_order": self.elimination_order,
                "isolated_variables": isolated,
                "components": components,
            },
        )

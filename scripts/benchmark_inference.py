"""Benchmark of the inference engines on FR1/FR2/FR3 graphs (not a test; prints tables).

    .venv/bin/python scripts/benchmark_inference.py              # the main table
    .venv/bin/python scripts/benchmark_inference.py --cover-timing  # exact enumeration cost

Graphs are built the product's way: random atoms, contexts and NLI ``Relation`` objects
(``tests/random_graphs.py``) through ``plan_graph``/``build_graph``; "build s" is the
``plan_graph`` + ``build_graph`` time. Every pair gets an entailment or contradiction
(no neutral), so FR3 100×200 has 39,900 factors. Relations agree with a hidden truth
assignment with probability 0.85 ("agreeing" graphs). The dense contradictory cases are
bimodal (two camps of contexts, one entailing every atom, the other contradicting them and
each other; table family with priors) or random-labelled (agreement 0.5, with priors) with a
cover of 24, just above the default exact limit, so the default approximates while exact
enumeration is still computable as the reference.

max |ΔP| is against exact enumeration (native, method="exact") wherever the vertex cover is at
most ``--exact-limit`` (default 24); "—" where exact is not computable. pgmpy runs in a
subprocess with a per-case time limit; its refusals are shown as such.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from random_graphs import random_input  # noqa: E402

from fact_reasoner.graph import GraphOptions, build_graph, plan_graph  # noqa: E402
from fact_reasoner.inference import InferenceError, make_engine  # noqa: E402
from fact_reasoner.inference.native import (  # noqa: E402
    NativeEngine,
    exact_by_cover,
    ising_model,
    vertex_cover,
)


def _build(data, use_priors: bool):
    start = time.perf_counter()
    plan = plan_graph(data.atoms, data.contexts, data.version)
    graph = build_graph(plan, data.relations, GraphOptions(version=data.version, use_priors=use_priors)).graph
    return graph, time.perf_counter() - start


def _pgmpy_worker(graph, queue) -> None:
    try:
        result = make_engine("pgmpy").infer(graph)
        queue.put(("ok", result.marginals, result.seconds, result.algorithm))
    except InferenceError as exc:
        queue.put(("refused", str(exc).split(":")[0], 0.0, ""))
    except Exception as exc:  # noqa: BLE001 - report anything pgmpy raises
        queue.put(("error", f"{type(exc).__name__}: {exc}", 0.0, ""))


def _run_pgmpy(graph, limit: float):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=_pgmpy_worker, args=(graph, queue))
    start = time.perf_counter()
    process.start()
    process.join(limit)
    if process.is_alive():
        process.kill()
        process.join()
        return "timeout", None, time.perf_counter() - start, ""
    if queue.empty():
        return "crashed", None, time.perf_counter() - start, ""
    return queue.get()


def _error(marginals, exact) -> float | None:
    if exact is None or marginals is None:
        return None
    return max(abs(marginals[v] - exact[v]) for v in exact)


def _fmt(x, digits=3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def main_table(args) -> None:
    cases = []
    for version in (1, 2, 3):
        for n, m in ((10, 20), (30, 60), (100, 200)):
            cases.append((f"FR{version} {n}x{m}", n, m, version, dict(agreement=0.85), False))
    cases.append(("FR3 30x24 camps (contradictory)", 30, 24, 3, dict(camps=True, agreement=0.9), True))
    cases.append(("FR2 24x40 random labels", 24, 40, 2, dict(agreement=0.5), True))
    cases.append(("FR3 40x24 random labels", 40, 24, 3, dict(agreement=0.5), True))
    header = (
        f"{'case':34s} {'V':>4s} {'E':>6s} {'cover':>5s} {'build s':>7s} | {'native algorithm':18s} "
        f"{'infer s':>7s} {'max|ΔP|':>7s} | {'plain LBP |ΔP|':>14s} | {'pgmpy':18s} {'s':>6s} {'max|ΔP|':>7s}"
    )
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(args.seed)
    for name, n, m, version, kwargs, use_priors in cases:
        data = random_input(n, m, version, rng, **kwargs)
        graph, build_s = _build(data, use_priors)
        cover_sizes = []
        for members in graph.components():
            if len(members) > 1:
                cover, _ = vertex_cover(ising_model(graph.subgraph(members)), args.exact_limit)
                cover_sizes.append(10**9 if cover is None else len(cover))
        cover_max = max(cover_sizes, default=0)
        exact = None
        if cover_max <= args.exact_limit:
            exact = NativeEngine(method="exact", max_exact_cover=args.exact_limit).infer(graph).marginals
        native = NativeEngine(seed=args.seed)
        start = time.perf_counter()
        result = native.infer(graph)
        native_s = time.perf_counter() - start
        plain = NativeEngine(method="lbp").infer(graph)
        status, marginals, pg_s, pg_alg = _run_pgmpy(graph, args.pgmpy_limit)
        pg_label = "VE" if status == "ok" else status
        if status != "ok":
            marginals = None
        print(
            f"{name:34s} {graph.num_variables:4d} {graph.num_factors:6d} "
            f"{(str(cover_max) if cover_max < 10**9 else '>' + str(args.exact_limit)):>5s} {build_s:7.3f} | "
            f"{result.algorithm[:18]:18s} {native_s:7.3f} {_fmt(_error(result.marginals, exact)):>7s} | "
            f"{_fmt(_error(plain.marginals, exact)):>14s} | "
            f"{pg_label:18s} {pg_s:6.2f} {_fmt(_error(marginals, exact), 1 if marginals is None else 12):>7s}",
            flush=True,
        )


def cover_timing(args) -> None:
    """Seconds of exact enumeration for cover k and |U| summed-out variables (FR2 graphs)."""
    rng = np.random.default_rng(args.seed)
    print(f"{'cover':>5s} {'|U|':>4s} {'seconds':>8s} {'ns/state/var':>12s}")
    for k in range(16, 25, 2):
        for u in (40, 100):
            data = random_input(k, u, 2, rng, agreement=0.6)
            graph, _ = _build(data, False)
            model = ising_model(graph)
            cover, _ = vertex_cover(model)
            start = time.perf_counter()
            exact_by_cover(model, cover)
            seconds = time.perf_counter() - start
            print(f"{len(cover):5d} {u:4d} {seconds:8.3f} {seconds / (2**len(cover) * (u + 1)) * 1e9:12.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exact-limit", type=int, default=24, help="largest cover enumerated as the reference")
    parser.add_argument("--pgmpy-limit", type=float, default=60.0, help="seconds per pgmpy case")
    parser.add_argument("--cover-timing", action="store_true", help="time exact enumeration per cover size")
    args = parser.parse_args()
    if args.cover_timing:
        cover_timing(args)
    else:
        main_table(args)


if __name__ == "__main__":
    main()

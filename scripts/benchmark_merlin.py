"""merlin (through merlin_bridge) vs the native engine vs exact inference on FR-like graphs.

Graphs come from ``fact_reasoner.synthetic`` (atoms, contexts and NLI relations through the
product's ``plan_graph``/``build_graph``). For each graph this measures wall time and
max |ΔP| against exact marginals for:

- merlin ``--algorithm wmb --ibound 6`` through :class:`merlin_bridge.engine.MerlinEngine`
  (time includes writing the UAI file, the subprocess and parsing), plus the induced width
  merlin reports and whether it calls the run exact;
- ``NativeEngine()`` (default ``auto``);
- exact: ``NativeEngine(method="exact")`` (vertex-cover enumeration), where the cover fits;
  otherwise merlin's exact bucket-tree elimination (``--algorithm bte``) when the induced
  width merlin reports is at most ``--bte-max-width`` (BTE is also checked against the
  enumeration wherever both run).

It also records whether merlin's ``status`` would have been false (Z underflow) without the
bridge's table rescaling. Usage::

    MERLIN_PATH=/path/to/merlin nice -n 19 .venv-dev/bin/python -m scripts.benchmark_merlin \
        [--repeats 3] [--out results.jsonl] [--quick]

Without a merlin binary, ``--reference`` uses the Python reference solver instead (exact by
construction: only useful to check the script).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import InferenceError
from fact_reasoner.inference.native import NativeEngine
from fact_reasoner.synthetic import random_graph
from merlin_bridge.engine import MerlinEngine
from merlin_bridge.errors import MerlinUnderflowError
from merlin_bridge.reference_solver import write_wrapper

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    label: str
    version: int
    atoms: int
    contexts: int
    agreement: float = 0.85
    camps: bool = False
    exact: bool = True  # whether exact enumeration is affordable


CASES = [
    # induced width ≤ 6: WMB at i-bound 6 must be exact (|ΔP| ≤ 1e-6, merlin prints 6 decimals)
    Case("FR2 10x3", 2, 10, 3),
    Case("FR2 40x6", 2, 40, 6),
    Case("FR2 6x40", 2, 6, 40),
    Case("FR3 8x5", 3, 8, 5),
    Case("FR3 20x6 frustrated", 3, 20, 6, agreement=0.5),
    Case("FR1 30x20 k=2", 1, 30, 20),
    # wider: WMB approximate
    Case("FR2 12x12", 2, 12, 12),
    Case("FR2 20x40", 2, 20, 40),
    Case("FR2 20x40 frustrated", 2, 20, 40, agreement=0.5),
    Case("FR3 10x12", 3, 10, 12),
    Case("FR3 15x20", 3, 15, 20),
    Case("FR3 15x20 camps", 3, 15, 20, camps=True),
    Case("FR1 100x60 k=3", 1, 100, 60),
    Case("FR2 30x60", 2, 30, 60, exact=False),
    Case("FR3 50x100", 3, 50, 100, exact=False),
    Case("FR3 100x200", 3, 100, 200, exact=False),
]
QUICK = {"FR2 10x3", "FR3 8x5", "FR2 12x12", "FR3 10x12"}


def make_graph(case: Case, seed: int) -> FactorGraph:
    rng = np.random.default_rng(seed)
    kwargs = {"contexts_per_atom": 2 if "k=2" in case.label else 3} if case.version == 1 else {}
    return random_graph(
        case.atoms, case.contexts, case.version, rng, agreement=case.agreement, camps=case.camps, **kwargs
    )


def timed(engine, graph: FactorGraph, repeats: int):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = engine.infer(graph)
        best = min(best, time.perf_counter() - start)
    return result, best


def max_delta(a: dict[str, float], b: dict[str, float]) -> float:
    return max(abs(a[k] - b[k]) for k in b) if b else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--merlin-path", default=os.environ.get("MERLIN_PATH"))
    parser.add_argument("--reference", action="store_true", help="use the Python reference solver as 'merlin'")
    parser.add_argument("--ibound", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3, help="timings are the best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="only a few small cases")
    parser.add_argument("--out", type=Path, help="also write one JSON line per case here")
    parser.add_argument("--bte-max-width", type=int, default=24, help="run merlin BTE up to this induced width")
    parser.add_argument("--only", help="comma-separated case labels to run")
    args = parser.parse_args()

    if args.reference:
        binary = str(write_wrapper(tempfile.mkdtemp(prefix="reference_merlin_")))
    elif args.merlin_path:
        binary = args.merlin_path
    else:
        parser.error("no merlin: pass --merlin-path, set MERLIN_PATH, or use --reference")
    merlin = MerlinEngine(binary, algorithm="wmb", ibound=args.ibound, timeout=600)
    bte = MerlinEngine(binary, algorithm="bte", timeout=600)
    merlin_unscaled = MerlinEngine(binary, algorithm="wmb", ibound=args.ibound, timeout=600, rescale=False)
    native = NativeEngine()
    exact_engine = NativeEngine(method="exact", max_exact_cover=24)

    header = (
        f"{'case':24} {'V':>4} {'E':>6} | {'merlin s':>8} {'w*':>3} {'ex':>3} {'|ΔP| merlin':>11} | "
        f"{'native s':>8} {'|ΔP| native':>11} {'native alg':>18} | {'exact s':>7} {'exact by':>11} | {'ΔP m-n':>8} {'unscaled':>9}"
    )
    print(f"merlin: {binary}  (wmb, i-bound {args.ibound}); best of {args.repeats}")
    print(header)
    print("-" * len(header))
    rows = []
    for index, case in enumerate(CASES):
        if args.quick and case.label not in QUICK:
            continue
        if args.only and case.label not in args.only.split(","):
            continue
        graph = make_graph(case, args.seed + index)
        row: dict = {"case": case.label, "variables": graph.num_variables, "factors": graph.num_factors}
        try:
            m, m_s = timed(merlin, graph, args.repeats)
            row |= {"merlin_s": m_s, "induced_width": m.details["induced_width"], "merlin_exact": m.exact}
        except InferenceError as exc:
            m, row["merlin_error"] = None, f"{type(exc).__name__}: {exc}"
        n, n_s = timed(native, graph, args.repeats)
        row |= {"native_s": n_s, "native_algorithm": n.algorithm, "native_exact": n.exact}
        x = None
        if case.exact:
            try:
                x, x_s = timed(exact_engine, graph, 1)
                row["exact_s"] = x_s
            except InferenceError as exc:
                row["exact_error"] = str(exc)
        row["exact_by"] = "enumeration" if x is not None else "-"
        width = row.get("induced_width")
        if width is not None and width <= args.bte_max_width:
            try:
                b, b_s = timed(bte, graph, 1)
                row["bte_s"] = b_s
                if x is not None:
                    row["bte_vs_enumeration_dp"] = max_delta(b.marginals, x.marginals)
                else:
                    x, row["exact_by"], row["exact_s"] = b, "merlin-bte", b_s
            except InferenceError as exc:
                row["bte_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if x is not None:
            row["native_dp"] = max_delta(n.marginals, x.marginals)
            if m is not None:
                row["merlin_dp"] = max_delta(m.marginals, x.marginals)
        if m is not None:
            row["merlin_vs_native_dp"] = max_delta(m.marginals, n.marginals)
        try:
            merlin_unscaled.infer(graph)
            row["unscaled"] = "ok"
        except MerlinUnderflowError:
            row["unscaled"] = "underflow"
        except InferenceError as exc:
            row["unscaled"] = type(exc).__name__
        rows.append(row)

        def f(key: str, fmt: str) -> str:
            return format(row[key], fmt) if key in row else "-"

        print(
            f"{case.label:24} {row['variables']:>4} {row['factors']:>6} | {f('merlin_s', '8.3f')} "
            f"{f('induced_width', '3d')} {('yes' if row.get('merlin_exact') else 'no'):>3} {f('merlin_dp', '11.2e')} | "
            f"{f('native_s', '8.3f')} {f('native_dp', '11.2e')} {row['native_algorithm'][:18]:>18} | "
            f"{f('exact_s', '7.2f')} {row['exact_by']:>11} | {f('merlin_vs_native_dp', '8.2e')} {row['unscaled']:>9}",
            flush=True,
        )
        for key in ("merlin_error", "exact_error", "bte_error"):
            if key in row:
                print(f"    {key}: {row[key][:300]}")
        if "bte_vs_enumeration_dp" in row:
            print(
                f"    merlin BTE vs enumeration: max |ΔP| = {row['bte_vs_enumeration_dp']:.2e} ({row['bte_s']:.3f} s)"
            )
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A stand-in for the merlin binary: same command line, same MAR output files, exact answers.

merlin is C++ that users compile themselves; CI has none. This program honours the part of
merlin's command line the bridge uses and writes merlin's output formats byte for byte in
layout (numbers with ``std::fixed`` 6 decimals, like merlin), so the runner is tested end to
end through a real subprocess::

    python -m merlin_bridge.reference_solver --input-file F.uai [--evidence-file F.uai.evid]
        --task MAR --algorithm wmb --ibound 6 [--iterations N]
        --output-format json|uai [--output-file OUT]     # writes OUT.MAR.json or OUT.MAR

Marginals are exact whatever ``--algorithm`` says: evidence is conditioned into the tables,
then binary pairwise models go to fact_reasoner's exact engine (``NativeEngine`` with
``method="exact"``, vertex-cover enumeration) and anything else to brute-force enumeration.
Like merlin, ``status`` is false, with no marginals, when ``exp(ln Z) == 0``.

Misbehaviour on request, to test every error path of the runner (environment variables):

``MERLIN_REFERENCE_FAULT``
    ``exit`` (stderr message, exit status 3), ``sleep`` (sleep ``MERLIN_REFERENCE_SLEEP``
    seconds, default 60, before doing anything), ``status-false`` (the underflow answer),
    ``truncate`` (only the first half of the output file), ``garbage`` (an output file that
    is not merlin's format), ``count-mismatch`` (one variable missing), ``no-output`` (exit 0
    without writing a file).
``MERLIN_REFERENCE_DIGITS``
    decimals printed (default 6, as merlin).

:func:`write_wrapper` makes an executable that runs this module, for ``--merlin-path``.
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .output import mar_json_text, mar_uai_text
from .uai import UaiModel, read_evidence, read_uai

FAULTS = ("exit", "sleep", "status-false", "truncate", "garbage", "count-mismatch", "no-output")
ALGORITHMS = ("bte", "cte", "wmb", "ijgp", "lbp", "jglp", "gibbs")
BRUTE_FORCE_MAX_STATES = 1 << 22


# --------------------------------------------------------------------------------------------
# Exact inference on a generic UAI model


def condition(model: UaiModel, evidence: dict[int, int]) -> tuple[UaiModel, list[int], float]:
    """Clamp observed variables: the model over the unobserved ones, their original indices,
    and the log of the constant factors left over (``-inf`` if the evidence has probability 0).

    Each table is sliced at the observed values; a factor whose whole scope is observed
    becomes a constant.
    """
    for var, val in evidence.items():
        if not 0 <= var < model.num_variables:
            raise ValueError(f"evidence names variable {var}, the model has {model.num_variables}")
        if not 0 <= val < model.cardinalities[var]:
            raise ValueError(f"evidence value {val} out of range for variable {var}")
    kept = [v for v in range(model.num_variables) if v not in evidence]
    new_index = {v: i for i, v in enumerate(kept)}
    scopes, tables = [], []
    log_constant = 0.0
    for scope, table in zip(model.scopes, model.tables):
        index = tuple(evidence[v] if v in evidence else slice(None) for v in scope)
        sliced = table[index]
        rest = tuple(new_index[v] for v in scope if v not in evidence)
        if rest:
            scopes.append(rest)
            tables.append(np.asarray(sliced, dtype=float))
        else:
            value = float(sliced)
            log_constant += math.log(value) if value > 0 else -math.inf
    reduced = UaiModel("MARKOV", tuple(model.cardinalities[v] for v in kept), tuple(scopes), tuple(tables))
    return reduced, kept, log_constant


def brute_force(model: UaiModel) -> tuple[list[np.ndarray], float]:
    """Marginals and ln Z by enumerating every joint state (log space, any arity/cardinality).

    ln P̃(x) = Σ_f ln table_f(x_scope(f));  ln Z = logsumexp_x ln P̃(x).
    """
    cards = model.cardinalities
    if math.prod(cards) > BRUTE_FORCE_MAX_STATES:
        raise ValueError(f"model too large to enumerate ({math.prod(cards)} states)")
    if not cards:
        total = sum(math.log(float(t)) if float(t) > 0 else -math.inf for t in model.tables)
        return [], total
    states = np.indices(cards).reshape(len(cards), -1)
    with np.errstate(divide="ignore"):
        logp = np.zeros(states.shape[1])
        for scope, table in zip(model.scopes, model.tables):
            logp += np.log(table[tuple(states[v] for v in scope)])
    top = logp.max()
    if not math.isfinite(top):
        return [np.full(c, math.nan) for c in cards], -math.inf
    weights = np.exp(logp - top)
    z = weights.sum()
    marginals = [np.bincount(states[v], weights=weights, minlength=c) / z for v, c in enumerate(cards)]
    return marginals, float(math.log(z) + top)


def exact_marginals(model: UaiModel) -> tuple[list[np.ndarray], float, str]:
    """Exact marginals and ln Z of ``model``, and which method computed them."""
    pairwise_binary = all(c == 2 for c in model.cardinalities) and all(len(s) <= 2 for s in model.scopes)
    zero_arity = [s for s in model.scopes if len(s) == 0]
    if pairwise_binary and not zero_arity and model.num_variables > 0:
        markov = UaiModel("MARKOV", model.cardinalities, model.scopes, model.tables)
        try:
            graph, log_constant = markov.to_factor_graph()
        except ValueError:
            graph = None
        if graph is not None and np.all(graph.tables > 0) and np.all((graph.prior > 0) & (graph.prior < 1)):
            try:
                from fact_reasoner.inference import native
            except ImportError:  # the native engine is optional here; brute force still works
                native = None  # type: ignore[assignment]
            if native is not None:
                NativeEngine = native.NativeEngine
                from fact_reasoner.inference import InferenceError

                try:
                    result = NativeEngine(method="exact", max_exact_cover=26).infer(graph)
                except InferenceError:  # cover too large: brute force below may still fit
                    result = None
                if result is not None:
                    p1 = np.array([result.marginals[name] for name in graph.variables])
                    log_z = (result.log_partition or 0.0) + log_constant
                    return [np.array([1.0 - p, p]) for p in p1], log_z, "native-exact"
    marginals, log_z = brute_force(model)
    return marginals, log_z, "enumeration"


# --------------------------------------------------------------------------------------------
# Command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="merlin (reference solver)", description=__doc__.split("\n")[0])
    parser.add_argument("-f", "--input-file", required=True)
    parser.add_argument("-e", "--evidence-file")
    parser.add_argument("-o", "--output-file")
    parser.add_argument("-a", "--algorithm", choices=ALGORITHMS, default="wmb")
    parser.add_argument("-t", "--task", default="MAR")
    parser.add_argument("-i", "--ibound", type=int, default=2)
    parser.add_argument("-n", "--iterations", type=int, default=10)
    parser.add_argument("-O", "--output-format", choices=("uai", "json"), default="uai")
    parser.add_argument("-l", "--time-limit", type=int)
    parser.add_argument("-s", "--seed", type=int)
    parser.add_argument("-m", "--samples", type=int)
    parser.add_argument("-v", "--verbose", type=int)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    fault = os.environ.get("MERLIN_REFERENCE_FAULT", "")
    if fault and fault not in FAULTS:
        print(f"unknown MERLIN_REFERENCE_FAULT {fault!r}; known: {', '.join(FAULTS)}", file=sys.stderr)
        return 2
    if fault == "sleep":
        time.sleep(float(os.environ.get("MERLIN_REFERENCE_SLEEP", "60")))
    if fault == "exit":
        print("[REFERENCE] injected failure: out of memory while building the join graph", file=sys.stderr)
        return 3
    if args.task != "MAR":
        print(f"the reference solver does only MAR, not {args.task}", file=sys.stderr)
        return 1
    digits = int(os.environ.get("MERLIN_REFERENCE_DIGITS", "6"))

    try:
        model = read_uai(args.input_file)
        evidence = read_evidence(args.evidence_file) if args.evidence_file else {}
        reduced, kept, log_constant = condition(model, evidence)
        start = time.perf_counter()
        reduced_marginals, log_z, method = exact_marginals(reduced)
    except (OSError, ValueError) as exc:
        print(f"[REFERENCE] error: {exc}", file=sys.stderr)
        return 1
    log_z += log_constant
    print(f"[REFERENCE] exact MAR by {method} in {time.perf_counter() - start:.6f} seconds")
    print("[REFERENCE] + exact inference  : Yes")

    marginals: list[list[float]] = []
    by_kept = dict(zip(kept, reduced_marginals))
    for v in range(model.num_variables):
        if v in evidence:
            marginals.append([1.0 if k == evidence[v] else 0.0 for k in range(model.cardinalities[v])])
        else:
            marginals.append([float(p) for p in by_kept[v]])

    underflow = not math.isfinite(log_z) or math.exp(log_z) == 0.0  # merlin's test: exp(ln Z) == 0
    if fault == "status-false":
        underflow = True
    if fault == "count-mismatch":
        marginals = marginals[:-1]
    result = None if underflow else marginals

    out_stem = args.output_file or "./" + Path(args.input_file).name
    if args.output_format == "json":
        path = Path(out_stem + ".MAR.json")
        text = mar_json_text(
            algorithm=args.algorithm,
            ibound=args.ibound,
            iterations=args.iterations,
            log_partition=log_z,
            marginals=result,
            digits=digits,
            samples=args.samples or 1000,
        )
    else:
        path = Path(out_stem + ".MAR")
        text = mar_uai_text(
            log_partition=log_z,
            marginals=marginals,
            status=not underflow,
            digits=digits,
            gibbs=args.algorithm == "gibbs",
        )
    if fault == "truncate":
        text = text[: len(text) // 2]
    elif fault == "garbage":
        text = "this is not merlin output\n"
    if fault != "no-output":
        path.write_text(text, encoding="ascii")
    return 0


def write_wrapper(directory: str | Path, python: str | None = None, name: str = "merlin") -> Path:
    """Write an executable ``directory/name`` that runs this solver with ``python`` (default:
    the running interpreter), for use as ``--merlin-path`` / ``MERLIN_PATH``."""
    project_root = Path(__file__).resolve().parents[1]
    path = Path(directory) / name
    path.write_text(
        "#!/bin/sh\n"
        "# merlin stand-in: fact_reasoner's exact reference MAR solver\n"
        f'PYTHONPATH="{project_root}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{python or sys.executable}" -m merlin_bridge.reference_solver "$@"\n',
        encoding="utf-8",
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


if __name__ == "__main__":
    sys.exit(main())

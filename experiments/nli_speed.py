"""Ways to run a shipped int8 cross-encoder faster, side by side: their numbers and their speed.

    .venv-dev/bin/python -m experiments.nli_speed [--model DIR] [--items 160] [--rounds 5] \
        [--static DIR] [--json FILE]

The items are real (claim, window) items: the first FActScore (atom, BM25 passage) pairs of
``scripts/benchmark_nli`` cut into the windows the backend scores. Each way of running the graph
(a *variant*) is checked against the graph as written run one item at a time — what the backend
did before issue 53 — and timed:

- ``as written``: ``model.onnx`` as the file says, one item per run;
- ``rows gathered``: the embedding rows gathered before they are dequantised
  (:func:`fact_reasoner.nli.graph_rewrite.gather_before_dequantise`, what the backend loads);
- ``per-item scales``: ONNX Runtime's own optimised graph (its fused int8 kernels, as it runs the
  file) with every dynamic activation quantisation done per item of the batch — each item's
  scale and zero point from its own tokens (padding masked out, zero always in range:
  ``scale = (max(0, x_max) − min(0, x_min)) / 255``, ``zero = round(−min/scale)``), the
  products corrected for the item's zero point in int32 (``Σ(q − z)w = Σ qw − z·Σw``) and
  scaled as the fused kernel scales them (``float(acc) · (s_a · s_w) + b``) — so any batch gives
  each item the numbers it gets alone;
- ``static int8`` (``--static DIR``, an ``export.py --weights int8-static`` folder): fixed
  activation scales, batch-invariant by construction, other weights' numbers.

Per variant and runs of ``batch`` items: the largest |Δlogit| against ``as written`` one at a
time, the arg-max changes, whether shuffled runs of 7 give each item the numbers it gets alone,
and items per second on one thread (the best of ``--rounds`` interleaved rounds: the load of
other jobs only slows a round down), wall and CPU. The load average is printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# -- the per-item-scales graph -------------------------------------------------------------


def per_item_scales(model: Any) -> Any:
    """``model`` (ONNX Runtime's optimised graph of a dynamic int8 export, with its
    ``DynamicQuantizeLinear`` / ``MatMulIntegerToFloat`` / ``DynamicQuantizeMatMul`` nodes) with
    each activation quantised per item of the batch, as the module docstring says; in place."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    added: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        added.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    zero, one, top = const("pi_zero", np.float32(0)), const("pi_one", np.float32(1)), const("pi_255", np.float32(255))
    flat, last, axis2 = const("pi_flat", np.array([0, -1])), const("pi_last", np.array([-1])), const("pi_axis2", [2])
    mask = node("Unsqueeze", [node("Cast", ["attention_mask"], "pi_mask_bool", to=TensorProto.BOOL), axis2], "pi_mask")

    def quantise(x: str) -> tuple[str, str, str]:
        """``x`` (items × tokens × features) → (uint8 values, scale, int32 zero point per item)."""
        real = node("Where", [mask, x, zero], f"{x}_pi_real")
        low = node("Min", [node("ReduceMin", [real], f"{x}_pi_min0", axes=[1, 2], keepdims=1), zero], f"{x}_pi_min")
        high = node("Max", [node("ReduceMax", [real], f"{x}_pi_max0", axes=[1, 2], keepdims=1), zero], f"{x}_pi_max")
        width = node("Div", [node("Sub", [high, low], f"{x}_pi_range"), top], f"{x}_pi_width")
        scale = node("Where", [node("Equal", [high, low], f"{x}_pi_flat"), one, width], f"{x}_pi_scale")
        point = node("Sub", [zero, node("Div", [low, scale], f"{x}_pi_low")], f"{x}_pi_point0")
        point = node("Round", [node("Clip", [point, zero, top], f"{x}_pi_point1")], f"{x}_pi_point")
        point8 = node("Cast", [point], f"{x}_pi_point_u8", to=TensorProto.UINT8)
        values = node(
            "QuantizeLinear",
            [
                node("Reshape", [x, flat], f"{x}_pi_rows"),
                node("Reshape", [scale, last], f"{x}_pi_scales"),
                node("Reshape", [point8, last], f"{x}_pi_points"),
            ],
            f"{x}_pi_q_rows",
            axis=0,
        )
        values = node("Reshape", [values, node("Shape", [x], f"{x}_pi_shape")], f"{x}_pi_q")
        return values, scale, node("Cast", [point], f"{x}_pi_point_i32", to=TensorProto.INT32)

    def product(quantised: tuple[str, str, str], w: str, w_scale: str, w_zero: str, bias: str, out: str) -> None:
        values, scale, point = quantised
        q = numpy_helper.to_array(weights[w]).astype(np.int64)
        z = numpy_helper.to_array(weights[w_zero]).astype(np.int64) if w_zero else 0
        column_sums = const(f"{out}_pi_colsum", (q - z).sum(axis=0).astype(np.int32))
        acc = node("MatMulInteger", [values, w, "", w_zero] if w_zero else [values, w], f"{out}_pi_acc0")
        acc = node("Sub", [acc, node("Mul", [point, column_sums], f"{out}_pi_shift")], f"{out}_pi_acc")
        scaled = node(
            "Mul",
            [node("Cast", [acc], f"{out}_pi_accf", to=TensorProto.FLOAT), node("Mul", [scale, w_scale], f"{out}_pi_m")],
            f"{out}_pi_y" if bias else out,
        )
        if bias:
            node("Add", [scaled, bias], out)

    quantised: dict[str, tuple[str, str, str]] = {}
    for original in list(graph.node):
        inputs = list(original.input) + [""] * 7
        if original.op_type == "DynamicQuantizeLinear":
            quantised[original.output[0]] = quantise(original.input[0])
        elif original.op_type == "MatMulIntegerToFloat":
            product(quantised[inputs[0]], inputs[1], inputs[3], inputs[5], inputs[6], original.output[0])
        elif original.op_type == "DynamicQuantizeMatMul":
            product(quantise(inputs[0]), inputs[1], inputs[2], inputs[3], inputs[4], original.output[0])
        else:
            nodes.append(original)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    return model


# -- the variants ----------------------------------------------------------------------------


def session(model: str | bytes, threads: int = 1, optimised: bool = True) -> Any:
    """An ONNX Runtime CPU session (``optimised``: ONNX Runtime's optimisations, else none: for a
    graph it has optimised already)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not optimised:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def variants(folder: Path, static: Path | None, work: Path) -> dict[str, tuple[Any, bool]]:
    """``{name: (session, batches allowed)}`` for each variant of the module docstring."""
    import onnx
    import onnxruntime

    from fact_reasoner.nli.graph_rewrite import gather_before_dequantise, load_rewritten

    out: dict[str, tuple[Any, bool]] = {
        "as written": (session(str(folder / "model.onnx")), False),
        "rows gathered": (session(load_rewritten(folder / "model.onnx")), False),
    }
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(work / "extended.onnx")
    onnxruntime.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
    model = onnx.load(str(work / "extended.onnx"))
    gather_before_dequantise(model)
    out["per-item scales"] = (session(per_item_scales(model).SerializeToString(), optimised=False), True)
    if static is not None:
        out["static int8"] = (session(load_rewritten(static / "model.onnx")), True)
    return out


# -- numbers and speed -----------------------------------------------------------------------


def real_items(folder: Path, n: int) -> list[Any]:
    """The tokenizer's encodings of the first ``n`` (window, claim) items of benchmark_nli's pairs."""
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from scripts.benchmark_nli import DEFAULT_PASSAGES, load_pairs

    backend = CrossEncoderNLI(folder, threads=1)
    items = [(w, h) for p, h in load_pairs(DEFAULT_PASSAGES, n) for w in backend.selected_windows(p, h)][:n]
    return backend.tokenizer.encode_batch(items)


def feeds(encodings: Sequence[Any]) -> dict[str, np.ndarray]:
    """One run's inputs: the items padded with 0 to the longest, the mask marking real tokens."""
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    types, mask = np.zeros_like(ids), np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)], types[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, e.type_ids, 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def run(model: Any, encodings: Sequence[Any], runs: list[list[int]]) -> np.ndarray:
    """Each item's logits, the items run in ``runs`` (lists of item indices)."""
    logits = np.zeros((len(encodings), 3), dtype=np.float32)
    for items in runs:
        logits[items] = model.run(["logits"], feeds([encodings[i] for i in items]))[0]
    return logits


def by_length(encodings: Sequence[Any], size: int) -> list[list[int]]:
    """Runs of ``size`` items of neighbouring lengths (sorted by token count)."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    return [order[k : k + size] for k in range(0, len(order), size)]


def shuffled(n: int, size: int, seed: int = 0) -> list[list[int]]:
    """Runs of ``size`` items in a seeded random order."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[k : k + size] for k in range(0, n, size)]


def speed_of(timed: Callable[[], object], items: int) -> tuple[float, float]:
    """(items/s wall, items per CPU-second) of one round of ``timed``."""
    wall, cpu = time.perf_counter(), time.process_time()
    timed()
    return items / (time.perf_counter() - wall), items / (time.process_time() - cpu)


def measure(folder: Path, static: Path | None, n: int, rounds: int, sizes: Sequence[int]) -> list[dict[str, Any]]:
    """The table of the module docstring, one row per (variant, run size)."""
    encodings = real_items(folder, n)
    with tempfile.TemporaryDirectory() as tmp:
        models = variants(folder, static, Path(tmp))
        alone = run(models["as written"][0], encodings, [[i] for i in range(n)])
        plan = [(name, size) for name, (_, batched) in models.items() for size in (sizes if batched else [1])]
        speeds: dict[tuple[str, int], list[tuple[float, float]]] = {key: [] for key in plan}
        for round_ in range(rounds):
            for step in range(len(plan)):
                name, size = plan[(step + round_) % len(plan)]
                runs = by_length(encodings, size)
                speeds[(name, size)].append(speed_of(lambda: run(models[name][0], encodings, runs), n))
        rows = []
        for name, size in plan:
            model = models[name][0]
            logits = run(model, encodings, by_length(encodings, size))
            own = run(model, encodings, [[i] for i in range(n)])
            rows.append(
                {
                    "variant": name,
                    "items_per_run": size,
                    "items": n,
                    "max_abs_dlogit": float(np.abs(logits - alone).max()),
                    "argmax_changes": int((logits.argmax(1) != alone.argmax(1)).sum()),
                    "same_in_any_batch": bool(np.array_equal(run(model, encodings, shuffled(n, 7)), own)),
                    "items_per_s": round(max(s[0] for s in speeds[(name, size)]), 1),
                    "items_per_cpu_s": round(max(s[1] for s in speeds[(name, size)]), 1),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=ROOT / "fact_reasoner" / "models" / "nli-minilm-l6")
    parser.add_argument("--static", type=Path, help="an export.py --weights int8-static folder of the same model")
    parser.add_argument("--items", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="1,4,8,16", help="items per run of the batchable variants")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    rows = measure(args.model, args.static, args.items, args.rounds, [int(s) for s in args.sizes.split(",")])
    print(f"{args.model.name}, {args.items} items, one thread, best of {args.rounds} rounds")
    print("| variant | items/run | max abs Δlogit | arg-max changes | same in any batch | items/s | items/CPU-s |")
    print("|---|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print(
            f"| {r['variant']} | {r['items_per_run']} | {r['max_abs_dlogit']:.3g} | {r['argmax_changes']} "
            f"| {'yes' if r['same_in_any_batch'] else 'no'} | {r['items_per_s']} | {r['items_per_cpu_s']} |"
        )
    print(f"load average (1 min) {load:.2f} → {os.getloadavg()[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

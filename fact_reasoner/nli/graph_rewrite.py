"""Rewrites of an int8 cross-encoder graph that change its speed and none of its numbers.

**Embedding rows gathered before they are dequantised.** ``export.py --weights int8`` stores the
word-embedding table (30,522 × 384) as int8 rows ``q`` with one scale per row ``s``, read as

    E = DequantizeLinear(q, s, axis=0),   h = Gather(E, ids),   E[r, k] = float(q[r, k]) · s[r]

ONNX Runtime does not fold a ``DequantizeLinear`` of a constant (it keeps quantised patterns for
its own fusions), so every run dequantised all 11.7 million values to read ``T`` rows of them —
about a quarter of a one-item run of the shipped model. :func:`gather_before_dequantise` reads the
rows first:

    h[t, k] = float(Gather(q, ids)[t, k]) · Gather(s, ids)[t]

the same float32 product for each value that is read, so every probability is bit-identical (the
tests compare the two graphs on real pairs) and the cache's verdicts stay valid: the model file,
and so its fingerprint, do not change.

Why not batches: a batch of the shipped graph shares one activation scale per tensor (dynamic
int8), so its numbers depend on the batch. A graph with one scale per item (each item quantised
over its own tokens, zero points corrected in int32) gives bit-identical numbers in any batch, but
measured on two cores it was slower than one item per run once the embedding rows are gathered
(``docs/judges.md``, "How fast the cross-encoders run"; ``experiments/nli_speed.py``); the
backend runs items one at a time, in parallel.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["gather_before_dequantise", "load_rewritten"]

#: the initializer added for the scales' trailing axis (``Unsqueeze`` axes)
_LAST_AXIS = "gathered_rows_last_axis"


def _dequantised_tables(graph: Any) -> dict[str, Any]:
    """``{output: node}`` for each ``DequantizeLinear`` of an initializer that every consumer reads
    with ``Gather`` on axis 0, per row (``axis=0``) or with one scale, and no non-zero zero point:
    the tables :func:`gather_before_dequantise` can read row by row."""
    from onnx import numpy_helper

    initializers = {init.name: init for init in graph.initializer}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    graph_outputs = {output.name for output in graph.output}
    tables = {}
    for node in graph.node:
        if node.op_type != "DequantizeLinear" or node.input[0] not in initializers:
            continue
        scale = initializers.get(node.input[1])
        if scale is None or len(scale.dims) > 1:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        if len(scale.dims) == 1 and axis != 0:
            continue
        if len(node.input) > 2 and node.input[2]:
            zero_point = initializers.get(node.input[2])
            if zero_point is None or np.any(numpy_helper.to_array(zero_point)):
                continue
        readers = consumers.get(node.output[0], [])
        if node.output[0] in graph_outputs or not readers:
            continue
        if all(
            reader.op_type == "Gather"
            and reader.input[0] == node.output[0]
            and next((a.i for a in reader.attribute if a.name == "axis"), 0) == 0
            for reader in readers
        ):
            tables[node.output[0]] = node
    return tables


def gather_before_dequantise(model: Any) -> list[str]:
    """Rewrite ``model`` (an ``onnx.ModelProto``, in place) so that each int8 table read only by
    ``Gather`` is gathered first and dequantised after: ``float(q[ids]) · s[ids]`` (one scale per
    row, unsqueezed over the row) or ``float(q[ids]) · s`` (one scale). Returns the tables
    rewritten (none: the model is unchanged)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    tables = _dequantised_tables(graph)
    if not tables:
        return []
    nodes = []
    for node in graph.node:
        if node.op_type == "DequantizeLinear" and node.output[0] in tables:
            continue  # the whole table is no longer dequantised
        if node.op_type != "Gather" or node.input[0] not in tables:
            nodes.append(node)
            continue
        table = tables[node.input[0]]
        quantised, scale, ids, out = table.input[0], table.input[1], node.input[1], node.output[0]
        nodes.append(helper.make_node("Gather", [quantised, ids], [out + "_int8"], name=out + "_int8", axis=0))
        nodes.append(
            helper.make_node("Cast", [out + "_int8"], [out + "_float"], name=out + "_float", to=TensorProto.FLOAT)
        )
        row_scale = scale
        if _dims(graph, scale):
            nodes.append(helper.make_node("Gather", [scale, ids], [out + "_scale"], name=out + "_scale", axis=0))
            nodes.append(
                helper.make_node(
                    "Unsqueeze", [out + "_scale", _LAST_AXIS], [out + "_row_scale"], name=out + "_row_scale"
                )
            )
            row_scale = out + "_row_scale"
        nodes.append(helper.make_node("Mul", [out + "_float", row_scale], [out], name=out))
    del graph.node[:]
    graph.node.extend(nodes)
    if _LAST_AXIS not in {init.name for init in graph.initializer}:
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), _LAST_AXIS))
    return sorted(tables)


def _dims(graph: Any, name: str) -> list[int]:
    return next(list(init.dims) for init in graph.initializer if init.name == name)


def load_rewritten(graph: str | Path) -> bytes | str:
    """The graph at ``graph`` with its int8 embedding tables gathered before they are
    dequantised (:func:`gather_before_dequantise`), serialised for an ONNX Runtime session; the
    path itself when there is nothing to rewrite or the ``onnx`` package is missing."""
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx comes with the embeddings extra
        return str(graph)
    model = onnx.load(str(graph))
    rewritten = gather_before_dequantise(model)
    if not rewritten:
        return str(graph)
    logger.debug("%s: embedding rows gathered before dequantisation (%s)", graph, ", ".join(rewritten))
    return model.SerializeToString()

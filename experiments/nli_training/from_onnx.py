"""Turn a shipped cross-encoder (``model.onnx`` built by ``export.py``) back into a trainable folder.

    .venv/bin/python -m experiments.nli_training.from_onnx fact_reasoner/models/nli-minilm-l6 runs/shipped_hf

The shipped folder is the one checkpoint that survives a lost machine (it is committed), so
training resumes from it: this reads the graph's initializers (fp16 weights stored transposed,
``*.weight_t_fp16``; see ``fact_reasoner.onnx_bert.build_bert_onnx``), writes a
``BertForSequenceClassification`` folder with the tokenizer, and checks that the torch model gives
the ONNX graph's probabilities on a few pairs (same token ids) (max |Δp| printed; fp16 weights are exact in fp32).
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


def state_dict_from_onnx(path: Path) -> dict:
    """Torch parameter name → float32 array, from the graph's initializers."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    out = {}
    for init in onnx.load(str(path)).graph.initializer:
        name, array = init.name, numpy_helper.to_array(init)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shipped", type=Path, help="folder with model.onnx, tokenizer.json and config.json")
    parser.add_argument("out", type=Path)
    args = parser.parse_args()

    import torch
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    shipped_config = json.loads((args.shipped / "config.json").read_text())
    config = BertConfig(
        vocab_size=shipped_config["vocab_size"],
        hidden_size=shipped_config["hidden_size"],
        num_hidden_layers=shipped_config["num_hidden_layers"],
        num_attention_heads=shipped_config["num_attention_heads"],
        intermediate_size=4 * shipped_config["hidden_size"],
        max_position_embeddings=shipped_config["max_position_embeddings"],
        num_labels=3,
        id2label=dict(enumerate(CLASSES)),
        label2id={c: i for i, c in enumerate(CLASSES)},
    )
    model = BertForSequenceClassification(config)
    weights = {k: torch.from_numpy(v) for k, v in state_dict_from_onnx(args.shipped / "model.onnx").items()}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise SystemExit(f"weights do not match BERT: missing {missing}, unexpected {unexpected}")
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(args.shipped / "tokenizer.json"),
        unk_token="[UNK]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    tokenizer.save_pretrained(args.out)
    shutil.copy(args.shipped / "config.json", args.out / "shipped_config.json")

    import numpy as np
    import onnxruntime

    pairs = [
        ("Paris is the capital of France.", "France's capital is Paris."),
        ("He was born in 1942 in Leeds.", "He was born in 1949."),
        ("The band released three albums in the nineties.", "The singer likes tea."),
    ]
    model.eval()
    enc = tokenizer(
        [p for p, _ in pairs], [h for _, h in pairs], return_tensors="np", padding=True, return_token_type_ids=True
    )
    session = onnxruntime.InferenceSession(str(args.shipped / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {i.name: enc[i.name].astype(np.int64) for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    onnx_logits = session.run(None, feeds)[names.index("logits")]
    onnx_p = torch.softmax(torch.from_numpy(onnx_logits), -1).tolist()
    with torch.no_grad():
        torch_p = torch.softmax(model(**{k: torch.from_numpy(v) for k, v in enc.items()}).logits, -1).tolist()
    gap = max(abs(a - b) for x, y in zip(onnx_p, torch_p) for a, b in zip(x, y))
    print(f"written {args.out}; max |Δp| torch vs shipped ONNX on {len(pairs)} pairs: {gap:.2e}")
    if gap > 1e-2:
        raise SystemExit("the converted model does not reproduce the shipped one")


if __name__ == "__main__":
    main()

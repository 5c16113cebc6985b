"""Fine-tune the cross-encoder on targeted behavioural pairs with replay of the mix and the
in-domain bags, from a checkpoint (version 3: ``from_onnx.py``), on CPU, resumable.

    .venv-dev/bin/python -m experiments.nli_training.finetune --init runs/nli/v3_hf \
        --mix runs/nli/mix.json --indomain runs/nli/indomain.json --targeted runs/nli/targeted.json \
        --out runs/nli/ft [--steps 1500] [--resume]

Each step: ``--targeted-rows`` targeted rows (``targeted.py``: drawn with equal weight per
capability, so the many role-swap rows do not crowd out the rest), ``--replay-rows`` rows of
the mix's training rows (the set loss of ``train.set_loss``; the mix's single-pair FActScore
rows left out, as in stage 3), and every ``--bag-every`` steps ``--bags`` in-domain bags with the
multiple-instance loss (``distill.bag_loss``), and every ``--factcg-every`` steps ``--factcg-rows``
of FactCG's document pairs (``bundle.factcg_rows``, the whole document at
``--factcg-max-length`` tokens, as the GPU bundle has them) — replay, bags and documents so that
what version 3 learnt is not forgotten. The word-embedding table (about half of the 22.7M
parameters) is frozen unless ``--train-word-embeddings``: on CPU its gradient and AdamW update
are a large share of a step, and the targeted rows need no new word meanings. ``--keep-entailment-of CHECKPOINT`` adds ``--keep-rows`` pairs of the in-domain pool
a step with the binary cross-entropy between the model's P(entailment) and that checkpoint's
(computed once, ``<out>/keep_entailment.npy``): the model keeps version 3's entailment decisions
on FActScore-like pairs while the targeted rows move neutral against contradiction (a spurious
contradiction is not entailment either way, so the two do not pull against each other). AdamW, ``--lr`` with ``--warmup`` steps, then linear decay to 0 at ``--steps``.

Every ``--eval-every`` steps (and at the last) the model is measured on validation data only —
never on the held-out part of the behavioural suite or the held-out sets:

- ``suite_train``: the behavioural suite's ``train`` part over its hand-written people (never
  trained on: ``targeted.py``'s validation rows), accuracy per capability and the share of
  neutral items labelled contradiction;
- ``mix_validation``: a seeded sample of the mix's validation rows (accuracy in the allowed set);
- ``bags``: the in-domain validation bags (balanced accuracy and AUROC of the bag's max
  P(entailment));

and saved to ``<out>/step_<N>`` (fp16 safetensors); ``<out>/curve.jsonl`` holds the points and
``<out>/last.pt`` what ``--resume`` needs (model, optimiser, step, random states). The
checkpoint to ship is chosen afterwards from the curve (``MODEL_CARD.md`` says how).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from experiments.nli_training.distill import Encoder, bag_loss, bag_metrics, load_model, predict  # noqa: E402
from experiments.nli_training.labels import ALLOWED, CLASSES  # noqa: E402
from experiments.nli_training.train import set_loss  # noqa: E402


def capability_weights(
    rows: list[dict],
    passage_share: float,
    forms_share: float = 0.5,
    positive_share: float = 0.5,
    boost: dict[str, float] | None = None,
) -> list[float]:
    """Sampling weights: each capability gets the same total weight, and the positives that
    balance a negative capability (source ``…_positive``) ``positive_share`` of that; within a
    source, passage rows (``group`` ``targeted:passage:…``) get ``passage_share`` where there are
    any, and of the rest the rows of ``forms.py`` (``targeted:forms``) get ``forms_share`` where
    there are template rows beside them — so that the many fillings of a few templates do not
    crowd out the many wordings. With the defaults, half the targeted rows a step expects
    entailment (word for word, paraphrase, part and the positives) and half do not. ``boost``
    multiplies a capability's weight (``{"role_swap": 3}``: the capability a run learns
    slowest), not its positives'."""

    def kind(row: dict) -> str:
        group = row["group"]
        return (
            "passage" if group.startswith("targeted:passage") else "forms" if group == "targeted:forms" else "template"
        )

    groups: dict[tuple[str, str], int] = defaultdict(int)
    for row in rows:
        groups[(row["source"], kind(row))] += 1
    sources = {source for source, _ in groups}
    weights = []
    for row in rows:
        source, k = row["source"], kind(row)
        present = {g for (s, g) in groups if s == source}
        shares = {"passage": passage_share if "passage" in present else 0.0}
        rest = 1.0 - shares["passage"]
        if {"forms", "template"} <= present:
            shares["forms"], shares["template"] = rest * forms_share, rest * (1 - forms_share)
        else:
            shares["forms"] = shares["template"] = rest
        scale = (
            positive_share if source.endswith("_positive") else (boost or {}).get(source.removeprefix("targeted_"), 1.0)
        )
        weights.append(scale * shares[k] / groups[(source, k)] / len(sources))
    return weights


def suite_metrics(probs: np.ndarray, rows: list[dict]) -> dict:
    """Accuracy per capability (arg-max label in the allowed set) and spurious contradictions."""
    hits: dict[str, list[int]] = defaultdict(list)
    spurious = []
    for p, row in zip(probs, rows):
        label = int(p.argmax())
        hits[row["capability"]].append(int(ALLOWED[row["label"]][label] == 1))
        if row["label"] == "neutral":
            spurious.append(int(CLASSES[label] == "contradiction"))
    accuracy = {k: round(float(np.mean(v)), 4) for k, v in sorted(hits.items())}
    return {
        "accuracy": accuracy,
        "mean": round(float(np.mean(list(accuracy.values()))), 4),
        "spurious_contradiction": round(float(np.mean(spurious)), 4) if spurious else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--init", required=True, help="the starting checkpoint (BERT folder)")
    parser.add_argument("--mix", required=True)
    parser.add_argument("--indomain", required=True)
    parser.add_argument("--targeted", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--targeted-rows", type=int, default=16)
    parser.add_argument("--replay-rows", type=int, default=16)
    parser.add_argument("--bags", type=int, default=4)
    parser.add_argument("--bag-every", type=int, default=1)
    parser.add_argument("--passage-share", type=float, default=0.3)
    parser.add_argument(
        "--boost",
        default="",
        help="capability=factor,… multiplies a capability's share of the targeted rows (e.g. role_swap=3)",
    )
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--eval-every", type=int, default=150)
    parser.add_argument("--val-rows", type=int, default=600, help="mix validation rows (seeded sample)")
    parser.add_argument("--log-every", type=int, default=25)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--keep-entailment-of",
        help="a checkpoint whose P(entailment) on the in-domain pool (indomain.py's unlabelled pairs, less "
        "the validation bags' pairs) the model keeps: binary cross-entropy to it, --keep-rows pairs a step",
    )
    parser.add_argument("--keep-rows", type=int, default=16)
    parser.add_argument("--keep-weight", type=float, default=1.0)
    parser.add_argument(
        "--factcg-rows",
        type=int,
        default=1,
        help="FactCG document pairs (bundle.factcg_rows: the whole document, set loss) every --factcg-every steps; "
        "0 for none",
    )
    parser.add_argument("--factcg-every", type=int, default=2)
    parser.add_argument("--factcg-max-length", type=int, default=320, help="tokens per FactCG pair (320)")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parents[2].parent / "shared" / "data")
    parser.add_argument(
        "--train-word-embeddings",
        action="store_true",
        help="train the word-embedding table too (by default it is frozen: about half of the parameters, and "
        "most of the backward and optimiser work on CPU)",
    )
    parser.add_argument("--val-bags", type=int, default=200, help="in-domain validation bags measured (seeded)")
    parser.add_argument("--bf16", action="store_true", help="bf16 autocast (CPUs with AMX / AVX-512-BF16)")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--limit", type=int, help="smoke runs: only the first N rows of each source")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()

    def log(**fields) -> None:
        fields = {"t": round(time.time() - started, 1)} | fields
        print(json.dumps(fields), flush=True)
        with open(out / "curve.jsonl", "a") as handle:
            handle.write(json.dumps(fields) + "\n")

    mix = json.loads(Path(args.mix).read_text())
    indomain = json.loads(Path(args.indomain).read_text())
    targeted = json.loads(Path(args.targeted).read_text())
    replay = [r for r in mix["train"] if not r["source"].startswith("factscore")]
    aimed = targeted["train"]
    bags = indomain["bags"]["train"]
    val_rows = random.Random(0).sample(mix["validation"], min(args.val_rows, len(mix["validation"])))
    val_bags = indomain["bags"]["validation"]
    if args.val_bags and args.val_bags < len(val_bags):
        val_bags = random.Random(1).sample(val_bags, args.val_bags)
    suite_rows = targeted["validation"]
    if args.limit:
        replay, aimed, bags = replay[: args.limit], aimed[: args.limit], bags[: args.limit // 8 + 1]
        val_rows, val_bags, suite_rows = (
            val_rows[: args.limit // 4],
            val_bags[: args.limit // 8 + 2],
            suite_rows[: args.limit // 2],
        )

    tokenizer, model = load_model(args.init, "cpu")
    encoder = Encoder(tokenizer, args.max_length, True)
    factcg_train: list[dict] = []
    if args.factcg_rows:
        from experiments.nli_training.bundle import factcg_rows, heldout_keys

        # the training rows of the GPU bundle's FactCG stream (its validation claims stay out)
        factcg_args = argparse.Namespace(
            data_dir=args.data_dir, factcg_max_length=args.factcg_max_length, factcg_validation=0.1
        )
        factcg_train, _, _ = factcg_rows(factcg_args, heldout_keys(mix), tokenizer)
        factcg_train = factcg_train[: args.limit or None]
    replay_enc = encoder.encode([(r["premise"], r["hypothesis"]) for r in replay])
    aimed_enc = encoder.encode([(r["premise"], r["hypothesis"]) for r in aimed])
    factcg_encoder = Encoder(tokenizer, args.factcg_max_length, True)
    factcg_enc = factcg_encoder.encode([(r["premise"], r["hypothesis"]) for r in factcg_train])
    allowed_factcg = torch.tensor([ALLOWED[r["label"]] for r in factcg_train]) if factcg_train else None
    bag_enc = encoder.encode([(p, b["atom"]) for b in bags for p in b["premises"]])
    bag_rows, k = [], 0
    for b in bags:
        bag_rows.append(list(range(k, k + len(b["premises"]))))
        k += len(b["premises"])
    val_enc = encoder.encode([(r["premise"], r["hypothesis"]) for r in val_rows])
    val_bag_enc = encoder.encode([(p, b["atom"]) for b in val_bags for p in b["premises"]])
    suite_enc = encoder.encode([(r["premise"], r["hypothesis"]) for r in suite_rows])
    boost = {k: float(v) for k, _, v in (item.partition("=") for item in args.boost.split(",") if item)}
    weights = capability_weights(aimed, args.passage_share, boost=boost)
    keep_enc: list[dict] = []
    keep_target = torch.zeros(0)
    if args.keep_entailment_of:
        # nothing of the validation bags' passages: they choose the checkpoint
        validation_premises = {p for b in val_bags for p in b["premises"]}
        pool = [(r["premise"], r["hypothesis"]) for r in indomain["pool"] if r["premise"] not in validation_premises]
        pool = pool[: args.limit or None]
        keep_enc = encoder.encode(pool)
        cached = out / "keep_entailment.npy"
        if cached.exists() and len(np.load(cached)) == len(pool):
            keep_p = np.load(cached)
        else:
            _, teacher = load_model(args.keep_entailment_of, "cpu")
            keep_p = predict(teacher, encoder, keep_enc, "cpu", batch_size=64)[:, 0]
            np.save(cached, keep_p)
            del teacher
        keep_target = torch.tensor(keep_p, dtype=torch.float32)
    log(
        phase="data",
        replay=len(replay),
        targeted=len(aimed),
        bags=len(bags),
        val_rows=len(val_rows),
        val_bags=len(val_bags),
        suite_rows=len(suite_rows),
        factcg=len(factcg_train),
    )

    if not args.train_word_embeddings:
        model.base_model.embeddings.word_embeddings.weight.requires_grad_(False)
    trained = [p for p in model.parameters() if p.requires_grad]
    log(phase="parameters", trained=sum(p.numel() for p in trained), total=sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    rng = random.Random(args.seed)
    step = 0
    ckpt = out / "last.pt"
    if args.resume and ckpt.exists():
        state = torch.load(ckpt, weights_only=False, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        log(phase="resumed", step=step)

    def lr_at(s: int) -> float:
        if s < args.warmup:
            return args.lr * (s + 1) / args.warmup
        return args.lr * max(0.0, (args.steps - s) / max(args.steps - args.warmup, 1))

    allowed_replay = torch.tensor([ALLOWED[r["label"]] for r in replay])
    allowed_aimed = torch.tensor([ALLOWED[r["label"]] for r in aimed])
    val_allowed = np.asarray([ALLOWED[r["label"]] for r in val_rows])

    def evaluate() -> dict:
        point: dict = {}
        p = predict(model, encoder, suite_enc, "cpu", batch_size=64)
        point["suite_train"] = suite_metrics(p, suite_rows)
        p = predict(model, encoder, val_enc, "cpu", batch_size=64)
        point["mix_validation"] = round(float(val_allowed[np.arange(len(p)), p.argmax(1)].mean()), 4)
        point["bags"] = bag_metrics(predict(model, encoder, val_bag_enc, "cpu", batch_size=64), val_bags)
        return point

    if step == 0 and not (out / "step_0").exists():
        point = {"step": 0} | evaluate()
        log(**point)
        (out / "step_0").mkdir(exist_ok=True)
        (out / "step_0" / "validation.json").write_text(json.dumps(point))

    model.train()
    loss_sum, timer = 0.0, time.time()
    while step < args.steps:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        chosen = rng.choices(range(len(aimed)), weights=weights, k=args.targeted_rows)
        replayed = rng.sample(range(len(replay)), args.replay_rows)
        batch_a = encoder.collate(aimed_enc, chosen, "cpu")
        batch_r = encoder.collate(replay_enc, replayed, "cpu")
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=args.bf16):
            loss = set_loss(model(**batch_a).logits.float(), allowed_aimed[chosen])
            loss = loss + set_loss(model(**batch_r).logits.float(), allowed_replay[replayed])
            if args.bags and step % args.bag_every == 0:
                picked = rng.sample(range(len(bags)), min(args.bags, len(bags)))
                rows, owner = [], []
                for j, b in enumerate(picked):
                    rows += bag_rows[b]
                    owner += [j] * len(bag_rows[b])
                supported = torch.tensor([bags[b]["label"] == "S" for b in picked])
                logits = model(**encoder.collate(bag_enc, rows, "cpu")).logits
                loss = loss + bag_loss(logits, torch.tensor(owner), supported)
            if factcg_enc and args.factcg_rows and step % args.factcg_every == 0:
                picked = rng.sample(range(len(factcg_enc)), min(args.factcg_rows, len(factcg_enc)))
                logits = model(**factcg_encoder.collate(factcg_enc, picked, "cpu")).logits.float()
                loss = loss + set_loss(logits, allowed_factcg[picked])
            if len(keep_enc):
                kept = rng.sample(range(len(keep_enc)), min(args.keep_rows, len(keep_enc)))
                p_entailed = torch.softmax(model(**encoder.collate(keep_enc, kept, "cpu")).logits.float(), -1)[:, 0]
                loss = loss + args.keep_weight * torch.nn.functional.binary_cross_entropy(
                    p_entailed.clamp(1e-6, 1 - 1e-6), keep_target[kept]
                )
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        loss_sum += float(loss.detach())
        if step % args.log_every == 0:
            log(
                step=step,
                loss=round(loss_sum / args.log_every, 4),
                lr=lr_at(step),
                s_per_step=round((time.time() - timer) / args.log_every, 2),
            )
            loss_sum, timer = 0.0, time.time()
        if step % args.eval_every == 0 or step == args.steps:
            point = {"step": step} | evaluate()
            log(**point)
            folder = out / f"step_{step}"
            copy.deepcopy(model).half().save_pretrained(folder)  # the training weights stay fp32
            tokenizer.save_pretrained(folder)
            (folder / "validation.json").write_text(json.dumps(point))
            state = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
                "rng": rng.getstate(),
                "torch_rng": torch.get_rng_state(),
            }
            torch.save(state, str(ckpt) + ".tmp")
            os.replace(str(ckpt) + ".tmp", ckpt)
            model.train()
    log(phase="done", step=step)


if __name__ == "__main__":
    main()

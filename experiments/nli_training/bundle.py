"""The GPU bundle (issue #38): build it on CPU, bring back what one GPU call trained, check it.

    # 1. build (CPU, a few minutes), in the checkout whose tree the device call sends
    .venv-dev/bin/python -m experiments.nli_training.bundle build --out runs/gpu_bundle
    # 2. the device call (GPU.md gives the exact one): gpu_train.py on the bundle
    # 3. join the parts that came back into a checkpoint folder, and check them
    .venv-dev/bin/python -m experiments.nli_training.bundle reassemble /work/.device/…/out --out runs/gpu/best
    # 4. export (fp16-rows) → calibrate → held-out sets → behaviour suite → biographies → quick
    #    start → paired bootstrap → speed, beside the shipped model, with the ship rule of version 4
    #    (issue #42) checked line by line
    .venv-dev/bin/python -m experiments.nli_training.bundle evaluate runs/gpu/best --work runs/gpu/eval

**What a bundle holds** (``manifest.json`` and ``data.npz.xz``, nothing else): the rows already
tokenised for the shipped model's tokenizer — token ids as uint16 end to end with a length per
row, a label, a source, all arrays in one ``.npz`` compressed with xz:

- ``mix``: the training mix (``mix.py``) without its single-pair FActScore rows (the bags
  replace them, as in stage 3), ``--max-length`` tokens;
- ``targeted``: the targeted behavioural pairs (``targeted.py``: the suite's train part only),
  with the capability weights ``finetune.capability_weights`` draws them by;
- ``factcg``: FactCG's document pairs (``sources.factcg``), the whole document at
  ``--factcg-max-length`` tokens; a supported claim whose document does not fit is left out
  (cutting the document may cut a hop it needs), a negative is cut (no part of a document that
  does not back a claim backs it);
- ``bags``: the in-domain bags of stage 3 (``indomain.py``), one row per (window, atom) pair;
- the validation sets, never trained on: ``val_mix`` (the mix's validation rows), ``val_suite``
  (the behavioural suite's train part over its hand-written people), ``val_factcg`` (FactCG
  claims set apart by a hash, 10 %), ``val_bags`` (the in-domain validation topics).

Nothing held out is in it: no held-out set of the mix, no held-out part of the behavioural
suite. A mix row that repeats a held-out pair or claim stops the build (``mix.py`` promises
none); a targeted or FactCG row that does is dropped, as is a FactCG row that names a person of
the suite's held-out part (counted in the manifest's ``dropped``).

**Not in it: the starting weights and the training script.** Both travel with the repository
tree the device call sends anyway — the shipped graph (``fact_reasoner/models/nli-minilm-l6``,
read back by ``from_onnx.bert_from_shipped``; the manifest holds its sha256, and the GPU run
refuses another) and ``gpu_train.py`` with the recipe's own loss functions. That tree is 26 MB,
and a call carries 64 MiB in all: a bundle holding the weights again in fp16 (45 MB) would not
fit beside it. The build measures the tree (``git ls-files --cached --others --exclude-standard``)
and refuses a bundle that would not fit beside it, or one over ``--max-mib`` (60).
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from experiments.nli_training import gpu_train
from experiments.nli_training.labels import ALLOWED

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"
SHIPPED = ROOT / "fact_reasoner" / "models" / "nli-minilm-l6"
MIB = 2**20
#: what one device call carries in all: the working tree, shared/ and the carried paths
CALL_MIB = 64
#: the labels in the order the bundle stores them (index → label)
LABELS = list(ALLOWED)


# --------------------------------------------------------------------------- sizes


def travelling_bytes(root: Path) -> int:
    """Bytes of the files a device call sends from ``root``: tracked files and untracked ones
    that git does not ignore (the carried paths come on top)."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    total = 0
    for name in listing.decode().split("\0"):
        path = root / name
        if name and path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total


def git_state(root: Path) -> dict:
    def run(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": run("rev-parse", "HEAD"), "dirty": bool(run("status", "--porcelain", "--untracked-files=no"))}


# --------------------------------------------------------------------------- rows → arrays


def encode_rows(tokenizer, pairs: list[tuple[str, str]], max_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of ``[CLS] premise [SEP] hypothesis [SEP]`` (the longer side cut first), end to
    end as uint16, and each row's length."""
    from experiments.nli_training.distill import Encoder

    if len(tokenizer) > np.iinfo(np.uint16).max + 1:
        raise SystemExit(f"a vocabulary of {len(tokenizer)} tokens does not fit uint16 ids")
    encoded = Encoder(tokenizer, max_length, True).encode(pairs)
    lengths = np.asarray([len(e["input_ids"]) for e in encoded], dtype=np.uint16)
    tokens = np.fromiter((t for e in encoded for t in e["input_ids"]), dtype=np.uint16, count=int(lengths.sum()))
    return tokens, lengths


def pair_stream(
    name: str, rows: list[dict], tokenizer, max_length: int, source_key: str = "source"
) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and manifest entry of a stream of (premise, hypothesis, label) rows."""
    sources = sorted({r[source_key] for r in rows})
    tokens, lengths = encode_rows(tokenizer, [(r["premise"], r["hypothesis"]) for r in rows], max_length)
    arrays = {
        f"{name}.tokens": tokens,
        f"{name}.lengths": lengths,
        f"{name}.label": np.asarray([LABELS.index(r["label"]) for r in rows], dtype=np.uint8),
        f"{name}.source": np.asarray([sources.index(r[source_key]) for r in rows], dtype=np.uint8),
    }
    counts = Counter((r[source_key], r["label"]) for r in rows)
    entry = {
        "rows": len(rows),
        "tokens": int(lengths.astype(np.int64).sum()),
        "max_length": max_length,
        "sources": sources,
        "labels": {s: {lab: counts[(s, lab)] for lab in LABELS if counts[(s, lab)]} for s in sources},
    }
    return arrays, entry


def bag_stream(name: str, bags: list[dict], tokenizer, max_length: int) -> tuple[dict[str, np.ndarray], dict]:
    """Arrays and manifest entry of in-domain bags: one row per (window, atom) pair, the bags'
    sizes, a label per bag (1 = S) and the generator as its source."""
    sources = sorted({b["model"] for b in bags})
    pairs = [(p, b["atom"]) for b in bags for p in b["premises"]]
    tokens, lengths = encode_rows(tokenizer, pairs, max_length)
    sizes = [len(b["premises"]) for b in bags]
    if max(sizes, default=0) > 255 or min(sizes, default=1) < 1:
        raise SystemExit(f"{name}: a bag has {max(sizes)} passages (1 to 255 are stored)")
    arrays = {
        f"{name}.tokens": tokens,
        f"{name}.lengths": lengths,
        f"{name}.bag_sizes": np.asarray(sizes, dtype=np.uint8),
        f"{name}.label": np.asarray([b["label"] == "S" for b in bags], dtype=np.uint8),
        f"{name}.source": np.asarray([sources.index(b["model"]) for b in bags], dtype=np.uint8),
    }
    counts = Counter((b["model"], b["label"]) for b in bags)
    entry = {
        "rows": len(pairs),
        "bags": len(bags),
        "tokens": int(lengths.astype(np.int64).sum()),
        "max_length": max_length,
        "sources": sources,
        "labels": {s: {lab: counts[(s, lab)] for lab in ("S", "NS") if counts[(s, lab)]} for s in sources},
    }
    return arrays, entry


def pack(arrays: dict[str, np.ndarray], preset: int) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return lzma.compress(buffer.getvalue(), preset=preset)


# --------------------------------------------------------------------------- held-out guard


def heldout_keys(mix: dict) -> tuple[set[str], set[str]]:
    """Normalised held-out pairs and claims of the mix (what no training row may repeat)."""
    from experiments.nli_training.mix import normalise

    pairs: set[str] = set()
    claims: set[str] = set()
    for name, rows in mix["heldout"].items():
        if name == "factscore":
            for atom in rows:
                claims.add(normalise(atom["atom"]))
                pairs |= {normalise(p) + "\x00" + normalise(atom["atom"]) for p in atom["passages"]}
            continue
        for r in rows:
            pairs.add(normalise(r["premise"]) + "\x00" + normalise(r["hypothesis"]))
            if name in ("fever_dev", "wice_dev"):
                claims.add(normalise(r["hypothesis"]))
    return pairs, claims


def repeats_heldout(premise: str, hypothesis: str, keys: tuple[set[str], set[str]]) -> bool:
    from experiments.nli_training.mix import normalise

    pairs, claims = keys
    return normalise(premise) + "\x00" + normalise(hypothesis) in pairs or normalise(hypothesis) in claims


# --------------------------------------------------------------------------- build


def ensure_inputs(args) -> tuple[dict, dict, dict, dict]:
    """The mix, the in-domain bags and the targeted pairs (each built at its path if missing)
    and what the manifest says of them."""
    made: dict = {}
    config = json.loads(Path(args.mix_config).read_text())
    if not args.mix.is_file():
        from experiments.nli_training.mix import build_mix

        print(f"building the mix → {args.mix}", flush=True)
        args.mix.parent.mkdir(parents=True, exist_ok=True)
        args.mix.write_text(json.dumps(build_mix(config, args.data_dir), ensure_ascii=False))
    if not args.indomain.is_file():
        from experiments.nli_training.indomain import build_indomain

        print(f"building the in-domain bags → {args.indomain}", flush=True)
        result = build_indomain(
            args.data_dir, config["seed"], config["factscore_held_fraction"], config["max_premise_words"]
        )
        args.indomain.parent.mkdir(parents=True, exist_ok=True)
        args.indomain.write_text(json.dumps(result, ensure_ascii=False))
    mix = json.loads(args.mix.read_text())
    indomain = json.loads(args.indomain.read_text())
    if not args.targeted.is_file():
        from experiments.nli_training.targeted import DEFAULT_FACTSCORE, generate

        print(f"generating the targeted pairs → {args.targeted}", flush=True)
        result = generate(factscore_dir=DEFAULT_FACTSCORE, excluded_topics=set(indomain["validation_topics"]))
        args.targeted.parent.mkdir(parents=True, exist_ok=True)
        args.targeted.write_text(json.dumps(result, ensure_ascii=False))
    targeted = json.loads(args.targeted.read_text())
    for key in ("mix", "indomain", "targeted"):
        path: Path = getattr(args, key)
        made[key] = {"path": str(path), "sha256": gpu_train.sha256_file(path)}
    return mix, indomain, targeted, made


def factcg_rows(args, keys, tokenizer) -> tuple[list[dict], list[dict], dict]:
    """FactCG rows for training and validation (claims split by a hash), and what was dropped."""
    from experiments import behaviour
    from experiments.nli_training.sources import factcg, stable_fraction
    from experiments.nli_training.targeted import heldout_guard

    names, _, _ = heldout_guard(behaviour.load_suite(), None)
    dropped: Counter = Counter()
    train: list[dict] = []
    validation: list[dict] = []
    for example in factcg(args.data_dir / "nli_train"):
        row = example.as_dict()
        if names.search(row["premise"] + " \x00 " + row["hypothesis"]):
            dropped["names a person of the held-out part"] += 1
            continue
        if repeats_heldout(row["premise"], row["hypothesis"], keys):
            dropped["repeats a held-out pair or claim"] += 1
            continue
        if row["label"] == "entailment":
            # a supported claim keeps its whole document or is left out
            length = len(tokenizer(row["premise"], row["hypothesis"])["input_ids"])
            if length > args.factcg_max_length:
                dropped[f"supported, document over {args.factcg_max_length} tokens"] += 1
                continue
        split = validation if stable_fraction(row["group"], "factcg_validation") < args.factcg_validation else train
        split.append(row)
    return train, validation, dict(dropped)


def build(args) -> Path:
    """Write the bundle to ``args.out`` (through a staging folder) and return it."""
    from experiments.nli_training.finetune import capability_weights
    from experiments.nli_training.from_onnx import bert_from_shipped, check_against_graph, shipped_tokenizer

    model_dir: Path = args.model.resolve()
    tokenizer = shipped_tokenizer(model_dir)
    model = bert_from_shipped(model_dir)
    print(check_against_graph(model_dir, model, tokenizer), flush=True)
    n_parameters = sum(p.numel() for p in model.parameters())
    checkpoint_bytes = len(gpu_train.fp16_safetensors(model))
    del model
    if not gpu_train.checkpoints_that_fit(["best"], checkpoint_bytes):
        raise SystemExit(f"the model's fp16 checkpoint ({checkpoint_bytes} bytes) does not come back in one call")

    mix, indomain, targeted, inputs = ensure_inputs(args)
    keys = heldout_keys(mix)
    dropped: dict[str, dict] = {}
    mix_rows = [r for r in mix["train"] if not r["source"].startswith("factscore")]
    leaks = [r for r in mix_rows if repeats_heldout(r["premise"], r["hypothesis"], keys)]
    if leaks:
        raise SystemExit(f"{len(leaks)} rows of the mix repeat a held-out pair or claim, e.g. {leaks[0]}")
    if args.mix_rows and args.mix_rows < len(mix_rows):
        rng = np.random.default_rng(args.seed)
        chosen = np.sort(rng.choice(len(mix_rows), args.mix_rows, replace=False))
        dropped["mix"] = {"seeded sample (--mix-rows)": len(mix_rows) - args.mix_rows}
        mix_rows = [mix_rows[i] for i in chosen]
    aimed = targeted["train"]
    leaking = [r for r in aimed if repeats_heldout(r["premise"], r["hypothesis"], keys)]
    if leaking:
        dropped["targeted"] = {"repeats a held-out pair or claim": len(leaking)}
        aimed = [r for r in aimed if not repeats_heldout(r["premise"], r["hypothesis"], keys)]
    factcg_train, factcg_validation, dropped["factcg"] = factcg_rows(args, keys, tokenizer)

    arrays: dict[str, np.ndarray] = {}
    streams: dict[str, dict] = {}

    def add(name: str, made: tuple[dict[str, np.ndarray], dict]) -> None:
        arrays.update(made[0])
        streams[name] = made[1]
        print(f"  {name}: {made[1]['rows']:,} rows, {made[1]['tokens']:,} tokens", flush=True)

    print("tokenising", flush=True)
    length = args.max_length
    add("mix", pair_stream("mix", mix_rows, tokenizer, length))
    add("targeted", pair_stream("targeted", aimed, tokenizer, length))
    arrays["targeted.weight"] = np.asarray(capability_weights(aimed, args.passage_share), dtype=np.float32)
    streams["targeted"]["passage_share"] = args.passage_share
    add("factcg", pair_stream("factcg", factcg_train, tokenizer, args.factcg_max_length))
    add("bags", bag_stream("bags", indomain["bags"]["train"], tokenizer, length))
    add("val_mix", pair_stream("val_mix", mix["validation"], tokenizer, length))
    add("val_suite", pair_stream("val_suite", targeted["validation"], tokenizer, length, source_key="capability"))
    add("val_factcg", pair_stream("val_factcg", factcg_validation, tokenizer, args.factcg_max_length))
    add("val_bags", bag_stream("val_bags", indomain["bags"]["validation"], tokenizer, length))

    print(f"compressing (xz preset {args.preset})", flush=True)
    packed = pack(arrays, args.preset)
    manifest = {
        "format": gpu_train.FORMAT,
        "built": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m experiments.nli_training.bundle", *args.argv]),
        "git": git_state(ROOT),
        "model": {
            "folder": os.path.relpath(model_dir, ROOT) if model_dir.is_relative_to(ROOT) else str(model_dir),
            "sha256": gpu_train.sha256_file(model_dir / "model.onnx"),
            "tokenizer_sha256": gpu_train.sha256_file(model_dir / "tokenizer.json"),
            "parameters": n_parameters,
            "fp16_checkpoint_bytes": checkpoint_bytes,
        },
        "tokens": {
            "cls_id": tokenizer.cls_token_id,
            "sep_id": tokenizer.sep_token_id,
            "pad_id": tokenizer.pad_token_id,
            "vocabulary": len(tokenizer),
        },
        "max_length": length,
        "labels": LABELS,
        "inputs": inputs,
        "streams": streams,
        "dropped": dropped,
        "data": {"file": gpu_train.DATA, "bytes": len(packed), "sha256": gpu_train.sha256_bytes(packed)},
    }
    manifest_bytes = json.dumps(manifest, indent=1, ensure_ascii=False).encode()
    bundle_bytes = len(packed) + len(manifest_bytes)
    tree = travelling_bytes(ROOT)
    print(
        f"bundle {bundle_bytes / MIB:.2f} MiB (data {len(packed) / MIB:.2f} MiB) + working tree "
        f"{tree / MIB:.2f} MiB = {(bundle_bytes + tree) / MIB:.2f} MiB of the {CALL_MIB} MiB a call carries",
        flush=True,
    )
    room = (CALL_MIB - args.margin_mib) * MIB - tree
    if bundle_bytes > args.max_mib * MIB or bundle_bytes > room:
        by_stream = {
            name: f"{sum(a.nbytes for k, a in arrays.items() if k.startswith(name + '.')) / MIB:.1f} MiB raw"
            for name in streams
        }
        raise SystemExit(
            f"refused: the bundle would be {bundle_bytes / MIB:.2f} MiB; the limit is {args.max_mib} MiB and "
            f"{room / MIB:.2f} MiB beside this working tree ({args.margin_mib} MiB margin). Streams: {by_stream}. "
            "Take fewer mix rows (--mix-rows)."
        )
    out: Path = args.out
    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / gpu_train.DATA).write_bytes(packed)
    (staging / gpu_train.MANIFEST).write_bytes(manifest_bytes)
    verify(staging, tokenizer, {"mix": mix_rows, "targeted": aimed, "val_suite": targeted["validation"]})
    shutil.rmtree(out, ignore_errors=True)
    os.replace(staging, out)
    print(f"written {out}: {gpu_train.MANIFEST}, {gpu_train.DATA}", flush=True)
    return out


def verify(folder: Path, tokenizer, originals: dict[str, list[dict]], per_stream: int = 20) -> None:
    """Read the bundle back as the GPU run does and compare rows with the tokenizer's own
    encoding of the original pairs (ids and segment ids)."""
    manifest, arrays = gpu_train.read_bundle(folder)
    rng = np.random.default_rng(0)
    for name, rows in originals.items():
        if not rows:
            continue
        stream = gpu_train.Stream(name, manifest, arrays)
        index = rng.choice(len(rows), min(per_stream, len(rows)), replace=False)
        batch = stream.rows.arrays(index)
        for j, i in enumerate(index):
            row = rows[i]
            expected = tokenizer(
                row["premise"],
                row["hypothesis"],
                truncation="longest_first",
                max_length=manifest["streams"][name]["max_length"],
                return_token_type_ids=True,
            )
            n = len(expected["input_ids"])
            same = (
                batch["input_ids"][j, :n].tolist() == expected["input_ids"]
                and batch["token_type_ids"][j, :n].tolist() == expected["token_type_ids"]
                and int(batch["attention_mask"][j].sum()) == n
                and LABELS[stream.label[i]] == row["label"]
            )
            if not same:
                raise SystemExit(f"{folder}: row {i} of {name} does not read back as it was written")


# --------------------------------------------------------------------------- reassemble


def join_parts(returned: Path, entry: dict) -> bytes:
    """The checkpoint file from its parts, each part and the whole checked against the report."""
    chunks = []
    for part in entry["parts"]:
        path = returned / part["file"]
        if not path.is_file():
            raise SystemExit(f"{path}: missing (the call brought back {sorted(p.name for p in returned.iterdir())})")
        data = path.read_bytes()
        if len(data) != part["bytes"] or gpu_train.sha256_bytes(data) != part["sha256"]:
            raise SystemExit(f"{path}: size or sha256 differs from report.json (a part from another write?)")
        chunks.append(data)
    whole = b"".join(chunks)
    if gpu_train.sha256_bytes(whole) != entry["sha256"]:
        raise SystemExit(f"{returned}: the joined parts do not have the checkpoint's sha256")
    return whole


def reassemble(returned: Path, out: Path, which: str = "best", model_dir: Path | None = None) -> Path:
    """A BERT checkpoint folder (config, fp16 safetensors, tokenizer, provenance) from what a
    call brought back; loads it once to show it is whole."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from experiments.nli_training.from_onnx import shipped_tokenizer

    report_path = returned / "report.json"
    if not report_path.is_file():
        raise SystemExit(f"{returned}: no report.json")
    report = json.loads(report_path.read_text())
    entry = report.get("checkpoints", {}).get(which)
    if not entry:
        raise SystemExit(f"{report_path}: no checkpoint {which!r} (has: {sorted(report.get('checkpoints', {}))})")
    data = join_parts(returned, entry)
    model_info = report["bundle"]["model"]
    model_dir = model_dir or (ROOT / model_info["folder"])
    if gpu_train.sha256_file(model_dir / "tokenizer.json") != model_info["tokenizer_sha256"]:
        raise SystemExit(f"{model_dir}/tokenizer.json is not the tokenizer the bundle was tokenised with")
    staging = out.with_name(out.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "model.safetensors").write_bytes(data)
    BertConfig.from_dict(report["model_config"]).save_pretrained(staging)
    shipped_tokenizer(model_dir).save_pretrained(staging)
    point = next((v for v in report["validation"] if v["step"] == entry["step"]), None)
    provenance = {
        "returned": str(returned),
        "checkpoint": which,
        "step": entry["step"],
        "score": entry["score"],
        "validation": point,
        "status": report.get("status"),
        "machine": report.get("machine"),
        "steps": report.get("steps"),
        "train_s": report.get("train_s"),
        "started_from": model_info,
        "bundle": {k: report["bundle"].get(k) for k in ("built", "git", "data", "inputs")},
    }
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=1))
    model = BertForSequenceClassification.from_pretrained(staging, dtype=torch.float32)
    tokenizer = shipped_tokenizer(staging)
    with torch.no_grad():
        logits = model(**tokenizer("Ada was born in 1815.", "Ada was born in 1815.", return_tensors="pt")).logits
    if not torch.isfinite(logits).all():
        raise SystemExit(f"{returned}: the reassembled model gives non-finite logits")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(staging, out)
    print(f"written {out}: step {entry['step']}, validation score {entry['score']}", flush=True)
    return out


# --------------------------------------------------------------------------- evaluate


def check_same_inputs(checkpoint: Path, files: dict[str, Path]) -> None:
    """Refuse to evaluate with another mix or other bags than the bundle was built from: the
    temperature is fitted on the validation rows the run chose its checkpoint by, and the
    held-out sets are the ones the bundle left out. (A checkpoint without ``provenance.json`` —
    not reassembled from a call — is not checked.)"""
    provenance = checkpoint / "provenance.json"
    if not provenance.is_file():
        return
    inputs = json.loads(provenance.read_text()).get("bundle", {}).get("inputs") or {}
    for name, path in files.items():
        expected = inputs.get(name, {}).get("sha256")
        if expected and gpu_train.sha256_file(path) != expected:
            raise SystemExit(f"{path} is not the {name} the bundle was built from ({inputs[name]['path']})")


def evaluate_steps(args) -> list[tuple[str, Path, list[str]]]:
    """(name, output that marks it done, command) of each step of the version-4 path, for the
    trained checkpoint and, with ``--compare``, the shipped model in the same run."""
    py = [sys.executable, "-m"]
    work: Path = args.work
    export_dir = work / "export"
    models = {"trained": export_dir} | ({"shipped": args.shipped} if args.compare else {})
    limit = ["--max-pairs", str(args.max_pairs)]
    factscore = args.data_dir / "factscore_bios_dev"
    prepare = py + ["experiments.prepare_factscore", "--generations", str(factscore / "ChatGPT.jsonl")]
    prepare += ["--passages", str(factscore / "passages_bm25_ChatGPT_dev.jsonl"), "--topics", str(args.mix)]
    prepare += ["--topics-key", "heldout_topics"]
    steps: list[tuple[str, Path, list[str]]] = [
        (
            f"export {args.weights}",
            export_dir / "model.onnx",
            py
            + ["experiments.nli_training.export", str(args.checkpoint), str(export_dir)]
            + ["--max-length", str(args.max_length), "--max-windows", "1", "--weights", args.weights],
        ),
    ]
    if not args.dev_bios.is_file():
        steps.append(
            ("prepare the dev biographies", args.dev_bios, prepare + ["--other-topics", "--out", str(args.dev_bios)])
        )
    steps.append(
        (
            "calibrate",
            work / "calibrated.done",
            py
            + ["experiments.nli_training.calibrate", "--model", str(export_dir), "--mix", str(args.mix)]
            + ["--indomain", str(args.indomain), "--records", str(args.dev_bios), "--fit-on", "precision"]
            + ["--write", "--out", str(work / "calibration.json")]
            + (["--val-rows", str(args.calibration_rows)] if args.calibration_rows else []),
        )
    )
    if not args.bios.is_file():
        steps.append(("prepare the held-out biographies", args.bios, prepare + ["--out", str(args.bios)]))
    for name, folder in models.items():
        steps += [
            (
                f"held-out sets ({name})",
                work / f"heldout_{name}.json",
                py
                + ["experiments.nli_training.evaluate", "--mix", str(args.mix), "--nli-model", str(folder)]
                + limit
                + ["--skip-speed", "--out", str(work / f"heldout_{name}.json")],
            ),
            (
                f"behaviour suite, held-out part ({name})",
                work / f"behaviour_{name}.json",
                py
                + ["experiments.behaviour", "--nli", "cross-encoder", "--nli-model", str(folder)]
                + ["--part", "heldout", "--quiet", "--json", str(work / f"behaviour_{name}.json")],
            ),
            (
                f"held-out biographies ({name})",
                work / f"bios_{name}.csv",
                py
                + ["experiments.run_biographies", str(args.bios), "--nli", "cross-encoder"]
                + ["--nli-model", str(folder), "--assessors", "factscore", "fr1", "fr2", "fr3", "--quiet"]
                + ["--out-dir", str(work / f"bios_{name}"), "--tables", str(work / f"bios_{name}")]
                + (["--limit", str(args.bios_limit)] if args.bios_limit else []),
            ),
        ]
        if args.quick_start:
            steps.append(
                (
                    f"quick start ({name})",
                    work / f"quickstart_{name}" / "short_answer.fr3.jsonl",
                    py
                    + ["fact_reasoner", "--version", "3", "--input-file", str(QUICK_START)]
                    + ["--output-dir", str(work / f"quickstart_{name}"), "--nli-model", str(folder), "--quiet"],
                )
            )
    if args.compare:
        steps.append(
            (
                "paired bootstrap of the held-out sets",
                work / "bootstrap.json",
                py
                + ["experiments.nli_training.evaluate", "compare", str(work / "heldout_trained.json")]
                + [str(work / "heldout_shipped.json"), "--names", "trained,shipped"]
                + ["--json", str(work / "bootstrap.json")],
            )
        )
    steps.append(
        (
            "pairs per second",
            work / "speed.json",
            py
            + ["scripts.benchmark_nli", "--judge", f"cross-encoder:{args.shipped}"]
            + ["--judge", f"cross-encoder:{export_dir}", "--json", str(work / "speed.json")],
        )
    )
    return steps


def run_steps(steps: list[tuple[str, Path, list[str]]], work: Path) -> None:
    """Run each step whose output is missing (so a stopped evaluation resumes), logging to
    ``work/<step>.log``; a step that fails stops the evaluation with its log's tail."""
    work.mkdir(parents=True, exist_ok=True)
    for name, done, command in steps:
        if done.exists():
            print(f"= {name}: done before ({done})", flush=True)
            continue
        print(f"- {name}: {' '.join(command)}", flush=True)
        log = work / (name.replace(" ", "_").replace("(", "").replace(")", "").replace(",", "") + ".log")
        with open(log, "w") as handle:
            status = subprocess.run(command, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT).returncode
        # the behaviour suite exits 1 when a threshold is missed: that is a result, not a failure
        if status != 0 and not (name.startswith("behaviour") and status == 1 and done.exists()):
            tail = log.read_text()[-2000:]
            raise SystemExit(f"{name} failed (exit {status}); {log}:\n{tail}")
        if name == "calibrate":
            done.write_text("calibrated\n")


#: the quick start's record and the verdicts the ship rule asks of it
QUICK_START = ROOT / "fact_reasoner" / "examples" / "short_answer.jsonl"
QUICK_START_EXPECTED = {
    "Marie Curie was a physicist.": "S",
    "Marie Curie was born in Warsaw.": "S",
    "Marie Curie discovered penicillin.": "NS",
}
#: FR2 on the held-out biographies: balanced accuracy no lower, MAE at most this much higher
BIOS_MAE_ALLOWANCE = 0.01
#: pairs per second: at least this share of the shipped model's
SPEED_SHARE = 0.85


def bios_measure(work: Path, name: str, assessor: str, column: str) -> float | None:
    """One number of ``experiments/tables.py``'s CSV of a model's biography run."""
    import csv

    table = work / f"bios_{name}.csv"
    if not table.is_file():
        return None
    with open(table, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["assessor"] == assessor and row["tier"] == "all":
                return float(row[column])
    return None


def quick_start_verdicts(work: Path, name: str) -> dict[str, str] | None:
    """``{atom text: S/NS}`` of a model's quick-start row (None if it did not run)."""
    rows = work / f"quickstart_{name}" / "short_answer.fr3.jsonl"
    if not rows.is_file():
        return None
    row = json.loads(rows.read_text().splitlines()[0])
    predictions = row.get("predictions") or {}
    return {atom["text"]: predictions.get(atom["id"], "—") for atom in row.get("atoms", [])}


def summarise(work: Path, compare: bool) -> str:
    """The trained model beside the shipped one, and the ship rule of version 4 (issue #42)
    checked line by line:

    1. the quick start: penicillin NS, the other two atoms S;
    2. the behavioural suite's held-out part **through the graph**: every capability at its
       threshold, spurious contradictions ≤ 5 %; and **the judge alone** no worse than the
       shipped judge on any capability;
    3. FR2 on the 14 held-out biographies: balanced accuracy ≥ the shipped model's, MAE ≤ the
       shipped model's + 0.01;
    4. the held-out atoms and sets: the paired bootstrap of trained − shipped reaches 0 or above;
    5. pairs per second ≥ 0.85 × the shipped model's.
    """
    lines = [f"# {work}: trained checkpoint beside the shipped model", ""]
    verdicts: list[bool] = []

    def shown(x: float | None) -> str:
        return "—" if x is None else f"{x:.4f}"

    # 1. quick start
    lines += ["## 1. Quick start", "", "| atom | expected | shipped | trained |", "|---|---|---|---|"]
    trained_qs, shipped_qs = quick_start_verdicts(work, "trained"), quick_start_verdicts(work, "shipped")
    for atom, expected in QUICK_START_EXPECTED.items():
        got = (trained_qs or {}).get(atom)
        lines.append(f"| {atom} | {expected} | {(shipped_qs or {}).get(atom, '—')} | {got or '—'} |")
    quick_ok = trained_qs is not None and all(trained_qs.get(a) == e for a, e in QUICK_START_EXPECTED.items())
    verdicts.append(quick_ok)
    lines += ["", f"Rule: {'met' if quick_ok else 'MISSED'} (atoms as the embedded atomizer writes them)", ""]

    # 2. behavioural suite
    behaviour = {}
    for name in ("shipped", "trained"):
        source = work / f"behaviour_{name}.json"
        behaviour[name] = json.loads(source.read_text()) if source.is_file() else None
    lines += ["## 2. Behavioural suite, held-out part", ""]
    lines += [
        "| capability | threshold | shipped: graph | trained: graph | rule | shipped: judge | trained: judge | rule |",
        "|---|---:|---:|---:|---|---:|---:|---|",
    ]
    trained_b = behaviour["trained"]
    if trained_b is None:
        lines.append("| (not measured) | | | | | | | |")
        verdicts.append(False)
    else:
        shipped_b = behaviour["shipped"] or {}
        graph_t = trained_b["parts"]["heldout"]
        graph_s = (shipped_b.get("parts") or {}).get("heldout")
        alone_t = trained_b.get("judge_alone", {}).get("heldout")
        alone_s = (shipped_b.get("judge_alone") or {}).get("heldout")
        for capability, result in graph_t["capabilities"].items():
            verdicts.append(bool(result["passed"]))
            before_graph = graph_s["capabilities"][capability]["accuracy"] if graph_s else None
            mine = alone_t["capabilities"][capability]["accuracy"] if alone_t else None
            theirs = alone_s["capabilities"][capability]["accuracy"] if alone_s else None
            alone_ok = mine is not None and theirs is not None and mine >= theirs
            verdicts.append(alone_ok)
            lines.append(
                f"| {capability} | {result['threshold']} | {shown(before_graph)} | {shown(result['accuracy'])} | "
                f"{'met' if result['passed'] else 'MISSED'} | {shown(theirs)} | {shown(mine)} | "
                f"{'no worse' if alone_ok else 'WORSE'} |"
            )
        spurious = graph_t["spurious_contradiction"]
        limit = graph_t["spurious_contradiction_limit"]
        ok = spurious is not None and spurious <= limit
        verdicts.append(ok)
        before = graph_s["spurious_contradiction"] if graph_s else None
        lines.append(
            f"| spurious contradictions (≤) | {limit} | {shown(before)} | {shown(spurious)} | "
            f"{'met' if ok else 'MISSED'} | | | |"
        )
    lines.append("")

    # 3. biographies
    lines += ["## 3. Held-out biographies", "", "| assessor | measure | shipped | trained |", "|---|---|---:|---:|"]
    for assessor in ("FactScore", "FR1", "FR2", "FR3"):
        for column in ("balanced_accuracy", "mae", "precision"):
            lines.append(
                f"| {assessor} | {column} | {shown(bios_measure(work, 'shipped', assessor, column))} | "
                f"{shown(bios_measure(work, 'trained', assessor, column))} |"
            )
    ba_t, ba_s = (
        bios_measure(work, "trained", "FR2", "balanced_accuracy"),
        bios_measure(work, "shipped", "FR2", "balanced_accuracy"),
    )
    mae_t, mae_s = bios_measure(work, "trained", "FR2", "mae"), bios_measure(work, "shipped", "FR2", "mae")
    bios_ok = None not in (ba_t, ba_s, mae_t, mae_s) and ba_t >= ba_s and mae_t <= mae_s + BIOS_MAE_ALLOWANCE  # type: ignore[operator]
    verdicts.append(bool(bios_ok))
    lines += [
        "",
        f"Rule (FR2 balanced accuracy ≥ shipped, MAE ≤ shipped + {BIOS_MAE_ALLOWANCE}): "
        f"{'met' if bios_ok else 'MISSED'}",
        "",
    ]

    # 4. bootstrap
    lines += ["## 4. Held-out atoms and sets: paired bootstrap, trained − shipped", ""]
    bootstrap = work / "bootstrap.json"
    if bootstrap.is_file():
        from experiments.nli_training.evaluate import compare_markdown

        rows = json.loads(bootstrap.read_text())
        lines.append(compare_markdown(rows, "trained", "shipped"))
        verdicts += [bool(r["not_worse"]) for r in rows]
    else:
        lines.append("(not measured)")
        verdicts.append(False)

    # 5. speed
    lines += ["## 5. Pairs per second", ""]
    speed = work / "speed.json"
    speed_ok = False
    if speed.is_file():
        rates = [row.get("pairs_per_s") for row in json.loads(speed.read_text())]
        for row in json.loads(speed.read_text()):
            lines.append(f"- {row['judge']}: {row.get('pairs_per_s', row.get('error', '—'))}")
        if len(rates) == 2 and None not in rates:
            speed_ok = rates[1] >= SPEED_SHARE * rates[0]
            lines.append(f"- ratio trained / shipped: {rates[1] / rates[0]:.2f} (rule ≥ {SPEED_SHARE})")
    verdicts.append(speed_ok)

    shippable = compare and bool(verdicts) and all(verdicts)
    lines += [
        "",
        f"Ship rule of version 4: {'MET' if shippable else 'NOT MET'}"
        + ("" if compare else " (the shipped model was not measured: --no-compare)"),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    b = commands.add_parser("build", help="write the bundle the GPU call carries")
    b.add_argument("--out", type=Path, default=ROOT / "runs" / "gpu_bundle")
    b.add_argument("--model", type=Path, default=SHIPPED, help="the shipped folder training starts from")
    b.add_argument("--mix", type=Path, default=ROOT / "runs" / "nli" / "mix.json", help="built here if missing")
    b.add_argument("--mix-config", type=Path, default=HERE / "mix.json")
    b.add_argument("--indomain", type=Path, default=ROOT / "runs" / "nli" / "indomain.json")
    b.add_argument("--targeted", type=Path, default=ROOT / "runs" / "nli" / "targeted.json")
    b.add_argument("--data-dir", type=Path, default=DATA_DIR)
    b.add_argument("--max-length", type=int, default=128, help="tokens per pair (the shipped window, 128)")
    b.add_argument("--factcg-max-length", type=int, default=320, help="tokens per FactCG pair (320)")
    b.add_argument("--factcg-validation", type=float, default=0.1, help="share of FactCG claims set apart")
    b.add_argument("--passage-share", type=float, default=0.3, help="finetune.capability_weights (0.3)")
    b.add_argument("--mix-rows", type=int, help="a seeded sample of N mix rows (default: all)")
    b.add_argument("--seed", type=int, default=13)
    b.add_argument("--preset", type=int, default=9, help="xz preset (9)")
    b.add_argument("--max-mib", type=float, default=60, help="refuse a bundle over this (60)")
    b.add_argument("--margin-mib", type=float, default=1, help="kept free of the 64 MiB a call carries (1)")

    r = commands.add_parser("reassemble", help="join the parts a call brought back into a checkpoint folder")
    r.add_argument("returned", type=Path, help="the folder the call's files came back to")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--which", default="best", choices=("best", "last"))
    r.add_argument("--model", type=Path, help="the shipped folder (default: the one the bundle names)")

    e = commands.add_parser("evaluate", help="export, calibrate and measure a checkpoint beside the shipped model")
    e.add_argument("checkpoint", type=Path, help="a reassembled checkpoint folder")
    e.add_argument("--work", type=Path, required=True, help="outputs and logs (a rerun resumes)")
    e.add_argument("--mix", type=Path, default=ROOT / "runs" / "nli" / "mix.json", help="the bundle's mix")
    e.add_argument("--indomain", type=Path, default=ROOT / "runs" / "nli" / "indomain.json", help="the bundle's bags")
    e.add_argument("--bios", type=Path, default=ROOT / "runs" / "bios_heldout.jsonl", help="prepared if missing")
    e.add_argument(
        "--dev-bios",
        type=Path,
        default=ROOT / "runs" / "bios_dev33.jsonl",
        help="the dev biographies that are not held out, where the temperature is fitted (prepared if missing)",
    )
    e.add_argument(
        "--no-quick-start",
        dest="quick_start",
        action="store_false",
        help="do not run the quick start (it needs the llm extra and the embedded model)",
    )
    e.add_argument("--data-dir", type=Path, default=DATA_DIR)
    e.add_argument("--shipped", type=Path, default=SHIPPED, help="the model to compare with")
    e.add_argument("--max-length", type=int, default=128, help="the exported model's window (128)")
    e.add_argument(
        "--weights",
        choices=("fp16-rows", "int8", "fp16"),
        default="fp16-rows",
        help="how the exported weights are stored (export.py --weights; default fp16-rows: on CPU, int8 "
        "matrix products undid most of what targeted fine-tuning taught)",
    )
    e.add_argument("--max-pairs", type=int, default=2000, help="rows of each 3-way / 2-way held-out set (2000)")
    e.add_argument("--bios-limit", type=int, help="only the first N biographies (a quick check; default all 14)")
    e.add_argument("--calibration-rows", type=int, help="fit T on N validation rows (a quick check; default all)")
    e.add_argument("--no-compare", dest="compare", action="store_false", help="do not measure the shipped model")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)

    if args.command == "build":
        build(args)
    elif args.command == "reassemble":
        reassemble(args.returned, args.out, args.which, args.model)
    else:
        check_same_inputs(args.checkpoint, {"mix": args.mix, "indomain": args.indomain})
        run_steps(evaluate_steps(args), args.work)
        summary = summarise(args.work, args.compare)
        (args.work / "summary.md").write_text(summary)
        print(summary)


if __name__ == "__main__":
    main()

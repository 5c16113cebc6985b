"""Factuality scores, as pure functions over the atoms' posterior marginals.

Notation: n atoms with posteriors P(a_i) = P(atom i is true); S = the number of supported atoms.

Supported, with one tie rule for FR1, FR2, FR3 and the baselines: with t = 0.5
(:data:`SUPPORTED_THRESHOLD`) and ε = 1e-9 (:data:`UNIFORM_TOLERANCE`),

- atom i is **supported** (S) iff P(a_i) − t > ε;
- it is **uniform** iff |P(a_i) − t| ≤ ε, and a uniform atom counts as **not supported** (NS);
- otherwise (P(a_i) < t − ε) it is NS.

So P = 0.5, 0.5 + 1e-15 and 0.5 − 1e-15 are all uniform and NS (inference can return 0.5 plus
floating-point noise for an atom without evidence, e.g. FR3's 0.5000000000000001), while
0.5 + 1e-6 is S. :func:`is_supported` and :func:`is_uniform` are the only places that compare
a posterior with t.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .schema import Label

#: The S/NS threshold t on P(atom is true): S iff P − t > UNIFORM_TOLERANCE.
SUPPORTED_THRESHOLD = 0.5
#: ε: a posterior within ε of t is "uniform" (no evidence either way) and counts as NS.
UNIFORM_TOLERANCE = 1e-9


def is_uniform(p: float) -> bool:
    """|P − t| ≤ ε (t = 0.5, ε = 1e-9): the posterior says nothing either way."""
    return abs(p - SUPPORTED_THRESHOLD) <= UNIFORM_TOLERANCE


def is_supported(p: float) -> bool:
    """S iff P − t > ε (t = 0.5, ε = 1e-9); a uniform P (|P − t| ≤ ε) is NS, and so is NaN."""
    return p - SUPPORTED_THRESHOLD > UNIFORM_TOLERANCE


def predict_label(p: float) -> Label:
    """S iff :func:`is_supported` (P − 0.5 > 1e-9), else NS."""
    return Label.SUPPORTED if is_supported(p) else Label.NOT_SUPPORTED


def factual_precision(num_supported: int, num_atoms: int) -> float:
    """Pr = S / n; NaN when there are no atoms (nothing was claimed, nothing to score)."""
    return num_supported / num_atoms if num_atoms else math.nan


def recall_at_k(num_supported: int, k: int) -> float:
    """R@K = min(S / K, 1)."""
    if k < 1:
        raise ValueError(f"K must be a positive integer, got {k}")
    return min(num_supported / k, 1.0)


def f1_at_k(num_supported: int, num_atoms: int, k: int) -> float:
    """F1@K = 2·Pr·R@K / (Pr + R@K), and 0 when S = 0."""
    if num_supported == 0:
        return 0.0
    precision = factual_precision(num_supported, num_atoms)
    recall = recall_at_k(num_supported, k)
    return 2 * precision * recall / (precision + recall)


def entropy_terms(probabilities: Iterable[float]) -> list[float]:
    """−P ln P per atom (natural log, as IBM's code; 0 ln 0 = 0).

    Note: the paper and IBM's README quote 0.150515 for P = 0.5, which is the log10 value.
    """
    return [-p * math.log(p) if p > 0 else 0.0 for p in probabilities]


def resolve_k(k: int | str, num_atoms: int, dataset_median: float | None = None) -> int:
    """The K of R@K / F1@K.

    ``k`` is a positive integer, ``"median"`` (the median number of atoms over the dataset,
    rounded half up, the paper's choice) or ``"half"`` (max(n // 2, 1), IBM's newest code).
    """
    if isinstance(k, int):
        if k < 1:
            raise ValueError(f"K must be a positive integer, got {k}")
        return k
    if k == "half":
        return max(num_atoms // 2, 1)
    if k == "median":
        if dataset_median is None:
            raise ValueError("K = median needs the dataset's atom counts")
        return max(int(math.floor(dataset_median + 0.5)), 1)
    raise ValueError(f"K must be an integer, 'median' or 'half', not {k!r}")


def median_num_atoms(counts: Iterable[int]) -> float | None:
    counts = list(counts)
    return float(statistics.median(counts)) if counts else None


# -- agreement with gold labels and calibration ----------------------------------------------
#
# Every metric takes (y_true, y_pred) or (y_true, y_prob), in scikit-learn's order: y_true the
# gold truth (y_i = 1 for an atom labelled S), y_prob the posteriors P(a_i), y_pred predictions.

ECE_BINS = 10


def brier_score(y_true: Sequence[bool], y_prob: Sequence[float]) -> float:
    """Brier score = (1/N) Σ_i (P(a_i) − y_i)², y_i = 1 for gold S; NaN for no atoms."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    if not y_prob:
        return math.nan
    return sum((p - float(y)) ** 2 for y, p in zip(y_true, y_prob)) / len(y_prob)


def mean_absolute_error(y_true: Sequence[float], y_pred: Sequence[float]) -> float:
    """MAE = (1/R) Σ_r |ŷ_r − y_r| (e.g. predicted vs gold factual precision per response);
    NaN for no responses."""
    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length")
    return sum(abs(p - g) for g, p in zip(y_true, y_pred)) / len(y_pred) if y_pred else math.nan


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin [lower, upper) of a reliability diagram."""

    lower: float
    upper: float
    count: int
    mean_probability: float  # conf(B) = mean P(a_i) over the bin; NaN when empty
    fraction_true: float  # acc(B) = mean y_i over the bin; NaN when empty


def bin_index(p: float, bins: int = ECE_BINS) -> int:
    """Equal-width bin of p ∈ [0, 1]: b = min(⌊p·bins⌋, bins − 1), so p = 1 is in the last bin."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability out of [0, 1]: {p}")
    return min(int(p * bins), bins - 1)


def reliability_bins(y_true: Sequence[bool], y_prob: Sequence[float], bins: int = ECE_BINS) -> list[ReliabilityBin]:
    """Per equal-width bin B_b = [b/bins, (b+1)/bins) (the last includes 1): |B_b|,
    conf(B_b) = mean P(a_i) and acc(B_b) = mean y_i over the atoms in it."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    sums = [[0, 0.0, 0] for _ in range(bins)]
    for y, p in zip(y_true, y_prob):
        b = sums[bin_index(p, bins)]
        b[0] += 1
        b[1] += p
        b[2] += bool(y)
    return [
        ReliabilityBin(i / bins, (i + 1) / bins, n, s / n if n else math.nan, t / n if n else math.nan)
        for i, (n, s, t) in enumerate(sums)
    ]


def expected_calibration_error(y_true: Sequence[bool], y_prob: Sequence[float], bins: int = ECE_BINS) -> float:
    """ECE = Σ_b (|B_b| / N) · |acc(B_b) − conf(B_b)| over the bins of :func:`reliability_bins`;
    NaN for no atoms."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    total = len(y_prob)
    if not total:
        return math.nan
    return sum(
        b.count / total * abs(b.fraction_true - b.mean_probability)
        for b in reliability_bins(y_true, y_prob, bins)
        if b.count
    )


@dataclass(frozen=True)
class GoldComparison:
    """Predicted S/NS against gold S/NS, S the positive class."""

    true_positive: int
    true_negative: int
    false_positive: int
    false_negative: int
    gold_true_atoms: int
    gold_factuality_score: float
    brier_score: float  # mean (P(a_i) − y_i)², y_i = 1 for gold S


def compare_with_gold(y_true: Sequence[Label], y_prob: Sequence[float]) -> GoldComparison:
    """Over atoms that have a gold label: TP/TN/FP/FN of the prediction :func:`is_supported`
    (P(a_i)) against gold (S positive), gold precision (#gold S / N) and the Brier score."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    if not y_true:
        raise ValueError("no gold labels to compare with")
    truths = [label == Label.SUPPORTED for label in y_true]
    tp = tn = fp = fn = 0
    for truth, p in zip(truths, y_prob):
        predicted = is_supported(p)
        tp += truth and predicted
        tn += (not truth) and (not predicted)
        fp += (not truth) and predicted
        fn += truth and (not predicted)
    gold_true = tp + fn
    return GoldComparison(tp, tn, fp, fn, gold_true, gold_true / len(y_true), brier_score(truths, y_prob))


# -- output rows (what was written per record) ------------------------------------------------


@dataclass
class GoldAtoms:
    """The gold-labelled atoms of one response: predictions, probabilities, truths."""

    predicted: list[bool]
    probabilities: list[float]
    truths: list[bool]
    num_atoms: int  # all atoms, labelled or not (for K)

    @classmethod
    def of(cls, row: dict[str, Any]) -> "GoldAtoms":
        predicted, probabilities, truths = [], [], []
        for atom in row.get("atoms") or []:
            label = atom.get("label")
            if label not in ("S", "NS"):
                continue
            p = float(atom["probability"])
            prediction = atom.get("prediction")
            predicted.append(prediction == "S" if prediction in ("S", "NS") else is_supported(p))
            probabilities.append(p)
            truths.append(label == "S")
        return cls(predicted, probabilities, truths, len(row.get("atoms") or []))


@dataclass(frozen=True)
class RecordScores:
    """Every per-record score of IBM's output plus ours."""

    factuality_score: float
    recall_k: float
    f1_k: float
    k: int
    num_atoms: int
    num_true_atoms: int
    num_false_atoms: int
    num_uniform_atoms: int
    entropy: float  # Σ −P ln P (IBM's "entropy")
    avg_entropy: float  # (1/n) Σ −P ln P (the mean entropy E of the paper)
    avg_prob: float
    gold: GoldComparison | None

    def as_fields(self) -> dict:
        fields = asdict(self)
        gold = fields.pop("gold")
        if gold:
            fields.update(gold)
        return fields


def score_record(
    probabilities: Mapping[str, float],
    k: int,
    gold: Mapping[str, Label | None] | None = None,
) -> RecordScores:
    """All scores of one response from its atoms' posteriors (``{atom id: P(true)}``)."""
    probs = list(probabilities.values())
    n = len(probs)
    supported = sum(is_supported(p) for p in probs)
    uniform = sum(is_uniform(p) for p in probs)
    terms = entropy_terms(probs)
    comparison = None
    if gold:
        labelled = [(probabilities[a], label) for a, label in gold.items() if label is not None and a in probabilities]
        if labelled:
            comparison = compare_with_gold([g for _, g in labelled], [p for p, _ in labelled])
    return RecordScores(
        factuality_score=factual_precision(supported, n),
        recall_k=recall_at_k(supported, k),
        f1_k=f1_at_k(supported, n, k),
        k=k,
        num_atoms=n,
        num_true_atoms=supported,
        num_false_atoms=n - supported,
        num_uniform_atoms=uniform,
        entropy=sum(terms),
        avg_entropy=sum(terms) / n if n else math.nan,
        avg_prob=sum(probs) / n if n else math.nan,
        gold=comparison,
    )


@dataclass(frozen=True)
class DatasetSummary:
    """Dataset-level view: means over responses and atom-level agreement with gold."""

    num_records: int
    num_atoms: int
    median_num_atoms: float | None
    k: int | None
    mean_factuality_score: float
    mean_f1_k: float
    mean_gold_factuality_score: float | None = None
    mae_factuality_score: float | None = None
    atom_accuracy: float | None = None
    atom_f1_supported: float | None = None
    atom_brier_score: float | None = None
    num_gold_atoms: int = 0


def summarize(
    atom_probabilities: Sequence[Sequence[float]],
    atom_gold: Sequence[Sequence[Label | None]] | None = None,
    k: int | str = "median",
) -> DatasetSummary:
    """Summarise a dataset from each response's atom posteriors (and gold labels if any).

    F1@K is recomputed here with one K for the whole dataset (the median number of atoms when
    ``k="median"``), which is how the paper reports it.
    """
    counts = [len(ps) for ps in atom_probabilities]
    median = median_num_atoms(counts)
    precisions, f1s, gold_precisions, errors = [], [], [], []
    all_p: list[float] = []
    all_gold: list[Label] = []
    dataset_k = resolve_k(k, 0, median) if k != "half" and counts else None
    for i, probs in enumerate(atom_probabilities):
        n = len(probs)
        s = sum(is_supported(p) for p in probs)
        if n:
            precisions.append(factual_precision(s, n))
        record_k = dataset_k if dataset_k is not None else resolve_k("half", n)
        f1s.append(f1_at_k(s, n, record_k))
        if atom_gold is not None:
            labelled = [(p, g) for p, g in zip(probs, atom_gold[i]) if g is not None]
            if labelled:
                gold_precision = sum(g == Label.SUPPORTED for _, g in labelled) / len(labelled)
                predicted = sum(is_supported(p) for p, _ in labelled) / len(labelled)
                gold_precisions.append(gold_precision)
                errors.append(abs(predicted - gold_precision))
                all_p += [p for p, _ in labelled]
                all_gold += [g for _, g in labelled]
    summary = DatasetSummary(
        num_records=len(atom_probabilities),
        num_atoms=sum(counts),
        median_num_atoms=median,
        k=dataset_k,
        mean_factuality_score=_mean(precisions),
        mean_f1_k=_mean(f1s),
    )
    if all_gold:
        comparison = compare_with_gold(all_gold, all_p)
        tp, fp, fn = comparison.true_positive, comparison.false_positive, comparison.false_negative
        summary = DatasetSummary(
            **{
                **asdict(summary),
                "mean_gold_factuality_score": _mean(gold_precisions),
                "mae_factuality_score": _mean(errors),
                "atom_accuracy": (tp + comparison.true_negative) / len(all_gold),
                "atom_f1_supported": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan,
                "atom_brier_score": comparison.brier_score,
                "num_gold_atoms": len(all_gold),
            }
        )
    return summary


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan

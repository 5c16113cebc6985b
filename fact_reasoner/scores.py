"""Factuality scores and every dataset figure, as pure functions.

- per atom: S/NS from the posterior (:func:`is_supported`, :func:`predict_label`);
- per record: precision, R@K, F1@K, entropy, agreement with gold (:func:`score_record`);
- agreement with gold: confusion counts per record (:func:`compare_with_gold`), the
  measures (Brier score, MAE, ECE, balanced accuracy, AUROC, the paired bootstrap) being those
  of :mod:`fact_reasoner.measures`;
- per dataset: :func:`summarize_rows`, the one summary of the output rows as written, used by
  the CLI's run summary, the experiment tables and the HTML report.

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
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from .measures import balanced_accuracy, brier_score, expected_calibration_error, mean_absolute_error
from .schema import AtomVerdict, EngineDiagnostics, InputRecord, Label, Marginal, OutputRecord

if TYPE_CHECKING:  # pragma: no cover
    from .settings.config import ScoreOptions

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


def length_penalty(num_atoms: int, gamma: float) -> float:
    """FActScore's length penalty (Min et al., EMNLP 2023, §4.2 and their ``get_score``): a
    response with fewer than γ atoms has its precision multiplied by

        penalty(|A|) = exp(1 − γ / |A|)   if |A| < γ,   else 1,

    |A| the number of atoms scored. It is 1 at |A| = γ and falls towards 0 as |A| → 0, so a
    response cannot score high by stating one safe fact; FActScore uses γ = 10. γ = 0 turns it
    off (1 for any |A|). With γ > 0 and no atoms there is no precision to penalise: NaN.

    >>> round(length_penalty(5, 10), 4)   # exp(1 − 10/5) = exp(−1)
    0.3679
    >>> length_penalty(10, 10), length_penalty(12, 10), length_penalty(3, 0)
    (1.0, 1.0, 1.0)
    """
    if gamma < 0:
        raise ValueError(f"gamma must be ≥ 0, got {gamma}")
    if gamma == 0:
        return 1.0
    if num_atoms <= 0:
        return math.nan
    return math.exp(1.0 - gamma / num_atoms) if num_atoms < gamma else 1.0


def respond_ratio(abstained: Sequence[bool]) -> float:
    """FActScore's respond ratio: the share of responses that did not abstain,
    #{r : not abstained_r} / R; NaN for no responses.

    >>> respond_ratio([False, True, False, False])
    0.75
    """
    return sum(not a for a in abstained) / len(abstained) if abstained else math.nan


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


#: K = max(n // 2, 1) of a response's n atoms, in the words a user reads (a row's ``k_reason``,
#: the summary's line): claims, not atoms, and no code
HALF = "half of each response's claims, rounded down, at least 1"
#: why ``--k median`` fell back to :data:`HALF`
MEDIAN_UNKNOWN = (
    f"{HALF}, since --k median needs the number of claims of every response before scoring and this run "
    "finds the claims as it goes"
)


@dataclass(frozen=True)
class KChoice:
    """The K a response is scored with (:func:`choose_k`): the value, the rule that gave it
    (``fixed``, ``median`` or ``half``) and why, in words; a row writes all three (``k``,
    ``k_rule``, ``k_reason``) and the summary lists the reasons."""

    k: int
    rule: str
    reason: str


def choose_k(k: int | str, num_atoms: int, dataset_median: float | None = None) -> KChoice:
    """The one rule for K, the command's and the Python API's alike.

    - an integer: that K (``fixed``);
    - ``"half"``: max(n // 2, 1) of the response's n atoms;
    - ``"median"``: the median number of atoms of the dataset, rounded half up, when it is known
      before the response is scored (:func:`resolve_k`): the command takes it from the input's
      records that carry their atoms, :meth:`FactReasoner.assess
      <fact_reasoner.reasoner.FactReasoner.assess>` from ``dataset_median_atoms``, else from the
      record's own atoms (a dataset of one). When no atom count is known before scoring (the
      atoms are made by the run, record by record), K falls back to max(n // 2, 1), rule
      ``half``, and the reason says so.

    >>> choose_k("median", 7).k, choose_k("median", 7).rule, choose_k("median", 7, 4.5).k
    (3, 'half', 5)
    """
    if k == "median" and dataset_median is None:
        return KChoice(resolve_k("half", num_atoms), "half", MEDIAN_UNKNOWN)
    value = resolve_k(k, num_atoms, dataset_median)
    if isinstance(k, int):
        return KChoice(value, "fixed", f"--k {k}")
    if k == "half":
        return KChoice(value, "half", f"--k half: {HALF}")
    return KChoice(
        value, "median", f"--k median: the median number of claims per response in the input, {dataset_median:g}"
    )


def known_median(record: InputRecord, dataset_median: float | None) -> float | None:
    """The dataset median K = ``median`` is taken against, for ``record``: ``dataset_median``
    when given, else the count of the atoms the record carries (a dataset of one), else None
    (its atoms are made by the run: :func:`choose_k` falls back)."""
    if dataset_median is not None or record.atoms is None:
        return dataset_median
    return float(len(record.atoms))


def median_num_atoms(counts: Iterable[int]) -> float | None:
    """The median of the atom counts (the mean of the two middle ones for an even number);
    None for no counts."""
    counts = list(counts)
    return float(statistics.median(counts)) if counts else None


# -- agreement with gold labels (the measures themselves: fact_reasoner.measures) ---------------


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


# -- one record -------------------------------------------------------------------------------


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
    """All scores of one response from its atoms' posteriors (``{atom id: P(true)}``).

    >>> from fact_reasoner.scores import score_record
    >>> scores = score_record({"a0": 0.9, "a1": 0.2, "a2": 0.7}, k=2)
    >>> scores.num_true_atoms, round(scores.factuality_score, 3), scores.recall_k, round(scores.f1_k, 3)
    (2, 0.667, 1.0, 0.8)
    >>> gold = score_record({"a0": 0.9, "a1": 0.2}, k=2, gold={"a0": "S", "a1": "S"}).gold
    >>> gold.true_positive, gold.false_negative, gold.gold_factuality_score
    (1, 1, 1.0)
    """
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


def response_score_fields(
    probabilities: Mapping[str, float],
    k: int | str,
    gold: Mapping[str, Label | None],
    *,
    dataset_median_atoms: float | None = None,
    gamma: float = 0.0,
) -> dict[str, Any]:
    """The score fields of one output row, whichever pipeline judged the atoms: FactReasoner's
    graph or a baseline.

    ``probabilities`` are the scored atoms' P(true) (``{atom id: P}``); K is chosen by
    :func:`choose_k` against ``dataset_median_atoms`` (``median`` without it: max(n // 2, 1)),
    and written with its rule and reason (``k_rule``, ``k_reason``); agreement with gold is
    computed when any scored atom has a label (``gold`` may name more atoms than are scored). With γ = ``gamma`` > 0, FActScore's length penalty
    (:func:`length_penalty`) multiplies the precision, and the row keeps both:

        factuality_score = precision · penalty(n),  unpenalized_factuality_score = precision.

    >>> fields = response_score_fields({"a0": 0.9, "a1": 0.2}, 2, {}, gamma=10)
    >>> fields["unpenalized_factuality_score"], round(fields["length_penalty"], 4)
    (0.5, 0.0183)
    """
    n = len(probabilities)
    chosen = choose_k(k, n, dataset_median_atoms)
    labels = {atom: label for atom, label in gold.items() if atom in probabilities}
    scores = score_record(probabilities, chosen.k, labels if any(labels.values()) else None)
    fields = scores.as_fields() | {"k_rule": chosen.rule, "k_reason": chosen.reason}
    if gamma > 0:
        penalty = length_penalty(n, gamma)
        fields["unpenalized_factuality_score"] = fields["factuality_score"]
        fields["factuality_score"] = fields["factuality_score"] * penalty
        fields["length_penalty"] = penalty
    return fields


def assessment_row(
    record: InputRecord,
    verdicts: Sequence[AtomVerdict],
    scored: Mapping[str, float],
    scores: "ScoreOptions",
    *,
    k: int | str | None,
    dataset_median_atoms: float | None,
    record_key: str | None,
    num_contexts: int,
    engine: EngineDiagnostics,
    settings: dict[str, Any],
    version: int | None = None,
    marginals: Sequence[Marginal] | None = None,
    **extra: Any,
) -> OutputRecord:
    """The output row of one assessed record, whichever pipeline judged its atoms (FactReasoner's
    graph or a baseline): the record's identity, every atom's verdict, the scores of the atoms in
    ``scored`` (``{atom id: P(true)}``: all of them unless ``--skip-uncheckable`` set some aside;
    :func:`response_score_fields` with the ``scores`` settings, K = ``k`` where the run gives
    one, else ``scores.k``, against ``dataset_median_atoms``, else the count of the atoms the
    record carries (the median of a dataset of one), else none (:func:`choose_k`); gold from the
    verdicts' labels), the predictions, and ``extra`` fields as given.

    ``version`` is the FR graph the posteriors come from (None: a baseline, which builds no
    graph); ``marginals`` every variable's (default: the verdicts' P(true), by atom id)."""
    fields = response_score_fields(
        scored,
        scores.k if k is None else k,
        {v.id: v.label for v in verdicts},
        dataset_median_atoms=known_median(record, dataset_median_atoms),
        gamma=scores.gamma,
    )
    if marginals is None:
        marginals = [
            Marginal(variable=v.id, probabilities=(1.0 - v.probability, v.probability))
            for v in sorted(verdicts, key=lambda v: v.id)
        ]
    return OutputRecord(
        record_key=record_key or record.record_key,
        input=record.input,
        output=record.output,
        topic=record.topic,
        version=version,
        num_contexts=num_contexts,
        marginals=list(marginals),
        predictions={v.id: v.prediction for v in verdicts},
        atoms=list(verdicts),
        engine=engine,
        settings=settings,
        **fields,
        **extra,
    )


# -- one dataset, from the rows that were written --------------------------------------------


@dataclass(frozen=True)
class GoldAtoms:
    """The gold-labelled atoms of one output row (labels S/NS; other atoms are left out):
    truths y_i (gold S), probabilities P(a_i) and predictions, all as the row wrote them.

    A prediction is the atom's written ``prediction`` (FR: :func:`predict_label`; the FactScore
    baseline: "any context entails"), or :func:`is_supported` of its probability when absent.
    """

    predicted: tuple[bool, ...]
    probabilities: tuple[float, ...]
    truths: tuple[bool, ...]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "GoldAtoms":
        """The row's labelled atoms; none for an abstention (it has no precision), and atoms
        marked ``checkworthy: false`` (``--skip-uncheckable``) are left out as its scores left them."""
        predicted, probabilities, truths = [], [], []
        if row.get("abstained"):
            return cls((), (), ())
        for atom in row.get("atoms") or []:
            label = atom.get("label")
            if label not in ("S", "NS") or atom.get("checkworthy") is False:
                continue
            p = float(atom["probability"])
            prediction = atom.get("prediction")
            predicted.append(prediction == "S" if prediction in ("S", "NS") else is_supported(p))
            probabilities.append(p)
            truths.append(label == "S")
        return cls(tuple(predicted), tuple(probabilities), tuple(truths))

    @property
    def precision(self) -> float:
        """Pr over the labelled atoms: #{predicted S} / #labelled; NaN when none is labelled."""
        return sum(self.predicted) / len(self.predicted) if self.predicted else math.nan

    @property
    def gold_precision(self) -> float:
        """Gold Pr: #{gold S} / #labelled; NaN when none is labelled."""
        return sum(self.truths) / len(self.truths) if self.truths else math.nan


@dataclass(frozen=True)
class ClaimCounts:
    """Every claim of the rows, each in exactly one category, so that the parts add up:

        total = judged + not judged,
        judged = supported + not supported on evidence + no evidence (the rows' ``atoms``),
        not judged = ungrounded (set aside) + stating nothing + failed (the rows'
        ``ungrounded_atoms``, ``fragment_atoms`` and a baseline's ``failed_atoms``).

    Among the judged, some are also marked (not a category of their own): ``unresolved`` (an
    unresolved reference), ``ungrounded_kept`` (ungrounded, judged all the same:
    ``--keep-ungrounded-atoms``) and ``uncheckable`` (``--skip-uncheckable``: judged, left out of
    the scores). ``checked``: some row's atoms were made and checked here (so the not-judged
    categories are known, even when 0)."""

    supported: int = 0
    unsupported: int = 0
    no_evidence: int = 0
    ungrounded: int = 0
    stating_nothing: int = 0
    failed: int = 0
    unresolved: int = 0
    ungrounded_kept: int = 0
    uncheckable: int = 0
    checked: bool = False

    @property
    def judged(self) -> int:
        return self.supported + self.unsupported + self.no_evidence

    @property
    def not_judged(self) -> int:
        return self.ungrounded + self.stating_nothing + self.failed

    @property
    def total(self) -> int:
        return self.judged + self.not_judged

    def as_dict(self) -> dict[str, Any]:
        """The counts with their sums (``total``, ``judged``, ``not_judged``)."""
        return {"total": self.total, "judged": self.judged, "not_judged": self.not_judged, **asdict(self)}

    @classmethod
    def of_rows(cls, rows: Iterable[Mapping[str, Any]]) -> "ClaimCounts":
        """The counts of the output rows as written."""
        rows = list(rows)
        atoms = [atom for row in rows for atom in row.get("atoms") or []]
        supported = [a.get("prediction") == "S" for a in atoms]
        return cls(
            supported=sum(supported),
            unsupported=sum(not s and not a.get("no_evidence") for s, a in zip(supported, atoms)),
            no_evidence=sum(not s and bool(a.get("no_evidence")) for s, a in zip(supported, atoms)),
            ungrounded=sum(len(row.get("ungrounded_atoms") or []) for row in rows),
            stating_nothing=sum(len(row.get("fragment_atoms") or []) for row in rows),
            failed=sum(len(row.get("failed_atoms") or []) for row in rows),
            unresolved=sum(bool(a.get("unresolved_reference")) for a in atoms),
            ungrounded_kept=sum(bool(a.get("ungrounded_reason")) for a in atoms),
            uncheckable=sum(a.get("checkworthy") is False for a in atoms),
            checked=any("ungrounded_atoms" in (row.get("counters") or {}) for row in rows),
        )


@dataclass(frozen=True)
class DatasetSummary:
    """Every dataset figure of :func:`summarize_rows` (definitions there).

    The gold figures are None when no atom carries a gold label.
    """

    num_records: int
    num_atoms: int
    median_num_atoms: float | None
    k: tuple[int, ...]  # the distinct K values the records were scored with, ascending
    mean_factuality_score: float
    mean_f1_k: float
    #: why: the distinct ``k_reason`` of the rows (:func:`choose_k`), in the order first written
    k_reasons: tuple[str, ...] = ()
    mean_gold_factuality_score: float | None = None
    mae_factuality_score: float | None = None
    atom_accuracy: float | None = None
    atom_balanced_accuracy: float | None = None
    atom_f1_supported: float | None = None
    atom_brier_score: float | None = None
    atom_ece: float | None = None
    num_gold_atoms: int = 0
    num_gold_records: int = 0
    #: rows with a written precision (the means are over these) and with an F1@K
    num_scored_records: int = 0
    #: the atoms by verdict: supported; not supported on evidence (a factor decided it); with no
    #: evidence at all (no factor: the atom kept its prior)
    num_supported_atoms: int = 0
    num_unsupported_atoms: int = 0
    num_no_evidence_atoms: int = 0
    # only when the rows say (--abstention on / --skip-uncheckable); None otherwise
    num_abstained: int | None = None
    respond_ratio: float | None = None
    num_uncheckable_atoms: int | None = None
    # only when the rows' atoms were made and checked here (fact_reasoner.atoms.grounding)
    num_ungrounded_atoms: int | None = None
    num_unresolved_atoms: int | None = None
    num_fragment_atoms: int | None = None
    #: a panel of judges (``--nli a,b``): each judge alone, ``{judge: {mean_factuality_score,
    #: and with gold labels mae_factuality_score, atom_balanced_accuracy}}`` (:func:`by_judge`)
    by_judge: dict[str, dict[str, float | None]] | None = None
    #: every claim of the rows in one category each, judged or not (:class:`ClaimCounts`)
    claims: ClaimCounts = ClaimCounts()

    def as_dict(self) -> dict[str, Any]:
        """The figures as JSON-ready fields (``k`` a list, or None for no records; ``claims``
        with its sums)."""
        fields = asdict(self)
        fields["claims"] = self.claims.as_dict()
        fields["k"] = list(self.k) or None
        fields["k_reasons"] = list(self.k_reasons)
        return fields


def summarize_rows(rows: Iterable[Mapping[str, Any]]) -> DatasetSummary:
    """Every dataset figure, from the values the output rows wrote — nothing is re-scored.

    Each row is one assessed response as written (``fact-reasoner``, the baselines), with
    ``factuality_score``, ``f1_k``, ``k`` and ``atoms: [{label?, probability, prediction}]``.
    Over R rows, n_r = the number of atoms of row r:

    - ``num_records`` = R; ``num_atoms`` = Σ_r n_r; ``median_num_atoms`` = median_r n_r
      (descriptive only: it is not the K of any record);
    - ``k`` = the set of the rows' written K. K is chosen when a record is scored (an
      integer, the dataset's median number of atoms, or max(n // 2, 1): :func:`choose_k`) and
      written with it; it is never recomputed here; ``k_reasons`` = the rows' distinct
      ``k_reason`` (why that K: ``--k median`` falls back to max(n // 2, 1) when the atoms are
      made by the run);
    - ``mean_factuality_score`` = mean_r Pr_r of the written ``factuality_score`` (rows
      without atoms wrote none and are skipped);
    - ``mean_f1_k`` = mean_r of the written ``f1_k``;
    - ``num_scored_records`` = the rows with a written ``factuality_score`` (the means are over
      them; none: the means are NaN and the summary prints none);
    - ``num_supported_atoms`` = #{atoms predicted S}; ``num_unsupported_atoms`` = #{atoms
      predicted NS on evidence}; ``num_no_evidence_atoms`` = #{atoms NS with ``no_evidence``:
      no factor touched them, they kept their prior}. A record without any evidence is not
      scored at all (:class:`~fact_reasoner.errors.NoEvidence`);
    - when the rows carry ``abstained`` (``--abstention on``): ``num_abstained`` and
      ``respond_ratio`` = :func:`respond_ratio`; an abstention writes no precision, so
      ``mean_factuality_score`` and ``mean_f1_k`` are over the responding rows only, and it is
      left out of the gold figures;
    - when atoms carry ``checkworthy`` (``--skip-uncheckable``): ``num_uncheckable_atoms`` =
      #{atoms with ``checkworthy: false``}, which are left out of the gold figures too;
    - when the rows' atoms were made by the atomizer and checked (``counters`` has
      ``ungrounded_atoms``, :mod:`fact_reasoner.atoms.grounding`): ``num_ungrounded_atoms`` = Σ_r of
      the row's ungrounded atoms (not judged, listed in ``ungrounded_atoms``; with
      ``--keep-ungrounded-atoms`` judged and marked), ``num_unresolved_atoms`` = Σ_r of its
      atoms with an unresolved reference and ``num_fragment_atoms`` = Σ_r of the clauses set
      aside as stating nothing (listed in ``fragment_atoms``). An atom that is not judged is in no other figure:
      ``num_atoms`` counts the judged atoms;
    - ``claims`` = :class:`ClaimCounts` of the rows: every claim, judged or not, in one
      category each (what the printed ``claims N: …`` line shows; its parts add up to N).

    Against gold labels (atoms labelled S or NS; unlabelled atoms are ignored), over the G rows
    with at least one labelled atom and the N labelled atoms, y_i = 1 for gold S, ŷ_i the
    written prediction (see :class:`GoldAtoms`), TP/TN/FP/FN with S as the positive class:

    - ``mean_gold_factuality_score`` = mean_r gold Pr_r, gold Pr_r = #{gold S} / #labelled;
    - ``mae_factuality_score`` = (1/G) Σ_r |Pr_r − gold Pr_r|, Pr_r over the labelled atoms
      (the written ``factuality_score`` when every atom is labelled);
    - ``atom_accuracy`` = (TP + TN) / N; ``atom_f1_supported`` = 2·TP / (2·TP + FP + FN);
    - ``atom_balanced_accuracy`` = (TP / (TP + FN) + TN / (TN + FP)) / 2, the mean of the recalls
      of S and NS: 0.5 for an assessor that answers S (or NS) for everything, however the gold
      labels are split (with 70 % S, always-S already scores F1(S) 0.82); NaN when the gold
      labels hold one class only;
    - ``atom_brier_score`` = :func:`brier_score`; ``atom_ece`` = :func:`expected_calibration_error`
      (10 equal-width bins), both of the written P(a_i).
    """
    rows = list(rows)
    counts = [len(row.get("atoms") or []) for row in rows]
    claims = ClaimCounts.of_rows(rows)
    summary = DatasetSummary(
        num_records=len(rows),
        num_atoms=sum(counts),
        median_num_atoms=median_num_atoms(counts),
        k=tuple(sorted({int(row["k"]) for row in rows if row.get("k") is not None})),
        k_reasons=tuple(dict.fromkeys(str(row["k_reason"]) for row in rows if row.get("k_reason"))),
        mean_factuality_score=_mean(_written(rows, "factuality_score")),
        mean_f1_k=_mean(_written(rows, "f1_k")),
        num_scored_records=len(_written(rows, "factuality_score")),
        num_supported_atoms=claims.supported,
        num_unsupported_atoms=claims.unsupported,
        num_no_evidence_atoms=claims.no_evidence,
        claims=claims,
    )
    if any("abstained" in row for row in rows):
        abstained = [bool(row.get("abstained")) for row in rows]
        summary = replace(summary, num_abstained=sum(abstained), respond_ratio=respond_ratio(abstained))
    if any("checkworthy" in atom for row in rows for atom in row.get("atoms") or []):
        uncheckable = sum(atom.get("checkworthy") is False for row in rows for atom in row.get("atoms") or [])
        summary = replace(summary, num_uncheckable_atoms=uncheckable)
    checked = [row.get("counters") or {} for row in rows if "ungrounded_atoms" in (row.get("counters") or {})]
    if checked:
        summary = replace(
            summary,
            num_ungrounded_atoms=int(sum(c["ungrounded_atoms"] for c in checked)),
            num_unresolved_atoms=int(sum(c.get("unresolved_atoms", 0) for c in checked)),
            num_fragment_atoms=int(sum(c.get("fragment_atoms", 0) for c in checked)),
        )
    if any(row.get("by_judge") for row in rows):
        summary = replace(summary, by_judge=by_judge(rows))
    gold = [g for g in (GoldAtoms.of(row) for row in rows) if g.truths]
    if not gold:
        return summary
    truths = [y for g in gold for y in g.truths]
    predicted = [p for g in gold for p in g.predicted]
    probabilities = [p for g in gold for p in g.probabilities]
    tp = sum(p and y for p, y in zip(predicted, truths))
    tn = sum(not p and not y for p, y in zip(predicted, truths))
    fp = sum(p and not y for p, y in zip(predicted, truths))
    fn = sum(not p and y for p, y in zip(predicted, truths))
    golds = [g.gold_precision for g in gold]
    return replace(
        summary,
        mean_gold_factuality_score=_mean(golds),
        mae_factuality_score=mean_absolute_error(golds, [g.precision for g in gold]),
        atom_accuracy=(tp + tn) / len(truths),
        atom_balanced_accuracy=balanced_accuracy(truths, predicted),
        atom_f1_supported=2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan,
        atom_brier_score=brier_score(truths, probabilities),
        atom_ece=expected_calibration_error(truths, probabilities),
        num_gold_atoms=len(truths),
        num_gold_records=len(gold),
    )


def by_judge(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each panel judge's figures, from what the rows wrote of it (``by_judge``: its precision
    and every atom's P(true) with that judge alone): the rows are read as if that judge had
    judged them and summarised as :func:`summarize_rows` does — mean precision, and with gold
    labels the MAE of precision and the atoms' balanced accuracy."""
    names = list(dict.fromkeys(name for row in rows for name in row.get("by_judge") or {}))
    out: dict[str, dict[str, float | None]] = {}
    for name in names:
        alone = [_as_judged_by(row, name) for row in rows if name in (row.get("by_judge") or {})]
        summary = summarize_rows(alone)
        out[name] = {
            "mean_factuality_score": summary.mean_factuality_score,
            "mae_factuality_score": summary.mae_factuality_score,
            "atom_balanced_accuracy": summary.atom_balanced_accuracy,
        }
    return out


def _as_judged_by(row: Mapping[str, Any], name: str) -> dict[str, Any]:
    """``row`` with judge ``name``'s precision and posteriors in place of the panel's."""
    own = row["by_judge"][name]
    atoms = [
        {**atom, "probability": p, "prediction": predict_label(p).value, "no_evidence": None}
        for atom, p in zip(row.get("atoms") or [], own["probabilities"])
    ]
    return {**row, "atoms": atoms, "factuality_score": own["factuality_score"], "by_judge": None}


def describe_k(values: Iterable[int]) -> str:
    """The K values of a summary as text: "7", "4, 9", or "2–30" for more than three values;
    "" for none."""
    values = sorted(set(values))
    if len(values) > 3:
        return f"{values[0]}–{values[-1]}"
    return ", ".join(str(v) for v in values)


def _written(rows: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    """The rows' written ``key`` values, leaving out rows where it is missing, null or NaN."""
    values = (row.get(key) for row in rows)
    return [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


__all__ = [
    "ClaimCounts",
    "DatasetSummary",
    "GoldAtoms",
    "GoldComparison",
    "KChoice",
    "RecordScores",
    "SUPPORTED_THRESHOLD",
    "UNIFORM_TOLERANCE",
    "assessment_row",
    "choose_k",
    "compare_with_gold",
    "describe_k",
    "entropy_terms",
    "f1_at_k",
    "factual_precision",
    "is_supported",
    "is_uniform",
    "known_median",
    "length_penalty",
    "median_num_atoms",
    "predict_label",
    "recall_at_k",
    "resolve_k",
    "respond_ratio",
    "score_record",
    "summarize_rows",
]

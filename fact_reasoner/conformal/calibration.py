"""The conformal filter as a file: fitted from assessed, labelled rows, read back, checked
against a run's settings and applied to one answer's claims.

``fact-reasoner conformal --gold ROWS --alpha 0.1 --output conformal.json`` writes a
:class:`ConformalFilter` (JSON); ``--conformal conformal.json`` on ``fact-reasoner``,
``correct``, ``serve`` and ``PipelineConfig(conformal=…)`` reads it (:func:`load_filter`) and
each answer's claims get ``kept`` (:meth:`ConformalFilter.row_fields`).

The score is the claim's posterior P(true), so the filter belongs to the assessor, the judge
and the settings that made the posteriors it was fitted on: the file records them
(:func:`posterior_settings` of the rows' ``settings``) and is refused
(:class:`~fact_reasoner.errors.ConformalError`, one line naming what differs) on a run made
otherwise — its guarantee is about answers assessed like the calibration answers.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConformalError
from ..settings.fields import dotted
from ..version import __version__
from .maths import (
    ADAPTIVE_FEATURES,
    Claims,
    adaptive_threshold,
    claims_threshold,
    features,
    kept,
    min_calibration_size,
    quantile_index,
    response_nonconformity,
    response_threshold,
)

__all__ = [
    "FORMAT",
    "GUARANTEES",
    "METHODS",
    "POSTERIOR_GROUPS",
    "CalibrationAnswer",
    "ConformalFilter",
    "calibration_answers",
    "fit_filter",
    "load_filter",
    "posterior_settings",
    "settings_differences",
]

#: the ``format`` of a filter file (a later, incompatible layout gets another)
FORMAT = "fact-reasoner-conformal/1"
Guarantee = Literal["response", "claims"]
Method = Literal["plain", "adaptive"]
GUARANTEES: tuple[str, ...] = ("response", "claims")
METHODS: tuple[str, ...] = ("plain", "adaptive")
#: the settings groups that decide a claim's posterior (the ``scores`` group does not: K, the
#: checkworthy rules, the length penalty and the filter itself change no posterior)
POSTERIOR_GROUPS = ("pipeline", "graph", "engine", "models", "retrieval")


def posterior_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The part of a row's ``settings`` that decides its posteriors: the groups of
    :data:`POSTERIOR_GROUPS` as written. ``pipeline`` is left out while it is FactReasoner's
    own (the experiments' rows leave it out) and keys outside the groups (the experiments'
    ``nli_backend``, a description of the judge) are not compared."""
    settings = settings or {}
    out = {group: settings[group] for group in POSTERIOR_GROUPS if isinstance(settings.get(group), dict)}
    if out.get("pipeline") == {"name": "factreasoner"}:
        del out["pipeline"]
    return out


def settings_differences(here: Mapping[str, Any], there: Mapping[str, Any]) -> list[str]:
    """``graph.version: 2 here, 3 in the calibration rows`` for each setting that differs
    between two :func:`posterior_settings` (sorted by name; "unset" where one has none)."""
    mine, theirs = dotted(here), dotted(there)
    shown = []
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key, _UNSET) != theirs.get(key, _UNSET):
            shown.append(
                f"{key}: {_word(mine.get(key, _UNSET))} here, {_word(theirs.get(key, _UNSET))} in the calibration rows"
            )
    return shown


_UNSET = object()


def _word(value: Any) -> str:
    return "unset" if value is _UNSET else json.dumps(value) if not isinstance(value, str) else value


@dataclass(frozen=True)
class CalibrationAnswer:
    """One labelled, assessed answer: where its row is and its claims (posteriors, gold truths)."""

    where: str
    claims: Claims


def calibration_answers(rows: Iterable[tuple[str, Mapping[str, Any]]]) -> list[CalibrationAnswer]:
    """The claims of assessed rows ``(where, row)`` with every atom's gold label: the score is
    the atom's ``probability``, true for gold S. A row with an atom that has no gold S/NS label
    is refused — an unlabelled false claim would be kept unseen and the guarantee lost — and so
    is an abstention's row (no claims to calibrate on is not no false claim)."""
    answers = []
    for where, row in rows:
        atoms = row.get("atoms")
        if not isinstance(atoms, list):
            raise ConformalError(f"{where}: not an assessed row (no 'atoms' list)")
        if row.get("abstained"):
            raise ConformalError(f"{where}: an abstention (no claims); leave it out of the calibration rows")
        scores, truths = [], []
        for atom in atoms:
            label = atom.get("label")
            if label not in ("S", "NS"):
                raise ConformalError(
                    f"{where}: atom {atom.get('id')!r} has no gold S/NS label; every claim of a calibration answer "
                    "must be labelled (run on records whose atoms carry `label`)"
                )
            probability = atom.get("probability")
            if not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
                raise ConformalError(f"{where}: atom {atom.get('id')!r} has no posterior in [0, 1]: {probability!r}")
            scores.append(float(probability))
            truths.append(label == "S")
        answers.append(CalibrationAnswer(where, Claims(tuple(scores), tuple(truths))))
    return answers


class CalibrationSummary(BaseModel):
    """What the filter was fitted on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    answers: int
    claims: int
    false_claims: int
    files: list[dict[str, str]] = Field(default_factory=list, description="each rows file and its sha256")
    min_answers: int = Field(description="the fewest answers a finite threshold at this alpha needs (⌈1/α⌉ − 1)")


class ConformalFilter(BaseModel):
    """A fitted conformal filter (the file ``fact-reasoner conformal`` writes).

    ``threshold`` keeps a claim when its posterior is strictly above it (plain method); the
    adaptive method stores its calibration ``points`` (claims, mean posterior, r) and fits each
    answer's threshold when applied (:func:`~fact_reasoner.conformal.maths.adaptive_threshold`).
    ``settings`` are the calibration rows' :func:`posterior_settings`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["fact-reasoner-conformal/1"] = "fact-reasoner-conformal/1"
    guarantee: Guarantee
    alpha: float = Field(gt=0.0, lt=1.0)
    method: Method = "plain"
    score: Literal["posterior"] = "posterior"
    threshold: float | None = None
    quantile_index: int | None = None
    points: list[tuple[float, float, float]] | None = None
    features: list[str] | None = None
    calibration: CalibrationSummary
    assessor: str
    judge: str | None = None
    settings: dict[str, Any]
    fitted: str = ""
    fact_reasoner: str = __version__

    # -- applying it ----------------------------------------------------------------------------

    def check(self, settings: Mapping[str, Any], *, source: str = "the conformal file") -> None:
        """Refuse (:class:`~fact_reasoner.errors.ConformalError`, one line) a run or rows whose
        posteriors were made with other settings than the calibration rows'."""
        differences = settings_differences(posterior_settings(settings), self.settings)
        if differences:
            shown = "; ".join(differences[:3]) + (f"; and {len(differences) - 3} more" if len(differences) > 3 else "")
            raise ConformalError(
                f"{source} was fitted on {self.assessor} rows made with other settings ({shown}): its guarantee does "
                "not hold here; fit it again on rows made with these settings (fact-reasoner conformal --gold …)"
            )

    def threshold_for(self, scores: Sequence[float]) -> float:
        """The threshold of one answer whose claims have ``scores`` (``inf``: keep none)."""
        if self.method == "plain":
            assert self.threshold is not None
            return self.threshold
        calibration = [((claims, mean), r) for claims, mean, r in self.points or []]
        return adaptive_threshold(calibration, scores, self.alpha)

    def keep(self, scores: Sequence[float]) -> list[bool]:
        """Which of one answer's claims are kept (score strictly above its threshold)."""
        return kept(scores, self.threshold_for(scores))

    def statement(self) -> str:
        """The guarantee in words, as a row carries it."""
        share = f"{self.alpha:.0%}" if round(self.alpha * 100, 6).is_integer() else f"{self.alpha * 100:g}%"
        what = (
            f"the kept claims include a false one with probability at most {share}"
            if self.guarantee == "response"
            else f"the expected share of false claims among the kept claims is at most {share}"
        )
        adaptive = (
            " The threshold adapts to the answer's number of claims and mean posterior (conditional conformal);"
            " the guarantee stays marginal."
            if self.method == "adaptive"
            else ""
        )
        return (
            f"For answers exchangeable with the {self.calibration.answers} calibration answers (the same kind of "
            f"question and source, assessed by {self.assessor} with the same judge and settings), {what} "
            f"(alpha {self.alpha:g}). The guarantee is marginal: over the draw of the calibration answers and of "
            f"the answer, not for this answer in particular; its labels were the calibration answers' gold "
            f"claims.{adaptive}"
        )

    def row_fields(
        self,
        atoms: Sequence[tuple[str, str, float]],
        *,
        file: str | None = None,
        sha256: str | None = None,
        atoms_made_here: bool = False,
    ) -> tuple[list[bool], dict[str, Any]]:
        """``(kept per atom, the row's conformal field)`` of one answer's atoms ``(id, text,
        posterior)``: the threshold used, the kept claims, the retention (kept / all claims)
        and the guarantee in words."""
        scores = [p for _, _, p in atoms]
        threshold = self.threshold_for(scores)
        flags = kept(scores, threshold)
        n_kept = sum(flags)
        field: dict[str, Any] = {
            "guarantee": self.guarantee,
            "alpha": self.alpha,
            "method": self.method,
            "threshold": threshold if math.isfinite(threshold) else None,
            "kept": [atom_id for (atom_id, _, _), keep in zip(atoms, flags) if keep],
            "kept_claims": [text for (_, text, _), keep in zip(atoms, flags) if keep],
            "num_kept": n_kept,
            "num_claims": len(atoms),
            "retention": n_kept / len(atoms) if atoms else None,
            "statement": self.statement(),
            "calibration": {
                "file": file,
                "sha256": sha256,
                "answers": self.calibration.answers,
                "assessor": self.assessor,
                "judge": self.judge,
            },
        }
        if not math.isfinite(threshold):
            field["note"] = "no threshold keeps any claim of this answer at this alpha: every claim is dropped"
        if atoms_made_here:
            field["atoms_note"] = (
                "these claims were made by the run's atomizer; the calibration labels were on gold claims, so the "
                "guarantee holds for them only as far as the atomizer's claims are like those (docs/conformal.md)"
            )
        return flags, field

    # -- reading and writing ---------------------------------------------------------------------

    def dumps(self) -> str:
        """The file's text: indented JSON and a final newline."""
        return json.dumps(self.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n"


def fit_filter(
    answers: Sequence[CalibrationAnswer],
    alpha: float,
    guarantee: str = "response",
    method: str = "plain",
    *,
    assessor: str,
    judge: str | None,
    settings: Mapping[str, Any],
    files: Sequence[dict[str, str]] = (),
) -> ConformalFilter:
    """Fit the filter on labelled answers (see :mod:`fact_reasoner.conformal.maths` for the
    formulas). Raises :class:`~fact_reasoner.errors.ConformalError` for an unknown guarantee or
    method, the adaptive method with the ``claims`` guarantee (not implemented), and — as
    :class:`~fact_reasoner.conformal.maths.CalibrationTooSmall` — too few answers for α."""
    if guarantee not in GUARANTEES:
        raise ConformalError(f"unknown guarantee {guarantee!r}; choose from {', '.join(GUARANTEES)}")
    if method not in METHODS:
        raise ConformalError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    if method == "adaptive" and guarantee != "response":
        raise ConformalError(
            "the adaptive method is implemented for --guarantee response only (conditional conformal quantile "
            "regression); use --method plain with --guarantee claims"
        )
    claims = [a.claims for a in answers]
    fields: dict[str, Any] = {}
    if guarantee == "response":
        r = [response_nonconformity(c) for c in claims]
        if method == "plain":
            fields = {"threshold": response_threshold(r, alpha), "quantile_index": quantile_index(len(r), alpha)}
        else:
            quantile_index(len(r), alpha)  # too few answers: refused now, not when applied
            fields = {
                "points": [(*features(c.scores), value) for c, value in zip(claims, r)],
                "features": list(ADAPTIVE_FEATURES),
            }
    else:
        fields = {"threshold": claims_threshold(claims, alpha)}
    return ConformalFilter(
        guarantee=guarantee,
        alpha=alpha,
        method=method,
        calibration=CalibrationSummary(
            answers=len(claims),
            claims=sum(len(c.scores) for c in claims),
            false_claims=sum(not t for c in claims for t in c.truths),
            files=list(files),
            min_answers=min_calibration_size(alpha),
        ),
        assessor=assessor,
        judge=judge,
        settings=posterior_settings(settings),
        fitted=_dt.date.today().isoformat(),
        **fields,
    )


@dataclass(frozen=True)
class LoadedFilter:
    """A filter read from its file, with the file's name and SHA-256 (what the rows record)."""

    filter: ConformalFilter
    path: str
    sha256: str


_loaded: dict[tuple[str, int, int], LoadedFilter] = {}
_loading = threading.Lock()


def load_filter(path: str | Path) -> LoadedFilter:
    """The filter in ``path`` (read once per version of the file: a server reads it once).
    Raises :class:`~fact_reasoner.errors.ConformalError` for a missing or unreadable file or one
    that is not a filter."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as error:
        raise ConformalError(f"--conformal {path}: {error.strerror or error}") from None
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _loading:
        if key in _loaded:
            return _loaded[key]
    try:
        data = path.read_bytes()
        loaded = ConformalFilter.model_validate_json(data)
    except OSError as error:
        raise ConformalError(f"--conformal {path}: {error.strerror or error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ConformalError(
            f"--conformal {path}: not a conformal filter written by `fact-reasoner conformal` "
            f"({where + ': ' if where else ''}{first['msg']})"
        ) from None
    result = LoadedFilter(loaded, str(path), hashlib.sha256(data).hexdigest())
    with _loading:
        _loaded[key] = result
    return result

"""Conformal filtering of claims: keep the claims whose posterior is above a threshold fitted on
labelled answers, with a finite-sample, distribution-free guarantee on the error of what is kept.

- :mod:`~fact_reasoner.conformal.maths`: the formulas, as pure functions (the ``response``
  guarantee of Mohri & Hashimoto, the ``claims`` guarantee by conformal risk control, the
  adaptive threshold of Cherian, Gibbs & Candès);
- :mod:`~fact_reasoner.conformal.calibration`: the filter as a file — fitted from assessed
  labelled rows (``fact-reasoner conformal``), checked against a run's settings, applied to an
  answer's claims (``--conformal FILE``);
- :mod:`~fact_reasoner.conformal.evaluation`: realised error and retention over random
  calibration/test splits (``experiments/conformal_eval.py``, the report's curve).

What the guarantee means and does not: ``docs/conformal.md``.
"""

from __future__ import annotations

from .calibration import (
    ConformalFilter,
    LoadedFilter,
    calibration_answers,
    fit_filter,
    load_filter,
    posterior_settings,
)
from .maths import CalibrationTooSmall, Claims, min_calibration_size, quantile_index

__all__ = [
    "CalibrationTooSmall",
    "Claims",
    "ConformalFilter",
    "LoadedFilter",
    "calibration_answers",
    "fit_filter",
    "load_filter",
    "min_calibration_size",
    "posterior_settings",
    "quantile_index",
]

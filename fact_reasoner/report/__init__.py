"""Reports of result files: the HTML page, the tables of agreement with gold, the plots.

- :mod:`.rows`: reading result JSONL files, grouping rows per assessor;
- :mod:`.tables`: one line per assessor (and rarity tier) as Markdown or CSV, and the paper's
  published numbers;
- :mod:`.plots`: reliability diagram, predicted vs gold precision, posterior distributions;
- :mod:`.page`: ``fact-reasoner report``, one self-contained HTML page of it all.

The maths behind every figure (scores, Brier, ECE, MAE) is in :mod:`fact_reasoner.scores`.
"""

from .page import ContextTexts, build_report, colour, esc

__all__ = ["ContextTexts", "build_report", "colour", "esc"]

"""The metrics' catalog: each built-in registered once, by name, without importing it."""

from __future__ import annotations

import inspect

import pytest

from fact_reasoner.metrics.catalog import METRICS
from scripts.import_graph import arrows


@pytest.mark.parametrize("name", [n for n in METRICS.available() if METRICS.entry(n).builtin])
def test_a_builtin_metric_is_the_class_its_entry_names_and_described_by_its_docstring(name):
    pytest.importorskip("pandas")
    metric_class = METRICS.factory(name)
    assert metric_class.name == name
    # the description is the first line of the class's docstring, written twice: kept equal here
    assert METRICS.entry(name).description == inspect.getdoc(metric_class).split("\n")[0]


def test_the_catalog_imports_no_metric():
    """The metrics' modules import the evaluation's stages, which look entries up here: an
    import of a metric from here would close a cycle (``scripts/import_graph.py``)."""
    targets = {arrow.target for arrow in arrows() if arrow.source == "fact_reasoner.metrics.catalog"}
    assert targets and not {t for t in targets if t.startswith("fact_reasoner.metrics")}

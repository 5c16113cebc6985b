"""The examples in the docstrings of the main entry points run, and give what they show:
``FactReasoner.assess``, ``build_graph``, ``make_engine`` and ``score_record`` (with the
registry's module example in ``core/test_registry.py``)."""

from __future__ import annotations

import doctest
import importlib

import pytest

#: module → the functions whose docstrings must hold an example
EXAMPLES = {
    "fact_reasoner.reasoner": ["FactReasoner.assess"],
    "fact_reasoner.graph.build": ["build_graph"],
    "fact_reasoner.inference.base": ["make_engine"],
    "fact_reasoner.scores": ["score_record"],
    "fact_reasoner.atoms.grounding": [
        "ungrounded_terms",
        "unresolved_reference",
        "needs_revision",
        "unfaithful_revision",
    ],
    "fact_reasoner.atoms.atomizer": ["max_atoms"],
    "fact_reasoner.llm.local": ["generation_threads_for"],
    "fact_reasoner.metrics.answerable": ["non_answer"],
    "fact_reasoner.settings.fields": ["path_problem"],
}


@pytest.mark.parametrize("module_name", sorted(EXAMPLES))
def test_docstring_examples_run(module_name: str) -> None:
    module = importlib.import_module(module_name)
    tests = {test.name.removeprefix(module_name + "."): test for test in doctest.DocTestFinder().find(module)}
    for name in EXAMPLES[module_name]:
        assert tests.get(name) and tests[name].examples, f"{module_name}.{name} has no docstring example"
    failures, tried = doctest.testmod(module, verbose=False)
    assert tried > 0 and failures == 0, f"{failures} of {tried} examples in {module_name} failed (see the output above)"

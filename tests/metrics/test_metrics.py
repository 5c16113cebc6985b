"""RAG metrics on FactReasoner's atoms / NLI / FR2 graphs, with relations fixed by the tests.

The NLI stage is the real ``PrecomputedNLI`` backend answering from relations the test states
(pairs it does not list are neutral, as in IBM's files); atoms come from the real sentence
atomizer; inference is the native engine.
"""

from __future__ import annotations

import json
import math

import pytest

from fact_reasoner.cache import ModelCache
from fact_reasoner.inference import make_engine
from fact_reasoner.metrics import (
    AnswerClassification,
    BertScoreF1,
    ContextPrecision,
    ContextRecall,
    FactualAccuracy,
    FactualCorrectness,
    Faithfulness,
    MetricContext,
    RagasScore,
    RagSample,
    SentenceAtomizer,
    average_precision,
    evaluate,
    letter_grade,
    mean_relevance,
    non_answer,
    uncertainty_match,
)
from fact_reasoner.metrics.atoms import AtomStore
from fact_reasoner.nli import NLIJudgement, PrecomputedNLI
from fact_reasoner.schema import Relation
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

DATA = REPO_ROOT.parent / "shared" / "data"


def fixed_nli(relations: list[tuple[str, str, str, float]]) -> PrecomputedNLI:
    """PrecomputedNLI over (premise text, hypothesis text, relation, probability) rows."""
    texts: dict[str, str] = {}
    ids: dict[str, str] = {}

    def ident(text: str) -> str:
        if text not in ids:
            ids[text] = f"t{len(ids)}"
            texts[ids[text]] = text
        return ids[text]

    rels = [Relation(source=ident(p), target=ident(h), relation=r, probability=q) for p, h, r, q in relations]
    return PrecomputedNLI(rels, texts)


class FailingNLI:
    """A real backend outcome: every call fails (as an LLM judge whose reply cannot be parsed)."""

    name = "failing"

    def judge(self, pairs):
        return [NLIJudgement.failure("unparsable reply") for _ in pairs]


def ctx(relations=(), nli=None, **graph) -> MetricContext:
    """A context judging with fixed relations; ``graph`` settings override the defaults."""
    return MetricContext(
        PipelineConfig(**graph) if graph else None,
        atomizer=SentenceAtomizer(),
        nli=nli or fixed_nli(list(relations)),
        engine=make_engine("native"),
        atom_cache=None,
    )


CHUNK = "Marie Curie was a physicist who won the Nobel Prize in 1903 and 1911, and was born in Warsaw."
S1, S2, S3 = "Marie Curie was a physicist.", "She won the Nobel Prize twice.", "She was born in Warsaw."


# --------------------------------------------------------------------------------------------
# Faithfulness: the seed scenarios


def test_faithfulness_three_supported_claims_is_one():
    sample = {"question": "Who was Marie Curie?", "response": f"{S1} {S2} {S3}", "retrieved_contexts": [CHUNK]}
    result = Faithfulness().score(sample, ctx([(CHUNK, s, "entailment", 0.95) for s in (S1, S2, S3)]))
    assert result.score == 1.0 and result.score_100 == 100.0
    assert result.verdict_counts == {"FULLY_SUPPORTED": 3}
    assert result.total_claims == result.judged_claims == 3
    assert all(d.context == CHUNK and d.context_index == 0 for d in result.details)
    # the posterior is FR2 inference on the shared chunk: the same as exact enumeration
    exact = Faithfulness().score(
        sample,
        MetricContext(
            atomizer=SentenceAtomizer(),
            nli=fixed_nli([(CHUNK, s, "entailment", 0.95) for s in (S1, S2, S3)]),
            engine=make_engine("brute-force"),
            atom_cache=None,
        ),
    )
    assert [d.probability for d in result.details] == pytest.approx([d.probability for d in exact.details], abs=1e-9)


def test_faithfulness_supported_plus_no_evidence_half_and_strict_zero():
    sample = {"response": f"{S1} The moon is made of cheese.", "contexts": [CHUNK]}
    relations = [(CHUNK, S1, "entailment", 0.95), (CHUNK, "The moon is made of cheese.", "neutral", 0.9)]
    assert Faithfulness().score(sample, ctx(relations)).score == 0.5
    strict = Faithfulness(strict_mode=True).score(sample, ctx(relations))
    assert strict.score == 0.0
    assert strict.verdict_counts == {"FULLY_SUPPORTED": 1, "NO_EVIDENCE": 1}
    no_evidence = strict.details[1]
    assert no_evidence.verdict == "NO_EVIDENCE" and no_evidence.probability == 0.5 and no_evidence.context is None
    # verdict_scores wins over strict mode
    override = Faithfulness(strict_mode=True, verdict_scores={"NO_EVIDENCE": 0.25})
    assert override.score(sample, ctx(relations)).score == pytest.approx((1.0 + 0.25) / 2)
    # binary form: supported / judged
    assert Faithfulness(weighted=False, strict_mode=True).score(sample, ctx(relations)).score == 0.5


def test_faithfulness_contradicted_claim_is_zero():
    claim = "Marie Curie was born in Paris."
    result = Faithfulness().score(
        {"response": claim, "retrieved_contexts": [CHUNK]}, ctx([(CHUNK, claim, "contradiction", 0.9)])
    )
    assert result.score == 0.0
    assert result.details[0].verdict == "CONTRADICTORY"
    # one contradiction table of the default `priors` family (0.5, 0.5, p, 1−p), context prior 0.9:
    # P(a) = (0.1·0.5 + 0.9(1−p)) / (0.1 + 0.9)
    assert result.details[0].probability == pytest.approx(0.1 * 0.5 + 0.9 * 0.1, abs=1e-9)
    assert result.details[0].probability < 0.5 and result.details[0].context == CHUNK


def test_faithfulness_verdict_thresholds():
    weak = "Marie Curie worked in France."
    mixed = "Marie Curie won a Nobel Prize."
    other = "Pierre agreed with everything."
    contexts = [CHUNK, "Some say she never won any prize."]
    relations = [
        (CHUNK, weak, "entailment", 0.6),  # P > 0.5 but entailment < 0.75 → partial
        (CHUNK, mixed, "entailment", 0.95),
        (contexts[1], mixed, "contradiction", 0.6),  # entailment outweighs it → partial
        (contexts[1], other, "entailment", 0.4),  # too weak: dropped (min_relation_probability 0.5)
    ]
    result = Faithfulness().score(
        {"response": f"{weak} {mixed} {other}", "retrieved_contexts": contexts}, ctx(relations)
    )
    verdicts = [d.verdict for d in result.details]
    assert verdicts == ["PARTIALLY_SUPPORTED", "PARTIALLY_SUPPORTED", "NO_EVIDENCE"]
    assert result.score == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert result.details[2].probability == 0.5


class NoClaims:
    """An atomizer that finds no claim in any text."""

    def atomize(self, text, question=None):
        return []


def test_faithfulness_nan_cases_and_no_claims_parameter():
    assert math.isnan(Faithfulness().score({"response": S1}, ctx()).score)  # no contexts
    empty = {"response": "   ", "retrieved_contexts": [CHUNK]}
    assert "response" in Faithfulness().score(empty, ctx()).reason
    # an answer the atomizer finds no claim in (a pleasantry, to an LLM atomizer)
    no_claims = {"response": "Thanks for asking!", "retrieved_contexts": [CHUNK]}
    claimless = MetricContext(atomizer=NoClaims(), nli=fixed_nli([]), engine=make_engine("native"), atom_cache=None)
    nan_result = Faithfulness().score(no_claims, claimless)
    assert math.isnan(nan_result.score) and nan_result.reason == "the response has no claims"
    assert Faithfulness(no_claims_score=1.0).score(no_claims, claimless).score == 1.0
    # a response without a word is not a response without claims: it answers nothing (#44)
    nothing = Faithfulness(no_claims_score=1.0).score({"response": "...", "retrieved_contexts": [CHUNK]}, ctx())
    assert math.isnan(nothing.score) and nothing.reason == "not answerable: the response has no words ('...')"
    failed = Faithfulness().score({"response": S1, "retrieved_contexts": [CHUNK]}, ctx(nli=FailingNLI()))
    assert math.isnan(failed.score) and failed.judged_claims == 0 and failed.total_claims == 1
    assert failed.details[0].verdict == "UNJUDGED" and "unparsable" in failed.details[0].reason


# --------------------------------------------------------------------------------------------
# Factual correctness and the GEval-style grade

REFERENCE = "Paris is the capital of France. The Eiffel Tower was completed in 1889."
RESPONSE = "Paris is the capital of France. The Eiffel Tower was built in 1500."
PARIS, EIFFEL_1889, EIFFEL_1500 = (
    "Paris is the capital of France.",
    "The Eiffel Tower was completed in 1889.",
    "The Eiffel Tower was built in 1500.",
)
PARIS_RELATIONS = [
    (REFERENCE, PARIS, "entailment", 0.97),  # precision side: reference judges response claims
    (REFERENCE, EIFFEL_1500, "contradiction", 0.95),
    (RESPONSE, PARIS, "entailment", 0.97),  # recall side: response judges reference claims
    (RESPONSE, EIFFEL_1889, "contradiction", 0.95),
]


def test_factual_correctness_paris_eiffel_is_half():
    sample = {"question": "Tell me about Paris.", "response": RESPONSE, "ground_truth": REFERENCE}
    # every contradiction a factor: "built in 1500" / "completed in 1889" use two verbs the
    # same-attribute rule does not map together (a known miss), so by default the pair is neutral
    default = FactualCorrectness().score(sample, ctx(PARIS_RELATIONS))
    assert default.score == 0.5 and {d.verdict for d in default.details if "Eiffel" in d.claim} == {"NOT_SUPPORTED"}
    context = ctx(PARIS_RELATIONS, contradictions="any")
    result = FactualCorrectness().score(sample, context)
    assert result.precision == 0.5 and result.recall == 0.5 and result.score == 0.5
    verdicts = {(d.source, d.claim): d.verdict for d in result.details}
    assert verdicts[("response", EIFFEL_1500)] == "CONTRADICTED"
    assert verdicts[("reference", EIFFEL_1889)] == "CONTRADICTED"
    assert verdicts[("reference", PARIS)] == "SUPPORTED"
    accuracy = FactualAccuracy().score(sample, context)
    # 0.5·precision + 0.3·recall + 0.2·(1 − contradicted share 0.5) = 0.25 + 0.15 + 0.1
    assert accuracy.score == pytest.approx(0.5) and accuracy.grade == "C"


def test_factual_correctness_recall_comes_from_the_reference_side():
    response = PARIS  # says one of the reference's two facts, nothing wrong
    relations = [(REFERENCE, PARIS, "entailment", 0.97), (response, PARIS, "entailment", 0.97)]
    sample = {"response": response, "expected_output": REFERENCE}
    context = ctx(relations)
    assert FactualCorrectness(mode="PRECISION").score(sample, context).score == 1.0
    assert FactualCorrectness(mode="recall").score(sample, context).score == 0.5
    f1 = FactualCorrectness().score(sample, context)
    assert f1.score == pytest.approx(2 * 1.0 * 0.5 / 1.5)
    f2 = FactualCorrectness(beta=2.0).score(sample, context)
    assert f2.score == pytest.approx(5 * 0.5 / (4 * 1.0 + 0.5))
    assert math.isnan(FactualCorrectness().score({"response": response}, context).score)


def test_letter_grades():
    assert [letter_grade(x) for x in (80, 79.99, 60, 40, 20, 19.9)] == ["A", "B", "B", "C", "D", "E"]
    assert letter_grade(float("nan")) is None


# --------------------------------------------------------------------------------------------
# Context recall / precision


def test_context_precision_average_precision_is_exact():
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert average_precision([False, True]) == 0.5
    assert average_precision([False, False]) == 0.0
    assert mean_relevance([True, False, True, False]) == 0.5
    assert math.isnan(average_precision([]))


def test_context_recall_and_precision_on_shared_graph():
    noise = "The Great Wall of China is very long."
    sample = {
        "question": "Tell me about Paris.",
        "reference": REFERENCE,
        "retrieved_content": [{"text": noise}, {"text": "Paris has been France's capital for centuries."}],
    }
    relations = [("Paris has been France's capital for centuries.", PARIS, "entailment", 0.9)]
    context = ctx(relations)
    recall = ContextRecall().score(sample, context)
    assert recall.score == 0.5 and recall.attributed_claims == 1
    precision = ContextPrecision().score(sample, context)
    assert precision.relevance == [0, 1]
    assert precision.score == 0.5 and precision.mean_relevance == 0.5  # AP of [0, 1] = 1/2
    assert ContextPrecision(mode="mean").score(sample, context).score == 0.5
    assert context.nli.backend_pairs == 4  # 2 claims × 2 contexts judged once, shared by both metrics
    assert math.isnan(ContextRecall().score({"retrieved_contexts": [noise]}, context).score)


def test_context_precision_without_a_reference_is_not_computed_and_says_why():
    """The docs define relevance through the reference's claims: without a reference the
    response's claims do not stand in under the same name (#44)."""
    sample = {"question": "Tell me about Paris.", "response": PARIS, "retrieved_contexts": [PARIS]}
    result = ContextPrecision().score(sample, ctx([(PARIS, PARIS, "entailment", 0.99)]))
    assert math.isnan(result.score)
    assert result.reason == "sample has no reference: a context's relevance is judged by the reference's claims"


# --------------------------------------------------------------------------------------------
# A non-answer is never scored (#44)


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("...", "the response has no words ('...')"),
        ("I don't know.", "the response declines to answer"),
        ("No idea, sorry!", "the response only says it cannot answer ('no idea')"),
        ("Paris?", "the response only repeats words of the question"),
    ],
)
def test_a_non_answer_gets_no_score_from_any_metric_that_judges_the_answer(response, reason):
    """With the sentence atomizer, "..." used to become the claim "Tell me about Paris. ...",
    which the contexts partly supported: faithfulness 0.5 for nothing."""
    sample = {
        "question": "Tell me about Paris.",
        "response": response,
        "reference": PARIS,
        "retrieved_contexts": [PARIS],
    }
    context = ctx([(PARIS, f"Tell me about Paris. {response}", "entailment", 0.9), (PARIS, PARIS, "entailment", 0.9)])
    for metric in (Faithfulness(), FactualCorrectness(), RagasScore()):
        result = metric.score(sample, context)
        assert math.isnan(result.score) and result.not_answerable is True, metric.name
        assert result.reason.startswith(f"not answerable: {reason}"), (metric.name, result.reason)
    # the retrieval metrics judge the contexts, not the answer: computed as usual
    assert ContextRecall().score(sample, context).score == 1.0
    # answer classification labels it DON'T KNOW (what it counts), with the reason
    assert AnswerClassification().score(sample, context).label == "DON'T KNOW"


def test_an_answer_is_not_mistaken_for_a_non_answer():
    for response in ("In Paris.", "Yes.", "Not sure, but probably Paris.", "Paris is the capital of France."):
        assert non_answer(response, "Tell me about Paris.") is None, response
    # an answer made of the question's own words: a yes/no question restated, a choice made
    assert non_answer("The Eiffel Tower is in Paris.", "Question: Is the Eiffel Tower in Paris?") is None
    assert non_answer("Paris.", "Is the Eiffel Tower in Paris or in Rome?") is None
    assert non_answer(None, "q") is None and non_answer("", "q") is None  # missing: the sample's problem


# --------------------------------------------------------------------------------------------
# Composite


def test_ragas_composite_seed_vectors():
    nan = float("nan")
    composite = RagasScore()
    seed = composite.combine(
        {"faithfulness": 1.0, "context_precision": nan, "context_recall": 1.0, "answer_relevance": 0.8327}
    )
    assert round(seed * 100, 2) == 93.73
    only_relevance = composite.combine(
        {"faithfulness": nan, "context_precision": nan, "context_recall": nan, "answer_relevancy": 0.8229}
    )
    assert round(only_relevance * 100, 2) == 82.29
    # basic_search row: its component values were not found in any stored source; this row
    # (nothing faithful or retrieved, relevance 83.27) is one the seed formula maps to 24.98.
    basic_search = composite.combine(
        {"faithfulness": 0.0, "context_precision": 0.0, "context_recall": 0.0, "answer_relevance": 0.8327}
    )
    assert round(basic_search * 100, 2) == 24.98
    assert math.isnan(composite.combine({"faithfulness": nan, "answer_relevance": nan}))
    with pytest.raises(ValueError):
        composite.combine({"faithfulness": 93.0})


def test_ragas_score_metric_reuses_components_and_skips_nan():
    sample = {"response": f"{S1} {S2}", "reference": S1, "retrieved_contexts": [CHUNK]}
    relations = [(CHUNK, S1, "entailment", 0.95), (CHUNK, S2, "entailment", 0.95)]
    result = RagasScore().score(sample, ctx(relations))
    # no question → answer relevance NaN (no LLM needed); precision 1, recall 1, faithfulness 1
    assert result.components["faithfulness"] == 1.0 and math.isnan(result.components["answer_relevance"])
    assert result.score == 1.0 and "answer_relevance" in result.reason


# --------------------------------------------------------------------------------------------
# Answer classification


def test_dont_know_matches_whole_words_only():
    assert uncertainty_match("I don't know who wrote it.") == "i don't know"
    assert uncertainty_match("I DON\u2019T   KNOW.") is not None
    assert uncertainty_match("The author is unknown.") is None
    assert uncertainty_match("I don't knowingly mislead.") is None
    assert uncertainty_match("There is no information about this.") == "no information"


def test_answer_classification_labels_and_counts():
    context = ctx(
        PARIS_RELATIONS
        + [
            (REFERENCE, "The author is unknown.", "contradiction", 0.9),
            ("The author is unknown.", PARIS, "neutral", 0.9),
        ]
    )
    metric = AnswerClassification()
    samples = [
        {"response": "I do not know.", "reference": REFERENCE},
        {"response": PARIS, "reference": REFERENCE},  # precision 1, recall 0.5 → F1 2/3 ≥ 0.5
        {"response": "The author is unknown.", "reference": REFERENCE},
    ]
    context.nli.backend._by_text[(PARIS, PARIS)] = NLIJudgement("entailment", 0.97)
    results = [metric.score(s, context) for s in samples]
    assert [r.label for r in results] == ["DON'T KNOW", "CORRECT", "WRONG"]
    assert AnswerClassification.counts(results) == {"CORRECT": 1, "WRONG": 1, "DON'T KNOW": 1, "UNSCORED": 0}


# --------------------------------------------------------------------------------------------
# Samples, shared atoms, batch evaluation


def test_sample_aliases():
    sample = RagSample.model_validate(
        {
            "query": "q",
            "actual_output": "a",
            "expected_output": "r",
            "retrieval_context": '["c1", "c2"]',
        }
    )
    assert (sample.question, sample.response, sample.reference, sample.retrieved_contexts) == (
        "q",
        "a",
        "r",
        ["c1", "c2"],
    )
    other = RagSample.model_validate(
        {"user_input": "q", "answer": "a", "ground_truths": ["x", "y"], "contexts": [{"text": "c"}, "d"]}
    )
    assert other.reference == "x y" and other.retrieved_contexts == ["c", "d"]
    with pytest.raises(ValueError):
        RagSample.model_validate({"response": "a", "contexts": [{"title": "no text"}]})


def test_atoms_computed_once_and_cached_across_runs(tmp_path):
    sample = {"question": "Paris?", "response": RESPONSE, "reference": REFERENCE, "retrieved_contexts": [REFERENCE]}
    context = ctx(PARIS_RELATIONS)
    result = evaluate(
        [sample],
        [Faithfulness(), FactualCorrectness(), FactualAccuracy(), ContextRecall(), AnswerClassification()],
        context=context,
        progress=False,
    )
    assert not result.errors
    assert context.atoms.computed == 2  # the response and the reference, once each
    cache = ModelCache(tmp_path / "calls.sqlite")
    AtomStore(SentenceAtomizer(), cache).claims(RESPONSE)
    again = AtomStore(SentenceAtomizer(), ModelCache(tmp_path / "calls.sqlite"))
    assert again.claims(RESPONSE) == [PARIS, EIFFEL_1500] and again.computed == 0


def test_a_bare_short_answer_is_read_with_its_question():
    atomizer = SentenceAtomizer()
    assert [a.text for a in atomizer.atomize("1.5 million", question="How many people live there?")] == [
        "How many people live there? 1.5 million"
    ]
    assert [a.text for a in atomizer.atomize("1.5 million")] == ["1.5 million"]
    assert [a.text for a in atomizer.atomize(RESPONSE, question="Paris?")] == [PARIS, EIFFEL_1500]
    store = AtomStore(atomizer)
    assert store.claims("Yes", question="Is Paris in France?") == ["Is Paris in France? Yes"]
    assert store.claims("Yes", question="Is Rome in Spain?") == ["Is Rome in Spain? Yes"]
    assert store.computed == 2


def test_evaluate_records_errors_and_exports(tmp_path):
    samples = [
        {"question": "Paris?", "response": RESPONSE, "reference": REFERENCE, "retrieved_contexts": [REFERENCE]},
        {"response": "x", "contexts": [{"title": "no text"}]},  # unreadable sample
    ]
    metrics = [Faithfulness(), FactualCorrectness(), BertScoreF1(model_path=str(tmp_path / "missing-model"))]
    context = ctx(PARIS_RELATIONS, contradictions="any")  # as in test_factual_correctness_paris_eiffel_is_half
    result = evaluate(samples, metrics, context=context, progress=False, output=tmp_path / "out.jsonl")
    frame = result.to_dataframe()
    assert list(frame["index"]) == [0, 1]
    assert frame.loc[0, "factual_correctness"] == 0.5
    assert math.isnan(frame.loc[1, "faithfulness"]) and "invalid sample" in frame.loc[1, "errors"]
    assert "bert_score" in result.samples[0].errors  # the failing metric, recorded; others kept
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["metrics"]["faithfulness"]["score"] == 0.0  # (1 − 1) / 2
    assert lines[0]["metrics"]["faithfulness"]["details"][1]["verdict"] == "CONTRADICTORY"
    assert lines[1]["metrics"]["faithfulness"]["score"] is None
    summary = result.summary()
    assert summary["factual_correctness"]["mean"] == 0.5 and summary["num_errors"] == 2


def test_ragas_cli_refuses_an_impossible_context_prior(capsys):
    from fact_reasoner.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["ragas", "--input-file", "unused.jsonl", "--context-prior", "1.5"])
    assert stop.value.code == 2
    assert "argument --context-prior: must be < 1, got 1.5" in capsys.readouterr().err


@pytest.mark.parametrize("missing", ["pysbd", "xllamacpp"])
def test_auto_atomizer_falls_back_to_sentences_when_the_llm_packages_are_missing(monkeypatch, missing):
    """``atomizer="auto"`` (the integrations' default) says it falls back to one claim per sentence
    when the language model cannot be built. It fell back only if *building* raised, and building
    never does (the local model starts on first use): with ``pip install .[deepeval]`` the score
    failed on ``No module named 'pysbd'``, with pysbd present on ``the local backend needs
    xllamacpp``. The packages are checked as the preflight checks them."""
    import sys

    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed: find_spec and import fail
    context = MetricContext(
        PipelineConfig(),
        atomizer="auto",
        nli=fixed_nli([(CHUNK, "Marie Curie was born in Warsaw.", "entailment", 0.9)]),
    )
    assert context.llm_atomizer_missing() is not None and repr(missing) in context.llm_atomizer_missing()
    result = Faithfulness().score(
        RagSample(response="Marie Curie was born in Warsaw.", retrieved_contexts=[CHUNK]), context
    )
    assert context.atomizer_name == "sentence:sentence/v2"
    assert result.score == 1.0 and result.details[0].claim == "Marie Curie was born in Warsaw."
    (note,) = context.notes
    assert note.startswith("atomizer auto: one claim per sentence") and repr(missing) in note


def test_auto_atomizer_is_the_llm_one_when_its_packages_are_there():
    """With the llm extra installed, ``auto`` is the language model's atomizer (not loaded yet)."""
    pytest.importorskip("pysbd")
    pytest.importorskip("xllamacpp")
    context = MetricContext(PipelineConfig(), atomizer="auto")
    assert context.llm_atomizer_missing() is None
    assert context.atomizer_name.startswith("Atomizer:") and context.notes == []


CHILE = "Between the Lapageria and Satureja genus, which is the national flower of Chile?"


@pytest.mark.parametrize(
    ("question", "response"),
    [
        (CHILE, "Lapageria"),
        (CHILE, "The Lapageria genus."),
        (CHILE, "Satureja"),  # a wrong choice is an answer too: the judge says whether it is right
        ("Which of Paris, Rome and Madrid is the capital of Spain?", "Madrid."),
        ("Which is taller, the Eiffel Tower or the Tokyo Tower?", "The Tokyo Tower"),
        ("Who was born first, Einstein or Bohr?", "Einstein"),
        ("Paris vs Rome: which city is older?", "Rome"),
    ],
)
def test_picking_one_of_the_options_a_question_offers_is_an_answer(question, response):
    """``fact-reasoner ragas`` refused "Lapageria" as "only repeats words of the question":
    only questions with "or" counted as choices."""
    assert non_answer(response, question) is None


@pytest.mark.parametrize(
    ("question", "response"),
    [
        (CHILE, CHILE),  # the question itself
        (CHILE, "The national flower of Chile."),  # no option
        (CHILE, "Lapageria and Satureja."),  # every option: no choice made
        ("Which of Paris, Rome and Madrid is the capital of Spain?", "The capital of Spain?"),
        ("Who wrote Hamlet?", "Hamlet?"),  # no choice offered: an echo, as before
        ("Who was born first, Einstein or Bohr?", "Who was born first?"),  # "or" once exempted any echo
    ],
)
def test_a_bare_echo_of_a_question_is_still_no_answer(question, response):
    assert non_answer(response, question).startswith("the response only repeats")


def test_a_choice_made_is_scored_by_the_ragas_command(tmp_path):
    """The issue's sample, through the command: a row with a score, not ``not_answerable``."""
    from fact_reasoner.cli import main

    context = "Lapageria rosea, the Chilean bellflower, is the national flower of Chile."
    source = tmp_path / "chile.jsonl"
    source.write_text(json.dumps({"question": CHILE, "response": "Lapageria", "retrieved_contexts": [context]}) + "\n")
    out = tmp_path / "out.jsonl"
    argv = ["ragas", "--input-file", str(source), "--metrics", "faithfulness", "--atomizer", "sentence"]
    assert main([*argv, "--nli", "align", "--output", str(out), "--quiet"]) == 0
    row = json.loads(out.read_text())
    assert "not_answerable" not in row and row["metrics"]["faithfulness"]["score"] is not None


# -- faithfulness's mode: GRANULAR (per claim) or HOLISTIC (the response as a whole) -------------

EIFFEL = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "Construction of the Eiffel Tower began in 1887 and was completed in 1889.",
]
EIFFEL_WHOLE = "\n\n".join(EIFFEL)  # what a holistic judgement reads as its one premise
IN_PARIS, GOLD = "The Eiffel Tower is in Paris.", "The Eiffel Tower is painted gold."
SPEC = {  # the specification's three examples (DESIGN.md §7): response, relations the judge gives
    "three supported claims": (
        f"{IN_PARIS} It is made of wrought iron. It was completed in 1889.",
        [
            (EIFFEL[0], IN_PARIS, "entailment", 0.9),
            (EIFFEL[0], "It is made of wrought iron.", "entailment", 0.9),
            (EIFFEL[1], "It was completed in 1889.", "entailment", 0.9),
            (EIFFEL_WHOLE, f"{IN_PARIS} It is made of wrought iron. It was completed in 1889.", "entailment", 0.9),
        ],
    ),
    "one supported, one without evidence": (f"{IN_PARIS} {GOLD}", [(EIFFEL[0], IN_PARIS, "entailment", 0.9)]),
    "one contradicted": (
        "The Eiffel Tower is in Berlin.",
        [
            (EIFFEL[0], "The Eiffel Tower is in Berlin.", "contradiction", 0.9),
            (EIFFEL_WHOLE, "The Eiffel Tower is in Berlin.", "contradiction", 0.9),
        ],
    ),
}


@pytest.mark.parametrize(
    ("example", "granular", "granular_strict", "holistic", "verdict"),
    [
        ("three supported claims", 1.0, 1.0, 1.0, "FULLY_SUPPORTED"),
        ("one supported, one without evidence", 0.5, 0.0, 0.0, "NO_EVIDENCE"),
        ("one contradicted", 0.0, 0.0, 0.0, "CONTRADICTORY"),
    ],
)
def test_the_specifications_examples_in_both_modes(example, granular, granular_strict, holistic, verdict):
    """GRANULAR scores the claims (the specification's numbers); HOLISTIC judges the response as
    a whole against the contexts together: one verdict, one weight — half supported is not
    supported."""
    response, relations = SPEC[example]
    context = ctx(relations)
    sample = RagSample(response=response, retrieved_contexts=EIFFEL)
    assert Faithfulness().score(sample, context).score == granular
    assert Faithfulness(strict_mode=True).score(sample, context).score == granular_strict
    whole = Faithfulness(mode="holistic").score(sample, context)
    assert (whole.score, whole.verdict, whole.verdict_counts, whole.total_claims) == (
        holistic,
        verdict,
        {verdict: 1},
        1,
    )
    assert whole.mode == "HOLISTIC" and [d.claim for d in whole.details] == [response]
    assert Faithfulness(mode="HOLISTIC", weighted=False).score(sample, context).score == float(
        verdict == "FULLY_SUPPORTED"
    )


def test_the_holistic_verdict_is_the_conjunction_of_the_pieces_read():
    from fact_reasoner.metrics.faithfulness import Verdict, holistic_verdict

    full, part, none, contra, unjudged = (
        Verdict.FULLY_SUPPORTED,
        Verdict.PARTIALLY_SUPPORTED,
        Verdict.NO_EVIDENCE,
        Verdict.CONTRADICTORY,
        Verdict.UNJUDGED,
    )
    assert holistic_verdict([full, full]) == full
    assert holistic_verdict([full, part]) == part
    assert holistic_verdict([full, none]) == none
    assert holistic_verdict([full, contra, none]) == contra
    assert holistic_verdict([contra, unjudged]) == unjudged


def test_a_response_longer_than_the_judge_reads_is_read_in_pieces_never_cut():
    """The shipped cross-encoder reads at most 64 tokens of a hypothesis (half its window): a
    longer response would be cut short. Holistic reads it in pieces of whole sentences."""
    from fact_reasoner.metrics.faithfulness import reading_pieces
    from fact_reasoner.nli.base import reads_whole
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from tests.helpers import require_extra

    require_extra("embeddings")
    judge = CrossEncoderNLI()
    sentences = [f"The tower number {i} in the old city was built of grey stone in the year 18{i}0." for i in range(8)]
    long = " ".join(sentences)
    assert not reads_whole(judge, long) and reads_whole(judge, sentences[0])
    pieces = reading_pieces(long, judge)
    assert len(pieces) > 1 and all(reads_whole(judge, piece) for piece in pieces)
    assert " ".join(pieces).split() == long.split()  # every word read once, in order
    assert reading_pieces(sentences[0], judge) == [sentences[0]]


def test_the_mode_is_left_out_of_the_metrics_key_at_its_default():
    """Outputs written before the mode existed carry the key without it: they still resume."""
    before = "faithfulness(weighted=True, strict_mode=False, verdict_scores=None, no_claims_score=nan, strong_entailment=0.75)"
    assert Faithfulness().key == Faithfulness(mode="granular").key == before
    assert Faithfulness(mode="HOLISTIC").key.endswith("mode='HOLISTIC')")
    with pytest.raises(ValueError, match="faithfulness mode 'whole': use GRANULAR or HOLISTIC"):
        Faithfulness(mode="whole")
    assert Faithfulness(mode="HOLISTIC").needs() == frozenset({"nli"})  # no atomizer

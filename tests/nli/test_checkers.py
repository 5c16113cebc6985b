"""The published checkers as judges (``--nli minicheck|factcg|hhem``, :mod:`fact_reasoner.nli.checkers`),
held to their authors' own code: tiny random-weight models of each architecture
(``tests/nli/fixtures/checkers/``), and the chunks and supports that MiniCheck's, FactCG's and
HHEM's reference code computed on them (``expected.json``; how it was made, and from which
commits: ``scripts/checker_fixtures.py`` and the file's ``reference`` field)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import require_extra

require_extra("checkers")

from fact_reasoner.errors import SetupError
from fact_reasoner.nli import checker_text, checkers
from fact_reasoner.nli.checkers import HHEMNLI, FactCGNLI, MiniCheckNLI, resolve_model_folder, two_way
from fact_reasoner.nli.factory import make_model_nli
from fact_reasoner.schema import RelationType
from fact_reasoner.settings.config import PipelineConfig

FIXTURES = Path(__file__).parent / "fixtures" / "checkers"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
PAIRS = [(p["doc"], p["claim"]) for p in json.loads((FIXTURES / "pairs.json").read_text())]
JUDGES = {
    "minicheck-roberta": MiniCheckNLI,
    "minicheck-deberta": MiniCheckNLI,
    "minicheck-t5": MiniCheckNLI,
    "factcg-deberta": FactCGNLI,
    "hhem": HHEMNLI,
}
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def judges() -> dict[str, checkers._CheckerNLI]:
    return {name: cls(FIXTURES / name, threads=1) for name, cls in JUDGES.items()}


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_support_equals_the_reference_code(judges, name: str) -> None:
    ours = judges[name].pair_support(PAIRS)
    reference = EXPECTED["support"][name]
    assert max(abs(a - b) for a, b in zip(ours, reference)) <= TOLERANCE
    assert len(ours) == len(reference) == len(PAIRS)


@pytest.mark.parametrize("name", sorted(EXPECTED["chunks"]))
def test_chunks_and_each_chunks_support_equal_the_reference_code(judges, name: str) -> None:
    judge = judges[name]
    for (premise, claim), chunks, supports in zip(PAIRS, EXPECTED["chunks"][name], EXPECTED["chunk_support"][name]):
        assert judge.chunks(premise, claim) == chunks
        ours = judge.support([(chunk, claim) for chunk in chunks])
        assert max(abs(a - b) for a, b in zip(ours, supports)) <= TOLERANCE


def test_the_pairs_exercise_every_chunking_rule() -> None:
    """Several chunks per checker, and FactCG's empty first chunk (a first sentence longer than
    550 tokens) — else the equalities above would not test the chunking."""
    chunks = EXPECTED["chunks"]
    for name in ("minicheck-roberta", "minicheck-deberta", "minicheck-t5", "factcg-deberta"):
        assert max(len(c) for c in chunks[name]) >= 2, name
    assert any(c[0] == "" for c in chunks["factcg-deberta"])
    assert any("\n" in piece for c in chunks["minicheck-roberta"] for piece in c)  # line breaks kept


def test_a_wrong_template_would_show(judges, monkeypatch) -> None:
    """The tolerance is far below what a reading unlike the authors' changes: FactCG without its
    instruction template, MiniCheck without the separator token, HHEM with another prompt."""
    monkeypatch.setattr(checkers, "FACTCG_TEMPLATE", "{text_a} {text_b}")
    factcg = judges["factcg-deberta"].pair_support(PAIRS)
    assert max(abs(a - b) for a, b in zip(factcg, EXPECTED["support"]["factcg-deberta"])) > 3 * TOLERANCE

    roberta = judges["minicheck-roberta"]
    monkeypatch.setattr(roberta, "input_text", lambda chunk, claim: f"{chunk} {claim}")
    plain = roberta.pair_support(PAIRS)
    assert max(abs(a - b) for a, b in zip(plain, EXPECTED["support"]["minicheck-roberta"])) > 3 * TOLERANCE

    hhem = judges["hhem"]
    monkeypatch.setattr(hhem, "prompt", "Premise: {text1}\nHypothesis: {text2}")
    other = hhem.pair_support(PAIRS)
    assert max(abs(a - b) for a, b in zip(other, EXPECTED["support"]["hhem"])) > 3 * TOLERANCE


def test_a_two_way_checker_says_entailment_or_not_never_contradiction(judges) -> None:
    assert two_way(0.8) == {"entailment": 0.8, "neutral": pytest.approx(0.2), "contradiction": 0.0}
    assert two_way(1.5)["entailment"] == 1.0 and two_way(-0.1)["neutral"] == 1.0
    verdicts = judges["hhem"].judge(PAIRS[:3])
    for verdict, support in zip(verdicts, EXPECTED["support"]["hhem"]):
        assert verdict.probabilities["contradiction"] == 0.0
        assert verdict.probabilities["entailment"] == pytest.approx(support, abs=TOLERANCE)
        expected = RelationType.ENTAILMENT if support >= 0.5 else RelationType.NEUTRAL
        assert verdict.label is expected


def test_identity_names_the_judge_its_weights_and_reading(judges) -> None:
    minicheck = judges["minicheck-t5"]
    assert minicheck.identity.startswith("minicheck:minicheck-t5@")
    assert ":chunk=500words:max_length=2048:checker/v1" in minicheck.identity
    assert judges["minicheck-roberta"].identity.count(":chunk=400tokens:max_length=512") == 1
    # HHEM's identity also fingerprints the foundation its tokenizer and configuration come from
    assert "+hhem-foundation@" in judges["hhem"].identity
    assert minicheck.description.startswith("minicheck minicheck-t5@") and minicheck.description.endswith("(t5)")


def test_other_weights_other_identity(tmp_path) -> None:
    copy = tmp_path / "minicheck-t5"
    shutil.copytree(FIXTURES / "minicheck-t5", copy)
    same = MiniCheckNLI(copy, threads=1).identity
    assert same == MiniCheckNLI(FIXTURES / "minicheck-t5", threads=1).identity  # by bytes, not path
    config = json.loads((copy / "config.json").read_text())
    config["layer_norm_epsilon"] = 1e-5
    (copy / "config.json").write_text(json.dumps(config))
    assert MiniCheckNLI(copy, threads=1).identity != same


def test_hhems_identity_reads_its_foundations_tokenizer_not_its_weights(tmp_path) -> None:
    """HHEM takes only the foundation's configuration and tokenizer: weights beside them (the
    real flan-t5-base has about 1 GB) are not hashed, a changed tokenizer is."""
    shutil.copytree(FIXTURES / "hhem", tmp_path / "hhem")
    foundation = tmp_path / "hhem-foundation"
    shutil.copytree(FIXTURES / "hhem-foundation", foundation)
    before = HHEMNLI(tmp_path / "hhem", threads=1).identity
    (foundation / "model.safetensors").write_bytes(b"never read")
    assert HHEMNLI(tmp_path / "hhem", threads=1).identity == before
    special = json.loads((foundation / "special_tokens_map.json").read_text())
    (foundation / "special_tokens_map.json").write_text(json.dumps(special, indent=4))
    assert HHEMNLI(tmp_path / "hhem", threads=1).identity != before


def test_punkt_sentences_and_word_counts_are_nltks() -> None:
    text = "Dr. Smith moved to the U.S. in 1990. He worked in New York."
    assert checker_text.punkt_sentences(text) == ["Dr. Smith moved to the U.S. in 1990.", "He worked in New York."]
    assert checker_text.nltk_word_count("Don't stop, Dr. Smith.") == 7  # Do n't stop , Dr. Smith .
    assert checker_text.minicheck_sentences("A b. C d.\n\nE f.") == ["A b.", "C d.", "\n", "\n", "E f."]


def test_minicheck_chunks_pack_greedily_and_drop_empty_ones() -> None:
    words = checker_text.word_count
    # a first sentence longer than the chunk: its empty predecessor is dropped
    assert checker_text.minicheck_chunks("One two three four. Five.", 3, words) == ["One two three four.", "Five."]
    assert checker_text.minicheck_chunks("The cat sat. The dog ran. It rained.", 6, words) == [
        "The cat sat. The dog ran.",
        "It rained.",
    ]
    assert checker_text.minicheck_chunks("The cat sat.\nThe dog ran.", 10, words) == ["The cat sat.\nThe dog ran."]


def test_factcg_chunks_keep_the_empty_first_chunk_its_code_makes() -> None:
    assert checker_text.factcg_chunks("One two three four. Five.", max_tokens=3) == ["", "One two three four.", "Five."]
    assert checker_text.factcg_chunks("The cat sat. The dog ran. It rained.", max_tokens=8) == [
        "The cat sat.\nThe dog ran.",
        "It rained.",
    ]


@pytest.mark.parametrize(
    ("judge", "folder", "expected"),
    [
        ("minicheck", "hhem", "expected MiniCheck-RoBERTa-Large, MiniCheck-DeBERTa-v3-Large"),
        ("factcg", "minicheck-roberta", "expected FactCG-DeBERTa-v3-Large"),
        ("hhem", "minicheck-t5", "expected Vectara's HHEM-2.1-Open"),
    ],
)
def test_a_folder_of_the_wrong_architecture_is_refused_by_name(judge: str, folder: str, expected: str) -> None:
    with pytest.raises(SetupError) as error:
        {"minicheck": MiniCheckNLI, "factcg": FactCGNLI, "hhem": HHEMNLI}[judge](FIXTURES / folder)
    message = str(error.value)
    assert str(FIXTURES / folder) in message and expected in message and "\n" not in message


def test_a_missing_model_says_how_to_get_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(SetupError, match="needs --nli-model"):
        MiniCheckNLI(None)
    with pytest.raises(
        SetupError, match=r"'lytang/MiniCheck-Flan-T5-Large' is no folder.*hf download lytang/MiniCheck"
    ):
        MiniCheckNLI("lytang/MiniCheck-Flan-T5-Large")
    with pytest.raises(SetupError, match="has no config.json"):
        FactCGNLI(tmp_path)


def test_a_hub_id_in_the_local_cache_is_its_snapshot_named_by_the_id(tmp_path, monkeypatch) -> None:
    """Nothing is downloaded: the id is looked up in the Hugging Face cache only (its layout:
    ``models--org--name/snapshots/<commit>/`` with ``refs/main``)."""
    hub = tmp_path / "hub"
    repo = hub / "models--lytang--MiniCheck-Flan-T5-Large"
    commit = "0" * 40
    shutil.copytree(FIXTURES / "minicheck-t5", repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(hub))
    folder, name = resolve_model_folder("lytang/MiniCheck-Flan-T5-Large", "minicheck")
    assert folder == repo / "snapshots" / commit and name == "lytang/MiniCheck-Flan-T5-Large"
    judge = MiniCheckNLI("lytang/MiniCheck-Flan-T5-Large", threads=1)
    assert judge.identity.startswith("minicheck:lytang/MiniCheck-Flan-T5-Large@")
    local = MiniCheckNLI(FIXTURES / "minicheck-t5", threads=1)
    assert judge.identity.split("@")[1] == local.identity.split("@")[1]  # the same bytes


def test_hhem_refuses_weights_that_do_not_fit_its_foundation(tmp_path) -> None:
    shutil.copytree(FIXTURES / "hhem", tmp_path / "hhem")
    shutil.copytree(FIXTURES / "hhem-foundation", tmp_path / "hhem-foundation")
    foundation = json.loads((tmp_path / "hhem-foundation" / "config.json").read_text())
    for change, problem in (({"num_layers": 3}, "missing"), ({"num_layers": 2, "d_ff": 64}, "size mismatch")):
        (tmp_path / "hhem-foundation" / "config.json").write_text(json.dumps(foundation | change))
        with pytest.raises(SetupError, match=f"does not fit a T5 token classifier over its foundation.*{problem}"):
            HHEMNLI(tmp_path / "hhem")


@pytest.mark.parametrize("name", ["minicheck", "factcg", "hhem"])
def test_built_by_name_from_the_configuration(name: str, tmp_path) -> None:
    folder = {"minicheck": "minicheck-deberta", "factcg": "factcg-deberta", "hhem": "hhem"}[name]
    config = PipelineConfig(nli=name, nli_model=str(FIXTURES / folder), cache_dir=tmp_path, threads=1)
    backend = make_model_nli(config, lambda: pytest.fail("a checker needs no language model"))
    assert type(backend) is JUDGES[folder]
    assert backend.judge(PAIRS[:1])[0].probabilities["entailment"] == pytest.approx(
        EXPECTED["support"][folder][0], abs=TOLERANCE
    )


def test_served_its_info_names_the_weights_and_concurrent_requests_may_share_a_batch(tmp_path) -> None:
    """``fact-reasoner serve --nli hhem``: ``/v1/info`` says which weights judge (the fingerprint of
    HHEM's and its foundation's files), and the judge runs one item at a time, so the server may
    merge concurrent requests' pairs without changing any verdict."""
    require_extra("serve")
    from fact_reasoner.server.batching import batch_invariant
    from fact_reasoner.server.service import AssessmentService

    config = PipelineConfig(nli="hhem", nli_model=str(FIXTURES / "hhem"), use_cache=False, cache_dir=tmp_path)
    service = AssessmentService(config)
    try:
        info = service.info()
        assert info["judge"].startswith("hhem hhem@") and "+hhem-foundation@" in info["judge"]
        assert info["judge_identity"].startswith("hhem:hhem@") and info["judge_identity"].endswith(":checker/v1")
        assert batch_invariant(service.batcher.backend)
    finally:
        service.close()


@pytest.mark.parametrize("module", ["torch", "transformers", "nltk", "punkt"])
def test_a_missing_package_names_the_checkers_extra_before_any_record(module: str, monkeypatch) -> None:
    import importlib.util

    from fact_reasoner.errors import StageUnavailable
    from fact_reasoner.stages import Stages

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else find_spec(name, *a))
    config = PipelineConfig(nli="factcg", nli_model=str(FIXTURES / "factcg-deberta"), use_cache=False)
    with pytest.raises(StageUnavailable, match=rf"--nli factcg needs the Python package '{module}'.*\[checkers\]"):
        Stages(config).preflight(judge=True)


def test_built_directly_without_a_package_is_a_setup_error_naming_it(monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "punkt", None)  # an import of it raises ImportError
    with pytest.raises(SetupError, match=r"--nli hhem needs punkt \(the checkers extra.*\[checkers\]"):
        HHEMNLI(FIXTURES / "hhem")


def test_a_checker_in_a_panel_keeps_its_own_weights_and_verdicts(tmp_path) -> None:
    """``--nli cross-encoder,hhem=PATH``: the checker is a member like any other, built from its
    own ``NAME=MODEL``; its verdicts in the panel are the ones it gives alone."""
    from fact_reasoner.nli.panel import PanelNLI

    config = PipelineConfig(nli=f"cross-encoder,hhem={FIXTURES / 'hhem'}", cache_dir=tmp_path, threads=1)
    panel = make_model_nli(config, lambda: pytest.fail("no language model"))
    assert isinstance(panel, PanelNLI)
    verdicts = panel.judge(PAIRS[:3])
    alone = HHEMNLI(FIXTURES / "hhem", threads=1).judge(PAIRS[:3])
    for verdict, own in zip(verdicts, alone):
        (name,) = [n for n in verdict.judges if n.startswith("hhem")]
        assert verdict.judges[name] == own and own.probabilities["contradiction"] == 0.0


# -- refusals at start-up (issue #60 item 1) ----------------------------------------------------


EXAMPLE = Path(__file__).parents[2] / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"
#: the CPU build of torch, from PyTorch's own index: a bare `torch` requirement pulls CUDA (~3 GB)
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _run(argv: list[str], capsys, tmp_path: Path) -> tuple[int, str]:
    from fact_reasoner.cli import main

    status = main([*argv, "--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / "out"), "--no-cache"])
    return status, capsys.readouterr().err


def _refused_at_start_up(status: int, err: str, tmp_path: Path) -> str:
    """One line, exit 2, before any progress bar, output folder or "stopped" line; the line."""
    assert status == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "record/s" not in err and "stopped:" not in err, err  # no bar, no "rerun to resume"
    assert not (tmp_path / "out").exists()
    return err.strip()


def test_without_torch_the_refusal_names_the_cpu_build_the_checkout_and_the_weights(tmp_path, monkeypatch, capsys):
    """The install that works, in order: the CPU build of torch first (a bare `torch` pulls the
    CUDA build), then the extra as it installs from this project's checkout (the distribution is
    on no package index; `fact-reasoner`, which is, is another project), then the weights,
    downloaded once with the command that does it."""
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    line = _refused_at_start_up(*_run(["--nli", "minicheck"], capsys, tmp_path), tmp_path)
    assert line.startswith("error: --nli minicheck needs the Python package 'torch'"), line
    steps = [CPU_TORCH, "pip install -e '.[checkers]'", "hf download lytang/MiniCheck-Flan-T5-Large"]
    assert all(step in line for step in steps), line
    assert [line.index(step) for step in steps] == sorted(line.index(step) for step in steps), line
    assert "fact-reasoner-offline[" not in line and "fact-reasoner[" not in line, line


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (None, "--nli minicheck needs --nli-model PATH_OR_ID"),
        ("{tmp}/not-a-model", "has no config.json"),
        ("{tmp}/a-file.txt", "is a file; --nli-model takes a model folder or a hub id"),
        (
            "nobody/no-such-checker",
            "'nobody/no-such-checker' is no folder, nor a model in the local Hugging Face cache",
        ),
        (str(FIXTURES / "hhem"), "is a 'HHEMv2' model; expected MiniCheck"),
    ],
)
def test_a_model_that_is_missing_or_not_one_is_refused_before_any_record(model, said, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    (tmp_path / "not-a-model").mkdir()
    (tmp_path / "a-file.txt").write_text("x")
    flags = ["--nli", "minicheck"] + ([] if model is None else ["--nli-model", model.format(tmp=tmp_path)])
    line = _refused_at_start_up(*_run(flags, capsys, tmp_path), tmp_path)
    assert said in line and "hf download" in line, line


def test_a_panel_members_own_model_is_checked_at_start_up_too(tmp_path, capsys):
    line = _refused_at_start_up(
        *_run(["--nli", f"cross-encoder,factcg={tmp_path / 'nothing-here'}"], capsys, tmp_path), tmp_path
    )
    assert "--nli factcg" in line and "nothing-here" in line, line


@pytest.mark.parametrize("judge", ["cross-encoder", "align", "cascade"])
@pytest.mark.parametrize(
    ("model", "said"), [("{tmp}/not-a-model", "is no model folder"), ("{tmp}/absent", "no such folder")]
)
def test_the_shipped_judges_refuse_a_model_folder_that_is_not_one_at_start_up(judge, model, said, tmp_path, capsys):
    """`--nli-model` of the cross-encoder (and so of the cascade) and of `align` names a folder:
    one that is none, or that holds no model, was a failure of every record (a tokenizer's
    five-line ValueError, a FileNotFoundError); it is refused at start-up like a checker's."""
    (tmp_path / "not-a-model").mkdir()
    flags = ["--nli", judge, "--nli-model", model.format(tmp=tmp_path)]
    line = _refused_at_start_up(*_run(flags, capsys, tmp_path), tmp_path)
    assert line.startswith(f"error: --nli {judge}: ") and said in line, line

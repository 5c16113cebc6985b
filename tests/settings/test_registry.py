"""One registry for every kind of backend (fact_reasoner.settings.registry): names, factories, extras,
options, entry points of installed packages, and the messages and flags derived from it."""

from __future__ import annotations

import doctest
import inspect
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import fact_reasoner.settings.config
import fact_reasoner.settings.registry
from fact_reasoner.cli import build_assess_parser
from fact_reasoner.errors import StageUnavailable
from fact_reasoner.inference import ENGINES, make_engine
from fact_reasoner.llm import LLM_BACKENDS
from fact_reasoner.nli.factory import NLI_BACKENDS
from fact_reasoner.retrieval import RETRIEVERS, RetrievalError, make_retriever
from fact_reasoner.settings.cli_options import config_flags, config_from_args
from fact_reasoner.settings.config import PipelineConfig
from fact_reasoner.settings.registry import CPU_TORCH, KINDS, Extra, Registry, UnknownName, registry
from fact_reasoner.stages import Stages
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
MISSING_MODULE = "fact_reasoner_test_no_such_module"


def test_the_module_docstring_example_runs():
    failures, tried = doctest.testmod(fact_reasoner.settings.registry, verbose=False)
    assert tried > 0 and failures == 0


def test_every_kind_is_a_registry_with_described_builtins():
    for kind in KINDS:
        kind_registry = registry(kind)
        assert isinstance(kind_registry, Registry) and kind_registry.kind == kind
        assert kind_registry.available(), kind
        assert all(kind_registry.descriptions().values()), f"{kind}: a built-in without a description"
    with pytest.raises(UnknownName, match="unknown kind 'pipelinez'; choose from: engines"):
        registry("pipelinez")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: make_engine("nope"), "unknown engine 'nope'; choose from: native, pgmpy, brute-force, merlin"),
        (lambda: PipelineConfig(engine="nope"), "unknown engine 'nope'; choose from: native"),
        # the config words it as pydantic did when these were fixed choices
        (
            lambda: PipelineConfig(nli="nope"),
            "Input should be 'auto', 'llm', 'align', 'cross-encoder', 'specialist', 'cascade', 'precomputed', 'minicheck', 'factcg' or 'hhem'",
        ),
        (lambda: PipelineConfig(backend="nope"), "Input should be 'local' or 'openai'"),
        (lambda: NLI_BACKENDS.make("nope"), "unknown NLI backend 'nope'; choose from: auto, llm, align, cross-encoder"),
        (lambda: LLM_BACKENDS.make("nope"), "unknown LLM backend 'nope'; choose from: local, openai"),
        (lambda: PipelineConfig(executor="nope"), "Input should be 'local' or 'ray'"),
        (lambda: PipelineConfig(checkworthy="nope"), "Input should be 'rules' or 'llm'"),
        (lambda: registry("executors").make("nope", None), "unknown executor 'nope'; choose from: local, ray"),
        (
            lambda: registry("checkworthy").make("nope", None),
            "unknown checkworthy classifier 'nope'; choose from: rules, llm",
        ),
        (lambda: registry("embedders").make("nope", None), "unknown embedder 'nope'; choose from: onnx, torch"),
        (lambda: registry("commands").entry("nope"), "unknown command 'nope'; choose from: assess, correct"),
    ],
)
def test_unknown_names_are_errors_naming_the_choices(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_unknown_metric_and_service_type_name_the_choices(tmp_path):
    pytest.importorskip("pandas")
    from fact_reasoner.metrics import make_metric

    with pytest.raises(UnknownName, match="unknown metric 'nope'; choose from: .*faithfulness"):
        make_metric("nope")
    assert type(make_metric("answer-relevancy")).__name__ == "AnswerRelevance"  # an alias
    with pytest.raises(RetrievalError, match="unknown service type 'nope'; choose from: supplied, chroma") as raised:
        make_retriever(PipelineConfig(service_type="nope", cache_dir=tmp_path))
    assert isinstance(raised.value, UnknownName)  # the one error every kind raises for a name it lacks


@pytest.fixture
def toy_nli():
    """An NLI backend registered for one test, whose extra is not installed."""
    NLI_BACKENDS.register(
        "toy-nli",
        lambda models, llm_factory: None,
        description="a backend for the registry tests",
        extras=[Extra(MISSING_MODULE, "toy")],
    )
    yield "toy-nli"
    NLI_BACKENDS.unregister("toy-nli")


def test_a_missing_extra_is_reported_by_preflight_from_the_registry(toy_nli, tmp_path):
    config = PipelineConfig(nli=toy_nli, cache_dir=tmp_path)
    assert [e.module for e in NLI_BACKENDS.missing_extras(toy_nli)] == [MISSING_MODULE]
    with pytest.raises(StageUnavailable) as raised:
        Stages(config).preflight(judge=True)
    assert str(raised.value) == (
        f"--nli toy-nli needs the Python package '{MISSING_MODULE}': `pip install -e '.[toy]'` in this project's "
        f"checkout ({REPO_ROOT})"
    )
    Stages(config).preflight(judge=False)  # not judging: nothing to check

    RETRIEVERS.register("toy-search", lambda config: None, extras=[Extra(MISSING_MODULE, "toy")])
    try:
        with pytest.raises(StageUnavailable, match=f"--service-type toy-search needs .*'{MISSING_MODULE}'"):
            Stages(PipelineConfig(service_type="toy-search", cache_dir=tmp_path)).preflight(retrieve=True)
    finally:
        RETRIEVERS.unregister("toy-search")


def test_help_choices_come_from_the_registry(toy_nli, capsys):
    parser = build_assess_parser()
    config = config_from_args(parser.parse_args(["--nli", toy_nli]), parser)
    assert config.models.nli == toy_nli
    with pytest.raises(SystemExit):
        parser.parse_args(["--help-all"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "toy-nli: a backend for the registry tests" in help_text
    assert "merlin: IBM's compiled merlin binary" in help_text  # engines listed with descriptions
    assert "wikipedia: the MediaWiki API" in help_text


def test_merlin_registers_itself_and_its_options_through_the_registry():
    entry = ENGINES.entry("merlin")
    assert entry.origin == "merlin_bridge.plugin" and entry.load().__name__ == "MerlinEngine"
    declared = {o.name: o.keyword for o in entry.options}
    assert declared == {
        "merlin_path": "merlin_path",
        "merlin_algorithm": "algorithm",
        "ibound": "ibound",
        "iterations": "iterations",
        "merlin_timeout": "timeout",
        "keep_uai": "keep_uai",
    }
    # the flags exist (IBM's spellings too) though the core config declares none of them
    flags = {f.dest: f for f in config_flags()}
    assert set(declared) <= set(flags) and "--merlin_path" in flags["merlin_path"].flags
    assert flags["merlin_algorithm"].group == "engine"
    assert "merlin" not in inspect.getsource(fact_reasoner.settings.config)
    config = PipelineConfig(engine="merlin", merlin_algorithm="bte", keep_uai=Path("uai"))
    assert config.engine.engine_kwargs() == {"algorithm": "bte", "keep_uai": "uai"}


def _write_distribution(site: Path) -> None:
    """A tiny installed package: one module and a dist-info declaring entry points."""
    (site / "fr_toy_plugin.py").write_text(
        textwrap.dedent(
            """
            from fact_reasoner.inference import BruteForceEngine
            from fact_reasoner.retrieval.retrievers import SuppliedRetriever

            class ToyEngine(BruteForceEngine):
                name = "toy"

            def make_engine(**options):
                return ToyEngine(**options)

            def make_retriever(config):
                return SuppliedRetriever()
            """
        )
    )
    info = site / "fr_toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fr-toy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[fact_reasoner.engines]\ntoy = fr_toy_plugin:make_engine\n\n"
        "[fact_reasoner.retrievers]\ntoy-search = fr_toy_plugin:make_retriever\n"
    )


def test_installed_packages_plug_in_through_entry_points(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _write_distribution(site)
    code = textwrap.dedent(
        """
        import json, sys
        import fact_reasoner
        from fact_reasoner import FactReasoner, PipelineConfig
        from fact_reasoner.inference import ENGINES, available_engines, make_engine
        from fact_reasoner.retrieval import available_retrievers, make_uncached_retriever

        listed = available_engines()
        loaded_before_use = "fr_toy_plugin" in sys.modules
        engine = make_engine("toy")
        config = PipelineConfig(engine="toy", service_type="toy-search")
        FactReasoner(config).stages.preflight(judge=True, retrieve=True)
        print(json.dumps({
            "listed": "toy" in listed,
            "loaded_before_use": loaded_before_use,
            "engine": type(engine).__name__,
            "description": ENGINES.entry("toy").description,
            "retriever": type(make_uncached_retriever(config)).__name__,
            "retrievers": "toy-search" in available_retrievers(),
            "core_imports_metrics": "fact_reasoner.metrics" in sys.modules,
        }))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": f"{ROOT}:{site}", "PATH": "/usr/bin:/bin", "FACT_REASONER_CACHE": str(tmp_path / "c")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "listed": True,
        "loaded_before_use": False,  # listing names imports no plug-in
        "engine": "ToyEngine",
        "description": "from fr-toy-plugin",
        "retriever": "SuppliedRetriever",
        "retrievers": True,  # the retrievers' entry-point group keeps its name
        "core_imports_metrics": False,
    }


def test_no_install_hint_sends_a_user_to_a_package_index_for_this_project():
    """This project's distribution is on no package index, and `fact-reasoner`, which is, is another
    project: every hint installs an extra from the checkout (issue #60 item 1), and torch, where
    it is needed, as the CPU build first."""
    sources = [
        *(REPO_ROOT / "fact_reasoner").rglob("*.py"),
        *(REPO_ROOT / "docs").rglob("*.md"),
        REPO_ROOT / "README.md",
    ]
    wrong = re.compile(r"pip install [\"']?fact-reasoner")
    found = [f"{path.relative_to(REPO_ROOT)}: {line.strip()}" for path in sources
             for line in path.read_text(encoding="utf-8").splitlines() if wrong.search(line)]  # fmt: skip
    assert found == []
    from fact_reasoner.nli.factory import CHECKER_EXTRAS

    assert CHECKER_EXTRAS[0].module == "torch" and CPU_TORCH in (CHECKER_EXTRAS[0].first or "")
    assert "--index-url https://download.pytorch.org/whl/cpu" in CPU_TORCH

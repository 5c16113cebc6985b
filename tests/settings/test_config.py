"""Settings are declared once (fact_reasoner.settings.config); flags, defaults, help and the resume
fingerprint are derived from the declarations."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fact_reasoner.cli import build_assess_parser
from fact_reasoner.settings.cli_options import add_config_arguments, config_flags, config_from_args
from fact_reasoner.settings.config import PipelineConfig

#: a value different from the default for every setting that has a flag
OTHER_VALUES = {
    "pipeline": "factverify",
    "pipeline_judge": "nli",
    "veriscore_claims": "extract",
    "factverify_steps": "5",
    "factverify_results": "4",
    "version": "1",
    "factor_tables": "paper",
    "context_prior": "0.99",
    "atom_prior": "0.4",
    "min_relation_probability": "0.3",
    "contradictions": "any",
    "entailments": "any",
    "filter_supplied_relations": None,
    "graph_preset": "paper",
    "nli_sentences": "all",
    "coherence": None,
    "coherence_min_similarity": "0.6",
    "coherence_pairs": "similar",
    "k": "3",
    "skip_uncheckable": None,
    "checkworthy": "llm",
    "abstention": "on",
    "gamma": "10",
    "conformal": "conformal.json",
    "fail_under": "0.8",
    "engine": "pgmpy",
    "engine_options": "method=lbp",
    "merlin_path": "/opt/merlin",
    "merlin_algorithm": "bte",
    "ibound": "4",
    "iterations": "7",
    "merlin_timeout": "5",
    "keep_uai": "uai",
    "backend": "openai",
    "model": "m",
    "base_url": "http://x",
    "threads": "3",
    "nli": "align",
    "nli_model": "dir",
    "nli_cascade_second": "align",
    "nli_cascade_band": "0.1",
    "nli_prompt_version": "v2",
    "nli_guardian_server": "ollama",
    "nli_calibrate": None,
    "nli_samples": "3",
    "nli_mode": "fast",
    "nli_gate": "lexical",
    "nli_gate_threshold": "0.5",
    "nli_neighbour_window": "2",
    "llm_timeout": "9",
    "llm_retries": "1",
    "max_failed_pairs": "0.25",
    "atomizer_prompt_version": "v2",
    "reviser_prompt_version": "v1",
    "revise": None,
    "topic_pronouns": None,
    "keep_ungrounded_atoms": None,
    "service_type": "bm25",
    "top_k": "2",
    "store": "s",
    "collection": "c",
    "topic_filter": None,
    "topic_in_query": None,
    "retrieve_question": None,
    "query_builder": None,
    "summarise_contexts": None,
    "search_url": "http://127.0.0.1:8080/search",
    "wikipedia_url": "http://127.0.0.1:8080/w/api.php",
    "fetch_pages": None,
    "passage_chars": "500",
    "max_page_bytes": "100000",
    "web_concurrency": "2",
    "web_timeout": "5",
    "web_retries": "1",
    "cache_dir": "/tmp/elsewhere",
    "use_cache": None,
    "executor": "ray",
    "ray_address": "auto",
    "workers": "2",
    "batch_size": "16",
}


def _argv(flag, value):
    return [flag.flags[0]] + ([] if value is None else [value])


def test_every_setting_has_a_flag_that_sets_it():
    parser = build_assess_parser()
    flags = [f for f in config_flags() if f.visible]
    assert {f.dest for f in flags} <= set(OTHER_VALUES)
    default = PipelineConfig()
    for flag in flags:
        value = OTHER_VALUES[flag.dest]
        args = parser.parse_args(_argv(flag, value))
        config = config_from_args(args, parser)
        group_before = getattr(default, flag.group).model_dump()
        group_after = getattr(config, flag.group).model_dump()
        assert group_after[flag.field] != group_before[flag.field], flag.dest
        # nothing else moved — but a preset, which moves what it names
        from fact_reasoner.settings.graph_options import PAPER_GRAPH

        moved = set(PAPER_GRAPH) if flag.dest == "graph_preset" else set()
        others = {k: v for k, v in group_after.items() if k != flag.field and k not in moved}
        assert others == {k: v for k, v in group_before.items() if k != flag.field and k not in moved}, flag.dest
        for key in moved:
            assert group_after[key] == PAPER_GRAPH[key], key


def test_flags_left_out_keep_the_declared_defaults_and_help_comes_from_the_declaration(capsys):
    parser = build_assess_parser()
    assert config_from_args(parser.parse_args([]), parser) == PipelineConfig()
    with pytest.raises(SystemExit):
        parser.parse_args(["--help-all"])
    help_text = " ".join(capsys.readouterr().out.split())
    field = PipelineConfig.model_fields["graph"].annotation.model_fields["context_prior"]
    assert " ".join(field.description.split()) in help_text
    assert "(default: 0.9)" in help_text and "--context_prior" in help_text  # IBM's spelling too
    assert "--K" in help_text and "--no-cache" in help_text and "--no-revise" in help_text


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--context-prior", "1.5"], "argument --context-prior: must be < 1, got 1.5"),
        (["--atom-prior", "0"], "argument --atom-prior: must be > 0, got 0"),
        (["--min-relation-probability", "1"], "argument --min-relation-probability"),
        (["--k", "0"], "argument --k"),
        (["--k", "most"], "argument --k"),
        (["--top-k", "0"], "argument --top-k"),
        (["--engine", "nope"], "unknown engine 'nope'"),
        (["--nli", "nope"], "argument --nli: 'nope': Input should be 'auto', 'llm'"),
        (
            ["--nli", "cross-encoder,nope"],
            "argument --nli: 'cross-encoder,nope': unknown judge 'nope'; choose from: llm, align",
        ),
        (["--nli", "cross-encoder@entailment"], "no judge gives contradictions"),
        (["--engine-option", "novalue"], "argument --engine-option: give KEY=VALUE"),
    ],
)
def test_bad_values_are_argument_errors_naming_the_flag(argv, message, capsys):
    parser = build_assess_parser()
    with pytest.raises(SystemExit) as stop:
        config_from_args(parser.parse_args(argv), parser)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_the_settings_fingerprint_covers_every_setting_that_can_change_a_result():
    parser = build_assess_parser()
    base = PipelineConfig().settings()
    not_results = {
        "threads",
        "cache_dir",
        "use_cache",
        "merlin_path",
        "merlin_timeout",
        "keep_uai",
        "max_failed_pairs",
        "llm_timeout",
        "llm_retries",
        "web_concurrency",
        "web_timeout",
        "web_retries",
        # where records run never changes what they give
        "executor",
        "ray_address",
        "workers",
        "batch_size",
        # the CI gate decides the exit status, never a row
        "fail_under",
    }
    # a backend's own options count only when that backend is chosen (declared ``only_when``)
    only_when = {
        "nli_cascade_second": ["--nli", "cascade"],
        "nli_cascade_band": ["--nli", "cascade"],
        "nli_guardian_server": ["--nli-prompt-version", "granite-guardian"],
        # --nli-mode fast's own options (and the mode itself is written only when it is fast)
        "nli_gate": ["--nli-mode", "fast"],
        "nli_gate_threshold": ["--nli-mode", "fast"],
        "nli_neighbour_window": ["--nli-mode", "fast"],
        # with coherence off (the default) neither is in the fingerprint: earlier outputs resume
        "coherence_min_similarity": ["--coherence"],
        "coherence_pairs": ["--coherence"],
        "pipeline_judge": ["--pipeline", "factscore"],
        "veriscore_claims": ["--pipeline", "veriscore"],
        "factverify_steps": ["--pipeline", "factverify"],
        "factverify_results": ["--pipeline", "factverify"],
    }
    for flag in config_flags():
        if not flag.visible:
            continue
        argv = _argv(flag, OTHER_VALUES[flag.dest])
        config = config_from_args(parser.parse_args(argv), parser)
        if flag.dest in not_results:
            assert config.settings() == base, flag.dest
        elif flag.dest in only_when:
            assert config.settings() == base, f"--{flag.dest} counts although its backend is not chosen"
            chosen = config_from_args(parser.parse_args(only_when[flag.dest]), parser).settings()
            with_it = config_from_args(parser.parse_args(only_when[flag.dest] + argv), parser).settings()
            assert with_it != chosen, f"--{flag.dest} changes results but not the fingerprint"
        else:
            assert config.settings() != base, f"--{flag.dest} changes results but not the fingerprint"


def test_shorthand_and_nested_forms_are_the_same_config():
    assert PipelineConfig(version=2, nli="align", engine="pgmpy") == PipelineConfig(
        graph={"version": 2}, models={"nli": "align"}, engine={"name": "pgmpy"}
    )
    assert PipelineConfig(version=2).with_options(k=5).scores.k == 5
    with pytest.raises(ValueError, match="given twice"):
        PipelineConfig(version=2, graph={"version": 3})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        PipelineConfig(no_such_setting=1)
    with pytest.raises(ValueError, match="unknown setting"):
        PipelineConfig().with_options(no_such_setting=1)


def test_merlin_flags_become_engine_options_only_for_merlin():
    merlin = PipelineConfig(engine="merlin", ibound=4, merlin_timeout=3.0, engine_options={"seed": 1})
    assert merlin.engine.engine_kwargs() == {"seed": 1, "ibound": 4, "timeout": 3.0}
    native = PipelineConfig(engine="native", ibound=4)
    assert native.engine.engine_kwargs() == {}


def test_a_command_can_take_some_groups_and_fix_a_setting():
    parser = argparse.ArgumentParser()
    added = add_config_arguments(parser, groups=("graph", "models"), exclude=("version",))
    assert {f.group for f in added} == {"graph", "models"} and "version" not in {f.dest for f in added}
    args = parser.parse_args(["--nli", "align", "--context-prior", "0.8"])
    config = config_from_args(args, parser, version=2)
    assert (config.graph.version, config.models.nli, config.graph.context_prior) == (2, "align", 0.8)
    with pytest.raises(SystemExit):
        parser.parse_args(["--version", "1"])
    assert isinstance(PipelineConfig().cache.cache_dir, Path)


@pytest.mark.parametrize(
    "name, model, when",
    [
        ("auto", "cross-encoder", "when given"),  # the default judge, the record's relations where it has some
        ("precomputed", None, "always"),  # no model at all
        ("cross-encoder", "cross-encoder", "never"),
        ("cascade", "cascade", "never"),
        ("llm", "llm", "never"),
    ],
)
def test_the_judge_is_settled_once_when_the_configuration_is_validated(name, model, when):
    choice = PipelineConfig(nli=name).models.nli_choice
    assert (choice.name, choice.model, choice.record_relations) == (name, model, when)
    given, none = [{"source": "a0", "target": "c0", "relation": "entailment", "probability": 0.9}], None
    assert choice.uses_record_relations(given) is (when != "never")
    assert choice.uses_record_relations(none) is (when == "always")
    # the settings name the model a name stands for beside it, so a resumed run judged by another refuses
    assert PipelineConfig(nli=name).settings()["models"].get("nli_auto") == (model if name == "auto" else None)


def test_a_copy_with_another_judge_settles_its_own_choice():
    # model_copy does not validate: the settled choice follows the name, not the copied original
    models = PipelineConfig().models.model_copy(update={"nli": "precomputed"})
    assert models.nli_choice.model is None
    assert PipelineConfig().with_options(nli="align").models.nli_choice.model == "align"


def test_a_registered_judge_that_uses_the_records_relations_is_settled_from_its_registration():
    from fact_reasoner.nli.factory import NLI_BACKENDS

    NLI_BACKENDS.register("relations-or-align", lambda *a: None, uses=("relations",), resolves_to="align")
    try:
        choice = PipelineConfig(nli="relations-or-align").models.nli_choice
        assert (choice.model, choice.record_relations) == ("align", "when given")
    finally:
        NLI_BACKENDS.unregister("relations-or-align")


def test_building_a_default_configuration_loads_no_backend_and_no_model_runtime():
    """The settings are the ground floor: a configuration and its settings are built from the
    declarations and the registrations, without importing a backend's module or a model's
    runtime (a fresh interpreter, so that nothing another test imported counts)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fact_reasoner.settings.config import PipelineConfig\n"
        "PipelineConfig().settings(); PipelineConfig(nli='cascade', engine='merlin').settings()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    backends = {
        "fact_reasoner.nli.cross_encoder",
        "fact_reasoner.nli.align",
        "fact_reasoner.nli.llm_judge",
        "fact_reasoner.nli.cascade",
        "fact_reasoner.llm.local",
        "fact_reasoner.llm.openai",
        "fact_reasoner.executors.ray_executor",
        "fact_reasoner.pipelines.factscore",
        "merlin_bridge.engine",
    }
    runtimes = {"onnxruntime", "tokenizers", "torch", "transformers", "xllamacpp", "chromadb", "ray", "pgmpy", "httpx"}
    assert "fact_reasoner.settings.config" in loaded
    assert loaded & (backends | runtimes) == set()


def test_dotted_names_every_setting_of_a_real_fingerprint_by_group_and_field():
    from fact_reasoner.settings.fields import dotted

    settings = PipelineConfig(engine="merlin").settings()
    flat = dotted(settings)
    # every leaf is reachable by its dotted name, and nothing nested is left
    for name, value in flat.items():
        node = settings
        for part in name.split("."):
            node = node[part]
        assert node == value
        assert not isinstance(value, dict)
    assert dotted({"graph": {"version": 3, "merlin": {"order": "min-fill"}}, "seed": 1}) == {
        "graph.version": 3,
        "graph.merlin.order": "min-fill",
        "seed": 1,
    }

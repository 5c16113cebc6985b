"""Which settings a request may change (:mod:`fact_reasoner.server.settings`), derived from the
settings model: closed values that change a result and are read per record; never a path, a
URL, a model, a backend or the server's own operation."""

from __future__ import annotations

import pytest

from fact_reasoner.server.settings import (
    BUILT_ONCE,
    UnsafeSetting,
    apply_request_settings,
    request_settings,
    setting_type,
)
from fact_reasoner.settings.cli_options import config_flags
from fact_reasoner.settings.config import PipelineConfig


def test_every_allowed_setting_has_a_closed_value_and_changes_a_result():
    allowed = request_settings()
    names = {s.name for s in allowed}
    assert {
        "version",
        "top_k",
        "nli_mode",
        "coherence",
        "k",
        "factor_tables",
        "contradictions",
        "context_prior",
    } <= names
    flags = {flag.dest: flag for flag in config_flags()}
    for setting in allowed:
        assert setting_type(flags[setting.name]) is not None
        assert setting.group not in ("pipeline", "engine", "cache", "execution", "gate")
    assert not names & BUILT_ONCE


def test_paths_models_urls_backends_and_operation_are_not_allowed():
    names = {s.name for s in request_settings()}
    never = {
        "model", "nli_model", "store", "collection", "cache_dir", "use_cache", "service_type", "search_url",
        "wikipedia_url", "base_url", "backend", "nli", "engine", "engine_options", "pipeline", "threads",
        "executor", "ray_address", "fail_under", "merlin_path", "llm_timeout", "max_failed_pairs",
    }  # fmt: skip
    assert not names & never
    # every free-text setting of the model is out, whatever its name
    for flag in config_flags():
        if setting_type(flag) is None:
            assert flag.dest not in names, flag.dest


def test_values_are_read_as_the_settings_model_reads_them():
    allowed = request_settings()
    base = PipelineConfig()
    config = apply_request_settings(
        base, {"version": "2", "k": "3", "factor_tables": "paper", "context_prior": "0.8", "nli_mode": "fast"}, allowed
    )
    assert (config.graph.version, config.scores.k, config.graph.factor_tables) == (2, 3, "paper")
    assert (config.graph.context_prior, config.models.nli_mode) == (0.8, "fast")
    assert apply_request_settings(base, {"k": "half"}, allowed).scores.k == "half"
    assert apply_request_settings(base, {}, allowed) is base


@pytest.mark.parametrize(
    "values, name, words",
    [
        ({"store": "/x"}, "store", "may not be changed"),
        ({"nope": "1"}, "nope", "is not a setting"),
        ({"version": "4"}, "version", "Input should be"),
        ({"top_k": "0"}, "top_k", "must be ≥ 1, got 0"),
        ({"top_k": "10000000000"}, "top_k", "must be ≤ 1000000000, got 10000000000"),
        ({"version": "2", "context_prior": "2"}, "context_prior", "must be < 1, got 2"),
    ],
)
def test_refusals_name_the_setting(values, name, words):
    with pytest.raises(UnsafeSetting, match=words) as refused:
        apply_request_settings(PipelineConfig(), values, request_settings())
    assert refused.value.setting == name


def test_ragas_takes_its_own_groups_and_never_the_version():
    names = {s.name for s in request_settings(("graph", "models"), excluded=("version",))}
    assert "version" not in names and "top_k" not in names and "k" not in names
    assert {"factor_tables", "nli_mode"} <= names

"""The public API: every name a module exports in ``__all__`` exists and, if it is a class or a
function, says what it is; every module says what it is for."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import fact_reasoner
import merlin_bridge


def _modules() -> list[str]:
    names = []
    for package in (fact_reasoner, merlin_bridge):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            if not info.name.endswith(".__main__"):  # importing it would run the CLI
                names.append(info.name)
    return sorted(names)


MODULES = _modules()


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:  # an optional extra that is not installed
        pytest.skip(f"{name} needs an optional package: {error}")


@pytest.mark.parametrize("name", MODULES)
def test_every_module_says_what_it_is_for(name):
    module = _import(name)
    assert inspect.getdoc(module), f"{name} has no module docstring"


@pytest.mark.parametrize("name", MODULES)
def test_exported_names_exist_and_are_documented(name):
    module = _import(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.__all__ names {attribute!r}, which does not exist"
        value = getattr(module, attribute)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{attribute} has no docstring"


def test_available_lists_every_kind_and_the_factories_build_them():
    kinds = fact_reasoner.available()
    assert set(kinds) == {"engines", "retrievers", "nli", "llm_backends", "metrics"}
    assert {"native", "pgmpy", "brute-force", "merlin"} <= set(kinds["engines"])
    assert {"supplied", "chroma", "bm25", "hybrid"} <= set(kinds["retrievers"])
    assert "faithfulness" in kinds["metrics"] and "align" in kinds["nli"]
    engine = fact_reasoner.make_engine(fact_reasoner.PipelineConfig(engine="brute-force"))
    assert type(engine).__name__ == "BruteForceEngine"

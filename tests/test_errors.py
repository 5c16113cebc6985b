"""One root for the project's errors: every exception class derives from FactReasonerError, keeps
the built-in base callers may catch, and is drawn in the tree of ``fact_reasoner.errors``."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import fact_reasoner
import merlin_bridge
from fact_reasoner import errors
from fact_reasoner.errors import FactReasonerError, InputError, LocatedError, OutputError, RecordFailed, SettingsError


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in (fact_reasoner, merlin_bridge):
        names = [package.__name__]
        names += [info.name for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + ".")]
        for name in names:
            if name.endswith(".__main__"):  # importing it would run the CLI
                continue
            try:
                module = importlib.import_module(name)
            except ImportError:  # an optional extra that is not installed
                continue
            for _, value in inspect.getmembers(module, inspect.isclass):
                if issubclass(value, BaseException) and value.__module__ == name:
                    found[f"{name}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


EXCEPTIONS = _exception_classes()
#: Not errors: Ctrl-C and SIGTERM end a run through KeyboardInterrupt on purpose.
INTERRUPTS = {"_Terminated"}


def test_the_walk_finds_the_errors_of_every_layer():
    names = {cls.__name__ for cls in EXCEPTIONS}
    assert {"SetupError", "InputError", "InferenceError", "MerlinNotFoundError", "LLMError", "WorkerLost"} <= names


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_project_exception_derives_from_the_root(cls):
    if cls.__name__ in INTERRUPTS:
        assert issubclass(cls, KeyboardInterrupt)
        return
    assert issubclass(cls, FactReasonerError)


@pytest.mark.parametrize("cls", EXCEPTIONS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_public_exception_is_drawn_in_the_tree(cls):
    if cls.__name__.startswith("_"):
        return
    assert f" {cls.__name__}" in inspect.getdoc(errors), f"{cls.__name__} is missing from the tree in errors.py"


@pytest.mark.parametrize(
    "name, builtin",
    [
        ("fact_reasoner.errors.SetupError", RuntimeError),
        ("fact_reasoner.errors.RecordFailed", RuntimeError),
        ("fact_reasoner.errors.SettingsError", ValueError),
        ("fact_reasoner.io.InputError", ValueError),
        ("fact_reasoner.io.OutputError", ValueError),
        ("fact_reasoner.retrieval.corpus.CorpusError", ValueError),
        ("fact_reasoner.inference.base.InferenceError", RuntimeError),
        ("merlin_bridge.errors.MerlinNotFoundError", RuntimeError),
        ("fact_reasoner.llm.base.LLMError", RuntimeError),
        ("fact_reasoner.llm.structured.InvalidOutput", ValueError),
        ("fact_reasoner.retrieval.base.RetrievalError", RuntimeError),
        ("fact_reasoner.executors.base.WorkerLost", RuntimeError),
    ],
)
def test_the_old_builtin_bases_still_catch_them(name, builtin):
    module, _, attribute = name.rpartition(".")
    assert issubclass(getattr(importlib.import_module(module), attribute), builtin)


def test_exit_codes_a_failed_record_is_1_everything_else_2():
    assert RecordFailed.exit_code == 1
    assert {cls.exit_code for cls in EXCEPTIONS if issubclass(cls, FactReasonerError)} == {1, 2}
    assert all(cls.exit_code == 2 for cls in EXCEPTIONS if cls.__name__ in ("SetupError", "InputError", "OutputError"))


def test_a_located_error_names_file_and_line_and_survives_pickle():
    error = InputError("invalid JSON at column 3: Expecting value", path="data/in.jsonl", line=7)
    assert str(error) == "data/in.jsonl:7: invalid JSON at column 3: Expecting value"
    assert (error.path, error.line) == ("data/in.jsonl", 7)
    assert str(OutputError("not a directory", path="out")) == "out: not a directory"
    assert str(InputError("input file not found: x.jsonl")) == "input file not found: x.jsonl"
    copy = pickle.loads(pickle.dumps(error))  # how an error comes back from a Ray worker
    assert type(copy) is InputError and str(copy) == str(error) and copy.line == 7
    assert isinstance(copy, LocatedError) and isinstance(copy, ValueError)


def test_engine_settings_that_cannot_work_are_settings_errors():
    from fact_reasoner.inference import make_engine

    with pytest.raises(SettingsError, match="unknown engine 'nope'"):
        make_engine("nope")
    with pytest.raises(SettingsError, match=r"damping must lie in \[0, 1\)"):  # the engine's own check
        make_engine("native", damping=1.0)
    with pytest.raises(ValueError):  # still a ValueError for callers that catch that
        make_engine("native", no_such_option=1)

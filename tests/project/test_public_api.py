"""The public API: every name a module exports in ``__all__`` is importable (``import *`` gives
exactly those names) and, if it is a class or a function, says what it is; every module's
docstring opens with a sentence about what it is for; every documented call of a project
function or method (README, CONTRIBUTING, the documentation pages and the entry points'
docstrings) matches its signature."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import textwrap

import pytest
from pydantic import BaseModel

import fact_reasoner
import merlin_bridge
from tests.helpers import EXTRAS, REPO_ROOT


def _modules() -> list[str]:
    names = []
    for package in (fact_reasoner, merlin_bridge):
        names.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            if not info.name.endswith(".__main__"):  # importing it would run the CLI
                names.append(info.name)
    return sorted(names)


MODULES = _modules()


#: the top-level packages of the optional extras: a module that needs one that is not installed
#: is skipped; any other import error (a project module missing, a name that moved) fails
OPTIONAL_PACKAGES = {module.split(".")[0] for modules in EXTRAS.values() for module in modules}


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as error:
        if (error.name or "").split(".")[0] not in OPTIONAL_PACKAGES:
            raise
        pytest.skip(f"{name} needs an optional package: {error}")


@pytest.mark.parametrize("name", MODULES)
def test_every_module_says_what_it_is_for(name):
    module = _import(name)
    doc = inspect.getdoc(module)
    assert doc, f"{name} has no module docstring"
    summary = doc.split("\n\n")[0]
    # a sentence about the module, not just its name
    assert len(summary.split()) >= 4, f"{name}'s docstring does not say what it is for: {summary!r}"


@pytest.mark.parametrize("name", MODULES)
def test_exported_names_exist_and_are_documented(name):
    module = _import(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    star: dict[str, object] = {}
    exec(f"from {name} import *", star)  # what `import *` gives is exactly __all__
    assert set(star) - {"__builtins__"} == set(exported)
    for attribute in exported:
        assert hasattr(module, attribute), f"{name}.__all__ names {attribute!r}, which does not exist"
        value = getattr(module, attribute)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{attribute} has no docstring"


def test_available_lists_every_kind_and_the_factories_build_them():
    kinds = fact_reasoner.available()
    assert set(kinds) == {
        "engines",
        "retrievers",
        "nli",
        "llm_backends",
        "metrics",
        "pipelines",
        "commands",
        "executors",
        "checkworthy",
        "embedders",
    }
    assert kinds["pipelines"] == ["factreasoner", "factscore", "veriscore", "factverify"]
    assert kinds["commands"] == ["assess", "correct", "ragas", "index", "report", "serve", "conformal"]
    assert {"native", "pgmpy", "brute-force", "merlin"} <= set(kinds["engines"])
    assert {"supplied", "chroma", "bm25", "hybrid"} <= set(kinds["retrievers"])
    assert "faithfulness" in kinds["metrics"] and "align" in kinds["nli"]
    engine = fact_reasoner.make_engine(fact_reasoner.PipelineConfig(engine="brute-force"))
    assert type(engine).__name__ == "BruteForceEngine"


# -- the documented calls of the entry points match their signatures ---------------------------

#: the Markdown files whose ```python blocks are checked: the README, CONTRIBUTING and the site's pages
ROOT_DOCS = (
    "README.md",
    "CONTRIBUTING.md",
    *sorted(str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "docs").rglob("*.md")),
)
DOCSTRING_MODULES = ("fact_reasoner", "fact_reasoner.reasoner", "fact_reasoner.runner")


def _documented_code() -> list[tuple[str, str]]:
    """(where, code) of every Python example: the ```python blocks of the README, CONTRIBUTING and
    the documentation pages, and the ``::`` blocks of the entry points' module docstrings."""
    blocks = []
    for name in ROOT_DOCS:
        text = (REPO_ROOT / name).read_text(encoding="utf-8")
        blocks += [(f"{name} block {i}", code) for i, code in enumerate(re.findall(r"```python\n(.*?)```", text, re.S))]
    for name in DOCSTRING_MODULES:
        doc = inspect.getdoc(importlib.import_module(name)) or ""
        for i, match in enumerate(re.finditer(r"::\n\n((?:    .*\n?|\n)+)", doc)):
            blocks.append((f"{name} docstring block {i}", textwrap.dedent(match.group(1))))
    return blocks


class _Unknown:
    """A value the example computes (``record``, ``samples``): any argument binds to it."""


def _resolve(node: ast.expr, names: dict[str, object]) -> object | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        owner = _resolve(node.value, names)
        if isinstance(owner, _Instance):
            function = inspect.getattr_static(owner.cls, node.attr, None)
            return None if function is None else _Method(function)
        return getattr(owner, node.attr, None) if owner is not None else None
    if isinstance(node, ast.Call):
        made = _resolve(node.func, names)
        return _Instance(made) if inspect.isclass(made) else None
    return None


class _Instance:
    def __init__(self, cls: type) -> None:
        self.cls = cls


class _Method:
    def __init__(self, function: object) -> None:
        self.function = function


def _checked_calls(code: str) -> list[tuple[str, object, ast.Call]]:
    """The calls of project callables in ``code``: (text, callable, call node)."""
    tree = ast.parse(code)
    names: dict[str, object] = {}
    calls = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in ("fact_reasoner", "merlin_bridge")
        ):
            try:
                module = importlib.import_module(node.module)
            except ImportError as error:  # an integration's example without its library here:
                if (error.name or "").split(".")[0] not in OPTIONAL_PACKAGES:  # tests/integrations runs it
                    raise
                continue
            for alias in node.names:
                names[alias.asname or alias.name] = getattr(module, alias.name)
    for node in tree.body:  # assignments in order: ``assessor = FactReasoner(...)``
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _resolve(node.value, names)
            if isinstance(value, _Instance):
                names[node.targets[0].id] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _resolve(node.func, names)
            if target is not None and not isinstance(target, _Instance):
                calls.append((ast.unparse(node)[:80], target, node))
    return calls


def _bind(target: object, call: ast.Call) -> None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return  # *args / **kwargs: nothing to check by name
    args = [_Unknown() for _ in call.args]
    kwargs = {k.arg: _Unknown() for k in call.keywords if k.arg}
    if isinstance(target, _Method):
        function = target.function
        if isinstance(function, staticmethod | classmethod):
            inspect.signature(function.__func__).bind(
                *([None] if isinstance(function, classmethod) else []), *args, **kwargs
            )
        else:
            inspect.signature(function).bind(None, *args, **kwargs)  # type: ignore[arg-type]
        return
    if inspect.isclass(target) and issubclass(target, BaseModel):
        # pydantic models (PipelineConfig takes flat shorthand keys): build it when the example's
        # arguments are literals, else the keys must be fields or shorthands it accepts
        literal = {k.arg: ast.literal_eval(k.value) for k in call.keywords if isinstance(k.value, ast.Constant)}
        if len(literal) == len(call.keywords) and not call.args:
            target(**literal)
        return
    inspect.signature(target).bind(*args, **kwargs)  # type: ignore[arg-type]


DOCUMENTED = _documented_code()


def test_the_documentation_has_examples_of_the_entry_points():
    calls = [text for _, code in DOCUMENTED for text, _, _ in _checked_calls(code)]
    for entry in ("FactReasoner(", ".assess(", "PipelineConfig(", "run_dataset(", "register_retriever("):
        assert any(entry in text for text in calls), f"no documented call of {entry}"


@pytest.mark.parametrize(("where", "code"), DOCUMENTED, ids=[where for where, _ in DOCUMENTED])
def test_documented_calls_match_the_signatures(where, code):
    """Every call of a project function, class or method in an example binds to its real
    signature: the documented argument names and counts are the ones the code takes."""
    for text, target, call in _checked_calls(code):
        try:
            _bind(target, call)
        except (TypeError, ValueError) as error:  # pydantic's ValidationError is a ValueError
            pytest.fail(f"{where}: `{text}` does not match the signature: {error}")

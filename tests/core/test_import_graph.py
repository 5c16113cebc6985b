"""The import graph, read from the source (imports inside functions count): no cycles, settings on
the ground floor, and no plug-in loaded by importing the package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from scripts.import_graph import arrows, cycles, describe, layers, module_files
from tests.helpers import REPO_ROOT

#: what the settings model (fact_reasoner.config) may import of the project: the declarations of
#: the data model and of a setting, the registry that names the kinds, the errors' root
SETTINGS_FLOOR = {
    "fact_reasoner.errors",
    "fact_reasoner.fields",
    "fact_reasoner.graph_options",
    "fact_reasoner.registry",
}


def _below(module: str) -> set[str]:
    graph: dict[str, set[str]] = {}
    for arrow in arrows():
        graph.setdefault(arrow.source, set()).add(arrow.target)
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_import_graph_has_no_cycle():
    found = arrows()
    assert len(module_files()) > 100 and len(found) > 400  # the whole project was read
    assert cycles(found) == [], "\n".join(describe(found))
    assert layers(found)[0]  # a graph without cycles has a ground floor


def test_the_settings_model_imports_nothing_of_the_project_but_the_data_model():
    assert _below("fact_reasoner.config") <= SETTINGS_FLOOR
    assert _below("fact_reasoner.fields") == set()


def test_the_reader_counts_deferred_and_relative_imports_but_not_type_checking_ones(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from .c import Thing
            def later():
                from pkg.a import x  # deferred: still an arrow, so a cycle a -> b -> a
            """
        )
    )
    (package / "c.py").write_text("from .b import later\n")
    files = module_files(tmp_path, ["pkg"])
    found = arrows(files)
    assert {(a.source, a.target, a.deferred) for a in found} == {
        ("pkg.a", "pkg.b", False),
        ("pkg.b", "pkg.a", True),
        ("pkg.c", "pkg.b", False),
    }
    assert cycles(found) == [["pkg.a", "pkg.b"]]
    assert "pkg.b ↑ pkg.a" in "\n".join(describe(found))


def test_importing_the_package_or_its_settings_loads_no_plugin():
    """merlin_bridge registers merlin and its settings when the engines are first looked up (a
    configuration built, a command run), never because fact_reasoner was imported."""
    code = textwrap.dedent(
        """
        import json, sys
        import fact_reasoner.config
        import fact_reasoner
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "merlin_bridge")
        from fact_reasoner import PipelineConfig
        config = PipelineConfig()
        after = sorted(m for m in sys.modules if m.split(".")[0] == "merlin_bridge")
        print(json.dumps([loaded, after, "merlin_path" in type(config.engine).model_fields]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    loaded, after, merlin_setting = json.loads(out.stdout)
    assert loaded == []
    assert "merlin_bridge.plugin" in after and merlin_setting  # collected when a config needs them

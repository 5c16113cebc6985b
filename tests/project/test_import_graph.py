"""The import graph, read from the source (imports inside functions and for type checking count):
no cycles, settings on the ground floor, the rooms, and no plug-in loaded by importing the
package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from scripts.import_graph import arrows, cycles, describe, describe_rooms, layers, module_files, room_of, rooms
from tests.helpers import REPO_ROOT

#: what the settings model (fact_reasoner.settings.config) may import of the project: the declarations of
#: the data model and of a setting, the registry that names the kinds, the errors' root
SETTINGS_FLOOR = {
    "fact_reasoner.errors",
    "fact_reasoner.settings.fields",
    "fact_reasoner.settings.graph_options",
    "fact_reasoner.settings.panel",
    "fact_reasoner.settings.registry",
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


def test_no_room_imports_a_room_above_it():
    """The rooms (top-level modules and subpackages) form no circle: no arrow runs back up."""
    found = arrows()
    seen = rooms(found)
    assert len(seen.rooms) > 20  # the whole package was read
    assert seen.circles == [] and seen.back_up == [], "\n".join(describe_rooms(found))


def test_the_settings_model_imports_nothing_of_the_project_but_the_data_model():
    assert _below("fact_reasoner.settings.config") <= SETTINGS_FLOOR
    # a field names its kind's registry (for type checking only)
    assert _below("fact_reasoner.settings.fields") <= {"fact_reasoner.settings.registry", "fact_reasoner.errors"}


def test_the_reader_counts_deferred_relative_and_type_checking_imports(tmp_path):
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
    assert {(a.source, a.target, a.deferred, a.type_only) for a in found} == {
        ("pkg.a", "pkg.b", False, False),
        ("pkg.b", "pkg.a", True, False),
        ("pkg.b", "pkg.c", False, True),
        ("pkg.c", "pkg.b", False, False),
    }
    assert cycles(found) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert "pkg.b ↑ pkg.a" in "\n".join(describe(found))
    assert "pkg.b → pkg.c (type checking)" in "\n".join(describe(found))


def test_rooms_are_top_level_files_and_folders_and_an_arrow_in_a_circle_runs_back_up(tmp_path):
    package = tmp_path / "fact_reasoner"
    (package / "commands").mkdir(parents=True)
    (package / "server").mkdir()
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "commands" / "__init__.py").write_text("")
    (package / "commands" / "base.py").write_text("from ..errors import x\n")
    (package / "commands" / "serve.py").write_text("from ..server.app import x\nfrom .base import y\n")
    (package / "server" / "__init__.py").write_text("")
    (package / "server" / "app.py").write_text("from ..commands.base import y\n")
    files = module_files(tmp_path, ["fact_reasoner"])
    found = arrows(files)
    assert cycles(found) == []  # no cycle of modules, but one of rooms
    seen = rooms(found, files)
    assert room_of("fact_reasoner.commands.serve") == "fact_reasoner.commands"
    assert room_of("merlin_bridge.uai") == "merlin_bridge"
    assert seen.rooms == ["fact_reasoner", "fact_reasoner.commands", "fact_reasoner.errors", "fact_reasoner.server"]
    assert seen.circles == [["fact_reasoner.commands", "fact_reasoner.server"]]
    # the commands reach higher (serve imports the server), so the server's arrow is the one back up
    assert seen.back_up == [("fact_reasoner.server", "fact_reasoner.commands")]
    assert seen.floor == {  # without the arrow back up, the server stands on the ground
        "fact_reasoner": 0,
        "fact_reasoner.errors": 0,
        "fact_reasoner.server": 0,
        "fact_reasoner.commands": 1,
    }
    assert describe_rooms(found, files)[0] == "4 rooms, 3 arrows between rooms, 1 back up, 1 circle(s)"


def test_importing_the_package_or_its_settings_loads_no_plugin():
    """merlin_bridge registers merlin and its settings when the engines are first looked up (a
    configuration built, a command run), never because fact_reasoner was imported."""
    code = textwrap.dedent(
        """
        import json, sys
        import fact_reasoner.settings.config
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


def test_every_room_of_the_package_is_named_where_the_layout_is_described():
    """A new top-level module or subpackage is a decision about the layout, not a file that
    happens: CONTRIBUTING.md's map names every room of ``fact_reasoner`` (``offline.py`` grew as a
    17-line 24th module until issue #60 gave its one function a room: ``installer.py``)."""
    contributing = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    package = REPO_ROOT / "fact_reasoner"
    named = [
        path.name + ("/" if path.is_dir() else "")
        for path in sorted(package.iterdir())
        if (path.suffix == ".py" and path.stem not in ("__init__", "__main__"))
        or (path.is_dir() and (path / "__init__.py").exists())
    ]
    assert len(named) > 30  # the whole package was listed
    missing = [name for name in named if name not in contributing]
    assert missing == [], f"rooms of fact_reasoner that CONTRIBUTING.md does not place: {missing}"

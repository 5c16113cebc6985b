"""The import graph of the project's packages, read from the source: its cycles, and a drawing.

Every ``import`` and ``from … import`` statement is an arrow from the module that holds it to
the module it names, wherever it stands: at the top, inside a function (a deferred import is
still a dependency; deferring it only hides a cycle until run time) or under
``if TYPE_CHECKING:`` (it never runs, but a reader and the type checker still need the other
module first: a cycle through it is a cycle of the design). ``from package import name``
points to ``package.name`` when that is a module, else to the package.

A cycle is a strongly connected group of two or more modules. The arrows of a cycle that are
deferred (inside a function) are the ones that point back up: the code already treats them as
the exception.

The *rooms* are what a newcomer sees first: each top-level module or subpackage of
``fact_reasoner`` is one room, and every other package is one room of its own. Rooms stand on
floors (a room's floor is the highest layer of its modules), and an arrow between rooms that
does not go to a lower floor is an arrow *back up*.

    python -m scripts.import_graph            # cycles and the arrows in them
    python -m scripts.import_graph --layers   # modules by layer (a module imports only below)
    python -m scripts.import_graph --rooms    # rooms, the arrows between them, those back up

``tests/project/test_import_graph.py`` fails on any cycle, of modules or of rooms.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fact_reasoner", "merlin_bridge")


@dataclass(frozen=True)
class Arrow:
    """``source`` imports ``target`` (at ``line``; ``deferred``: inside a function;
    ``type_only``: under ``if TYPE_CHECKING:``)."""

    source: str
    target: str
    line: int
    deferred: bool
    type_only: bool = False


def module_files(root: Path = ROOT, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Module name → file, for every ``.py`` file of the packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_Found = tuple[ast.Import | ast.ImportFrom, bool, bool]


def _imports(tree: ast.AST) -> Iterable[_Found]:
    """Every import statement, whether it is in a function and whether it is under
    ``if TYPE_CHECKING:`` (the ``else:`` of that test runs, so it counts as an ordinary one)."""

    def visit(node: ast.AST, in_function: bool, type_only: bool) -> Iterable[_Found]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for inside in child.body:
                    yield from visit_one(inside, in_function, True)
                for other in child.orelse:
                    yield from visit_one(other, in_function, type_only)
                continue
            yield from visit_one(child, in_function, type_only)

    def visit_one(node: ast.AST, in_function: bool, type_only: bool) -> Iterable[_Found]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function, type_only
        else:
            function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from visit(node, in_function or function, type_only)

    yield from visit(tree, False, False)


def _base_of(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def arrows(files: dict[str, Path] | None = None) -> list[Arrow]:
    """Every import between modules of the packages."""
    files = module_files() if files is None else files
    found: list[Arrow] = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, deferred, type_only in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _base_of(module, path, node)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                while target and target not in files:  # `import a.b.c` of a non-module name
                    target = target.rpartition(".")[0]
                if target and target != module:
                    found.append(Arrow(module, target, node.lineno, deferred, type_only))
    return found


def cycles(found: list[Arrow]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted, largest first."""
    graph: dict[str, set[str]] = {}
    for arrow in found:
        graph.setdefault(arrow.source, set()).add(arrow.target)
        graph.setdefault(arrow.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # iterative, so a deep graph cannot overflow the stack
        work = [(node, iter(sorted(graph[node])))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == current:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(groups, key=lambda group: (-len(group), group))


def layers(found: list[Arrow]) -> list[list[str]]:
    """Modules by layer: layer 0 imports nothing of the packages, layer n only from below n.
    Only defined for a graph without cycles (raises ``ValueError`` otherwise)."""
    if cycles(found):
        raise ValueError("the import graph has cycles")
    below: dict[str, set[str]] = {}
    for arrow in found:
        below.setdefault(arrow.source, set()).add(arrow.target)
        below.setdefault(arrow.target, set())
    depth: dict[str, int] = {}

    def depth_of(module: str) -> int:
        if module not in depth:
            depth[module] = 1 + max((depth_of(target) for target in below[module]), default=-1)
        return depth[module]

    for module in sorted(below):
        depth_of(module)
    out: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for module, level in sorted(depth.items()):
        out[level].append(module)
    return out


def room_of(module: str) -> str:
    """The room a module stands in: ``fact_reasoner.graph.build.build`` → ``fact_reasoner.graph.build``; a
    top-level module of ``fact_reasoner`` is a room of its own; any other package is one room."""
    parts = module.split(".")
    if parts[0] == PACKAGES[0]:
        return ".".join(parts[:2])
    return parts[0]


@dataclass(frozen=True)
class Rooms:
    """The import graph seen by room: the rooms, the arrows between two rooms, the arrows that run
    back up, the floor of each room (0 = the ground: a room stands above every room it imports,
    arrows back up aside), and the ``circles`` (cycles) of the room graph."""

    rooms: list[str]
    arrows: set[tuple[str, str]]
    back_up: list[tuple[str, str]]
    floor: dict[str, int]
    circles: list[list[str]]


def rooms(found: list[Arrow], files: dict[str, Path] | None = None) -> Rooms:
    """The rooms of the packages and the arrows between them. Inside a circle of rooms, the arrow
    from one room to another whose modules reach as high or higher (by their layers: ``found``
    must have no cycle of modules) is the one that runs back up; without those, the rooms stand
    on floors."""
    files = module_files() if files is None else files
    layer_of = {module: level for level, modules in enumerate(layers(found)) for module in modules}
    height: dict[str, int] = {}
    for module in files:
        room = room_of(module)
        height[room] = max(height.get(room, 0), layer_of.get(module, 0))
    between = {(room_of(a.source), room_of(a.target)) for a in found} - {(room, room) for room in height}
    circles = cycles([Arrow(source, target, 0, False) for source, target in between])
    circle_of = {room: index for index, circle in enumerate(circles) for room in circle}
    back_up = sorted(
        (source, target)
        for source, target in between
        if source in circle_of and circle_of[source] == circle_of.get(target) and height[target] >= height[source]
    )
    upright = [Arrow(source, target, 0, False) for source, target in between - set(back_up)]
    floor = {room: level for level, members in enumerate(layers(upright)) for room in members}
    floor = {room: floor.get(room, 0) for room in height}
    return Rooms(sorted(height), between, back_up, floor, circles)


def describe_rooms(found: list[Arrow], files: dict[str, Path] | None = None) -> list[str]:
    """The rooms from the top floor down, with the arrows back up and the circles, as text."""
    seen = rooms(found, files)
    lines = [
        f"{len(seen.rooms)} rooms, {len(seen.arrows)} arrows between rooms, "
        f"{len(seen.back_up)} back up, {len(seen.circles)} circle(s)"
    ]
    for level in sorted(set(seen.floor.values()), reverse=True):
        lines.append(f"floor {level}: {' '.join(room for room in seen.rooms if seen.floor[room] == level)}")
    lines.extend(f"back up: {source} → {target}" for source, target in seen.back_up)
    lines.extend(f"circle: {', '.join(circle)}" for circle in seen.circles)
    return lines


def describe(found: list[Arrow]) -> list[str]:
    """The cycles and their arrows, as lines of text (deferred arrows marked ``↑``, those for
    type checking only ``(type checking)``)."""
    groups = cycles(found)
    lines = [f"{len(groups)} cycle(s)"]
    for group in groups:
        members = set(group)
        inside = sorted(
            {
                (a.source, a.target, a.deferred, a.type_only)
                for a in found
                if a.source in members and a.target in members
            }
        )
        up = sum(1 for _, _, deferred, _ in inside if deferred)
        lines.append(f"- {len(group)} modules, {len(inside)} arrows ({up} deferred, ↑): {', '.join(group)}")
        lines.extend(
            f"    {source} {'↑' if deferred else '→'} {target}{' (type checking)' if type_only else ''}"
            for source, target, deferred, type_only in inside
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The project's import graph: cycles and layers.")
    parser.add_argument("--layers", action="store_true", help="print the modules layer by layer")
    parser.add_argument("--rooms", action="store_true", help="print the rooms floor by floor, the arrows back up")
    args = parser.parse_args(argv)
    found = arrows()
    type_only = {(a.source, a.target) for a in found if a.type_only} - {
        (a.source, a.target) for a in found if not a.type_only
    }
    print(
        f"{len(module_files())} modules, {len({(a.source, a.target) for a in found})} arrows "
        f"({len(type_only)} for type checking only)"
    )
    print("\n".join(describe(found)))
    if args.layers and not cycles(found):
        for level, modules in enumerate(layers(found)):
            print(f"layer {level}: {' '.join(modules)}")
    if args.rooms and not cycles(found):
        print("\n".join(describe_rooms(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

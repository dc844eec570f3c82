"""The map stays true: imports only point down the floors of docs/architecture.md, no module imports itself back
through others, and no private name (``_x``) is imported from another room.

Every ``import`` of ``src/deltap`` counts — at module level, inside functions (deferred for speed, still a
dependency) and under ``TYPE_CHECKING`` (a type from above is an arrow upward too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src"

#: bottom to top; a room may import rooms on lower floors only (and itself). Keep in step with docs/architecture.md.
FLOORS: list[set[str]] = [
    {"deltap._version", "deltap.errors", "deltap._lazy"},
    {"deltap._io", "deltap._registry", "deltap._ticker"},
    {"deltap.documents", "deltap.frames", "deltap.outcomes", "deltap.checker_kinds"},
    {"deltap.cases", "deltap.qrels"},
    {"deltap.run_layout"},
    {"deltap.dataset"},
    {"deltap.judgements"},
    {"deltap.corpora"},
    {"deltap.loaders"},
    {"deltap.retrieval", "deltap.checkers", "deltap.solvers"},
    {"deltap.execution"},
    {"deltap.trials"},
    {"deltap.mining", "deltap.evaluation", "deltap.check"},
    {"deltap.endtoend"},
    {"deltap.report"},
    {"deltap.demo"},
    {"deltap.cli", "deltap"},
    {"deltap.__main__"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / "deltap").rglob("*.py"))}


def _imports(path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """``(imported deltap module, line)`` for every import in the file (``from a import b`` counts ``a.b`` when it is
    a module)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "deltap":
                    yield alias.name, node.lineno
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and node.module.split(".")[0] == "deltap"
        ):
            yield node.module, node.lineno
            for alias in node.names:
                if f"{node.module}.{alias.name}" in modules:
                    yield f"{node.module}.{alias.name}", node.lineno


def _room(module: str) -> str:
    rooms = {room for floor in FLOORS for room in floor}
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in rooms:
            return ".".join(parts[:n])
    raise AssertionError(f"{module} is on no floor: add it to FLOORS and to docs/architecture.md")


def _floor(room: str) -> int:
    return next(i for i, floor in enumerate(FLOORS) if room in floor)


def test_every_module_is_on_a_floor() -> None:
    for module in _modules():
        _room(module)


def test_imports_only_point_down() -> None:
    modules = _modules()
    upward: list[str] = []
    for module, path in modules.items():
        here = _room(module)
        for target, line in _imports(path, modules):
            there = _room(target)
            if there == here:
                continue
            if _floor(there) >= _floor(here):
                upward.append(
                    f"{path.relative_to(SRC)}:{line}: {module} imports {target} ({there} is not below {here})"
                )
    assert not upward, "\n".join(upward)


def _private_imports(path: Path) -> Iterator[tuple[str, str, int]]:
    """``(owner, private name, line)`` for every ``from deltap.m import _x`` (owner ``deltap.m``) and every import of
    a private module ``deltap.p._m`` (owner ``deltap.p``) in the file; dunder names are not private."""

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    def modules(dotted: str, line: int) -> Iterator[tuple[str, str, int]]:
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            if private(parts[i]):
                yield ".".join(parts[:i]), parts[i], line

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "deltap":
            yield from modules(node.module or "", node.lineno)
            for alias in node.names:
                if private(alias.name):
                    yield node.module or "", alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "deltap":
                    yield from modules(alias.name, node.lineno)


def test_no_private_name_crosses_a_room() -> None:
    # A room's private names (functions, classes, modules starting with "_") are its own: another room that needs one
    # needs a public name. The ground floor's modules (deltap._io, _lazy, _registry, _version) are rooms themselves.
    rooms = {room for floor in FLOORS for room in floor}
    crossing: list[str] = []
    for module, path in _modules().items():
        here = _room(module)
        for owner, name, line in _private_imports(path):
            if f"{owner}.{name}" in rooms:  # a room of its own, public by its place in the floors
                continue
            if _room(owner) != here:
                crossing.append(f"{path.relative_to(SRC)}:{line}: {module} imports {name} from {owner}")
    assert not crossing, "\n".join(crossing)


def test_a_private_import_across_rooms_is_reported(tmp_path: Path) -> None:
    fake = tmp_path / "plan.py"
    fake.write_text(
        "from deltap.mining.progress import _clock_text, short_count\nimport deltap.checkers._plain\n",
        encoding="utf-8",
    )
    assert list(_private_imports(fake)) == [
        ("deltap.mining.progress", "_clock_text", 1),
        ("deltap.checkers", "_plain", 2),
    ]


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {m: {t for t, _ in _imports(p, modules) if t in modules and t != m} for m, p in modules.items()}
    # A package's __init__ re-exporting its own modules is not an arrow back: drop package -> own submodule edges.
    graph = {m: {t for t in targets if not t.startswith(m + ".")} for m, targets in graph.items()}
    cycles = _strongly_connected(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(sorted(c)) for c in cycles)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm: the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        pytest.param({"a": {"b"}, "b": {"a"}}, [{"a", "b"}], id="two-module-cycle"),
        pytest.param({"a": {"b"}, "b": {"c"}, "c": set()}, [], id="chain"),
        pytest.param({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [{"a", "b", "c"}], id="three-module-cycle"),
    ],
)
def test_the_cycle_finder_finds_cycles(graph: dict[str, set[str]], expected: list[set[str]]) -> None:
    assert _strongly_connected(graph) == expected


def test_an_upward_import_is_reported(tmp_path: Path) -> None:
    # The rule itself: a formats-floor module importing the mining engine is named, with its line.
    fake = tmp_path / "qrels.py"
    fake.write_text("import json\n\ndef f():\n    from deltap.mining.engine import mine\n", encoding="utf-8")
    found = list(_imports(fake, _modules()))
    assert found == [("deltap.mining.engine", 4)]
    assert _floor(_room("deltap.mining.engine")) > _floor(_room("deltap.qrels"))

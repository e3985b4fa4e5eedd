"""The package layers hold: a source reads its run's store through the pipeline, never on its own.

Static: every ``import`` statement of every module under ``trawl/sources/`` is read
with :mod:`ast` (a lazy import inside a function counts as much as one at the top).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCES = Path(__file__).resolve().parent.parent / "trawl" / "sources"
#: What a source must not import: the store registry and the plugin manager are the pipeline's
#: (``trawl.pipeline.runstore`` is a source's one way to its run's store).
FORBIDDEN = ("trawl.stores.registry", "trawl.pipeline.manager")
#: The spider loader builds the plugin manager to find plugin-registered sources: it is the
#: registry of sources, not one.
EXEMPT = {"loader.py"}


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, by full dotted name (``from a import b`` gives ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def source_modules() -> list[Path]:
    return sorted(p for p in SOURCES.rglob("*.py") if p.relative_to(SOURCES).as_posix() not in EXEMPT)


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from trawl.stores.registry import store_class\n    return store_class\n")
    assert "trawl.stores.registry" in imported_modules(module)


@pytest.mark.parametrize("path", source_modules(), ids=lambda p: p.relative_to(SOURCES).as_posix())
def test_no_source_opens_a_store_or_builds_a_plugin_manager(path: Path) -> None:
    bad = sorted(m for m in imported_modules(path) if m.startswith(FORBIDDEN))
    assert not bad, f"{path.relative_to(SOURCES)} imports {bad}: use trawl.pipeline.runstore"


def import_cycles(package: Path) -> list[list[str]]:
    """The circles among ``package``'s modules through their imports at import time (top level,
    ``if TYPE_CHECKING:`` blocks included: a type-only circle still ties the modules together)."""
    root = package.parent
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
               for p in package.rglob("*.py")}  # fmt: skip
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for statement in ast.parse(path.read_text()).body:
            nodes = ast.walk(statement) if isinstance(statement, (ast.If, ast.Try)) else [statement]
            for node in nodes:
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    for alias in node.names:
                        full = f"{node.module}.{alias.name}"
                        target = full if full in modules else node.module
                        if target in modules:
                            edges[name].add(target)
                elif isinstance(node, ast.Import):
                    edges[name].update(alias.name for alias in node.names if alias.name in modules)
    return strongly_connected(edges)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_the_cycle_check_sees_a_circle() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_no_import_circles() -> None:
    assert import_cycles(SOURCES.parent) == []

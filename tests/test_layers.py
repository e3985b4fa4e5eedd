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

"""Classes a plugin registers by import path, imported when first looked up.

Importing every class a plugin registers cost each command that builds the plugin
manager what none of them uses: trawl's eleven sources import Scrapy's HTTP handler,
Twisted's TLS and polars (0.3-0.5 s of CPU), the PostgreSQL store psycopg (0.1-0.2 s).
:class:`LazyClasses` is the ``{name: class}`` mapping a ``trawl_register_*`` hook
returns, built from ``{name: "module:Class"}``: its names cost nothing, and a class
is imported when it is first looked up (``mapping[name]``, ``.values()``, ``.items()``).
A plugin package can return one the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any


def import_path(path: str) -> Any:
    """The object ``"package.module:Name"`` names."""
    module, _, attribute = path.partition(":")
    return getattr(import_module(module), attribute)


class LazyClasses(Mapping[str, Any]):
    """``{name: class}`` whose classes are imported when first looked up, then kept."""

    def __init__(self, paths: Mapping[str, str]) -> None:
        #: name -> ``"module:Class"``, as registered.
        self.paths = dict(paths)
        self._classes: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        found = self._classes.get(name)
        if found is None:
            found = self._classes[name] = import_path(self.paths[name])
        return found

    def __contains__(self, name: object) -> bool:
        return name in self.paths

    def imported(self, name: str) -> bool:
        """Whether ``name``'s class was looked up already (or its module imported by someone else)."""
        if name in self._classes:
            return True
        module = self.paths[name].partition(":")[0]
        return module in sys.modules

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return f"LazyClasses({self.paths!r})"


def lazy_attributes(module_name: str, paths: Mapping[str, str]) -> Any:
    """A module's ``__getattr__`` that imports ``paths``' names (``{name: "module:Name"}``) on first use.

    For a plugin package that re-exports its classes (``from trawl.stores.sqlite import
    SqliteStore``) without importing them when the plugin is registered.
    """

    def __getattr__(name: str) -> Any:
        if name in paths:
            return import_path(paths[name])
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    return __getattr__

"""A read command's settings, read as Scrapy reads them, without importing Scrapy.

Importing anything of Scrapy's imports the whole package (its HTTP classes,
its spiders, Twisted's reactor and TLS): 0.25-0.3 s of CPU, half of what a
read command such as ``trawl search`` costs in all. :class:`ReadSettings` is
the read side of :class:`scrapy.settings.BaseSettings` (``get``, ``getbool``,
``getint``, ``getfloat``, ``getlist``, ``getdict``, priorities) with the same
values: Scrapy's defaults at ``default`` priority, the project's module
(``SCRAPY_SETTINGS_MODULE``, ``trawl.settings`` unless a project names its
own) at ``project``, the command's ``default_settings`` at ``command`` and
``-s`` at ``cmdline``. Scrapy's defaults are read from its
``default_settings.py`` as literals (4 ms); the few that are not literals
(``USER_AGENT``, the component dicts) import Scrapy's module when one is read.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any

#: Scrapy's ``scrapy.settings.SETTINGS_PRIORITIES`` (a test compares them).
SETTINGS_PRIORITIES: dict[str, int] = {
    "default": 0,
    "command": 10,
    "addon": 15,
    "project": 20,
    "spider": 30,
    "cmdline": 40,
}
#: The ``SCRAPY_*`` environment variables Scrapy reads into the settings (``get_project_settings``).
_SCRAPY_ENVVARS = ("CHECK", "PROJECT", "PYTHON_SHELL", "SETTINGS_MODULE")
#: Not read yet: a default that is not a literal, taken from Scrapy's module when first read.
_DEFERRED = object()


def priority_of(priority: int | str) -> int:
    return SETTINGS_PRIORITIES[priority] if isinstance(priority, str) else priority


def arglist_to_dict(arglist: Iterable[str]) -> dict[str, str]:
    """``["A=1", "B=x=y"]`` -> ``{"A": "1", "B": "x=y"}`` (:func:`scrapy.utils.conf.arglist_to_dict`)."""
    return dict(x.split("=", 1) for x in arglist)  # type: ignore[misc]


@cache
def scrapy_defaults() -> dict[str, Any]:
    """Scrapy's default settings, the literal ones read from its module's source, the others deferred."""
    spec = importlib.util.find_spec("scrapy")  # finds the package without importing it
    assert spec is not None and spec.origin is not None, "Scrapy is not installed"
    source = Path(spec.origin).parent / "settings" / "default_settings.py"
    defaults: dict[str, Any] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or not target.id.isupper():
            continue
        try:
            defaults[target.id] = ast.literal_eval(value)
        except ValueError:
            defaults[target.id] = _DEFERRED
    return defaults


class ReadSettings(MutableMapping[str, Any]):
    """Settings with priorities, read as :class:`scrapy.settings.BaseSettings` reads them."""

    def __init__(self, values: Mapping[str, Any] | None = None, priority: int | str = "project") -> None:
        #: name -> (value, priority)
        self.attributes: dict[str, tuple[Any, int]] = {}
        if values:
            self.update(values, priority)

    # --- reading, as BaseSettings ---------------------------------------------------------

    def __getitem__(self, name: str) -> Any:
        found = self.attributes.get(name)
        if found is None:
            return None
        value, priority = found
        if value is _DEFERRED:  # a default Scrapy computes: its module says what
            from scrapy.settings import default_settings

            value = getattr(default_settings, name)
            self.attributes[name] = (value, priority)
        return value

    def __contains__(self, name: object) -> bool:
        return name in self.attributes

    def __iter__(self) -> Iterator[str]:
        return iter(self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)

    def get(self, name: str, default: Any = None) -> Any:
        value = self[name]
        return value if value is not None else default

    def getbool(self, name: str, default: bool = False) -> bool:
        got = self.get(name, default)
        try:
            return bool(int(got))
        except ValueError:
            if got in {"True", "true"}:
                return True
            if got in {"False", "false"}:
                return False
            raise ValueError(
                "Supported values for boolean settings are 0/1, True/False, '0'/'1',"
                " 'True'/'False' and 'true'/'false'"
            ) from None

    def getint(self, name: str, default: int = 0) -> int:
        return int(self.get(name, default))

    def getfloat(self, name: str, default: float = 0.0) -> float:
        return float(self.get(name, default))

    def getlist(self, name: str, default: list[Any] | None = None) -> list[Any]:
        value = self.get(name, default or [])
        if not value:
            return []
        if isinstance(value, str):
            value = value.split(",")
        return list(value)

    def getdict(self, name: str, default: dict[Any, Any] | None = None) -> dict[Any, Any]:
        value = self.get(name, default or {})
        if isinstance(value, str):
            value = json.loads(value)
        return dict(value)

    def getpriority(self, name: str) -> int | None:
        found = self.attributes.get(name)
        return None if found is None else found[1]

    def maxpriority(self) -> int:
        return max(
            (priority for _, priority in self.attributes.values()), default=SETTINGS_PRIORITIES["default"]
        )

    def copy(self) -> ReadSettings:
        return copy.deepcopy(self)

    # --- writing, as BaseSettings: a value of a lower priority does not replace a higher one ---

    def __setitem__(self, name: str, value: Any) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        del self.attributes[name]

    def set(self, name: str, value: Any, priority: int | str = "project") -> None:
        level = priority_of(priority)
        found = self.attributes.get(name)
        if found is None or level >= found[1]:
            self.attributes[name] = (value, level)

    def setdict(self, values: Mapping[str, Any], priority: int | str = "project") -> None:
        self.update(values, priority)

    def update(self, values: Any = (), /, priority: int | str = "project", **kwargs: Any) -> None:  # type: ignore[override]
        if isinstance(values, str):
            values = json.loads(values)
        for name, value in dict(values, **kwargs).items():
            self.set(name, value, priority)

    def setmodule(self, module: Any, priority: int | str = "project") -> None:
        if isinstance(module, str):
            module = import_module(module)
        for name in dir(module):
            if name.isupper():
                self.set(name, getattr(module, name), priority)


def add_project_to_path() -> None:
    """What ``scrapy.utils.conf.init_env`` does once a settings module is named (``trawl`` always
    names one): the nearest ``scrapy.cfg``'s folder on ``sys.path``, for a project's own modules."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / "scrapy.cfg").is_file():
            if str(folder) not in sys.path:
                sys.path.append(str(folder))
            return


def project_settings() -> ReadSettings:
    """:func:`scrapy.utils.project.get_project_settings`, and ``EDITOR`` as Scrapy's command line adds it."""
    add_project_to_path()
    settings = ReadSettings(scrapy_defaults(), priority="default")
    module = os.environ.get("SCRAPY_SETTINGS_MODULE")
    if module:
        settings.setmodule(module, priority="project")
    envvars = {
        name: os.environ[f"SCRAPY_{name}"] for name in _SCRAPY_ENVVARS if f"SCRAPY_{name}" in os.environ
    }
    settings.setdict(envvars, priority="project")
    if "EDITOR" in os.environ:
        settings["EDITOR"] = os.environ["EDITOR"]
    return settings

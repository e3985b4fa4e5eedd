"""Build the pluggy PluginManager that drives trawl's pipeline, once per crawl.

Where plugins come from, in registration order:

1. trawl's built-ins, :data:`DEFAULT_PLUGINS`, registered in code by name (as
   datasette and llm do): they are there whatever the install metadata says;
2. third-party packages, through the ``trawl`` entry-point group;
3. the ``TRAWL_PLUGINS`` setting: import paths, for plugins that live in a
   project rather than an installed package.

``TRAWL_PLUGINS_DISABLED`` names plugins to leave out, the way a ``None``
value switches off a component in Scrapy's ``*_BASE`` dicts, except the
:data:`ESSENTIAL_PLUGINS`: without them a crawl would store nothing and still
exit 0. A name that is essential or unknown is a :class:`TrawlUsageError`, as
is a ``TRAWL_PLUGINS`` module that cannot be imported: one line, exit 2.

Building a manager scans every installed distribution's entry points and
imports the plugins, so :func:`plugin_manager_from_settings` builds one per
plugin configuration and process and hands the same one to the spider loader,
the pipeline and the commands (Scrapy copies the settings for each of them, so
the settings object itself cannot carry it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module, metadata
from types import ModuleType
from typing import Any

import pluggy

from trawl import hookspecs
from trawl.errors import TrawlUsageError
from trawl.hookspecs import hookimpl, hookspec

__all__ = [
    "DEFAULT_PLUGINS",
    "ESSENTIAL_PLUGINS",
    "PROJECT",
    "PluginConfig",
    "build_plugin_manager",
    "hookimpl",
    "hookspec",
    "plugin_manager_from_settings",
]

PROJECT = "trawl"

#: trawl's own plugins, by module path; each is registered under its last
#: component (``trawl.pipeline.builtins.dedup`` -> ``dedup``). The order is that of the
#: entry points they used to be loaded from, so hooks run in the same order.
DEFAULT_PLUGINS: tuple[str, ...] = (
    "trawl.pipeline.builtins.dedup",
    "trawl.stores.elasticsearch",
    "trawl.pipeline.builtins.normalize",
    "trawl.notify",
    "trawl.pipeline.builtins.scope",
    "trawl.sources.builtin",
    "trawl.stores.sqlite",
    "trawl.pipeline.builtins.url_filter",
    "trawl.metrics",
    "trawl.stores.postgresql",
    "trawl.pipeline.builtins.crates_alerts",
)

#: Built-ins that ``TRAWL_PLUGINS_DISABLED`` may not name: canonical URLs and one
#: record per URL (the store is driven by the pipeline itself and cannot be
#: switched off; ``STORE_URI`` empty means no store). The one place to change the set.
ESSENTIAL_PLUGINS: frozenset[str] = frozenset({"normalizer", "dedup"})

#: Built-ins whose module name is not their plugin name. The names are what users
#: type in ``TRAWL_PLUGINS_DISABLED`` and read in ``trawl plugins``: they stayed when
#: the modules moved into folders by concern.
_BUILTIN_NAMES = {
    "trawl.stores.sqlite": "sqlite_store",
    "trawl.stores.elasticsearch": "elasticsearch_store",
    "trawl.stores.postgresql": "postgresql_store",
    "trawl.pipeline.builtins.normalize": "normalizer",
    "trawl.sources.builtin": "sources",
    "trawl.pipeline.builtins.crates_alerts": "crates_alerts",
}

_OWN_PACKAGE = PROJECT + "."


def builtin_name(path: str) -> str:
    """The name a built-in plugin is registered (and disabled) under."""
    return _BUILTIN_NAMES.get(path) or path.rpartition(".")[2]


@dataclass(frozen=True)
class PluginConfig:
    """The settings that decide which plugins a manager holds, normalized.

    Hashable, so that crawls whose settings agree on these share one manager.
    """

    extra: tuple[tuple[str, bool], ...] = ()
    disabled: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> PluginConfig:
        return cls(
            extra=_read_extra(settings.get("TRAWL_PLUGINS")),
            disabled=_read_names(settings.get("TRAWL_PLUGINS_DISABLED")),
        )


def _read_json(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise TrawlUsageError(f"{name} is not valid JSON: {exc}") from None


def _read_extra(value: Any) -> tuple[tuple[str, bool], ...]:
    """``TRAWL_PLUGINS``: a dict ``{path: on}``, a list of paths, or either as JSON text."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "["):
            value = _read_json("TRAWL_PLUGINS", text)
        else:
            value = [part for part in text.split(",") if part.strip()]
    if value is None:
        return ()
    if isinstance(value, Mapping):
        pairs = [(str(path).strip(), _truthy(on)) for path, on in value.items()]
    elif isinstance(value, Iterable):
        pairs = [(str(path).strip(), True) for path in value]
    else:
        raise TrawlUsageError(f'TRAWL_PLUGINS takes {{"module.path": true}} or a list, not {value!r}')
    return tuple(sorted((path, on) for path, on in pairs if path))


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(value)


def _read_names(value: Any) -> tuple[str, ...]:
    """``TRAWL_PLUGINS_DISABLED``: a list of names, comma-separated text, or a JSON list."""
    if isinstance(value, str):
        text = value.strip()
        value = _read_json("TRAWL_PLUGINS_DISABLED", text) if text.startswith("[") else text.split(",")
    if not value:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TrawlUsageError(f"TRAWL_PLUGINS_DISABLED takes a list of plugin names, not {value!r}")
    return tuple(sorted({str(name).strip() for name in value} - {""}))


def _third_party_entry_points() -> list[metadata.EntryPoint]:
    """The ``trawl`` group's entry points, without those pointing into trawl itself.

    An install of trawl from before its built-ins were registered in code still
    lists them as entry points until it is reinstalled: they are registered
    already (skipping them also skips any that name a module that is gone).
    """
    found: list[metadata.EntryPoint] = []
    names: set[str] = set()
    # Walking the distributions is what pluggy does; entry_points(group=...) also
    # normalizes every distribution's name, which costs more than this whole scan.
    for dist in metadata.distributions():
        for ep in dist.entry_points:
            if ep.group != PROJECT or ep.name in names:
                continue
            if ep.module == PROJECT or ep.module.startswith(_OWN_PACKAGE):
                continue
            names.add(ep.name)
            found.append(ep)
    return found


def _check_disabled(disabled: Iterable[str], known: Iterable[str]) -> None:
    disabled = sorted(disabled)
    essential = [name for name in disabled if name in ESSENTIAL_PLUGINS]
    if essential:
        raise TrawlUsageError(
            f"TRAWL_PLUGINS_DISABLED: {', '.join(essential)} cannot be disabled"
            f" (essential: {', '.join(sorted(ESSENTIAL_PLUGINS))})"
        )
    known = set(known)
    unknown = [name for name in disabled if name not in known]
    if unknown:
        raise TrawlUsageError(
            f"TRAWL_PLUGINS_DISABLED names no plugin: {', '.join(unknown)}"
            f" (known: {', '.join(sorted(known))})"
        )


def _register(pm: pluggy.PluginManager, plugin: object, name: str) -> None:
    """Register once: pluggy refuses a second registration of a module or a name."""
    if pm.is_blocked(name) or pm.is_registered(plugin):
        return
    if pm.has_plugin(name):
        other = pm.get_plugin(name)
        raise TrawlUsageError(
            f"two plugins are named {name!r}: {_where(other)} and {_where(plugin)}"
            " (rename one, or disable one with TRAWL_PLUGINS_DISABLED)"
        )
    pm.register(plugin, name=name)


def _where(plugin: object) -> str:
    return getattr(plugin, "__name__", type(plugin).__name__)


def _load_entry_point(ep: metadata.EntryPoint) -> object:
    try:
        return ep.load()
    except (ImportError, AttributeError, SyntaxError) as exc:
        raise TrawlUsageError(f"cannot load plugin {ep.name!r} ({ep.value}): {exc}") from None


def _import_extra(path: str) -> ModuleType:
    try:
        return import_module(path)
    except (ImportError, SyntaxError) as exc:
        raise TrawlUsageError(f"cannot import plugin {path!r} from TRAWL_PLUGINS: {exc}") from None


def build_plugin_manager(
    extra: Mapping[str, object] | Iterable[str] = (),
    disabled: Iterable[str] = (),
) -> pluggy.PluginManager:
    """Return a new manager with the built-ins, the entry points and ``extra`` registered.

    ``extra`` maps import paths to a truthy value (or ``None``/``False`` to
    switch one off), or is a plain list of import paths. Every name in
    ``disabled`` is checked before anything is imported.
    """
    pairs = extra.items() if isinstance(extra, Mapping) else ((path, True) for path in extra)
    enabled = [path for path, on in pairs if on]
    blocked = {name.strip() for name in disabled if name and name.strip()}
    entry_points = _third_party_entry_points()
    known = [builtin_name(path) for path in DEFAULT_PLUGINS] + [ep.name for ep in entry_points] + enabled
    _check_disabled(blocked, known)

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in blocked:
        pm.set_blocked(name)
    for path in DEFAULT_PLUGINS:
        _register(pm, import_module(path), builtin_name(path))
    for ep in entry_points:
        if not pm.is_blocked(ep.name):
            _register(pm, _load_entry_point(ep), ep.name)
    for path in enabled:
        if not pm.is_blocked(path):
            _register(pm, _import_extra(path), path)
    return pm


_managers: dict[PluginConfig, pluggy.PluginManager] = {}
_lock = threading.Lock()


def plugin_manager_from_settings(settings: Mapping[str, Any]) -> pluggy.PluginManager:
    """The manager a crawl with these Scrapy settings uses: built on first use, then shared.

    Raises :class:`TrawlUsageError` for a bad ``TRAWL_PLUGINS`` or
    ``TRAWL_PLUGINS_DISABLED``; a failed build is not remembered, so every
    caller gets the same error.
    """
    config = PluginConfig.from_settings(settings)
    with _lock:
        pm = _managers.get(config)
        if pm is None:
            pm = _managers[config] = build_plugin_manager(dict(config.extra), config.disabled)
        return pm

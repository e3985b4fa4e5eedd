"""Build the pluggy PluginManager that drives trawl's pipeline.

Plugins come from the ``trawl`` entry-point group (trawl's own included) and
from the ``TRAWL_PLUGINS`` setting (import paths, for plugins that live in a
project rather than an installed package). ``TRAWL_PLUGINS_DISABLED`` names
plugins to leave out, the way a ``None`` value switches off a component in
Scrapy's ``*_BASE`` dicts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import import_module

import pluggy

from trawl import hookspecs
from trawl.errors import TrawlUsageError

PROJECT = "trawl"
hookimpl = pluggy.HookimplMarker(PROJECT)


def build_plugin_manager(
    extra: Mapping[str, object] | Iterable[str] = (),
    disabled: Iterable[str] = (),
) -> pluggy.PluginManager:
    """Return a manager with the entry-point plugins and ``extra`` registered.

    ``extra`` maps import paths to a truthy value (or ``None``/``False`` to
    switch one off), or is a plain list of import paths.
    """
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    blocked = {name.strip() for name in disabled if name and name.strip()}
    for name in blocked:
        pm.set_blocked(name)
    pm.load_setuptools_entrypoints(PROJECT)
    enabled = extra.items() if isinstance(extra, Mapping) else ((path, True) for path in extra)
    for path, on in enabled:
        if not on or path in blocked or pm.has_plugin(path):
            continue
        try:
            module = import_module(path)
        except ImportError as exc:
            raise TrawlUsageError(f"cannot import plugin {path!r} from TRAWL_PLUGINS: {exc}") from None
        if not pm.is_registered(module):  # already there through its entry point
            pm.register(module, name=path)
    return pm


def plugin_manager_from_settings(settings: Mapping[str, object]) -> pluggy.PluginManager:
    """The manager a crawl with these Scrapy settings uses."""
    get = getattr(settings, "getdict", None)
    extra = get("TRAWL_PLUGINS") if get else settings.get("TRAWL_PLUGINS", {})
    getlist = getattr(settings, "getlist", None)
    disabled = getlist("TRAWL_PLUGINS_DISABLED") if getlist else settings.get("TRAWL_PLUGINS_DISABLED", [])
    return build_plugin_manager(extra or {}, disabled or [])

"""``scrapy plugins``: which trawl plugins are registered, and their hooks.

The first thing to check when a plugin does not seem to run: is it installed
in this environment, and is it switched off by ``TRAWL_PLUGINS_DISABLED``?
Essential built-ins are marked: they cannot be switched off.
"""

from __future__ import annotations

import argparse
import sys

from trawl.errors import EXIT_USAGE, TrawlError
from trawl.pipeline.manager import ESSENTIAL_PLUGINS, plugin_manager_from_settings
from trawl.readcommand import ReadCommand


class Command(ReadCommand):
    """No spider loader needed: the plugin manager alone answers."""

    def short_desc(self) -> str:
        return "List the registered trawl plugins and the hooks each implements"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            plugins = plugin_manager_from_settings(self.settings)
        except TrawlError as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            self.exitcode = EXIT_USAGE
            return
        for name, plugin in sorted(plugins.list_name_plugin()):
            if plugin is None:  # a blocked name: listed below
                continue
            hooks = sorted(h.name for h in plugins.get_hookcallers(plugin) or [])
            where = getattr(plugin, "__name__", type(plugin).__name__)
            mark = " (essential)" if name in ESSENTIAL_PLUGINS else ""
            print(f"{name:<20} {where:<36} {', '.join(hooks)}{mark}")
        for name in sorted(n for n, plugin in plugins.list_name_plugin() if plugin is None):
            print(f"{name:<20} (disabled by TRAWL_PLUGINS_DISABLED)")

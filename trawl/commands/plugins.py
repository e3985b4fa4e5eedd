"""``scrapy plugins``: which trawl plugins are registered, and their hooks.

The first thing to check when a plugin does not seem to run: is it installed
in this environment, and is it switched off by ``TRAWL_PLUGINS_DISABLED``?
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand

from trawl.pluginmanager import plugin_manager_from_settings


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "List the registered trawl plugins and the hooks each implements"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        plugins = plugin_manager_from_settings(self.settings)
        disabled = set(self.settings.getlist("TRAWL_PLUGINS_DISABLED"))
        for name, plugin in sorted(plugins.list_name_plugin()):
            hooks = sorted(h.name for h in plugins.get_hookcallers(plugin) or [])
            where = getattr(plugin, "__name__", type(plugin).__name__)
            print(f"{name:<16} {where:<32} {', '.join(hooks)}")
        for name in sorted(disabled):
            print(f"{name:<16} (disabled by TRAWL_PLUGINS_DISABLED)")

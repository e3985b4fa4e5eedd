"""The reference docs cover what the code defines (after datasette's test_plugin_hooks_are_documented).

A hook added to ``trawl/hookspecs.py``, or a setting added to ``trawl/settings.py`` or
declared by a registered component (a source class, a store, a notifier kind, a plugin
module), without a word in ``docs/`` fails here, naming what is missing.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import scrapy.settings.default_settings as scrapy_defaults
from scrapy.settings import Settings

import trawl.settings
from trawl import hookspecs
from trawl.validation import declared_settings

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: Hooks that are being removed (stores are added through trawl_register_stores
#: alone): not documented, not required here. Delete this list with them.
#: Hooks that were removed: the docs must not describe them any more.
PENDING_REMOVAL = frozenset({"trawl_store_open", "trawl_store_write_batch", "trawl_store_close"})


def hook_specs() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(function)
        for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
        if hasattr(function, "trawl_spec")
    }


def documented_hooks(text: str) -> set[str]:
    """Hook names that appear in a heading or a code span."""
    places = re.findall(r"^#{1,6} .*$", text, flags=re.MULTILINE) + re.findall(r"`[^`\n]+`", text)
    return {name for place in places for name in re.findall(r"\btrawl_\w+", place)}


def trawl_settings() -> list[str]:
    """Settings trawl defines that are not Scrapy's own: the core ones of trawl/settings.py and
    those every registered component declares (sources, stores, notifier kinds, plugin modules)."""
    core = {
        name
        for name in vars(trawl.settings)
        if name.isupper() and not name.startswith("_") and not hasattr(scrapy_defaults, name)
    }
    settings = Settings()
    settings.setmodule(trawl.settings, priority="project")
    return sorted(core | set(declared_settings(settings)))


def documented_settings(text: str) -> set[str]:
    spans = re.findall(r"`[^`\n]+`", text)
    return {name for span in spans for name in re.findall(r"\b[A-Z][A-Z0-9_]+\b", span)}


PLUGINS_MD = (DOCS / "plugins.md").read_text(encoding="utf-8")
SETTINGS_MD = (DOCS / "settings.md").read_text(encoding="utf-8")
HOOKS = sorted(set(hook_specs()) - PENDING_REMOVAL)


def test_there_are_hooks_and_settings_to_check() -> None:
    # guards the discovery itself: an empty list would make every test below vacuous
    assert "trawl_filter_batch" in HOOKS and len(HOOKS) >= 5
    assert {"STORE_URI", "TRAWL_PLUGINS", "TRAWL_PLUGINS_DISABLED"} <= set(trawl_settings())
    assert "LOG_LEVEL" not in trawl_settings()  # Scrapy's, set by trawl: not trawl's own
    # declared by components, not by trawl/settings.py: a source, a store, a notifier kind, a plugin
    declared = {"URLSCAN_PAGE_SIZE", "SQLITE_CACHE_MB", "TELEGRAM_API_BASE_URL", "FILTER_CODE"}
    assert declared <= set(trawl_settings())


@pytest.mark.parametrize("hook", HOOKS)
def test_plugin_hooks_are_documented(hook: str) -> None:
    assert hook in documented_hooks(PLUGINS_MD), f"{hook} is not documented in docs/plugins.md"


@pytest.mark.parametrize("hook", HOOKS)
def test_documented_hook_signatures_match_the_spec(hook: str) -> None:
    signature = f"{hook}({', '.join(hook_specs()[hook].parameters)})"
    assert f"### `{signature}`" in PLUGINS_MD, f"docs/plugins.md has no heading ### `{signature}`"


def test_documented_hooks_exist() -> None:
    headings = re.findall(r"^### `(trawl_\w+)\(", PLUGINS_MD, flags=re.MULTILINE)
    assert headings, "no hook headings found in docs/plugins.md"
    assert sorted(set(headings) - set(hook_specs())) == []


def test_hooks_pending_removal_are_not_documented() -> None:
    assert documented_hooks(PLUGINS_MD) & PENDING_REMOVAL == set()


@pytest.mark.parametrize("setting", trawl_settings())
def test_settings_are_documented(setting: str) -> None:
    assert setting in documented_settings(SETTINGS_MD), f"{setting} is not documented in docs/settings.md"

"""The reference docs cover what the code defines (after datasette's test_plugin_hooks_are_documented).

A hook added to ``trawl/hookspecs.py``, or a setting added to ``trawl/settings.py`` or
declared by a registered component (a source class, a store, a notifier kind, a plugin
module), without a word in ``docs/`` fails here, naming what is missing.
"""

from __future__ import annotations

import inspect
import pkgutil
import re
from importlib import import_module, metadata
from pathlib import Path
from urllib.parse import unquote

import pluggy
import pytest

import trawl.settings
from tests.helpers.settings_doc import DOCS, SETTINGS_MD, trawl_settings
from trawl import hookspecs
from trawl.pipeline.manager import DEFAULT_PLUGINS, PROJECT

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


def documented_settings(text: str) -> set[str]:
    spans = re.findall(r"`[^`\n]+`", text)
    return {name for span in spans for name in re.findall(r"\b[A-Z][A-Z0-9_]+\b", span)}


PLUGINS_MD = (DOCS / "plugins.md").read_text(encoding="utf-8")
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


# --- commands, sources, links: the README and docs/ as a whole ------------------------------------

ROOT = DOCS.parent
README = ROOT / "README.md"
#: Every page a reader can follow a link from: the README and everything under docs/.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
#: Scrapy's commands that trawl keeps as they are and does not document (bench, shell...).
SCRAPY_COMMANDS_NOT_OURS = frozenset(
    {
        "bench",
        "check",
        "edit",
        "fetch",
        "genspider",
        "parse",
        "runspider",
        "settings",
        "shell",
        "startproject",
        "view",
    }
)


def trawl_commands() -> list[str]:
    """trawl's own commands: the modules of COMMANDS_MODULE and trawl's ``scrapy.commands`` entry points."""
    package = import_module(trawl.settings.COMMANDS_MODULE)
    names = {
        module.name for module in pkgutil.iter_modules(package.__path__) if not module.name.startswith("_")
    }
    for entry_point in metadata.entry_points(group="scrapy.commands"):
        if entry_point.value.startswith("trawl."):
            names.add(entry_point.name)
    return sorted(names)


def builtin_sources() -> list[str]:
    """The sources trawl's built-in plugins register, through the hook a third-party source uses."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(hookspecs)
    for path in DEFAULT_PLUGINS:
        manager.register(import_module(path), name=path)
    return sorted(name for registered in manager.hook.trawl_register_sources() for name in registered or {})


def prose(text: str) -> str:
    """A page without its fenced code blocks and code spans: where a Markdown link can be."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(page: Path) -> list[str]:
    """Targets of ``[text](target)`` links that point into the checkout (no scheme, not a bare anchor)."""
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(page.read_text(encoding="utf-8")))
    return [target for target in targets if not re.match(r"[a-z][a-z0-9+.-]*:|#", target)]


ALL_DOCS_TEXT = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def test_there_are_commands_sources_and_links_to_check() -> None:
    # guards the discovery itself, as test_there_are_hooks_and_settings_to_check does
    assert {"crawl", "search", "report", "schedule", "plugins", "list", "es-replay", "kibana-setup"} <= set(
        trawl_commands()
    )
    assert not set(trawl_commands()) & SCRAPY_COMMANDS_NOT_OURS
    assert {"wayback", "commoncrawl", "otx", "urlscan", "virustotal", "intelx", "ghostarchive"} <= set(
        builtin_sources()
    )
    assert len([link for page in PAGES for link in relative_links(page)]) >= 50


@pytest.mark.parametrize("command", trawl_commands())
def test_commands_are_documented(command: str) -> None:
    assert re.search(rf"\btrawl {re.escape(command)}\b", ALL_DOCS_TEXT), (
        f"`trawl {command}` appears nowhere in README.md or docs/"
    )


@pytest.mark.parametrize("source", builtin_sources())
def test_sources_have_a_page(source: str) -> None:
    page = DOCS / "sources" / f"{source}.md"
    assert page.is_file(), f"the {source} source has no docs/sources/{source}.md"
    assert f"trawl crawl {source}" in page.read_text(encoding="utf-8"), (
        f"{page} shows no `trawl crawl {source}`"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    broken = [
        link
        for link in relative_links(page)
        if not (page.parent / unquote(link.split("#", 1)[0])).resolve().exists()
    ]
    assert broken == [], f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_users_type_trawl_not_scrapy(page: Path) -> None:
    """``scrapy crawl`` works only inside the checkout; ``trawl crawl`` works everywhere."""
    commands = "|".join(re.escape(command) for command in trawl_commands())
    found = re.findall(rf"\bscrapy (?:{commands})\b", page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(ROOT)} tells users to type {found[0]!r}: use trawl"


def test_readme_is_for_a_newcomer() -> None:
    """About 250 lines at most: the reference lives in docs/."""
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 260, f"README.md has {lines} lines; move reference material into docs/"

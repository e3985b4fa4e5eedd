"""trawl's own settings, and the page of the docs that describes them.

:func:`trawl_settings` names every setting trawl defines that is not Scrapy's
own: the core ones of trawl/settings.py and those each registered component
declares (sources, stores, notifier kinds, plugin modules). ``SETTINGS_MD`` is
the text of docs/settings.md, ``DOCS`` the docs folder.
"""

from __future__ import annotations

from pathlib import Path

import scrapy.settings.default_settings as scrapy_defaults
from scrapy.settings import Settings

import trawl.settings
from trawl.validation import declared_settings

DOCS = Path(__file__).resolve().parents[2] / "docs"
SETTINGS_MD = (DOCS / "settings.md").read_text(encoding="utf-8")


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

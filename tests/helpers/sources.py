"""The sources trawl registers, and the settings a crawler of each runs with.

:func:`registered_sources` is every source trawl's plugins register (what
``trawl list`` offers, the record sources included), by name;
:func:`project_settings` trawl's settings module as a run loads it;
:func:`crawler_settings` those settings with a source's own over them.
"""

from __future__ import annotations

from typing import Any


def registered_sources() -> dict[str, type]:
    """Every source trawl's plugins register (what ``trawl list`` offers), the record sources included."""
    from trawl.sources.loader import PluginSpiderLoader

    loader = PluginSpiderLoader(project_settings())
    return {name: loader.load(name) for name in loader.list() if name != "all"}


def project_settings() -> Any:
    from scrapy.settings import Settings

    settings = Settings()
    settings.setmodule("trawl.settings", priority="project")
    return settings


def crawler_settings(source: type) -> Any:
    """The settings a crawler of ``source`` runs with: trawl's, and the source's own limits over them."""
    settings = project_settings()
    source.update_settings(settings)  # type: ignore[attr-defined]
    return settings

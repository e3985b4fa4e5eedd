"""A source's own download limits: how long an answer may take, how large it may be.

Each source class declares the limits that fit its API (``default_download_timeout``,
``default_download_maxsize``, ``default_download_warnsize``); the user overrides
them per source with a ``{"source": value}`` setting, or for every source with
Scrapy's own setting given on the command line:

=========================  ==========================  ============================
Scrapy's setting           per source                  declared on the class as
=========================  ==========================  ============================
``DOWNLOAD_TIMEOUT``       ``SOURCE_DOWNLOAD_TIMEOUT``  ``default_download_timeout``
``DOWNLOAD_MAXSIZE``       ``SOURCE_DOWNLOAD_MAXSIZE``  ``default_download_maxsize``
``DOWNLOAD_WARNSIZE``      ``SOURCE_DOWNLOAD_WARNSIZE`` ``default_download_warnsize``
=========================  ==========================  ============================

Each source runs as a crawler of its own (even in ``crawl all``), so the value
becomes that crawler's Scrapy setting, read by Scrapy's download handler and
``HttpCompressionMiddleware`` (which counts a compressed body's inflated size
against the same ``DOWNLOAD_MAXSIZE``). Spider attributes (``download_maxsize``)
would do too, but Scrapy 2.13 deprecated them, and a setting shows in ``runs.settings``.

Precedence: the per-source setting wins over everything; Scrapy's setting given
on the command line (``-s DOWNLOAD_MAXSIZE=N``) wins over the class's default,
which wins over the project's (trawl.settings).
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import BaseSettings

from trawl.errors import TrawlUsageError
from trawl.validation import validate_settings

#: (Scrapy's setting, the per-source setting, the class attribute, how a value is read).
LIMITS: tuple[tuple[str, str, str, type], ...] = (
    ("DOWNLOAD_TIMEOUT", "SOURCE_DOWNLOAD_TIMEOUT", "default_download_timeout", float),
    ("DOWNLOAD_MAXSIZE", "SOURCE_DOWNLOAD_MAXSIZE", "default_download_maxsize", int),
    ("DOWNLOAD_WARNSIZE", "SOURCE_DOWNLOAD_WARNSIZE", "default_download_warnsize", int),
)

#: Scrapy's "spider" settings priority: over the project's, under the command line's.
SPIDER_PRIORITY = 30


def apply_source_limits(source: Any, settings: Any) -> None:
    """Set this source's crawler's ``DOWNLOAD_*`` limits from its per-source settings or class defaults."""
    for scrapy_name, per_source, attribute, kind in LIMITS:
        given = settings.getdict(per_source)
        default = getattr(source, attribute, None)
        if source.name in given:
            priority = max(settings.getpriority(per_source) or 0, SPIDER_PRIORITY)
            settings.set(scrapy_name, kind(given[source.name]), priority=priority)
        elif default is not None:
            settings.set(scrapy_name, kind(default), priority="spider")


def check_source_limits(source: Any, settings: Any) -> None:
    """One-line ``TrawlUsageError`` if this source's limits, as its crawler will get them, are out of bounds.

    The bounds are the settings' own (``DOWNLOAD_TIMEOUT`` at most an hour): a value given with
    ``-s`` is checked with the others before the reactor starts, but a class default (a plugin's
    source declaring ``default_download_timeout = 7200``) only becomes the setting in the
    crawler's ``update_settings``; checked there, in ``from_crawler``, it failed inside the
    reactor with a traceback. So the command checks the outcome of :func:`apply_source_limits`
    on a copy first, and says where the value came from.
    """
    if not isinstance(settings, BaseSettings):
        return
    applied = settings.copy()
    apply_source_limits(source, applied)
    for scrapy_name, per_source, attribute, _ in LIMITS:
        try:
            validate_settings(applied, names=[scrapy_name])
        except TrawlUsageError as exc:
            if source.name in settings.getdict(per_source) or getattr(source, attribute, None) is None:
                raise
            raise TrawlUsageError(
                f"{exc} (the {source.name} source's {attribute}; "
                f"set {per_source}='{{\"{source.name}\": N}}' to override it)"
            ) from None

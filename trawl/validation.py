"""Every trawl setting, and the Scrapy settings trawl reads, checked before anything starts.

A value read where raising cannot stop the run fails open: a malformed
``RATE_LIMITS`` was read in two ``spider_opened`` signal handlers, whose
tracebacks Scrapy logs and swallows, so the source's gate never started and
its requests went out ungated; ``PROGRESS_INTERVAL=abc`` ended in
asyncio's "Task exception was never retrieved"; ``RETRY_LIMITS={"wayback": -1}``
was taken as it came. Here each core setting has its check, declared next to
its name in :data:`SETTINGS`; every component declares its own
(:mod:`trawl.settings_checks`), and :func:`declared_settings` gathers them
from the registered ones: the sources of ``trawl_register_sources``, the
stores of ``trawl_register_stores``, the notifier kinds of
``trawl_register_notifiers``, and every plugin module's ``settings_declared``
(the notifier's, the URL filter's). A third-party component is checked exactly
as a built-in is. A bad value is one :class:`~trawl.errors.TrawlUsageError`
naming the setting and its valid form.

:func:`validate_settings` runs in the crawl command before the reactor starts
(one ``trawl: error:`` line, exit status 2, nothing sent) and again in
``SourceSpider.from_crawler``, for runs that bypass the command (scrapyd, a
script's ``CrawlerProcess``): raising there stops the crawler before its first
request. Checks only read; they never create files or directories.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from trawl.common.files import umask_check
from trawl.distributed.connection import check_redis_url
from trawl.errors import TrawlUsageError
from trawl.lazyclasses import LazyClasses
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.politeness.rates import parse_rate
from trawl.readsettings import SETTINGS_PRIORITIES
from trawl.settings_checks import (
    DAY,
    Check,
    Duration,
    Setting,
    apply_defaults,
    bound_text,
    fail,
    http_url,
    real,
    scrapy_bool,
    seconds,
    status_list,
    text,
    text_list,
    whole,
    whole_value,
)
from trawl.stores.registry import check_store_uri

if TYPE_CHECKING:  # a type only: read commands check their settings without importing Scrapy
    from scrapy.settings import BaseSettings


def _source_map(
    settings: BaseSettings, name: str, sources: Collection[str] | None, form: str
) -> dict[str, Any]:
    raw = settings.get(name)
    try:
        mapping = settings.getdict(name)
    except (TypeError, ValueError):
        raise fail(name, f"must be a JSON object by source, e.g. {form}", raw) from None
    # Only keys typed with -s: a project (or trawl's defaults) may name sources a plugin setting left out.
    typed = (settings.getpriority(name) or 0) >= SETTINGS_PRIORITIES["cmdline"]
    for source in mapping:
        if typed and sources is not None and source not in sources:
            raise TrawlUsageError(
                f"{name} names no source {source!r} (known: {', '.join(sorted(sources))}); e.g. {form}"
            )
    return mapping


#: The longest period of a rate: a day, the longest quota window an upstream here counts
#: (VirusTotal's public key: 500 a day, ``500/24h``); ``1/1e9s`` is a source stopped, not a rate.
RATE_PERIOD_MAX = DAY


def rates(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    form = '{"wayback": "30/60s"} (N requests per T seconds)'
    for source, value in _source_map(settings, name, sources, form).items():
        try:
            _, period = parse_rate(value)
        except TrawlUsageError:
            raise fail(f"{name}[{source!r}]", "must be N requests per T seconds (30/60s)", value) from None
        if period > RATE_PERIOD_MAX:
            raise fail(f"{name}[{source!r}]", f"has a period of at most {bound_text(DAY, 'seconds')}", value)


class DurationBySource(Duration):
    """A duration per source, ``{"wayback": 120}``, each value bounded as :class:`Duration` is."""

    def __call__(self, settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        for source, value in _source_map(settings, name, sources, '{"wayback": 120}').items():
            self.value(value, f"{name}[{source!r}]")


def counts_by_source(minimum: int) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        form = f'{{"wayback": {max(minimum, 2)}}}'
        for source, value in _source_map(settings, name, sources, form).items():
            whole_value(value, f"{name}[{source!r}]", minimum, None)

    return check


def store_uri(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """A scheme some store plugin offers, a URI that store can use (a SQLite file's directory exists)."""
    uri = str(settings.get(name) or "").strip()
    if uri:
        check_store_uri(uri, plugin_manager_from_settings(settings))


def plugins(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """``TRAWL_PLUGINS`` and ``TRAWL_PLUGINS_DISABLED``: the plugin manager refuses what it cannot use."""
    plugin_manager_from_settings(settings)


def proxies(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """``PROXY_LIST`` and ``PROXY_LIST_FILE``: every proxy an http(s) URL, the file readable."""
    from trawl.politeness.proxies import read_proxy_list  # its middleware imports Scrapy

    read_proxy_list(settings)


def log_level(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = settings.get(name)
    if not isinstance(logging.getLevelName(str(raw).upper()), int):
        raise fail(name, "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL", raw)


# --- the settings -------------------------------------------------------------------------

#: Every core setting trawl defines (trawl.settings), and those of Scrapy's that trawl reads,
#: with its check; the components' own are in :func:`declared_settings`.
SETTINGS: dict[str, Check] = {
    # storage
    "STORE_URI": store_uri,
    "BATCH_COALESCE_ROWS": whole(0),
    "STORE_BACKLOG_ROWS": whole(0),
    # Scrapy's, with trawl's default (16 MiB): bytes, at least one.
    "SCRAPER_SLOT_MAX_ACTIVE_SIZE": whole(1),
    "TRAWL_REDIS_URL": check_redis_url,
    # A heartbeat every second at most 10 minutes apart: a dead worker's work waits 3 of them.
    "QUEUE_HEARTBEAT": seconds(0.1, maximum=600),
    "QUEUE_MAX_DEATHS": whole(1),
    "SPREAD_PAGES": scrapy_bool,
    "SPREAD_HOLD": whole(0),
    # A page held a minute is 300 times the default; longer, and the store and progress lag behind.
    "BATCH_COALESCE_SECONDS": seconds(0.0, above=True, maximum=60),
    # plugins
    "TRAWL_PLUGINS": plugins,
    "TRAWL_PLUGINS_DISABLED": plugins,
    "TRAWL_RUN_ID": text,
    # files trawl creates (trawl.common.files)
    "UMASK": umask_check,
    # progress and logs
    # Less often than hourly is no progress line; 0 or less switches them off.
    "PROGRESS_INTERVAL": seconds(None, maximum=3600),
    # No request waits longer than DOWNLOAD_TIMEOUT's bound, an hour.
    "PROGRESS_STALL_AFTER": seconds(0, above=True, maximum=3600),
    "TRAWL_LOG_JSON": scrapy_bool,
    "TRAWL_LOG_ALL": scrapy_bool,
    "LOG_LEVEL": log_level,
    # politeness and retries
    "RATE_LIMITS": rates,
    "RATE_LIMITS_ENABLED": scrapy_bool,
    "SOURCE_CONCURRENCY": counts_by_source(1),
    "RETRY_LIMITS": counts_by_source(0),
    # Backoffs: the first at most 10 minutes (the default is 1 s), the cap at most an hour.
    "RETRY_BACKOFF_BASE": seconds(0, maximum=600),
    "RETRY_BACKOFF_MAX": seconds(0, maximum=3600),
    # A day: the longest quota window an upstream here resets on (VirusTotal's daily quota).
    "RETRY_MAX_PAUSE": seconds(0, maximum=DAY),
    # The first pause of a ban, doubling up to RETRY_MAX_PAUSE: an hour at most (default 2 min).
    "RETRY_BAN_PAUSE": seconds(0, above=True, maximum=3600),
    "RETRY_ENABLED": scrapy_bool,
    "RETRY_TIMES": whole(0),
    "RETRY_HTTP_CODES": status_list,
    "PROXY_LIST": proxies,
    "PROXY_LIST_FILE": proxies,
    "PROXY_BAN_STATUSES": status_list,
    # A banned proxy's first rest at most an hour (default 30 s), its longest a day (default 1 h).
    "PROXY_BACKOFF_BASE": seconds(0, maximum=3600),
    "PROXY_BACKOFF_MAX": seconds(0, maximum=DAY),
    "PROXY_MAX_TRIES": whole(1),
    "AUTOTHROTTLE_ENABLED": scrapy_bool,
    # Delays between two requests to one source: 10 minutes to start with, an hour at most.
    "AUTOTHROTTLE_START_DELAY": seconds(0, maximum=600),
    "AUTOTHROTTLE_MAX_DELAY": seconds(0, maximum=3600),
    "AUTOTHROTTLE_TARGET_CONCURRENCY": real(0, above=True),
    "CONCURRENT_REQUESTS": whole(1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": whole(1),
    # An hour for one answer: the slowest CDX page takes minutes; a longer wait is a hung server.
    "DOWNLOAD_TIMEOUT": seconds(0, above=True, maximum=3600),
    "SOURCE_DOWNLOAD_TIMEOUT": DurationBySource(0, above=True, maximum=3600),
    "DOWNLOAD_MAXSIZE": whole(0),
    "DOWNLOAD_WARNSIZE": whole(0),
    "SOURCE_DOWNLOAD_MAXSIZE": counts_by_source(0),
    "SOURCE_DOWNLOAD_WARNSIZE": counts_by_source(0),
    "META_COPY_WARN_SKIP_KEYS": text_list,
    # the run summary (and so notifications)
    "NOTIFY_MAX_URLS": whole(0),
    # trawl schedule (recurring schedules in scrapyd)
    "SCRAPYD_URL": http_url(),
    "SCRAPYD_PROJECT": text,
}

#: What :func:`trawl.common.logs.install_log_handler` reads, checked before any line is logged.
LOGGING_SETTINGS = ("LOG_LEVEL", "TRAWL_LOG_JSON", "TRAWL_LOG_ALL")


def declared_settings(settings: Mapping[str, Any], every: bool = True) -> dict[str, Setting]:
    """The settings the registered components declare, by name.

    The plugins are those of these settings (``TRAWL_PLUGINS``...): a source,
    store, notifier kind or plugin module a third party registers is gathered
    exactly as trawl's own. Raises :class:`TrawlUsageError` if the plugins
    cannot be loaded.

    ``every=False``: only the components already imported, and the store ``STORE_URI``
    names: a crawl's start. Importing every registered source and store to read their
    declarations was 0.6-0.7 s of CPU and 598 modules at every crawl's start (a wayback
    crawl of 500,000 captures takes 5 s of CPU); a component reads its own settings with
    its declared default, so a run needs only its own components' defaults applied.
    """
    pm = plugin_manager_from_settings(settings)
    declared: dict[str, Setting] = {}
    for plugin in pm.get_plugins():
        declared.update(getattr(plugin, "settings_declared", None) or {})
    if not every:
        _import_named_store(settings, pm)
    hooks = (pm.hook.trawl_register_sources, pm.hook.trawl_register_stores, pm.hook.trawl_register_notifiers)
    for hook in hooks:
        for registered in hook():
            for name in registered or {}:
                if not every and isinstance(registered, LazyClasses) and not registered.imported(name):
                    continue
                component = registered[name]
                own = getattr(component, "declared_settings", None)  # a source's: its base URL, key...
                declared.update(own() if callable(own) else getattr(component, "settings_declared", {}))
    return declared


def _import_named_store(settings: Mapping[str, Any], pm: Any) -> None:
    """The class of the run's store, looked up (so imported): its settings are the run's."""
    from trawl.stores.registry import store_classes, uri_scheme

    uri = str(settings.get("STORE_URI") or "").strip()
    if not uri:
        return
    classes = store_classes(pm)
    scheme = uri_scheme(uri)
    if scheme in classes:
        classes[scheme]  # noqa: B018 - the lookup imports it


def run_settings(settings: BaseSettings) -> dict[str, Setting]:
    """The declared settings a run needs: its own components' (:func:`declared_settings` with
    ``every=False``), or every component's when a setting was given with ``-s`` that none of those
    declares (``-s OTX_API_KEY=...`` on a wayback crawl is still checked, a misspelling caught)."""
    used = declared_settings(settings, every=False)
    cmdline = SETTINGS_PRIORITIES["cmdline"]
    for name in settings:
        if name in used or name in SETTINGS or (settings.getpriority(name) or 0) < cmdline:
            continue
        if not _scrapy_default(name):
            return declared_settings(settings)
    return used


def _scrapy_default(name: str) -> bool:
    from scrapy.settings import default_settings

    return hasattr(default_settings, name)


def all_checks(settings: Mapping[str, Any]) -> dict[str, Check]:
    """Every setting with its check: the core ones, then the components'."""
    checks = dict(SETTINGS)
    checks.update({name: setting.check for name, setting in declared_settings(settings).items()})
    return checks


def apply_declared_defaults(settings: BaseSettings) -> None:
    """Give the run's components' settings without a value their declared default (lowest priority)."""
    apply_defaults(settings, run_settings(settings))


def validate_settings(
    settings: BaseSettings, sources: Collection[str] | None = None, names: Collection[str] | None = None
) -> None:
    """Raise :class:`TrawlUsageError` for the first setting that cannot work.

    ``sources``: the known source names, for the settings keyed by source
    (``RATE_LIMITS``...); ``None`` skips that check. ``names``: only these.
    A setting that is not set at all is left to its reader (a component's
    reads its declared default). The core settings come first: ``TRAWL_PLUGINS``
    decides which components there are, and so which settings they declare.
    """
    if names is None:
        check_setting_names(settings)
    _check_all(settings, SETTINGS, sources, names)
    if names is None or set(names) - set(SETTINGS):
        declared = {name: s.check for name, s in run_settings(settings).items() if name not in SETTINGS}
        _check_all(settings, declared, sources, names)


def _check_all(
    settings: BaseSettings,
    checks: Mapping[str, Check],
    sources: Collection[str] | None,
    names: Collection[str] | None,
) -> None:
    for name, check in checks.items():
        if names is not None and name not in names:
            continue
        if settings.get(name) is None:
            continue
        check(settings, name, sources)


# --- misspelt setting names ------------------------------------------------------------------


def known_setting_names(settings: BaseSettings) -> list[str]:
    """trawl's own setting names, the core ones and every registered component's declared ones:
    what a name typed with ``-s`` is compared with for a misspelling."""
    return [*SETTINGS, *(name for name in declared_settings(settings) if name not in SETTINGS)]


def check_setting_names(settings: BaseSettings) -> None:
    """Refuse a name typed with ``-s`` that nothing defines but that is one typo from a trawl setting.

    ``-s PROGRES_INTERVAL=5`` was silently ignored. A name
    far from every trawl setting stays allowed: Scrapy has hundreds, and
    extensions and spiders read their own. Known means trawl's or one of
    Scrapy's defaults.
    """
    cmdline = SETTINGS_PRIORITIES["cmdline"]
    given = [name for name in settings if (settings.getpriority(name) or 0) >= cmdline]
    if not given:
        return
    trawl_names = [*SETTINGS, *run_settings(settings)]
    for name in given:
        if name in trawl_names or _scrapy_default(name):
            continue
        close = difflib.get_close_matches(name.upper(), trawl_names, n=1, cutoff=0.85)
        if close:
            raise TrawlUsageError(f"unknown setting {name}: did you mean {close[0]}?")

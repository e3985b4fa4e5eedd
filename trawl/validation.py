"""Every trawl setting, and the Scrapy settings trawl reads, checked before anything starts.

A value read where raising cannot stop the run fails open: a malformed
``RATE_LIMITS`` was read in two ``spider_opened`` signal handlers, whose
tracebacks Scrapy logs and swallows, so the source's gate never started and
its requests went out ungated (issue 9); ``PROGRESS_INTERVAL=abc`` ended in
asyncio's "Task exception was never retrieved"; ``RETRY_LIMITS={"wayback": -1}``
was taken as it came. Here each setting has its check, declared next to its
name in :data:`SETTINGS` (tests/test_validation.py fails for a setting of
``trawl/settings.py`` without one), and a bad value is one
:class:`~trawl.errors.TrawlUsageError` naming the setting and its valid form.

:func:`validate_settings` runs in the crawl command before the reactor starts
(one ``trawl: error:`` line, exit status 2, nothing sent) and again in
``SourceSpider.from_crawler``, for runs that bypass the command (scrapyd, a
script's ``CrawlerProcess``): raising there stops the crawler before its first
request. Checks only read; they never create files or directories.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
from collections.abc import Callable, Collection
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings, default_settings

from trawl.errors import TrawlUsageError
from trawl.pipeline.filters import check_status_codes
from trawl.politeness.rates import parse_rate

#: ``check(settings, name, sources)``: raise :class:`TrawlUsageError` for a bad value.
Check = Callable[[BaseSettings, str, Collection[str] | None], None]


def _fail(name: str, expected: str, raw: Any) -> TrawlUsageError:
    return TrawlUsageError(f"{name} {expected}, got {raw!r}")


# --- value checks: (value, label) -> parsed value, or TrawlUsageError --------------------


def _whole(raw: Any, label: str, minimum: int | None, maximum: int | None) -> int:
    form = _range_text("a whole number", minimum, maximum)
    if isinstance(raw, bool) or isinstance(raw, float) and not raw.is_integer():
        raise _fail(label, f"must be {form}", raw)
    try:
        value = int(raw) if isinstance(raw, int | float) else int(str(raw).strip())
    except (TypeError, ValueError):
        raise _fail(label, f"must be {form}", raw) from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise _fail(label, f"must be {form}", raw)
    return value


def _real(raw: Any, label: str, minimum: float | None, above: bool, unit: str = "") -> float:
    form = f"a number of {unit}" if unit else "a number"
    if minimum is not None:
        form += f" ({'above' if above else 'at least'} {minimum:g})"
    if isinstance(raw, bool):
        raise _fail(label, f"must be {form}", raw)
    try:
        value = float(raw) if isinstance(raw, int | float) else float(str(raw).strip())
    except (TypeError, ValueError):
        raise _fail(label, f"must be {form}", raw) from None
    if not math.isfinite(value) or (minimum is not None and (value <= minimum if above else value < minimum)):
        raise _fail(label, f"must be {form}", raw)
    return value


def _range_text(what: str, minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{what} from {minimum} to {maximum}"
    if minimum is not None:
        return f"{what} (at least {minimum})"
    return what


# --- setting checks -----------------------------------------------------------------------


def whole(minimum: int | None = 0, maximum: int | None = None) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        _whole(settings.get(name), name, minimum, maximum)

    return check


def real(minimum: float | None = 0.0, above: bool = False, unit: str = "") -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        _real(settings.get(name), name, minimum, above, unit)

    return check


def seconds(minimum: float | None = 0.0, above: bool = False) -> Check:
    return real(minimum, above, "seconds")


def scrapy_bool(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Read with Scrapy's ``getbool``, which raises on anything but 0/1/True/False/true/false."""
    try:
        settings.getbool(name)
    except ValueError:
        raise _fail(name, "must be True or False (or 1 or 0)", settings.get(name)) from None


_WORDS = {"1", "0", "true", "false", "yes", "no", "on", "off", ""}


def word_bool(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """A boolean the store reads as text (``true``/``false``, ``yes``/``no``, ``on``/``off``, 1/0)."""
    raw = settings.get(name)
    if not isinstance(raw, bool | int) and str(raw).strip().lower() not in _WORDS:
        raise _fail(name, "must be true or false", raw)


def text(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = settings.get(name)
    if raw is not None and not isinstance(raw, str):
        raise _fail(name, "must be text", raw)


def text_list(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Comma-separated text or a list of texts (the waymore filter lists)."""
    raw = settings.get(name)
    if not (isinstance(raw, str) or isinstance(raw, list | tuple) and all(isinstance(v, str) for v in raw)):
        raise _fail(name, "must be a comma-separated list", raw)


def one_of(*choices: str) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        raw = settings.get(name)
        if str(raw).strip().lower() not in choices:
            raise _fail(name, f"must be one of {', '.join(choices)}", raw)

    return check


def http_url(optional: bool = False) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        from urllib.parse import urlsplit

        raw = settings.get(name)
        value = str(raw or "").strip()
        if optional and not value:
            return
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _fail(name, "must be an http(s) URL such as https://host[:port][/path]", raw)

    return check


def status_list(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """HTTP statuses as Scrapy's ``getlist`` reads them: ``[403, 407]``, or ``403,407`` as text."""
    raw = settings.get(name)
    if isinstance(raw, str) and raw.strip().startswith("["):
        try:
            values = json.loads(raw)
        except ValueError:
            raise _fail(name, "must be HTTP statuses such as [403, 407] or 403,407", raw) from None
    else:
        values = settings.getlist(name)
    if not isinstance(values, list):
        raise _fail(name, "must be HTTP statuses such as [403, 407] or 403,407", raw)
    for value in values:
        _whole(value, name, 100, 599)


def status_codes(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    check_status_codes(name, settings.get(name))


def _source_map(
    settings: BaseSettings, name: str, sources: Collection[str] | None, form: str
) -> dict[str, Any]:
    raw = settings.get(name)
    try:
        mapping = settings.getdict(name)
    except (TypeError, ValueError):
        raise _fail(name, f"must be a JSON object by source, e.g. {form}", raw) from None
    # Only keys typed with -s: a project (or trawl's defaults) may name sources a plugin setting left out.
    typed = (settings.getpriority(name) or 0) >= SETTINGS_PRIORITIES["cmdline"]
    for source in mapping:
        if typed and sources is not None and source not in sources:
            raise TrawlUsageError(
                f"{name} names no source {source!r} (known: {', '.join(sorted(sources))}); e.g. {form}"
            )
    return mapping


def rates(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    form = '{"wayback": "30/60s"} (N requests per T seconds)'
    for source, value in _source_map(settings, name, sources, form).items():
        try:
            parse_rate(value)
        except TrawlUsageError:
            raise _fail(f"{name}[{source!r}]", "must be N requests per T seconds (30/60s)", value) from None


def seconds_by_source(minimum: float, above: bool = False) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        for source, value in _source_map(settings, name, sources, '{"wayback": 120}').items():
            _real(value, f"{name}[{source!r}]", minimum, above, "seconds")

    return check


def counts_by_source(minimum: int) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        form = f'{{"wayback": {max(minimum, 2)}}}'
        for source, value in _source_map(settings, name, sources, form).items():
            _whole(value, f"{name}[{source!r}]", minimum, None)

    return check


def store_uri(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """A scheme some store plugin offers, a URI that store can use (a SQLite file's directory exists)."""
    from trawl.pipeline.manager import plugin_manager_from_settings
    from trawl.stores.registry import check_store_uri

    uri = str(settings.get(name) or "").strip()
    if uri:
        check_store_uri(uri, plugin_manager_from_settings(settings))


def plugins(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """``TRAWL_PLUGINS`` and ``TRAWL_PLUGINS_DISABLED``: the plugin manager refuses what it cannot use."""
    from trawl.pipeline.manager import plugin_manager_from_settings

    plugin_manager_from_settings(settings)


def proxies(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """``PROXY_LIST`` and ``PROXY_LIST_FILE``: every proxy an http(s) URL, the file readable."""
    from trawl.politeness.proxies import read_proxy_list

    read_proxy_list(settings)


def log_level(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = settings.get(name)
    if not isinstance(logging.getLevelName(str(raw).upper()), int):
        raise _fail(name, "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL", raw)


def index_prefix(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    from trawl.stores.elasticsearch.templates import names_from

    names_from(settings)


def replicas(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = str(settings.get(name)).strip()
    low, dash, high = raw.partition("-")
    if not (low.isdigit() and (not dash or high.isdigit() or high == "all")):
        raise _fail(name, "must be a number of replicas, or a range such as 0-1 or 0-all", raw)


def notify_urls(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Every receiver a kind trawl can notify; their tokens registered as secrets there and then."""
    from trawl.notify.targets import read_receivers

    read_receivers(settings)


def notify_on(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    from trawl.notify import read_notify_on

    read_notify_on(settings.get(name))


# --- the settings -------------------------------------------------------------------------

#: Every setting trawl defines, and those of Scrapy's that trawl reads, with its check.
SETTINGS: dict[str, Check] = {
    # storage
    "STORE_URI": store_uri,
    "SQLITE_SYNCHRONOUS": one_of("off", "normal", "full", "extra", "0", "1", "2", "3"),
    "SQLITE_CACHE_MB": whole(1),
    "BATCH_COALESCE_ROWS": whole(0),
    "BATCH_COALESCE_SECONDS": seconds(0.0, above=True),
    # plugins
    "TRAWL_PLUGINS": plugins,
    "TRAWL_PLUGINS_DISABLED": plugins,
    "TRAWL_RUN_ID": text,
    # progress and logs
    "PROGRESS_INTERVAL": seconds(None),
    "PROGRESS_STALL_AFTER": seconds(0, above=True),
    "TRAWL_LOG_JSON": scrapy_bool,
    "TRAWL_LOG_ALL": scrapy_bool,
    "LOG_LEVEL": log_level,
    # politeness and retries
    "RATE_LIMITS": rates,
    "RATE_LIMITS_ENABLED": scrapy_bool,
    "SOURCE_CONCURRENCY": counts_by_source(1),
    "RETRY_LIMITS": counts_by_source(0),
    "RETRY_BACKOFF_BASE": seconds(0),
    "RETRY_BACKOFF_MAX": seconds(0),
    "RETRY_MAX_PAUSE": seconds(0),
    "RETRY_BAN_PAUSE": seconds(0, above=True),
    "RETRY_ENABLED": scrapy_bool,
    "RETRY_TIMES": whole(0),
    "RETRY_HTTP_CODES": status_list,
    "PROXY_LIST": proxies,
    "PROXY_LIST_FILE": proxies,
    "PROXY_BAN_STATUSES": status_list,
    "PROXY_BACKOFF_BASE": seconds(0),
    "PROXY_BACKOFF_MAX": seconds(0),
    "PROXY_MAX_TRIES": whole(1),
    "AUTOTHROTTLE_ENABLED": scrapy_bool,
    "AUTOTHROTTLE_START_DELAY": seconds(0),
    "AUTOTHROTTLE_MAX_DELAY": seconds(0),
    "AUTOTHROTTLE_TARGET_CONCURRENCY": real(0, above=True),
    "CONCURRENT_REQUESTS": whole(1),
    "CONCURRENT_REQUESTS_PER_DOMAIN": whole(1),
    "DOWNLOAD_TIMEOUT": seconds(0, above=True),
    "SOURCE_DOWNLOAD_TIMEOUT": seconds_by_source(0, above=True),
    # sources
    "WAYBACK_BASE_URL": http_url(),
    "WAYBACK_CDX_PATH": text,
    "WAYBACK_DIALECT": one_of("auto", "ia", "pywb"),
    "WAYBACK_PAGE_SIZE": whole(0),
    "COMMONCRAWL_BASE_URL": http_url(),
    "COMMONCRAWL_COLLINFO_TTL": seconds(0),
    "TRAWL_CACHE_DIR": text,
    "OTX_BASE_URL": http_url(),
    "OTX_API_KEY": text,
    "URLSCAN_BASE_URL": http_url(),
    "URLSCAN_API_KEY": text,
    "URLSCAN_API_KEYS": text,
    "URLSCAN_PAGE_SIZE": whole(1, 10000),
    "URLSCAN_MAX_WAIT": whole(0, 86400 * 7),
    "VIRUSTOTAL_BASE_URL": http_url(),
    "VIRUSTOTAL_API_KEY": text,
    "VIRUSTOTAL_QUOTA_WAIT": seconds(0),
    "INTELX_BASE_URL": http_url(),
    "INTELX_FALLBACK_BASE_URL": http_url(optional=True),
    "INTELX_API_KEY": text,
    "INTELX_MAX_RESULTS": whole(1),
    "INTELX_PAGE_SIZE": whole(1),
    "INTELX_SEARCH_TIMEOUT": whole(0),
    "INTELX_POLL_INTERVAL": seconds(0),
    "INTELX_MAX_POLLS": whole(1),
    "GHOSTARCHIVE_BASE_URL": http_url(),
    # filters (waymore's)
    "FILTER_CODE": status_codes,
    "MATCH_CODE": status_codes,
    "FILTER_MIME": text_list,
    "MATCH_MIME": text_list,
    "FILTER_URL": text_list,
    "FILTER_KEYWORDS": text_list,
    # notifications
    "NOTIFY_URLS": notify_urls,
    "NOTIFY_ON": notify_on,
    "NOTIFY_MAX_URLS": whole(0),
    "NOTIFY_TIMEOUT": seconds(0, above=True),
    "TELEGRAM_API_BASE_URL": http_url(),
    # Elasticsearch store
    "ELASTICSEARCH_API_KEY": text,
    "ELASTICSEARCH_CA_CERTS": text,
    "ELASTICSEARCH_VERIFY_CERTS": word_bool,
    "ELASTICSEARCH_TIMEOUT": seconds(0, above=True),
    "ELASTICSEARCH_INDEX_PREFIX": index_prefix,
    "ELASTICSEARCH_SHARDS": whole(1),
    "ELASTICSEARCH_REPLICAS": replicas,
    "ELASTICSEARCH_BULK_DOCS": whole(1),
    "ELASTICSEARCH_RETRIES": whole(0),
    "ELASTICSEARCH_BACKOFF": seconds(0),
    "ELASTICSEARCH_BACKOFF_MAX": seconds(0),
    "ELASTICSEARCH_DEAD_LETTERS": text,
    # trawl schedule (recurring schedules in scrapyd)
    "SCRAPYD_URL": http_url(),
    "SCRAPYD_PROJECT": text,
}

#: What :func:`trawl.run.logs.install_log_handler` reads, checked before any line is logged.
LOGGING_SETTINGS = ("LOG_LEVEL", "TRAWL_LOG_JSON", "TRAWL_LOG_ALL")


def validate_settings(
    settings: BaseSettings, sources: Collection[str] | None = None, names: Collection[str] | None = None
) -> None:
    """Raise :class:`TrawlUsageError` for the first setting that cannot work.

    ``sources``: the known source names, for the settings keyed by source
    (``RATE_LIMITS``...); ``None`` skips that check. ``names``: only these.
    A setting that is not set at all (no trawl.settings) is left to its reader.
    """
    if names is None:
        check_setting_names(settings)
    for name, check in SETTINGS.items():
        if names is not None and name not in names:
            continue
        if settings.get(name) is None:
            continue
        check(settings, name, sources)


# --- misspelt setting names ------------------------------------------------------------------


def known_setting_names(settings: BaseSettings) -> list[str]:
    """trawl's own setting names: what a name typed with ``-s`` is compared with for a misspelling."""
    return list(SETTINGS)


def check_setting_names(settings: BaseSettings) -> None:
    """Refuse a name typed with ``-s`` that nothing defines but that is one typo from a trawl setting.

    ``-s PROGRES_INTERVAL=5`` was silently ignored (issue 13, item 6). A name
    far from every trawl setting stays allowed: Scrapy has hundreds, and
    extensions and spiders read their own. Known means trawl's or one of
    Scrapy's defaults.
    """
    cmdline = SETTINGS_PRIORITIES["cmdline"]
    trawl_names = known_setting_names(settings)
    for name in settings:
        if (settings.getpriority(name) or 0) < cmdline or name in trawl_names:
            continue
        if hasattr(default_settings, name):
            continue
        close = difflib.get_close_matches(name.upper(), trawl_names, n=1, cutoff=0.85)
        if close:
            raise TrawlUsageError(f"unknown setting {name}: did you mean {close[0]}?")

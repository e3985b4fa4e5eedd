"""The store's settings: declared here, with their defaults and checks, and read here.

:data:`ELASTICSEARCH_SETTINGS` is the one place of each default (the store class
declares it, :mod:`trawl.validation` checks it, the docs test sees it); a
setting with no value in the settings given (``trawl es-replay`` and
``trawl search`` run without a crawler) is read as its declared default.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from scrapy.settings import BaseSettings

from trawl.errors import TrawlUsageError
from trawl.settings_checks import Setting, fail, read, seconds, text, whole, word_bool

_FALSE = ("0", "false", "no", "off", "")


def index_prefix(raw: Any) -> str:
    """``ELASTICSEARCH_INDEX_PREFIX`` as indexes are named with it; refused if no index could be."""
    prefix = str(raw).strip().lower()
    if not prefix or any(c in prefix for c in ' "*\\<|,>/?#:') or prefix[0] in "-_+":
        raise TrawlUsageError(f"ELASTICSEARCH_INDEX_PREFIX {prefix!r} is not a valid index name prefix")
    return prefix


def _check_prefix(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    index_prefix(settings.get(name))


def _check_replicas(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = str(settings.get(name)).strip()
    low, dash, high = raw.partition("-")
    if not (low.isdigit() and (not dash or high.isdigit() or high == "all")):
        raise fail(name, "must be a number of replicas, or a range such as 0-1 or 0-all", raw)


#: Every setting the store reads (STORE_URI=elasticsearch://host:9200; elasticsearch+https://user:pw@host
#: for TLS and basic auth).
ELASTICSEARCH_SETTINGS: dict[str, Setting] = {
    "ELASTICSEARCH_API_KEY": Setting(
        "", text, "an API key (or the ELASTICSEARCH_API_KEY environment variable)"
    ),
    "ELASTICSEARCH_CA_CERTS": Setting("", text, "CA bundle (PEM) for https clusters with a private CA"),
    "ELASTICSEARCH_VERIFY_CERTS": Setting(True, word_bool, "check the cluster's TLS certificate"),
    "ELASTICSEARCH_TIMEOUT": Setting(
        30,
        seconds(0, above=True, maximum=600),
        "seconds per request, at most 600: a _bulk request still unanswered after 10 minutes means a "
        "cluster in trouble, better retried than waited on",
    ),
    "ELASTICSEARCH_INDEX_PREFIX": Setting(
        "trawl", _check_prefix, "indexes <prefix>-urls-v1, <prefix>-pages, <prefix>-runs"
    ),
    "ELASTICSEARCH_SHARDS": Setting(1, whole(1), "primary shards of each index"),
    "ELASTICSEARCH_REPLICAS": Setting("0-1", _check_replicas, "a number, or an auto_expand_replicas range"),
    "ELASTICSEARCH_BULK_DOCS": Setting(2000, whole(1), "documents per _bulk request"),
    # Tries again for documents the cluster rejects with 429, and for a store request that fails
    # as a whole (timeout, refused or reset connection, HTTP 502/503/504) before the crawl stops.
    "ELASTICSEARCH_RETRIES": Setting(5, whole(0), "tries again after a 429 or a failed request"),
    "ELASTICSEARCH_BACKOFF": Setting(
        0.5, seconds(0, maximum=60), "first wait before such a try, doubled each time (at most a minute)"
    ),
    "ELASTICSEARCH_BACKOFF_MAX": Setting(
        10.0,
        seconds(0, maximum=600),
        "longest such wait, at most 10 minutes: the crawl's pages wait on the store meanwhile",
    ),
    "ELASTICSEARCH_DEAD_LETTERS": Setting(
        "trawl-es-dead-letters.ndjson", text, "documents that still fail, one JSON line each (es-replay)"
    ),
}


def setting(settings: Any, name: str) -> Any:
    """``settings[name]``, else its declared default."""
    return read(settings, ELASTICSEARCH_SETTINGS, name)


def setting_bool(settings: Any, name: str) -> bool:
    """A boolean setting; ``-s NAME=false`` arrives as text."""
    value = setting(settings, name)
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE
    return bool(value)

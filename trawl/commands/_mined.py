"""What ``trawl endpoints`` and ``trawl params`` share: their ``-a`` arguments and the store they read.

Both read the mining kinds (``endpoint``, ``mined``) and the ``response`` index
of the store ``STORE_URI`` (or ``--store``) names, class-level and read-only, as
``trawl responses list`` does. A store that cannot read them back (PostgreSQL
and Elasticsearch keep no response index) is refused in one line, naming what
it lacks, before anything is read. No module here is a command.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import polars as pl

from trawl.errors import TrawlError, TrawlUsageError
from trawl.mining.records import ENDPOINT_SCHEMA, MINED_SCHEMA, EndpointBatch, MinedBatch
from trawl.readcommand import add_store_option, open_readable, store_uri
from trawl.sources.arguments import parse_bool
from trawl.sources.target import parse_target


@dataclass(frozen=True, slots=True)
class Scope:
    """``-a domain=`` (None: every domain) and ``-a subs=`` (its subdomains too)."""

    domain: str | None
    subdomains: bool


def add_scope_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-a", dest="arguments", action="append", default=[], metavar="NAME=VALUE",
                        help="domain=DOMAIN (its subdomains too, unless subs=false)")  # fmt: skip
    add_store_option(parser)


def read_scope(pairs: list[str]) -> Scope:
    """``-a domain=D -a subs=BOOL``; anything else is a usage error."""
    named: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name.strip().lower() not in ("domain", "subs"):
            raise TrawlUsageError(f"-a takes domain=DOMAIN or subs=BOOL, got {pair!r}")
        named[name.strip().lower()] = value.strip()
    subs = parse_bool("subs", named.get("subs", True))
    domain = parse_target(named["domain"], include_subdomains=subs).domain if named.get("domain") else None
    return Scope(domain, subs)


class MinedStore:
    """The store's mining records and response index, read-only."""

    def __init__(self, settings: Any, given: str | None) -> None:
        self.settings = settings
        self.uri = store_uri(settings, given)
        self.klass: Any = open_readable(settings, self.uri, ("read_kinds", "responses"))

    def endpoints(self) -> pl.DataFrame:
        return self.klass.read_stored_kind(self.uri, EndpointBatch, list(ENDPOINT_SCHEMA), self.settings)

    def mined(self) -> pl.DataFrame:
        return self.klass.read_stored_kind(self.uri, MinedBatch, list(MINED_SCHEMA), self.settings)

    def captures(self, url: str) -> list[tuple[str, str]]:
        """(timestamp, digest) of every stored capture of ``url`` (its host's index rows, filtered)."""
        from urllib.parse import urlsplit

        host = (urlsplit(url).hostname or "").lower()
        index = self.klass.response_index(self.uri, self.settings)
        try:
            return [
                (row["timestamp"], row["digest"])
                for batch in index.batches(host, False)
                for row in batch.frame.iter_rows(named=True)
                if row["url"] == url and row["digest"]
            ]
        finally:
            index.close()


def require_found(count: int, what: str, scope: Scope, uri: str) -> None:
    """Nothing of ``what`` for the scope: one line saying so, not an empty answer."""
    if count:
        return
    where = f" for {scope.domain}" if scope.domain else ""
    hint = f" -a domain={scope.domain}" if scope.domain else ""
    raise TrawlError(f"no {what}{where} in the store {uri} (trawl crawl responses{hint} mines them)")

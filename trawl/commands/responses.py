"""``trawl responses list``: the index of stored archived responses (``trawl crawl responses``).

    trawl responses list -a domain=example.com
    trawl responses list -a domain=example.com --format jsonl > index.jsonl

Output: a table on a terminal (URL, capture, status, type, size, file), the
file paths one a line in a pipe (``--format txt``: what to hand a grep or a
miner), or ``--format jsonl|csv`` with every column. Rows come from the
store's :class:`~trawl.stores.contract.ResponseIndex` in (url, timestamp)
order; captures the archive had no memento of are left out (they have no
file). A bad option or a store without an index is one line on stderr.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
from collections.abc import Iterable
from typing import Any, TextIO

import orjson

from trawl.errors import TrawlError, TrawlUsageError
from trawl.readcommand import StoreReadingCommand, add_store_option, open_readable, store_uri
from trawl.sources.arguments import parse_bool
from trawl.sources.responses.records import RESPONSE_SCHEMA
from trawl.sources.target import parse_target

FORMATS = ("table", "txt", "jsonl", "csv")
ACTIONS = ("list",)
USAGE = "trawl responses list [-a domain=example.com] [--format table|txt|jsonl|csv]"


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "list [-a domain=DOMAIN] [--format FORMAT]"

    def short_desc(self) -> str:
        return "List the archived responses stored by `trawl crawl responses`"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-a", dest="arguments", action="append", default=[], metavar="NAME=VALUE",
                            help="domain=DOMAIN (its subdomains too, unless subs=false)")  # fmt: skip
        parser.add_argument("--format", choices=FORMATS, default=None,
                            help="output format (default: table on a terminal, txt otherwise)")  # fmt: skip
        add_store_option(parser)

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or len(args) > 1:
            raise TrawlUsageError(
                "trawl responses list [-a domain=example.com] [--format table|txt|jsonl|csv]"
            )
        if args[0] not in ACTIONS:
            raise TrawlUsageError(f"unknown subcommand {args[0]!r} (trawl responses {'|'.join(ACTIONS)})")
        named = _arguments(opts.arguments)
        domain, subs = None, parse_bool("subs", named.get("subs", True))
        if named.get("domain"):
            domain = parse_target(named["domain"], include_subdomains=subs).domain
        uri = store_uri(self.settings, opts.store)
        index = open_readable(self.settings, uri, ("responses",)).response_index(uri, self.settings)
        try:
            rows = (row for batch in index.batches(domain, subs) for row in batch.frame.iter_rows(named=True))
            count = write_rows(sys.stdout, rows, opts.format or ("table" if sys.stdout.isatty() else "txt"))
        finally:
            index.close()
        if not count:
            where, hint = (f" for {domain}", f" -a domain={domain}") if domain else ("", "")
            raise TrawlError(
                f"no stored responses{where} in the store {uri} (trawl crawl responses{hint} stores them)"
            )


def _arguments(pairs: list[str]) -> dict[str, str]:
    named: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or name.strip().lower() not in ("domain", "subs"):
            raise TrawlUsageError(f"-a takes domain=DOMAIN or subs=BOOL, got {pair!r}")
        named[name.strip().lower()] = value.strip()
    return named


def write_rows(out: TextIO, rows: Iterable[dict[str, Any]], fmt: str) -> int:
    """The index rows in one of :data:`FORMATS`; how many."""
    columns = list(RESPONSE_SCHEMA)
    count = 0
    if fmt == "txt":
        for row in rows:
            out.write(f"{row['path']}\n")
            count += 1
    elif fmt == "jsonl":
        for row in rows:
            out.write(orjson.dumps({c: row[c] for c in columns}).decode() + "\n")
            count += 1
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if row[c] is None else row[c] for c in columns])
            count += 1
    else:
        count = _table(out, list(rows))
    return count


def _table(out: TextIO, rows: list[dict[str, Any]]) -> int:
    if not rows:  # the command says so in one line
        return 0
    header = ("URL", "CAPTURE", "STATUS", "TYPE", "BYTES", "FILE")
    cells = [
        (r["url"], r["timestamp"], r["status"] or "", r["mime"] or "", str(r["length"] or 0), r["path"] or "")
        for r in rows
    ]
    widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(len(header))]
    width = shutil.get_terminal_size((160, 24)).columns
    rest = sum(widths[1:]) + 2 * (len(header) - 1)
    widths[0] = max(20, min(widths[0], width - rest))
    for line in [header, tuple("-" * w for w in widths), *cells]:
        shown = [c if len(c) <= w else c[: max(0, w - 1)] + "…" for c, w in zip(line, widths, strict=True)]
        out.write("  ".join(c.ljust(w) for c, w in zip(shown, widths, strict=True)).rstrip() + "\n")
    out.write(f"{len(rows)} stored response{'s' if len(rows) != 1 else ''}\n")
    return len(rows)

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
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.sources.arguments import parse_bool
from trawl.sources.responses.records import RESPONSE_SCHEMA
from trawl.sources.target import parse_target
from trawl.stores.registry import store_class

EXIT_FAILED = 1
EXIT_USAGE = 2
FORMATS = ("table", "txt", "jsonl", "csv")
ACTIONS = ("list",)


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

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
        parser.add_argument("--store", metavar="URI", help="store to read (default: the STORE_URI setting)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or args[0] not in ACTIONS or len(args) > 1:
            raise UsageError("trawl responses list [-a domain=example.com] [--format table|txt|jsonl|csv]")
        try:
            named = _arguments(opts.arguments)
            domain, subs = None, parse_bool("subs", named.get("subs", True))
            if named.get("domain"):
                domain = parse_target(named["domain"], include_subdomains=subs).domain
            uri = str(opts.store or self.settings.get("STORE_URI") or "").strip()
            if not uri:
                raise TrawlUsageError("no store to read: set STORE_URI (or --store URI)")
            klass: Any = store_class(uri, plugin_manager_from_settings(self.settings), needs=("responses",))
            klass.check_uri(uri)
            index = klass.response_index(uri, self.settings)
        except TrawlUsageError as exc:
            self._fail(str(exc), EXIT_USAGE)
            return
        except TrawlError as exc:
            self._fail(str(exc), EXIT_FAILED)
            return
        out = sys.stdout
        try:
            rows = (row for batch in index.batches(domain, subs) for row in batch.frame.iter_rows(named=True))
            write_rows(out, rows, opts.format or ("table" if out.isatty() else "txt"))
            out.flush()
        except BrokenPipeError:
            sys.stdout = None  # type: ignore[assignment]
        except TrawlError as exc:
            self._fail(str(exc), EXIT_FAILED)
        finally:
            index.close()

    def _fail(self, message: str, status: int) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = status


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
    if not rows:
        out.write("no stored responses\n")
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

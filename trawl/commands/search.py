"""``scrapy search QUERY``: search the configured store, SQLite or Elasticsearch, one syntax.

    scrapy search 'host:api.example.com AND ext:js'
    scrapy search status:200 source:otx --format jsonl > hits.jsonl
    scrapy search 'url:*admin*' --count
    scrapy search 'first_seen:[2020 TO 2022]' --facet host
    scrapy search '*' -s STORE_URI=elasticsearch://127.0.0.1:9200
    scrapy search 'host:example.com' --collapse all

The syntax is :mod:`trawl.search`'s. Output: a table on a terminal, one URL per
line in a pipe (``--format txt``), or ``--format jsonl|csv`` with provenance;
``--collapse`` prints patterns instead (:mod:`trawl.search.collapse`).
A query that cannot be read, or a store that cannot be searched, is one line
on stderr (exit status 2 and 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TextIO

from trawl.commands._output import FORMATS, default_format, write_csv, write_jsonl, write_table
from trawl.errors import TrawlError, TrawlUsageError
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.readcommand import StoreReadingCommand, store_uri, usage_error
from trawl.records.record import UrlRecord
from trawl.search import FACETS, parse
from trawl.stores.registry import open_searcher

#: Values ``--facet`` lists unless ``--size`` says otherwise: a screenful.
FACET_SIZE = 20
#: The widest ``EXAMPLE`` cell of the ``--collapse`` table: the pattern gets the rest of the terminal.
EXAMPLE_WIDTH = 60
CSV_FIELDS = ("url", "host", "sources", "first_seen", "last_seen", "captures", "statuses", "mimes")


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "[options] QUERY"

    def short_desc(self) -> str:
        return "Search the store (STORE_URI) with a Lucene-like query"

    def long_desc(self) -> str:
        return (
            "Search the URLs in the configured store. Fields: url, host, domain, scheme, port, path,"
            " query, ext, tld, param, source, status, mime, first_seen, last_seen, captures."
            " Examples: 'host:api.example.com AND ext:js', 'url:*admin*', 'status:[400 TO 499]',"
            " 'first_seen:[2020 TO 2022]', 'source:otx NOT mime:text/html'. A bare word matches"
            " URLs that contain it; * is every URL."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default=None,
            help="output format (default: table on a terminal, txt otherwise)",
        )
        parser.add_argument("--count", action="store_true", help="print only the number of matching URLs")
        parser.add_argument(
            "--facet", metavar="FIELD", help=f"count matches by a field ({', '.join(FACETS)})"
        )
        parser.add_argument(
            "--size", type=int, default=None, help=f"values --facet lists (default: {FACET_SIZE})"
        )
        parser.add_argument(
            "--collapse",
            metavar="params|ids|all",
            help="print each pattern once, with its count and an example URL; patterns join the URLs"
            " that differ only in query values (params), in numeric ids, UUIDs, hashes or dates in"
            " the path (ids), or both (all)",
        )
        parser.add_argument(
            "--limit", type=int, default=None, help="at most this many URLs (with --collapse: patterns)"
        )
        parser.add_argument("--store", metavar="URI", help="store to search (default: the STORE_URI setting)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:  # Scrapy's usage error: the usage, then the line
            raise usage_error("give a query, e.g. trawl search 'host:api.example.com AND ext:js' ('*': all)")
        super().run(args, opts)

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        # The plugins first: a plugin's record kind declares its search fields when imported.
        plugins = plugin_manager_from_settings(self.settings)
        node = parse(" ".join(args))
        if opts.facet and opts.facet.lower() not in FACETS:
            raise TrawlUsageError(f"--facet takes one of {', '.join(FACETS)}, not {opts.facet!r}")
        if opts.size is not None and not opts.facet:
            raise TrawlUsageError("--size applies to --facet (the number of values it lists)")
        if opts.limit is not None and opts.limit < 0:
            raise TrawlUsageError("--limit takes a number >= 0")
        if opts.collapse is not None:
            _check_collapse(opts)
        uri = store_uri(self.settings, opts.store, "search")
        searcher = open_searcher(uri, self.settings, plugins)
        out = sys.stdout
        try:
            with searcher:
                if opts.count:
                    out.write(f"{searcher.count(node)}\n")
                elif opts.facet:
                    size = max(1, FACET_SIZE if opts.size is None else opts.size)
                    self._facet(out, searcher.facet(node, opts.facet.lower(), size), opts)
                elif opts.collapse:
                    write_patterns(
                        out,
                        searcher.records(node),
                        opts.collapse,
                        opts.limit,
                        default_format(out, opts.format),
                    )
                else:
                    fmt = default_format(out, opts.format)
                    write_records(out, searcher.records(node, opts.limit), fmt)
        except (TrawlError, BrokenPipeError):
            raise
        except Exception as exc:  # noqa: BLE001 - a store that failed mid-search: one line
            raise TrawlError(
                f"the search failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            ) from None

    def _facet(self, out: TextIO, rows: list[tuple[str, int]], opts: argparse.Namespace) -> None:
        fmt = default_format(out, opts.format)
        if fmt == "jsonl":
            write_jsonl(out, ({"value": v, "count": n} for v, n in rows))
        elif fmt == "csv":
            write_csv(out, (opts.facet.lower(), "count"), rows)
        else:
            width = max([len(v) for v, _ in rows] + [len(opts.facet)])
            if fmt == "table":
                out.write(f"{opts.facet.lower():<{width}}  count\n{'-' * width}  -----\n")
            out.writelines(f"{v:<{width}}  {n}\n" for v, n in rows)


def _check_collapse(opts: argparse.Namespace) -> None:
    from trawl.search.collapse import MODES

    if opts.collapse not in MODES:
        raise TrawlUsageError(f"--collapse takes one of {', '.join(MODES)}, not {opts.collapse!r}")
    if opts.count or opts.facet:
        raise TrawlUsageError("--collapse lists patterns: it does not go with --count or --facet")


def write_patterns(out: TextIO, records: Iterable[UrlRecord], mode: str, limit: int | None, fmt: str) -> int:
    """The patterns of ``records`` (:func:`trawl.search.collapse.collapse`) in ``fmt``, ``limit`` first.

    Every format has the same columns in the same order, count first as ``uniq -c``
    has it: txt is ``count  pattern  example`` a line, counts aligned.
    """
    from trawl.search.collapse import collapse, url_column

    urls = url_column(record.url for record in records)
    patterns = collapse(urls, mode).select("count", "pattern", "example")  # type: ignore[arg-type]
    if limit is not None:
        patterns = patterns.head(limit)
    if fmt == "jsonl":
        return write_jsonl(out, patterns.iter_rows(named=True))
    if fmt == "csv":
        return write_csv(out, patterns.columns, patterns.iter_rows())
    rows = [(str(count), pattern, example) for count, pattern, example in patterns.iter_rows()]
    if fmt == "table":
        return write_table(
            out,
            ("COUNT", "PATTERN", "EXAMPLE"),
            rows,
            flexible=1,
            caps={2: EXAMPLE_WIDTH},
            noun=("pattern", "patterns"),
            empty="no matching URLs",
        )
    width = max((len(count) for count, _, _ in rows), default=0)
    out.writelines(f"{count:>{width}}  {pattern}  {example}\n" for count, pattern, example in rows)
    return len(rows)


def write_records(out: TextIO, records: Iterable[UrlRecord], fmt: str) -> int:
    """Write records in one of :data:`FORMATS`; return how many (the writers: :mod:`._output`)."""
    if fmt == "txt":
        count = 0
        for record in records:
            out.write(record.url + "\n")
            count += 1
        return count
    if fmt == "jsonl":
        return write_jsonl(out, (_without_new(record.as_dict()) for record in records))
    if fmt == "csv":
        return write_csv(
            out,
            CSV_FIELDS,
            (
                (r.url, r.host, "|".join(r.sources), r.first_seen or "", r.last_seen or "",
                 r.captures, "|".join(r.statuses), "|".join(r.mimes))
                for r in records
            ),
        )  # fmt: skip
    return _table(out, records)


def _without_new(row: dict) -> dict:
    row.pop("new", None)
    return row


def _table(out: TextIO, records: Iterable[UrlRecord]) -> int:
    """Columns sized to the terminal; the URL gets what the others leave."""
    header = ("URL", "CAPTURES", "FIRST", "LAST", "STATUS", "SOURCES")
    rows = [
        (
            r.url,
            str(r.captures),
            _day(r.first_seen),
            _day(r.last_seen),
            ",".join(r.statuses),
            ",".join(r.sources),
        )
        for r in records
    ]
    return write_table(
        out, header, rows, flexible=0, caps={4: 15, 5: 24}, noun=("URL", "URLs"), empty="no matching URLs"
    )


def _day(timestamp: str | None) -> str:
    if not timestamp or len(timestamp) < 8:
        return timestamp or ""
    return f"{timestamp[:4]}-{timestamp[4:6]}-{timestamp[6:8]}"

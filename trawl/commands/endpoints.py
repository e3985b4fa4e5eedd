"""``trawl endpoints``: the endpoints mined from stored responses, and their history.

    trawl endpoints -a domain=example.com
    trawl endpoints -a domain=example.com --format jsonl > endpoints.jsonl
    trawl endpoints --history https://example.com/app.js

The list: one row per endpoint and method, from the domain's files, with every
use (``fetch``, ``form``, ...), the query, body and header names and the span
of the captures it was seen in (``--format table|txt|jsonl|csv``; ``txt``: the
URLs one a line). ``--history URL``: for the captures of one file URL in time
order, which endpoints appeared and disappeared between consecutive distinct
captures (:func:`trawl.mining.history.history`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from trawl.commands._output import FORMATS, default_format, write_csv, write_jsonl, write_table
from trawl.errors import TrawlUsageError
from trawl.readcommand import StoreReadingCommand

if TYPE_CHECKING:
    from trawl.mining.history import Step

# The store reading (polars, the target's suffix list, the mining records) is imported in the
# methods that use it: every trawl command imports this module to list it.

COLUMNS = ("method", "endpoint", "query", "body", "headers", "how", "first_seen", "last_seen", "files")


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "[-a domain=DOMAIN] [--history URL] [--format FORMAT]"

    def short_desc(self) -> str:
        return "List the endpoints mined from stored responses, or one file's endpoint history"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        from trawl.commands._mined import add_scope_options

        super().add_options(parser)
        add_scope_options(parser)
        parser.add_argument("--history", metavar="URL",
                            help="endpoints that appeared and disappeared in this file")  # fmt: skip
        parser.add_argument("--format", choices=FORMATS, default=None,
                            help="output format (default: table on a terminal, txt otherwise)")  # fmt: skip

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        from trawl.commands._mined import MinedStore, read_scope, require_found
        from trawl.mining.history import history, listing, of_domain

        assert self.settings is not None
        if args:
            raise TrawlUsageError(
                f"unexpected {' '.join(args)!r}; usage: trawl endpoints [-a domain=D] [--history URL]"
            )
        out = sys.stdout
        fmt = default_format(out, opts.format)
        scope = read_scope(opts.arguments)
        url = _file_url(opts.history) if opts.history is not None else None
        store = MinedStore(self.settings, opts.store)
        if url is not None:
            mined = set(store.mined().get_column("digest").to_list())
            write_history(out, url, history(store.captures(url), store.endpoints(), mined), fmt)
            return
        endpoints = of_domain(store.endpoints(), scope.domain, scope.subdomains)
        require_found(endpoints.height, "endpoints mined", scope, store.uri)
        write_endpoints(out, listing(endpoints), fmt)


def _file_url(raw: str) -> str:
    """The ``--history`` URL as the index keeps it (canonical); one line for anything else."""
    from trawl.records.canonical import canonicalize

    text = raw.strip()
    if not text.lower().startswith(("http://", "https://")):
        raise TrawlUsageError(f"--history takes a file's http(s) URL, got {raw!r}")
    url = canonicalize(text)
    if not url:
        raise TrawlUsageError(f"--history takes a file's http(s) URL, got {raw!r}")
    return url


def write_endpoints(out: TextIO, rows: list[dict[str, Any]], fmt: str) -> int:
    """The listing in one of :data:`FORMATS`; how many rows."""
    if fmt == "txt":
        urls = sorted({row["endpoint"] for row in rows})
        out.writelines(f"{url}\n" for url in urls)
        return len(urls)
    if fmt == "jsonl":
        return write_jsonl(out, ({c: row[c] for c in COLUMNS} for row in rows))
    if fmt == "csv":
        return write_csv(out, COLUMNS, ([_cell(row[c]) for c in COLUMNS] for row in rows))
    header = ("METHOD", "ENDPOINT", "QUERY", "BODY", "HEADERS", "HOW", "FIRST", "LAST", "FILES")
    cells = [[_cell(row[c]) or ("-" if c == "method" else "") for c in COLUMNS] for row in rows]
    return write_table(
        out, header, cells, flexible=1, caps={2: 30, 3: 30, 4: 30}, noun=("endpoint", "endpoints"),
        empty="no endpoints mined",
    )  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def write_history(out: TextIO, url: str, steps: list[Step], fmt: str) -> int:
    """The steps of one file URL: lines a person reads (``table``/``txt``), or one JSON object a step."""
    if fmt == "jsonl":
        return write_jsonl(out, (step.as_dict() for step in steps))
    if fmt == "csv":
        header = ("timestamp", "until", "digest", "captures", "endpoints", "appeared", "disappeared")
        return write_csv(out, header, (
            (s.first, s.last, s.digest, s.captures, s.endpoints if s.mined else "", " ".join(s.appeared),
             " ".join(s.disappeared)) for s in steps
        ))  # fmt: skip
    if not steps:
        out.write(f"{url}: no stored captures\n")
        return 0
    captures = sum(step.captures for step in steps)
    out.write(f"{url}: {captures} capture{'s' if captures != 1 else ''}, {len(steps)} distinct\n")
    for step in steps:
        when = step.first if step.first == step.last else f"{step.first}-{step.last}"
        said = f"{step.endpoints} endpoint{'s' if step.endpoints != 1 else ''}" if step.mined else "not mined"
        out.write(f"{when}  {step.digest}  {said}\n")
        out.writelines(f"  + {line}\n" for line in step.appeared)
        out.writelines(f"  - {line}\n" for line in step.disappeared)
    return len(steps)

"""``trawl report new``: the URLs first seen in the last crawl (or since a run or a date).

    trawl report new --domain example.com                       # the last crawl, one URL a line
    trawl report new --domain example.com --since 2026-12-01 -o new.jsonl
    trawl report new --domain example.com --since 3f2a9c... -o new.csv

The store says which run stored each URL first; :mod:`trawl.run.report` picks the
window (``last``: the most recent job, every source of a ``crawl all``) and
reads its URLs in frames. The URLs go to stdout (``--format``) or to ``-o``
files (format by extension: txt, jsonl, csv), and one line on stderr says how
many there are and which runs they come from, ``0 new URLs`` included. A
store that cannot report is refused in one line (exit status 2), a store that
has no run for the domain or fails mid-report is one line too (exit status 1).
"""

from __future__ import annotations

import argparse
import sys

from trawl.common.counts import counted
from trawl.common.files import FILES_SETTINGS, apply_umask
from trawl.errors import EXIT_USAGE, TrawlError, TrawlUsageError
from trawl.readcommand import StoreReadingCommand, add_store_option, open_readable, store_uri, usage_error
from trawl.run.report import (
    FORMATS,
    ReportFile,
    format_of,
    parse_since,
    report_frames,
    select_window,
    write_report,
)
from trawl.sources.target import parse_target
from trawl.validation import validate_settings

REPORTS = ("new",)


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "new --domain DOMAIN [--since last|RUN|DATE] [-o FILE.txt|.jsonl|.csv]"

    def short_desc(self) -> str:
        return "Report the URLs first seen in the last crawl (or since a run or a date)"

    def long_desc(self) -> str:
        return (
            "List the URLs of a domain that the store saw first in a window of runs, with the"
            " source that found them and their provenance. --since last (default): the most recent"
            " crawl of the domain (every source of a crawl all); --since RUN: a run or job id;"
            " --since DATE: runs started at or after an ISO date or time (UTC unless it says)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--domain", metavar="DOMAIN", help="the domain (and its subdomains)")
        parser.add_argument(
            "--since", metavar="last|RUN|DATE", default="last", help="the window (default: last)"
        )
        parser.add_argument(
            "-o",
            "--output",
            metavar="FILE",
            action="append",
            default=[],
            help="write to FILE (.txt, .jsonl, .csv)",
        )
        parser.add_argument("--format", choices=FORMATS, default=None, help="stdout's format (default: txt)")
        add_store_option(parser)

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        """After ``-s``: the files a report writes are private like a crawl's (:mod:`trawl.common.files`)."""
        super().process_options(args, opts)
        assert self.settings is not None
        try:
            validate_settings(self.settings, names=FILES_SETTINGS)
        except TrawlUsageError as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            sys.exit(EXIT_USAGE)
        apply_umask(self.settings)

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or args[0] not in REPORTS or len(args) > 1:
            raise usage_error("give the report to make: trawl report new --domain example.com")
        if not opts.domain:
            raise TrawlUsageError("give the domain: trawl report new --domain example.com")
        domain = parse_target(opts.domain).domain
        since = parse_since(opts.since)
        outputs = [(path, format_of(path, None)) for path in opts.output]
        uri = store_uri(self.settings, opts.store, task="report on")
        reader = open_readable(self.settings, uri, ("report",))
        window = select_window(reader.list_runs(uri, domain, self.settings), domain, since)
        count = 0
        try:
            if outputs:
                for path, fmt in outputs:
                    with ReportFile(path) as file:
                        count = write_report(report_frames(reader, uri, window, self.settings), file, fmt)
            else:
                out = sys.stdout.buffer
                frames = report_frames(reader, uri, window, self.settings)
                count = write_report(frames, out, opts.format or "txt")
                out.flush()
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            raise TrawlError(str(exc)) from None
        where = f"; written to {', '.join(path for path, _ in outputs)}" if outputs else ""
        sys.stderr.write(f"trawl: {counted(count, 'new URL')} for {domain} {window.describe()}{where}\n")

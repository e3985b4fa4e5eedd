"""``trawl params``: a parameter wordlist from the mined responses (xnLinkFinder's ``-op``).

    trawl params -a domain=example.com > params.txt
    trawl params -a domain=example.com -o params.txt

Every query and body parameter name of the endpoints mined from the domain's
files, and the names not tied to one endpoint (JSON keys, form input names),
once each, sorted, one a line. What fuzzers and parameter-discovery tools read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand

from trawl.commands._mined import MinedStore, add_scope_options, read_scope
from trawl.errors import TrawlError, TrawlUsageError
from trawl.mining.history import of_domain, wordlist

EXIT_FAILED = 1
EXIT_USAGE = 2


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[-a domain=DOMAIN] [-o FILE]"

    def short_desc(self) -> str:
        return "Write the parameter names mined from stored responses, one a line"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_scope_options(parser)
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="write the wordlist here (default: stdout)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            self._fail(
                f"unexpected {' '.join(args)!r}; usage: trawl params [-a domain=example.com] [-o FILE]",
                EXIT_USAGE,
            )
            return
        try:
            scope = read_scope(opts.arguments)
            store = MinedStore(self.settings, opts.store)
            endpoints = of_domain(store.endpoints(), scope.domain, scope.subdomains)
            mined = of_domain(store.mined(), scope.domain, scope.subdomains)
            names = wordlist(endpoints, mined)
        except TrawlUsageError as exc:
            self._fail(str(exc), EXIT_USAGE)
            return
        except TrawlError as exc:
            self._fail(str(exc), EXIT_FAILED)
            return
        text = "".join(f"{name}\n" for name in names)
        if opts.output:
            try:
                Path(opts.output).write_text(text, encoding="utf-8")
            except OSError as exc:
                self._fail(f"cannot write {opts.output}: {exc.strerror or exc}", EXIT_FAILED)
                return
            sys.stderr.write(f"{len(names)} parameter names written to {opts.output}\n")
            return
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            sys.stdout = None  # type: ignore[assignment]

    def _fail(self, message: str, status: int) -> None:
        sys.stderr.write(f"trawl: error: {message}\n")
        self.exitcode = status

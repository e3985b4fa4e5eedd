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

from trawl.errors import TrawlError, TrawlUsageError
from trawl.readcommand import StoreReadingCommand

# The store reading (polars, the target's suffix list, the mining records) is imported in the
# methods that use it: every trawl command imports this module to list it.


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "[-a domain=DOMAIN] [-o FILE]"

    def short_desc(self) -> str:
        return "Write the parameter names mined from stored responses, one a line"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        from trawl.commands._mined import add_scope_options

        super().add_options(parser)
        add_scope_options(parser)
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="write the wordlist here (default: stdout)"
        )

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        from trawl.commands._mined import MinedStore, read_scope, require_found
        from trawl.mining.history import of_domain, wordlist

        assert self.settings is not None
        if args:
            raise TrawlUsageError(
                f"unexpected {' '.join(args)!r}; usage: trawl params [-a domain=example.com] [-o FILE]"
            )
        scope = read_scope(opts.arguments)
        store = MinedStore(self.settings, opts.store)
        endpoints = of_domain(store.endpoints(), scope.domain, scope.subdomains)
        mined = of_domain(store.mined(), scope.domain, scope.subdomains)
        names = wordlist(endpoints, mined)
        require_found(len(names), "parameter names mined", scope, store.uri)
        text = "".join(f"{name}\n" for name in names)
        if opts.output:
            try:
                Path(opts.output).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise TrawlError(f"cannot write {opts.output}: {exc.strerror or exc}") from None
            sys.stderr.write(f"{len(names)} parameter names written to {opts.output}\n")
            return
        sys.stdout.write(text)

"""``trawl serve``: the SQLite store in a browser (datasette), read-only, on 127.0.0.1.

    trawl serve --store sqlite:///trawl.db
    trawl serve --port 8001 --host 0.0.0.0        # reachable from other machines: one WARNING

The views, the search page and the charts: :mod:`trawl.serve` (docs/serve.md).
datasette is imported in ``run()``: ``trawl -h`` and every other command start
without it.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys

from trawl.readcommand import StoreReadingCommand, add_store_option, store_uri

DEFAULT_PORT = 8001


class Command(StoreReadingCommand):
    def syntax(self) -> str:
        return "[--store sqlite:///trawl.db] [--port N] [--host H]"

    def short_desc(self) -> str:
        return "Browse the store in a web browser (datasette, read-only)"

    def long_desc(self) -> str:
        return (
            "Start a local web server on the SQLite store: views of URLs, hosts, runs and what is new,"
            " a search page with trawl's query language, facets and downloads, and charts. Read-only:"
            " a crawl may write to the store meanwhile. Listens on 127.0.0.1 unless --host says otherwise."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        add_store_option(parser)
        parser.add_argument(
            "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)"
        )
        parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")

    def answer(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        from trawl.errors import TrawlUsageError

        if args:
            raise TrawlUsageError(
                f"trawl serve takes no arguments, not {' '.join(args)!r} (the store: --store)"
            )
        if not 0 <= opts.port <= 65535:
            raise TrawlUsageError(f"--port takes 0 to 65535, not {opts.port}")
        from trawl.pipeline.manager import plugin_manager_from_settings
        from trawl.serve import app, fts, store

        plugin_manager_from_settings(self.settings)  # a plugin's record kind declares its search fields
        file = store.store_file(store_uri(self.settings, opts.store, task="serve"))
        sock = app.bind(opts.host, opts.port)
        if not _loopback(opts.host):
            sys.stderr.write(
                f"trawl: WARNING: listening on {opts.host}:"
                " anyone who can reach this machine can read the store\n"
            )
        unmade = store.ensure_indexes(file)
        if unmade:
            sys.stderr.write(
                f"trawl: indexes on {', '.join(unmade)} not made (store busy or read-only): slower pages\n"
            )
        index = fts.update(file)
        if index.problem:
            sys.stderr.write(f"trawl: no full-text search: {index.problem}\n")
        elif index.added:
            sys.stderr.write(f"trawl: full-text index: {index.added:,} URLs added in {index.seconds:.1f} s\n")
        datasette = app.build(file, index.file, store.tables(file))
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"trawl: serving {file} at http://{shown}:{port}/ (read-only; Ctrl-C stops)\n")
        sys.stderr.flush()
        app.run(datasette, sock)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

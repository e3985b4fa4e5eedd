"""``scrapy es-replay``: write the Elasticsearch store's dead letters into the index.

Documents the cluster still refused after the store's retries (429 after
backoff, or any other per-item error) are kept in ``ELASTICSEARCH_DEAD_LETTERS``,
one JSON line per URL with what its batch said about it. This command writes
them through the store's merge (as part of the run they came from, so capture
counts are not doubled) and rewrites the file with what still fails (it is
removed when nothing does). Exit status 0 when the file is empty afterwards.

Listed once, as ``es-replay`` (see :mod:`trawl.stores.elasticsearch.commands`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand

from trawl.errors import TrawlError, TrawlUsageError
from trawl.stores.registry import uri_scheme


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--file PATH] [--store URI]"

    def short_desc(self) -> str:
        return "Write the Elasticsearch store's dead letters into the index"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--file", metavar="PATH", help="dead-letter file (default: ELASTICSEARCH_DEAD_LETTERS)"
        )
        parser.add_argument("--store", metavar="URI", help="Elasticsearch STORE_URI (default: the setting)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # Imported here: Scrapy imports every command to list them, and the Elasticsearch
        # store's modules cost ~90 ms of each `scrapy list` / `trawl -h` (python -X importtime).
        from trawl.stores.elasticsearch.deadletters import dead_letter_path, replay_dead_letters

        assert self.settings is not None
        try:
            uri = str(opts.store or self.settings.get("STORE_URI") or "").strip()
            if not uri or uri_scheme(uri) != "elasticsearch":
                raise TrawlUsageError(
                    f"es-replay writes to an Elasticsearch store: set STORE_URI=elasticsearch://host:9200"
                    f" (it is {uri or 'empty'!r})"
                )
            path = Path(opts.file) if opts.file else dead_letter_path(self.settings)
            if not path.exists():
                print(f"no dead letters ({path} does not exist)")
                return
            result = replay_dead_letters(uri, self.settings, path)
        except TrawlUsageError as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            self.exitcode = 2
            return
        except TrawlError as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            self.exitcode = 1
            return
        if result.left:
            print(f"replayed {result.replayed} URLs; {result.left} still fail, kept in {path}")
            self.exitcode = 1
        else:
            print(f"replayed {result.replayed} URLs; {path} is empty and was removed")

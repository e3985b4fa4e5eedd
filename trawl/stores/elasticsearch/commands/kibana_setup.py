"""``scrapy kibana-setup --kibana-url URL``: import trawl's Kibana saved objects.

Imports the data view over ``trawl-urls-*``, the saved searches (JavaScript
files, API endpoints, login/admin pages, interesting extensions, parameters)
and the dashboard, and the crates.io objects (:mod:`trawl.stores.elasticsearch.kibana_crates`:
data views over the crates indexes, their panels and dashboard), in one request to Kibana's
``POST /api/saved_objects/_import``
(``overwrite=true``: running it again updates them). The objects are
:mod:`trawl.stores.elasticsearch.kibana`'s, the same as
``trawl/stores/elasticsearch/kibana_objects/trawl-saved-objects.ndjson``.

Listed once, as ``kibana-setup`` (see :mod:`trawl.stores.elasticsearch.commands`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand

from trawl.common.secrets import register_secret
from trawl.errors import TrawlError, TrawlUsageError
from trawl.stores.elasticsearch import kibana_crates
from trawl.stores.elasticsearch.kibana import import_saved_objects, ndjson


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "--kibana-url URL [--user USER:PASSWORD | --api-key KEY] [--space SPACE]"

    def short_desc(self) -> str:
        return "Import trawl's data views, saved searches and dashboards (URLs, crates.io) into Kibana"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--kibana-url", metavar="URL", help="Kibana's base URL (default: $KIBANA_URL)")
        parser.add_argument("--user", metavar="USER:PASSWORD", help="basic auth (default: $KIBANA_USER)")
        parser.add_argument("--api-key", metavar="KEY", help="an encoded API key (default: $KIBANA_API_KEY)")
        parser.add_argument("--space", metavar="SPACE", help="Kibana space to import into (default: default)")
        parser.add_argument("--ca-certs", metavar="PATH", help="CA bundle for an https Kibana")
        parser.add_argument("--insecure", action="store_true", help="do not verify Kibana's certificate")
        parser.add_argument("--file", metavar="PATH", help="import this NDJSON instead of trawl's objects")
        parser.add_argument("--timeout", type=float, default=60.0, help="seconds (default: 60)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        url = opts.kibana_url or os.environ.get("KIBANA_URL", "")
        user = opts.user or os.environ.get("KIBANA_USER") or None
        api_key = opts.api_key or os.environ.get("KIBANA_API_KEY") or None
        for secret in (user and user.partition(":")[2], api_key):
            register_secret(secret)
        try:
            if not url:
                raise TrawlUsageError("give --kibana-url http://host:5601 (or set KIBANA_URL)")
            if user and api_key:
                raise TrawlUsageError("give --user or --api-key, not both")
            content = Path(opts.file).read_bytes() if opts.file else ndjson() + kibana_crates.ndjson()
            result = import_saved_objects(
                url,
                content,
                user=user,
                api_key=api_key,
                space=opts.space,
                ca_certs=opts.ca_certs,
                insecure=opts.insecure,
                timeout=opts.timeout,
            )
        except TrawlUsageError as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            self.exitcode = 2
            return
        except (TrawlError, OSError) as exc:
            sys.stderr.write(f"trawl: error: {exc}\n")
            self.exitcode = 1
            return
        print(f"imported {result.success_count} saved objects into {url.rstrip('/')}")

"""A store seeded with URLs, as the probe and live-crawl tests start from.

:func:`seed` writes URLs into a SQLite store as a crawl of an archive would
leave them (source ``wayback``, status 200, one capture each), for ``crawl
probe`` or a live crawl to ask again.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

from scrapy.settings import Settings

from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.stores.sqlite import SqliteStore


def seed(db: Path, urls: list[str]) -> None:
    """URLs in a SQLite store, as a crawl of an archive would leave them."""
    stats = SimpleNamespace(values={}, get_stats=dict, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    spider = SimpleNamespace(name="wayback")
    context = RunContext(crawler=crawler, spider=spider, run_id="seed", plugins=None)  # type: ignore[arg-type]
    store = SqliteStore(f"sqlite:///{db}", context)
    store.open()
    hosts = [urlsplit(u).hostname or "" for u in urls]
    n = len(urls)
    none: list[str | None] = [None] * n
    batch = UrlBatch.from_columns("wayback", urls, hosts, none, none, [1] * n, ["200"] * n, [""] * n)
    store.write_batch(batch)
    store.close("finished")

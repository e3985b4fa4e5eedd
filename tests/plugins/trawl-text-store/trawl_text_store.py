"""A third-party store that implements only trawl's writing Protocol.

``STORE_URI=text:///path/urls.txt`` appends each new URL to a file. It keeps
no page ledger, cannot be read back and cannot be searched: trawl must refuse
runs that need those (JOBDIR, ``crawl all -o``, ``scrapy search``) in one line,
and run plain crawls with it.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pluggy
import polars as pl

hookimpl = pluggy.HookimplMarker("trawl")


class TextStore:
    kinds = frozenset({"url"})

    @classmethod
    def check_uri(cls, uri: str) -> None:
        if not urlsplit(uri).path:
            raise ValueError("text:///path needs a path")

    def __init__(self, uri: str, context) -> None:
        self.path = Path(urlsplit(uri).path)
        self.known: set[str] = set(self.path.read_text().split()) if self.path.exists() else set()
        self.file = None

    def open(self) -> None:
        self.file = self.path.open("a")

    def write_batch(self, batch) -> int:
        urls = batch.frame.get_column("url").to_list()
        new = [u not in self.known for u in urls]
        fresh = [u for u, n in zip(urls, new, strict=True) if n]
        self.known.update(fresh)
        self.file.write("".join(u + "\n" for u in fresh))
        batch.frame = batch.frame.with_columns(pl.Series("new", new), pl.lit(False).alias("repeat"))
        return len(fresh)

    def close(self, reason: str) -> None:
        self.file.close()


@hookimpl
def trawl_register_stores():
    return {"text": TextStore}

"""One URL per path pattern: the rule that keeps a million ``?id=`` variants from costing a million requests.

A URL's pattern is its host, its path with the parts that are ids made
placeholders, and the sorted, distinct NAMES of its query parameters (values
dropped)::

    https://Shop.example.com/item/123/reviews?page=2&sort=asc
    -> shop.example.com/item/{n}/reviews?page&sort

In a path, in this order: a UUID (``8-4-4-4-12`` hex digits) becomes ``{uuid}``;
a run of 8 or more hex digits between non-alphanumerics (a hash, an object id)
becomes ``{hex}``; any other run of digits becomes ``{n}`` (``page2.html`` ->
``page{n}.html``). The scheme is not part of it (``http://`` and ``https://`` of one
path are one pattern: the first in URL order, ``http``, stands for both, and it
usually redirects to the other); neither is the fragment.

By default a probe asks the first URL of each pattern (in URL order) and no
other; ``-a all=true`` asks them first, then every other selected URL. The
patterns seen are kept as 64-bit hashes (~70 bytes each in a Python set): a
million distinct patterns cost ~70 MB, a million URLs of one pattern nothing.
Computed a chunk at a time with polars (regexes in Rust), not URL by URL.

:func:`interleaved` orders a chunk a host at a time in turn, whether it came
from the store or from a list.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

import polars as pl

T = TypeVar("T")

_HOST = r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)"
_PATH = r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*([^?#]*)"
_QUERY = r"\?([^#]*)"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
_HEX = r"(^|[^0-9A-Za-z])[0-9A-Fa-f]{8,}([^0-9A-Za-z]|$)"


def pattern_expr(url: pl.Expr) -> pl.Expr:
    """The pattern of each URL (the rule of the module docstring), as a polars expression."""
    host = url.str.extract(_HOST, 1).str.to_lowercase()
    path = (
        url.str.extract(_PATH, 1)
        .fill_null("")
        .str.replace_all(_UUID, "{uuid}")
        .str.replace_all(_HEX, "${1}{hex}${2}")
        .str.replace_all(r"[0-9]+", "{n}")
    )
    names = (
        url.str.extract(_QUERY, 1)
        .fill_null("")
        .str.split("&")
        .list.eval(pl.element().str.replace(r"=.*$", "").filter(pl.element() != ""))
        .list.unique()
        .list.sort()
        .list.join("&")
    )
    return pl.concat_str([host, path, pl.lit("?"), names])


def patterns(urls: list[str]) -> list[str]:
    """The patterns of ``urls`` (for tests and the docs)."""
    return pl.DataFrame({"url": urls}).select(pattern_expr(pl.col("url"))).to_series().to_list()


class PatternPicker:
    """Splits chunks of URLs into the first of their pattern and the others, across chunks."""

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def split(self, urls: list[str]) -> tuple[list[str], list[str]]:
        """(URLs whose pattern is new, the rest), each in the order given."""
        frame = pl.DataFrame({"url": urls}).with_columns(pattern_expr(pl.col("url")).hash().alias("key"))
        first = frame.select(pl.col("key").is_first_distinct()).to_series()
        keys = frame.get_column("key").to_list()
        seen = self.seen
        fresh: list[str] = []
        others: list[str] = []
        for url, key, is_first in zip(urls, keys, first.to_list(), strict=True):
            if is_first and key not in seen:
                seen.add(key)
                fresh.append(url)
            else:
                others.append(url)
        return fresh, others


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL: what one soft-404 baseline and favicon stand for."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{(parts.netloc or '').lower()}"


def interleaved(urls: list[T], key: Callable[[T], str] = origin_of) -> list[T]:  # type: ignore[assignment]
    """A chunk's URLs taken a host at a time in turn (each host's in their order; ``key``: an
    item's origin, for items that are not URLs).

    The store gives them in URL order, so host after host: the engine then filled
    all of ``CONCURRENT_REQUESTS`` with one host's URLs, which its slot sends two at
    a time, and every other host waited (16 requests a second over 20 hosts
    answering in 50 ms, measured; bench/bench_probe.py).
    """
    by_host: dict[str, list[T]] = {}
    for url in urls:
        by_host.setdefault(key(url), []).append(url)
    queues = [iter(group) for group in by_host.values()]
    out: list[T] = []
    while queues:
        alive = []
        for queue in queues:
            url = next(queue, None)
            if url is not None:
                out.append(url)
                alive.append(queue)
        queues = alive
    return out

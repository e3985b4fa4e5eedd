"""One record per URL from a batch of captures: what the dedup hook hands the store and the exports.

The hook groups repeated URLs and reads URLs captured once row by row when they are most of
the batch; either way each URL's record must be what its captures say, in first-capture order.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from trawl.pipeline.builtins.dedup import trawl_dedup_batch
from trawl.records.batches import CaptureBatch

STATUSES = ["200", "301", "404", "", None, "-"]
MIMES = ["text/html", "image/png", "", None, "warc/revisit"]
STAMPS = ["20200101000000", "19990505121212", "20231231235959", "", None]


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def _captures(rows: int, urls: int, seed: int) -> list[tuple[Any, ...]]:
    rng = random.Random(seed)
    return [
        (f"https://h{n % 3}.example.com/{n}", rng.choice(STAMPS), rng.choice(STATUSES), rng.choice(MIMES))
        for n in (rng.randrange(urls) for _ in range(rows))
    ]


def _expected(captures: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    by_url: dict[str, list[tuple[Any, ...]]] = {}
    for capture in captures:
        by_url.setdefault(capture[0], []).append(capture)
    records = []
    for url, group in by_url.items():
        stamps = [c[1] for c in group if c[1]]
        records.append((
            url, url.split("/")[2], min(stamps, default=None), max(stamps, default=None), len(group),
            sorted({c[2] for c in group if c[2]}), sorted({c[3] for c in group if c[3]}),
        ))  # fmt: skip
    return records


@pytest.mark.parametrize(("rows", "urls"), [(3_000, 20_000), (3_000, 300), (500, 10**9)])
def test_one_record_per_url_as_its_captures_say(rows: int, urls: int) -> None:
    """Mostly captured once, mostly repeated, and never repeated."""
    captures = _captures(rows, urls, seed=rows + urls)
    batch = CaptureBatch.from_columns(
        "wayback",
        [c[0] for c in captures],
        timestamps=[c[1] for c in captures],
        statuses=[c[2] for c in captures],
        mimes=[c[3] for c in captures],
        page="page=0",
        page_rows=rows,
    )
    batch.frame = batch.frame.with_columns(host=pl.col("url").str.extract(r"//([^/]+)/", 1))
    context = SimpleNamespace(stats=_Stats())
    result = trawl_dedup_batch(batch=batch, context=context)
    assert result is not None and result.kind == "url"
    frame = result.frame
    columns = ["url", "host", "first_seen", "last_seen", "captures", "statuses", "mimes"]
    assert frame.select(columns).rows() == _expected(captures)
    assert frame.get_column("sources").to_list() == [["wayback"]] * frame.height
    assert context.stats.values.get("trawl/duplicates", 0) == rows - frame.height

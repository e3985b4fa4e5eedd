"""The client-side waymore filters on a capture batch: which rows go, and the counts said.

Servers that ignore ``filter=`` (pywb's fuzzy fallback, sources that cannot filter) leave
the status and mime filters to this hook; a batch they all pass must come back untouched.
"""

from __future__ import annotations

from types import SimpleNamespace

from trawl.pipeline.builtins.url_filter import trawl_filter_batch
from trawl.pipeline.filters import FilterConfig
from trawl.records.batches import CaptureBatch


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def _run(config: FilterConfig, statuses: list[str | None], mimes: list[str | None]) -> tuple[list[str], dict]:
    urls = [f"https://example.com/{n}" for n in range(len(statuses))]
    batch = CaptureBatch.from_columns("wayback", urls, statuses=statuses, mimes=mimes)
    context = SimpleNamespace(filters=config, stats=_Stats())
    keep = trawl_filter_batch(batch=batch, context=context)
    if keep is not None:
        batch.select(keep)
    return batch.frame.get_column("url").to_list(), context.stats.values


def test_refused_statuses_and_mimes_go_and_are_counted_by_reason() -> None:
    config = FilterConfig(filter_code=("404", "302"), filter_mime=("image/png",))
    statuses = ["200", "404", None, "302", "200", "", "200"]
    mimes = ["text/html", "text/html", "image/png", "text/html", "warc/revisit", None, "text/html"]
    kept, stats = _run(config, statuses, mimes)
    assert kept == ["https://example.com/0", "https://example.com/5", "https://example.com/6"]
    # A row refused for its status is not counted again for its mime.
    assert stats == {"trawl/filtered/status": 2, "trawl/filtered/mime": 2}


def test_a_batch_every_filter_passes_is_left_alone() -> None:
    config = FilterConfig(filter_code=("404",), filter_mime=("image/png",))
    kept, stats = _run(config, ["200", None, "301"], ["text/html", "text/html", None])
    assert kept == [f"https://example.com/{n}" for n in range(3)]
    assert stats == {}

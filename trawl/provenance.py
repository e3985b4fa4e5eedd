"""Merging what a batch says about a URL into what a store already knows.

Stores keep, per URL and source, the capture count of the latest run and the
best count any run reached. A rerun of the same crawl therefore leaves the
capture count as it was instead of doubling it, while captures of one URL that
a run receives on two different pages still add up.
"""

from __future__ import annotations

import orjson

#: ``{source: [run, captures_in_that_run, best_run_count]}`` (``run``: the store's run number)
SourceCounts = dict[str, list]


def split_set(text: str | None) -> set[str]:
    return set(text.split(",")) if text else set()


def join_set(values: set[str]) -> str:
    return ",".join(sorted(values))


def dumps_counts(counts: SourceCounts) -> str:
    return orjson.dumps(counts).decode()


def loads_counts(text: str | None) -> SourceCounts:
    return orjson.loads(text) if text else {}


def add_run_count(counts: SourceCounts, source: str, run_id: int | str, captures: int) -> None:
    """Add ``captures`` seen by ``source`` in ``run_id`` to ``counts`` in place."""
    entry = counts.get(source)
    if entry is None:
        counts[source] = [run_id, captures, captures]
        return
    previous_run, in_run, best = entry
    in_run = in_run + captures if previous_run == run_id else captures
    counts[source] = [run_id, in_run, max(best, in_run)]


def min_ts(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a <= b else b


def max_ts(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a >= b else b

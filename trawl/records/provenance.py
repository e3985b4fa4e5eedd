"""Provenance of a URL, and the one rule for merging it: every store follows it.

A record says which sources reported the URL, its first and last capture,
its status codes and mime types (sorted sets), and per source the capture
count of the latest run and the best count any run reached
(``counts = {source: [run, captures_in_that_run, best]}``). ``captures`` is
the sum of the best counts. A rerun of the same crawl therefore leaves the
capture count as it was instead of doubling it, while captures of one URL
that one run receives on two different pages still add up.

:meth:`Provenance.merge` is the rule, written once. Stores that can do it in
their database (SQLite's UPSERT in :mod:`trawl.stores.sqlite.schema`) express
the same rule in SQL, and ``tests/test_provenance.py`` checks both give the
same records on random inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: ``{source: [run, captures_in_that_run, best_run_count]}`` (``run``: the store's run key)
SourceCounts = dict[str, list]


def union(a: list[str] | tuple[str, ...], b: list[str] | tuple[str, ...]) -> list[str]:
    """Sorted union of two sets kept as sorted lists (empty values dropped)."""
    if list(a) == list(b):
        return list(a)
    return sorted({*a, *b} - {""})


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


def add_run_count(counts: SourceCounts, source: str, run: int | str, captures: int) -> None:
    """Add ``captures`` seen by ``source`` in ``run`` to ``counts`` in place."""
    entry = counts.get(source)
    if entry is None:
        counts[source] = [run, captures, captures]
        return
    previous_run, in_run, best = entry
    in_run = in_run + captures if previous_run == run else captures
    counts[source] = [run, in_run, max(best, in_run)]


@dataclass
class Provenance:
    """What a store knows about one URL."""

    url: str
    host: str
    sources: list[str]
    first_seen: str | None
    last_seen: str | None
    captures: int
    statuses: list[str]
    mimes: list[str]
    counts: SourceCounts = field(default_factory=dict)
    first_run: int | str = ""
    last_run: int | str = ""

    @classmethod
    def contribution(
        cls,
        url: str,
        host: str,
        sources: list[str],
        first_seen: str | None,
        last_seen: str | None,
        captures: int,
        statuses: list[str],
        mimes: list[str],
        source: str,
        run: int | str,
    ) -> Provenance:
        """What one batch says about a URL, as a record of its own."""
        return cls(
            url, host, list(sources) or [source], first_seen, last_seen, captures, list(statuses),
            list(mimes), {source: [run, captures, captures]}, run, run,
        )  # fmt: skip

    def merge(self, new: Provenance, source: str, run: int | str) -> Provenance:
        """This stored record with a batch's contribution merged in (``self`` unchanged)."""
        counts = {k: list(v) for k, v in self.counts.items()}
        captures = new.counts.get(source, [run, new.captures, new.captures])[1]
        add_run_count(counts, source, run, captures)
        return Provenance(
            self.url,
            self.host or new.host,
            union(self.sources, new.sources),
            min_ts(self.first_seen, new.first_seen),
            max_ts(self.last_seen, new.last_seen),
            sum(entry[2] for entry in counts.values()),
            union(self.statuses, new.statuses),
            union(self.mimes, new.mimes),
            counts,
            self.first_run if self.first_run != "" else run,
            run,
        )

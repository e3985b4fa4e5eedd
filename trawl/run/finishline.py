"""The line a source's run ends with, in the words of what the source counts.

A URL source says pages and URLs (``1 request, 6 pages, 5,007 URLs seen, ...``):
tests, docs and users' scripts read that line, so it stays as it is. A source of
another record kind said the same words about nothing: a crates.io load of 1.67 M
rows ended ``0 pages, 0 URLs seen``, and a responses run that stored 55 files
``0 pages, 0 URLs seen, 55 unique``. Such a source declares its :class:`Tally`
list (``Source.finish_counts``: ``55 files stored``); one that declares none and
is not a URL source is told by the records it handed to the store, by kind
(:func:`trawl.common.statkeys.records_of`), which every source has.
"""

from __future__ import annotations

from typing import Any

from trawl.common import statkeys
from trawl.common.counts import counted
from trawl.common.outcome import error_count
from trawl.common.tally import Tally

#: Kinds the line names, the most first: a crates.io dump has 13 tables, a line holds about 4.
KINDS_SHOWN = 4


def _n(value: Any) -> str:
    return f"{int(value or 0):,}"


def says_urls(spider: Any) -> bool:
    """The URL line: a URL source (a domain's URLs) that declares no counts of its own."""
    from trawl.sources.base import SourceSpider  # the sources import this module

    return isinstance(spider, SourceSpider) and not getattr(spider, "finish_counts", ())


def stored_by_kind(stats: dict[str, Any]) -> dict[str, int]:
    """Records handed to the store this run, by kind, the most first."""
    kinds = {
        key[len(statkeys.RECORDS_PREFIX) :]: int(value or 0)
        for key, value in stats.items()
        if key.startswith(statkeys.RECORDS_PREFIX) and value
    }
    return dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))


def records_said(spider: Any, stats: dict[str, Any]) -> str:
    """What a source of another record kind did: its declared tallies, else its records by kind."""
    tallies: tuple[Tally, ...] = tuple(getattr(spider, "finish_counts", ()) or ())
    if tallies:
        return ", ".join(t.say(stats) for t in tallies if not (t.unless_zero and not stats.get(t.key)))
    kinds = stored_by_kind(stats)
    total = counted(sum(kinds.values()), "record")
    if not kinds:
        return total
    if len(kinds) == 1:
        [(kind, n)] = kinds.items()
        return f"{n:,} {kind} {'record' if n == 1 else 'records'}"
    shown = [f"{kind} {n:,}" for kind, n in list(kinds.items())[:KINDS_SHOWN]]
    if len(kinds) > KINDS_SHOWN:
        shown.append(f"{len(kinds) - KINDS_SHOWN} more")
    return f"{total} of {len(kinds)} kinds ({', '.join(shown)})"


def finish_line(
    spider: Any, stats: dict[str, Any], outcome: str, reason: str, elapsed: float, waits: str
) -> tuple[str, tuple[Any, ...]]:
    """The finish line's format and arguments (logged lazily, as every trawl line)."""
    requests = counted(stats.get("downloader/request_count"), "request")
    if not says_urls(spider):
        rated = sum(stored_by_kind(stats).values())
        return (
            "%s: %s (%s) in %.1f s: %s, %s, %s, %s records/s%s",
            (
                spider.name,
                outcome,
                reason,
                elapsed,
                requests,
                records_said(spider, stats),
                counted(error_count(stats), "error"),
                _n(rated / elapsed if elapsed > 0 else 0),
                waits,
            ),
        )
    filtered = sum(v for k, v in stats.items() if k.startswith(statkeys.FILTERED_PREFIX))
    captures = stats.get(statkeys.CAPTURES, 0)
    return (
        "%s: %s (%s) in %.1f s: %s, %s, %s seen, %s unique, %s new this run, %s dropped, "
        "%s filtered, %s, %s captures/s%s",
        (
            spider.name,
            outcome,
            reason,
            elapsed,
            requests,
            counted(stats.get(statkeys.PAGES), "page"),
            counted(captures, "URL"),
            _n(stats.get(statkeys.URLS_UNIQUE)),
            _n(stats.get(statkeys.URLS_NEW)),
            counted(stats.get(statkeys.DUPLICATES), "duplicate"),
            _n(filtered),
            counted(error_count(stats), "error"),
            _n(captures / elapsed if elapsed > 0 else 0),
            waits,
        ),
    )

"""Stored URLs of a domain, selected with the search language and read a chunk at a time.

What a source that works on the URLs trawl already holds (``trawl crawl probe``,
and the archived-responses source beside it) starts from: ``-a domain=`` (with
``-a subs=``), ``-a query=`` (any query ``trawl search`` takes) and ``-a limit=``.

Why chunks by key, not one query read to the end: a million URLs held in a list
cost ~150 MB before a request is sent (httpx's reports of running out of memory
on large lists: #722, #1496), and one SQLite read transaction held open for the
hours a probe takes keeps the store's WAL from being checkpointed while the same
run writes its results. Each chunk is one short query, ``url > last`` in URL
order (the store's primary key), through the store's own searcher
(:class:`~trawl.stores.contract.UrlSearchableStore`): any store ``trawl search``
can read works, and only ``CHUNK`` URLs are in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trawl.errors import TrawlUsageError
from trawl.search import FIELDS, And, MatchAll, Node, Range, leaf, parse
from trawl.sources.arguments import parse_int
from trawl.sources.target import Target

#: URLs read from the store per query.
CHUNK = 2000


@dataclass(frozen=True)
class Selection:
    """Which stored URLs: the domain (and subdomains), a query, at most ``limit`` (0: all)."""

    target: Target
    query: Node
    query_text: str = ""
    limit: int = 0

    def node(self, after: str | None) -> Node:
        """The search tree of the chunk after the URL ``after`` (``None``: the first)."""
        domain = self.target.domain
        scope = leaf(FIELDS["domain" if self.target.include_subdomains else "host"], domain, ())
        parts: list[Node] = [scope]
        if not isinstance(self.query, MatchAll):
            parts.append(self.query)
        if after is not None:
            parts.append(Range(FIELDS["url"], after, None, False, True))
        return And(tuple(parts))


def read_selection(target: Target, arguments: Any) -> Selection:
    """``-a query=`` (parsed now: a bad query is one line before anything is sent) and ``-a limit=``."""
    text = str(arguments.get("query") or "").strip()
    try:
        query = parse(text) if text else MatchAll()
    except TrawlUsageError as exc:
        raise TrawlUsageError(f"-a query=: {exc}") from None
    limit = parse_int("limit", arguments.get("limit", 0) or 0)
    return Selection(target, query, text, limit)


def stored_urls(
    searcher: Any, selection: Selection, chunk: int = CHUNK, apply_limit: bool = True
) -> Iterator[list[str]]:
    """The selected URLs in URL order, ``chunk`` at a time (a list each), at most ``selection.limit``
    (unless ``apply_limit`` is False: a caller that picks among them counts its own limit)."""
    after: str | None = None
    left = (selection.limit or None) if apply_limit else None
    while left is None or left > 0:
        size = chunk if left is None else min(chunk, left)
        urls = [record.url for record in searcher.records(selection.node(after), size)]
        if not urls:
            return
        yield urls
        if left is not None:
            left -= len(urls)
        if len(urls) < size:
            return
        after = urls[-1]

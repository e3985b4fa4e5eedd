"""What the mining commands compute from the stored records: listings, a wordlist, a history.

Pure functions over frames (the ``endpoint`` and ``mined`` records, the
``response`` index), so ``trawl endpoints`` and ``trawl params`` stay thin and
every store that can hand these frames over answers the same way.

The history of a file URL (``trawl endpoints --history URL``) is derived, not
stored: the index gives the URL's captures in time order and the digest of each
(url -> captures -> digest), the endpoint records give each digest's endpoints.
Consecutive captures with the same digest are one step (the file did not
change); between two steps, an endpoint (method and URL) that the newer file has
and the older one lacks appeared, the reverse disappeared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from trawl.mining.records import split


def of_domain(
    records: pl.DataFrame, domain: str | None, subdomains: bool, column: str = "file_host"
) -> pl.DataFrame:
    """The records whose ``column`` host is ``domain`` (or one of its subdomains); all without a domain."""
    if not domain:
        return records
    host = pl.col(column).str.to_lowercase()
    keep = host == domain
    if subdomains:
        keep = keep | host.str.ends_with("." + domain)
    return records.filter(keep.fill_null(False))


def _names(column: pl.Series) -> list[str]:
    return sorted({n for text in column.to_list() for n in split(text)})


def listing(endpoints: pl.DataFrame) -> list[dict[str, object]]:
    """One row per (endpoint, method): every use, the parameter names of every file, the captures' span."""
    rows = []
    for (endpoint, method), group in endpoints.sort("endpoint", "method").group_by(
        "endpoint", "method", maintain_order=True
    ):
        rows.append(
            {
                "endpoint": endpoint,
                "method": method or None,
                "how": sorted(set(group.get_column("how").to_list())),
                "query": _names(group.get_column("query")),
                "body": _names(group.get_column("body")),
                "headers": _names(group.get_column("headers")),
                "first_seen": group.get_column("first_seen").min(),
                "last_seen": group.get_column("last_seen").max(),
                "files": group.get_column("digest").n_unique(),
            }
        )
    return rows


def wordlist(endpoints: pl.DataFrame, mined: pl.DataFrame) -> list[str]:
    """Every parameter name, once, sorted: query and body names, and those not tied to an endpoint."""
    names = {*_names(endpoints.get_column("query")), *_names(endpoints.get_column("body"))}
    names.update(_names(mined.get_column("params")))
    return sorted(names)


def label(method: str | None, endpoint: str) -> str:
    """An endpoint as history shows it: ``POST https://...``, or the URL alone when the method is unknown."""
    return f"{method} {endpoint}" if method else endpoint


@dataclass(slots=True)
class Step:
    """Consecutive captures of one file URL that share a digest, and what changed from the step before."""

    first: str
    last: str
    digest: str
    captures: int = 1
    mined: bool = True
    endpoints: int = 0
    appeared: list[str] = field(default_factory=list)
    disappeared: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "timestamp": self.first,
            "until": self.last,
            "digest": self.digest,
            "captures": self.captures,
            "mined": self.mined,
            "endpoints": self.endpoints,
            "appeared": self.appeared,
            "disappeared": self.disappeared,
        }


def history(captures: Iterable[tuple[str, str]], endpoints: pl.DataFrame, mined: set[str]) -> list[Step]:
    """The steps of one file URL's ``captures`` ((timestamp, digest), any order).

    A digest not mined yet is a step with ``mined`` False: nothing is said to
    appear or disappear across it (the next mined step compares with the last
    mined one).
    """
    by_digest: dict[str, set[str]] = {}
    for digest, endpoint, method in endpoints.select("digest", "endpoint", "method").iter_rows():
        by_digest.setdefault(digest, set()).add(label(method, endpoint))
    steps: list[Step] = []
    for timestamp, digest in sorted(captures):
        if steps and steps[-1].digest == digest:
            steps[-1].last = timestamp
            steps[-1].captures += 1
            continue
        steps.append(Step(timestamp, timestamp, digest, mined=digest in mined))
    before: set[str] = set()
    for step in steps:
        if not step.mined:
            continue
        now = by_digest.get(step.digest, set())
        step.endpoints = len(now)
        step.appeared = sorted(now - before)
        step.disappeared = sorted(before - now)
        before = now
    return steps

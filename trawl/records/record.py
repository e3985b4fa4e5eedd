"""One stored URL with its provenance, as a search or an export reads it: no polars.

``trawl search`` turns each row of the store into a :class:`UrlRecord` and prints it;
the batch classes (:mod:`trawl.records.batches`) import polars, 0.2 s of CPU a read
command that never builds a frame would pay.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class UrlRecord:
    """One canonical URL with its provenance: the row view of a :class:`UrlBatch`."""

    url: str
    host: str
    sources: list[str]
    first_seen: str | None
    last_seen: str | None
    captures: int
    statuses: list[str]
    mimes: list[str]
    new: bool

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-ready form used by exporters and the search command."""
        return {
            "url": self.url,
            "host": self.host,
            "sources": list(self.sources),
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "captures": self.captures,
            "statuses": list(self.statuses),
            "mimes": list(self.mimes),
            "new": self.new,
        }

"""What every reader hands its findings to: resolution, query names and de-duplication in one place.

A file that calls ``fetch("/api/x")`` ten times has one endpoint, at the line of the
first call: an endpoint is one (url, how, method, query, body, headers, source); the
line is where it was first seen. Readers never build :class:`Endpoint` themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from trawl.mining.findings import Endpoint, FileFindings
from trawl.mining.resolve import query_names, resolve


class Collector:
    """Endpoints and parameter names of one file, resolved against the file's URL."""

    def __init__(self, base: str, source: str | None = None) -> None:
        self.base = base
        self.source = source
        self._endpoints: dict[tuple, Endpoint] = {}
        self.params: set[str] = set()

    def add(
        self,
        raw: str,
        how: str,
        line: int,
        *,
        method: str | None = None,
        query: Iterable[str] = (),
        body: Iterable[str] = (),
        headers: Iterable[str] = (),
    ) -> str | None:
        """Record one use of ``raw``; the resolved URL, or ``None`` when the value is dropped."""
        url = resolve(raw, self.base)
        if url is None:
            return None
        endpoint = Endpoint(
            url=url,
            how=how,
            method=method,
            query=tuple(sorted(set(query) | set(query_names(url)))),
            body=tuple(sorted(set(body))),
            headers=tuple(sorted(set(headers))),
            line=line,
            source=self.source,
        )
        key = (url, how, method, endpoint.query, endpoint.body, endpoint.headers, self.source)
        self._endpoints.setdefault(key, endpoint)
        return url

    def merge(self, findings: FileFindings) -> None:
        """Take another reader's findings (an inline script, an original source) into this file's."""
        for endpoint in findings.endpoints:
            key = (
                endpoint.url,
                endpoint.how,
                endpoint.method,
                endpoint.query,
                endpoint.body,
                endpoint.headers,
                endpoint.source,
            )
            self._endpoints.setdefault(key, endpoint)
        self.params |= findings.params

    def findings(self, reader: str) -> FileFindings:
        return FileFindings(endpoints=list(self._endpoints.values()), params=set(self.params), reader=reader)

"""A local stand-in for urlscan.io's search API (``/api/v1/search/``).

Why: the urlscan spider must cope with what urlscan.io really sends, and its
paging rule is easy to get wrong. This server is built from the recorded 2023
answer in ``tests/data/urlscan_search_2023_mihari_cassette.json`` (a verbatim
copy of /work/shared/api-samples/; its first page can be reproduced byte for
byte, see :meth:`FakeUrlscanServer.from_sample`) and
/work/shared/api-formats.md section e:

* pretty-printed JSON (2-space indent), ``Content-Type: application/json; charset=utf-8``;
* ``results`` newest first, each with ``sort: [<epoch ms>, <uuid>]``; the next
  page is ``search_after=<ms>,<uuid>`` of the last result;
* ``total`` capped at 10,000 and ``has_more`` true only when there are *more
  than* ``total`` results: a full page with ``has_more: false`` is the normal
  case, not the end;
* ``q``: ``domain:<d>`` (the domain or a subdomain was contacted by the scan)
  and ``date:[A TO B]`` joined with ``AND``; ``size`` default 100, at most
  10,000, served at most at the plan's ``max_size`` (a short page, as waymore's
  use of ``size=10000`` with any key suggests), or refused above the plan's
  ``refuse_above`` with a 400 (the other plausible answer, [GUESS] body:
  urlscan's error shape, ``message``/``description``/``status``);
* ``API-Key`` header (optional); ``X-Rate-Limit-*`` headers on every answer;
  a key over its quota gets 429 with ``X-Rate-Limit-Reset-After`` and
  ``X-Rate-Limit-Reset`` until the reset; an unknown key gets 401.

Not confirmed (api-formats "Not confirmed" 5): the 401 and 429 body texts; the
429 body carries waymore's "Reset in N seconds" phrase.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers.otx import (
    FaultResponse,
    LocalApiServer,
    Reply,
    RequestRecord,
    html_error_page,
    server_error,
    spoil,
)

__all__ = [
    "SAMPLE",
    "FakeUrlscanServer",
    "KeyQuota",
    "html_error_page",
    "make_result",
    "sample_results",
    "server_error",
]

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "urlscan_search_2023_mihari_cassette.json"
TOTAL_CAP = 10_000
MAX_SIZE = 10_000
_CT = "application/json; charset=utf-8"


def sample_results() -> list[dict[str, Any]]:
    """The 100 results of the recorded answer, newest first."""
    return json.loads(SAMPLE.read_text(encoding="utf-8"))["results"]


def _host(url: str) -> str:
    return url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split(":", 1)[0].lower()


def _apex(host: str) -> str:
    return ".".join(host.split(".")[-2:])


def _epoch_ms(iso: str) -> int:
    moment = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return int(moment.timestamp() * 1000)


def make_result(
    page_url: str,
    time_iso: str,
    *,
    task_url: str | None = None,
    status: str = "200",
    mime: str = "text/html",
    ptr: str | None = None,
    scan_id: str | None = None,
) -> dict[str, Any]:
    """A search result shaped like the recorded ones (same keys, same order).

    ``time_iso`` is ``task.time`` (``2023-01-05T10:00:00.000Z``); the ``sort``
    values follow from it and the scan's uuid.
    """
    task_url = task_url or page_url
    scan_id = scan_id or str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{page_url} {task_url} {time_iso}"))
    page_host, task_host = _host(page_url), _host(task_url)
    digest = hashlib.sha256(page_url.encode()).hexdigest()
    page: dict[str, Any] = {
        "country": "US",
        "server": "ECS (nyb/1D13)",
        "ip": "2606:2800:220:1:248:1893:25c8:1946",
    }
    if ptr is not None:
        page["ptr"] = ptr
    page.update(
        {
            "mimeType": mime,
            "title": "Example Domain",
            "url": page_url,
            "tlsValidDays": 396,
            "tlsAgeDays": 19,
            "tlsValidFrom": "2023-01-13T00:00:00.000Z",
            "domain": page_host,
            "umbrellaRank": 11157,
            "apexDomain": _apex(page_host),
            "asnname": "EDGECAST, US",
            "asn": "AS15133",
            "tlsIssuer": "DigiCert TLS RSA SHA256 2020 CA1",
            "status": status,
        }
    )
    if page_host != task_host:
        page["redirected"] = "off-domain"
    return {
        "verdicts": {"score": 0, "malicious": False, "urlscan": {"malicious": False}, "hasVerdicts": False},
        "submitter": {"country": "us"},
        "dom": {"size": 1218, "hash": digest},
        "frames": {"length": 1},
        "canonical": {"task": {"url": task_host}, "page": {"url": page_host}},
        "task": {
            "visibility": "public",
            "method": "api",
            "domain": task_host,
            "apexDomain": _apex(task_host),
            "time": time_iso,
            "uuid": scan_id,
            "url": task_url,
        },
        "stats": {
            "uniqIPs": 2,
            "uniqCountries": 1,
            "dataLength": 1672,
            "encodedDataLength": 1159,
            "requests": 2,
        },
        "scanner": {"country": "de"},
        "links": {"length": 1},
        "page": page,
        "text": {"size": 672, "hash": digest[::-1]},
        "_id": scan_id,
        "_score": None,
        "sort": [_epoch_ms(time_iso), scan_id],
        "result": f"https://urlscan.io/api/v1/result/{scan_id}/",
        "screenshot": f"https://urlscan.io/screenshots/{scan_id}.png",
    }


@dataclass
class KeyQuota:
    """The search quota of one key (or, for ``None``, of the keyless IP).

    The key answers ``serves`` requests, then its limit is hit: it answers 429
    for ``block`` seconds from that moment, then serves without limit.
    ``serves=None``: never limited.
    """

    serves: int | None = None
    block: float = 1.0
    window: str = "minute"
    served: int = 0
    blocked_until: float | None = None  # time.monotonic()
    #: When each 429 was sent (monotonic), for assertions.
    refused_at: list[float] = field(default_factory=list)


class _BadQuery(Exception):
    pass


class _PlanLimit(Exception):
    """A ``size`` above what the plan accepts (:attr:`FakeUrlscanServer.refuse_above`)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(size, limit)
        self.size, self.limit = size, limit


@dataclass
class FakeUrlscanServer(LocalApiServer):
    """urlscan.io's search endpoint over a list of results (any order; served newest first)."""

    results: list[dict[str, Any]] = field(default_factory=list)
    #: Largest ``size`` the plan serves (a bigger one is served at this size).
    max_size: int = MAX_SIZE
    #: Largest ``size`` the plan accepts: a bigger one gets HTTP 400 (``None``: none refused).
    refuse_above: int | None = None
    #: The sizes refused so far (HTTP 400), in order, for assertions.
    refused_sizes: list[int] = field(default_factory=list)
    #: ``total`` never exceeds this (urlscan: 10,000).
    total_cap: int = TOTAL_CAP
    #: A ``total`` to report instead of the real one (to replay the recorded answer).
    total_override: int | None = None
    took: int = 18
    #: Keys that exist; ``None``: any key works. Others get 401.
    valid_keys: set[str] | None = None
    #: Quotas by key (``None``: the keyless IP). Keys without one are never limited.
    quotas: dict[str | None, KeyQuota] = field(default_factory=dict)
    #: Answers served, in order, to the next requests (before anything else).
    faults: list[FaultResponse] = field(default_factory=list)
    #: page (1-based, from the search_after position) -> answers served before the real one.
    fail_pages: dict[int, list[FaultResponse]] = field(default_factory=dict)
    html_200_pages: set[int] = field(default_factory=set)
    malformed_pages: set[int] = field(default_factory=set)
    #: Ignore ``search_after`` (a broken server: every page is the first).
    ignore_search_after: bool = False
    #: Answers rendered by :meth:`prerender_pages`: (q, size, search_after bound) -> (page, body).
    _cache: dict[tuple[str, int, tuple[int, str] | None], tuple[int, bytes]] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        LocalApiServer.__init__(self)
        # urlscan's order: newest first, then by uuid (descending, as Elasticsearch ties break).
        self.results = sorted(self.results, key=_sort_key, reverse=True)

    @classmethod
    def from_sample(cls, extra: list[dict[str, Any]] = (), **kwargs: Any) -> FakeUrlscanServer:  # type: ignore[assignment]
        """The recorded results (+ ``extra``); with ``total_override=1511`` page 1 is the recording."""
        return cls(results=sample_results() + list(extra), **kwargs)

    # --- HTTP ----------------------------------------------------------------------------

    def handle(self, request: RequestRecord) -> Reply:
        if self.faults:
            return self.fault(self.faults.pop(0))
        if request.path != "/api/v1/search/":
            return self._json(404, {"message": "Not Found", "status": 404}, [])
        key = request.header("API-Key")
        if key is not None and self.valid_keys is not None and key not in self.valid_keys:
            # [GUESS] body text
            body = {
                "message": "Unauthorized",
                "description": "The API key supplied is not valid.",
                "status": 401,
            }
            return self._json(401, body, [])
        quota = self.quotas.get(key)
        now = time.monotonic()
        refused = self._over_quota(quota, now) if quota is not None else None
        if refused is not None:
            return refused
        try:
            page, body = self._search(request)
        except _PlanLimit as exc:
            self.refused_sizes.append(exc.size)
            # [GUESS] body text; a refused request is not counted against the quota.
            body = {
                "message": "Search size too large",
                "description": f"size={exc.size} exceeds the maximum of {exc.limit} for your plan.",
                "status": 400,
            }
            return self._json(400, body, self._rate_headers(key, quota, now))
        except _BadQuery as exc:
            return self._json(400, {"message": str(exc), "status": 400}, self._rate_headers(key, quota, now))
        faults = self.fail_pages.get(page)
        fault = faults.pop(0) if faults else None
        if fault is not None and spoil(fault, b"") is None:
            return self.fault(fault)
        if page in self.html_200_pages:
            return self.fault(html_error_page(200))
        if quota is not None:
            quota.served += 1
        headers = self._rate_headers(key, quota, now)
        if page in self.malformed_pages:
            body = body[: len(body) // 2]
        if fault is not None:
            body = spoil(fault, body) or b""
        return Reply(200, [("Content-Type", _CT), *headers], body)

    def _over_quota(self, quota: KeyQuota, now: float) -> Reply | None:
        if quota.blocked_until is not None and now >= quota.blocked_until:
            quota.serves, quota.blocked_until = None, None  # the window reset
        if quota.blocked_until is None and quota.serves is not None and quota.served >= quota.serves:
            quota.blocked_until = now + quota.block
        if quota.blocked_until is None:
            return None
        quota.refused_at.append(now)
        left = max(1, math.ceil(quota.blocked_until - now))
        reset = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=quota.blocked_until - now)
        body = {
            "message": "Rate limit exceeded",
            "description": f"Rate limit for this action (search) exceeded. Reset in {left} seconds.",
            "status": 429,
        }
        headers = [
            ("X-Rate-Limit-Scope", "team"),
            ("X-Rate-Limit-Action", "search"),
            ("X-Rate-Limit-Window", quota.window),
            ("X-Rate-Limit-Limit", str(quota.served)),
            ("X-Rate-Limit-Remaining", "0"),
            (
                "X-Rate-Limit-Reset",
                reset.strftime("%Y-%m-%dT%H:%M:%S.") + f"{reset.microsecond // 1000:03d}Z",
            ),
            ("X-Rate-Limit-Reset-After", str(left)),
        ]
        return self._json(429, body, headers)

    def _rate_headers(self, key: str | None, quota: KeyQuota | None, now: float) -> list[tuple[str, str]]:
        limit = 120 if quota is None or quota.serves is None else quota.serves
        used = quota.served if quota is not None else 0
        reset = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        return [
            ("X-Rate-Limit-Scope", "team" if key else "ip-address"),
            ("X-Rate-Limit-Action", "search"),
            ("X-Rate-Limit-Window", "minute"),
            ("X-Rate-Limit-Limit", str(limit)),
            ("X-Rate-Limit-Remaining", str(max(limit - used - 1, 0))),
            ("X-Rate-Limit-Reset", reset.strftime("%Y-%m-%dT%H:%M:%S.000Z")),
            (
                "X-Rate-Limit-Reset-After",
                str(max(int((reset - dt.datetime.now(dt.timezone.utc)).total_seconds()), 0)),
            ),
        ]

    def _json(self, status: int, data: object, headers: list[tuple[str, str]]) -> Reply:
        return Reply(status, [("Content-Type", _CT), *headers], _render(data))

    # --- search --------------------------------------------------------------------------

    def _search(self, request: RequestRecord) -> tuple[int, bytes]:
        q = request.param("q") or ""
        size = _int(request.param("size"), 100)
        if not 1 <= size <= MAX_SIZE:
            raise _BadQuery(f"size must be between 1 and {MAX_SIZE}")
        if self.refuse_above is not None and size > self.refuse_above:
            raise _PlanLimit(size, self.refuse_above)
        size = min(size, self.max_size)
        after = request.param("search_after")
        bound = None
        if after is not None and not self.ignore_search_after:
            bound = _parse_search_after(after)
        cached = self._cache.get((q, size, bound))
        if cached is not None:
            return cached
        predicates = _parse_query(q)
        matching = [r for r in self.results if all(p(r) for p in predicates)]
        start = 0 if bound is None else sum(1 for r in matching if _sort_key(r) >= bound)
        return start // size + 1, self._answer(matching, start, size)

    def _answer(self, matching: list[dict[str, Any]], start: int, size: int) -> bytes:
        total = min(len(matching), self.total_cap) if self.total_override is None else self.total_override
        answer = {
            "results": matching[start : start + size],
            "total": total,
            "took": self.took,
            "has_more": len(matching) > self.total_cap,
        }
        return _render(answer)

    def prerender_pages(self, q: str, size: int = 100) -> int:
        """Render every page a client walking ``search_after`` gets for ``q`` ahead of time,
        down to the first short (or empty) one (for benchmarks: a page then costs a dict
        lookup, not a scan and a pretty-printed dump). Faults and quotas still apply.
        Returns the number of pages; render again after changing ``results``."""
        predicates = _parse_query(q)
        size = min(size, self.max_size)
        matching = [r for r in self.results if all(p(r) for p in predicates)]
        start, bound = 0, None
        while True:
            self._cache[(q, size, bound)] = (start // size + 1, self._answer(matching, start, size))
            if len(matching) - start < size:
                return start // size + 1
            start += size
            bound = _sort_key(matching[start - 1])

    def search_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.path == "/api/v1/search/"]


def _render(data: object) -> bytes:
    """Pretty-printed like the recording (2 spaces, no trailing newline)."""
    return json.dumps(data, indent=2, ensure_ascii=False).encode("utf-8")


def _sort_key(result: dict[str, Any]) -> tuple[int, str]:
    ms, scan_id = result["sort"]
    return int(ms), str(scan_id)


def _parse_search_after(raw: str) -> tuple[int, str]:
    parts = raw.split(",")
    if len(parts) != 2 or not parts[0].isdigit():
        raise _BadQuery(f"invalid search_after: {raw}")
    return int(parts[0]), parts[1]


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw not in (None, "") else default
    except ValueError as exc:
        raise _BadQuery(f"not a number: {raw}") from exc


def _domains(result: dict[str, Any]) -> set[str]:
    """What ``domain:`` matches: the hosts the scan contacted (here: task and page hosts)."""
    found = {str(result.get("task", {}).get("domain", "")), str(result.get("page", {}).get("domain", ""))}
    return {d.lower() for d in found if d}


def _parse_query(q: str) -> list:
    predicates = []
    for clause in q.split(" AND "):
        name, _, value = clause.strip().partition(":")
        if name == "domain" and value:
            wanted = value.lower()
            predicates.append(lambda r, w=wanted: any(d == w or d.endswith("." + w) for d in _domains(r)))
        elif name == "date" and len(value) > 2 and value[0] in "[{" and value[-1] in "]}":
            low, sep, high = value[1:-1].partition(" TO ")
            if not sep:
                raise _BadQuery(f"invalid range: {value}")
            lo, hi = _bound(low), _bound(high)
            lo_incl, hi_incl = value[0] == "[", value[-1] == "]"

            def in_range(r, lo=lo, hi=hi, lo_incl=lo_incl, hi_incl=hi_incl) -> bool:
                t = _epoch_ms(r["task"]["time"])
                if lo is not None and (t < lo or (t == lo and not lo_incl)):
                    return False
                return hi is None or t < hi or (t == hi and hi_incl)

            predicates.append(in_range)
        else:
            raise _BadQuery(f"Search query invalid: {clause!r}")
    return predicates


def _bound(text: str) -> int | None:
    """``*`` (open), ``now``, ``YYYY-MM-DD`` (midnight UTC, as Elasticsearch reads it) or ISO."""
    text = text.strip()
    if text == "*":
        return None
    if text == "now":
        return int(time.time() * 1000)
    try:
        if len(text) == 10:
            return _epoch_ms(text + "T00:00:00.000Z")
        return _epoch_ms(text)
    except ValueError as exc:
        raise _BadQuery(f"invalid date: {text}") from exc

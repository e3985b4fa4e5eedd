"""A local stand-in for the crates.io API (``/api/v1/crates...``), with a request log the tests read.

Why: the ``crates`` source's ``mode=api`` and ``mode=incremental`` must cope with
what crates.io really sends, without the internet. Built from crates.io's own
code (``src/controllers/krate/search.rs``, ``controllers/helpers/pagination.rs``,
``middleware/require_user_agent.rs``, ``block_traffic.rs``) and its snapshots
(``integration__routes__crates__read__show-2.snap``), /work/shared/api-formats.md
section h:

* ``GET /api/v1/crates``: ``per_page`` (default 10, at most 100: ``cannot request
  more than 100 items``), ``sort`` (``alphabetical`` (the default without ``q``),
  ``relevance`` (the default with ``q``), ``downloads``, ``recent-downloads``,
  ``recent-updates``, ``new``; an unknown one sorts by name, as the real server),
  ``q`` (a crate whose name or description holds it; an exact name first), and
  pagination: without ``page``, *seek* (``next_page`` is the query with
  ``seek=<base64url(JSON sort key)>``, ``prev_page`` null, present only when the
  page was full); with ``page``, numbered (``page=n+1`` appended, also only when
  full); ``page`` over 200 is refused as crates.io refuses crawlers (``Page 201 is
  unavailable for performance reasons...``); ``page`` with ``seek``, a ``seek``
  that does not decode, ``page=0``: 400 with the real texts.
* ``GET /api/v1/crates/{name}``: ``crate`` (``versions`` as ids, ``keywords``,
  ``categories``, ``links.versions`` null), ``versions``, ``keywords``, ``categories``;
  an unknown crate is 404 ``crate `x` does not exist``.
* ``GET /api/v1/crates/{name}/downloads``: ``version_downloads`` and ``meta.extra_downloads``.
* ``GET /api/v1/crates/{name}/{version}/dependencies``; an unknown version is 404.
* ``GET /archive/version-downloads/YYYY-MM-DD.csv``: the per-day archive of
  version downloads older than the db-dump's 90 days (:attr:`archive`; S3's 404 otherwise).
* No or an empty ``User-Agent`` (or ``Amazon CloudFront``): 403 with the real
  plain-text body; a User-Agent in :attr:`blocked_agents`: the blocked-crawler 403.
* Faults a test switches on (:attr:`faults`, by path, used once each): a 429
  with ``Retry-After`` in seconds (crates.io's own 429 gives an HTTP date), a
  body that is not JSON, or any fixed answer.

Errors are ``{"errors":[{"detail":"..."}]}``; JSON is compact, as serde_json writes it.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from tests.servers.otx import LocalApiServer, Reply, RequestRecord

NO_USER_AGENT = (
    "We require that all requests include a `User-Agent` header.  To allow us to determine the impact"
    " your bot has on our service, we ask that your user agent actually identify your bot, and not just"
    " report the HTTP client library you're using.  Including contact information will also reduce the"
    " chance that we will need to take action against your bot.\n\nBad:\n  User-Agent: reqwest/0.9.1\n\n"
    "Better:\n  User-Agent: my_crawler\n\nBest:\n  User-Agent: my_crawler (my_crawler.com/info)\n"
    "  User-Agent: my_crawler (help@my_crawler.com)\n\nIf you believe you've received this message in"
    " error, please email help@crates.io and include the request id {}.\n"
)
BLOCKED = (
    "We are unable to process your request at this time. This usually means that you are in violation"
    " of our API data access policy (https://crates.io/data-access). Please open an issue at"
    " https://github.com/rust-lang/crates.io or email help@crates.io and provide the request id {}"
)
MAX_PAGE = 200


@dataclass
class FakeVersion:
    id: int
    num: str
    created_at: str
    updated_at: str
    downloads: int = 0
    yanked: bool = False
    license: str | None = None
    crate_size: int | None = None
    rust_version: str | None = None
    #: Dependencies: dicts with ``id``, ``crate`` (the depended-on crate's name), ``req``,
    #: ``optional``, ``default_features``, ``features``, ``target``, ``kind`` (normal/build/dev).
    dependencies: list[dict[str, Any]] = field(default_factory=list)
    #: ``(date, downloads)`` of the last 90 days.
    daily: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class FakeCrate:
    id: int
    name: str
    created_at: str
    updated_at: str
    description: str | None = None
    homepage: str | None = None
    documentation: str | None = None
    repository: str | None = None
    downloads: int = 0
    recent_downloads: int = 0
    keywords: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    versions: list[FakeVersion] = field(default_factory=list)

    def newest(self) -> FakeVersion | None:
        return max(self.versions, key=lambda v: v.created_at, default=None)


def _error(status: int, detail: str, headers: list[tuple[str, str]] | None = None) -> Reply:
    body = json.dumps({"errors": [{"detail": detail}]}, separators=(",", ":")).encode()
    return Reply(status, [("Content-Type", "application/json; charset=utf-8"), *(headers or [])], body)


def _json(data: Any) -> Reply:
    body = json.dumps(data, separators=(",", ":")).encode()
    return Reply(200, [("Content-Type", "application/json; charset=utf-8")], body)


def _micros(stamp: str) -> int:
    """``2026-08-30T10:00:00.5Z`` as microseconds since the epoch (the seek key's ``ts_microseconds``)."""
    from datetime import datetime

    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1_000_000)


class FakeCratesApi(LocalApiServer):
    """crates.io's read API over :attr:`crates`; every request in :attr:`requests` (with its time)."""

    server_header = "nginx"

    def __init__(self, crates: list[FakeCrate]) -> None:
        super().__init__()
        self.crates = {c.name: c for c in crates}
        #: path -> replies served once each, in turn, before the real answer.
        self.faults: dict[str, deque[Reply]] = defaultdict(deque)
        self.blocked_agents: set[str] = set()
        self.request_id = 0
        #: The per-day version-downloads archive (static.crates.io's ``/archive/version-downloads/``):
        #: day (``YYYY-MM-DD``) -> the bytes of ``<day>.csv``; a day not here is a 404.
        self.archive: dict[str, bytes] = {}

    def __enter__(self) -> FakeCratesApi:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- what a test switches on ------------------------------------------------------------

    def fail_once(self, path: str, reply: Reply) -> None:
        self.faults[path].append(reply)

    @staticmethod
    def throttled(retry_after: str = "2") -> Reply:
        detail = "You have made too many requests in a short period of time. Please try again later."
        return _error(429, detail, [("Retry-After", retry_after)])

    @staticmethod
    def not_json() -> Reply:
        return Reply(200, [("Content-Type", "application/json; charset=utf-8")], b'{"crate":{"id":"x",')

    # --- answers ----------------------------------------------------------------------------

    @property
    def archive_url(self) -> str:
        return f"{self.base_url}/archive/version-downloads"

    def handle(self, request: RequestRecord) -> Reply:
        self.request_id += 1
        if request.path.startswith("/archive/version-downloads/"):  # static files: no User-Agent rule
            day = request.path.rsplit("/", 1)[-1].removesuffix(".csv")
            if day not in self.archive:
                return Reply(
                    404, [("Content-Type", "application/xml")], b"<Error><Code>NoSuchKey</Code></Error>"
                )
            return Reply(200, [("Content-Type", "text/csv")], self.archive[day])
        agent = (request.header("User-Agent") or "").strip()
        if agent in ("", "Amazon CloudFront"):
            body = NO_USER_AGENT.replace("{}", f"req-{self.request_id}").encode()
            return Reply(403, [], body)
        if agent in self.blocked_agents:
            return Reply(403, [], BLOCKED.replace("{}", f"req-{self.request_id}").encode())
        if self.faults.get(request.path):
            return self.faults[request.path].popleft()
        parts = [p for p in request.path.split("/") if p]
        if parts[:2] != ["api", "v1"] or len(parts) < 3 or parts[2] != "crates":
            return _error(404, "Not Found")
        rest = parts[3:]
        if not rest:
            return self._list(request)
        crate = self.crates.get(rest[0])
        if crate is None:
            return _error(404, f"crate `{rest[0]}` does not exist")
        if len(rest) == 1:
            return _json(self._show(crate))
        if rest[1:] == ["downloads"]:
            return _json(self._downloads(crate))
        if len(rest) == 3 and rest[2] == "dependencies":
            version = next((v for v in crate.versions if v.num == rest[1]), None)
            if version is None:
                return _error(404, f"crate `{crate.name}` does not have a version `{rest[1]}`")
            return _json({"dependencies": [self._dependency(version, d) for d in version.dependencies]})
        return _error(404, "Not Found")

    def _list(self, request: RequestRecord) -> Reply:
        params = dict(request.params)
        page, seek = params.get("page"), params.get("seek")
        if page is not None and seek is not None:
            return _error(400, "providing both ?page= and ?seek= is unsupported")
        try:
            per_page = int(params.get("per_page", "10"))
            number = int(page) if page is not None else None
        except ValueError:
            return _error(400, "invalid digit found in string")
        if per_page > 100:
            return _error(400, "cannot request more than 100 items")
        if per_page < 1:
            return _error(400, f"cannot request less than 1 item, per_page {per_page} is invalid")
        if number is not None and number < 1:
            return _error(400, f"page indexing starts from 1, page {number} is invalid")
        if number is not None and number > MAX_PAGE:
            return _error(
                400,
                f"Page {number} is unavailable for performance reasons. Please take a look at"
                " https://crates.io/data-access for alternatives.",
            )
        q = params.get("q", "").strip()
        sort = params.get("sort") or ("relevance" if q else "alphabetical")
        rows = [c for c in self.crates.values() if not q or self._matches(c, q)]
        rows.sort(key=lambda c: self._seek_key(sort, q, c))
        if number is None and seek is not None:
            try:
                after = self._after(sort, q, seek)
            except (ValueError, TypeError):
                return _error(400, "invalid seek parameter")
            rows = [c for c in rows if self._seek_key(sort, q, c) > after]
        start = (number - 1) * per_page if number is not None else 0
        shown = rows[start : start + per_page]
        full = len(shown) == per_page
        next_page = None
        if full and number is not None:
            next_page = self._query_with(request, {"page": str(number + 1)})
        elif full:
            next_page = self._query_with(request, {"seek": self._encode(sort, q, shown[-1])})
        prev_page = self._query_with(request, {"page": str(number - 1)}) if number and number > 1 else None
        total = sum(1 for c in self.crates.values() if not q or self._matches(c, q))
        return _json(
            {
                "crates": [self._listed(c, q) for c in shown],
                "meta": {"total": total, "next_page": next_page, "prev_page": prev_page},
            }
        )

    @staticmethod
    def _matches(crate: FakeCrate, q: str) -> bool:
        text = f"{crate.name} {crate.description or ''}".lower()
        return q.lower() in text

    @staticmethod
    def _seek_key(sort: str, q: str, c: FakeCrate) -> tuple:
        """The listing's order as a tuple that grows along it (a descending column negated)."""
        if sort == "downloads":
            return (-c.downloads, -c.id)
        if sort == "recent-downloads":
            return (-c.recent_downloads, -c.id)
        if sort == "recent-updates":
            return (-_micros(c.updated_at), -c.id)
        if sort == "new":
            return (-_micros(c.created_at), -c.id)
        if q:  # relevance (every match ranks alike here) or by name: an exact name first
            return (0 if c.name == q else 1, c.name)
        return (c.name,)

    @staticmethod
    def _payload(sort: str, q: str, c: FakeCrate) -> Any:
        """What crates.io puts in ``seek``: a JSON tuple of the sort key's columns and the id."""
        if sort == "recent-updates":
            return [_micros(c.updated_at), c.id]
        if sort == "new":
            return [_micros(c.created_at), c.id]
        if sort == "downloads":
            return [c.downloads, c.id]
        if sort == "recent-downloads":
            return [c.recent_downloads, c.id]
        if q:
            return [c.name == q, c.id]
        return c.id  # Name { id }: a one-field tuple struct is its value (seek=Mg for id 2)

    def _encode(self, sort: str, q: str, c: FakeCrate) -> str:
        raw = json.dumps(self._payload(sort, q, c), separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def _after(self, sort: str, q: str, seek: str) -> tuple:
        """The sort key a ``seek`` stands for; ``ValueError`` when it does not decode."""
        payload = json.loads(base64.urlsafe_b64decode(seek + "=" * (-len(seek) % 4)))
        if sort in ("recent-updates", "new", "downloads", "recent-downloads"):
            first, crate_id = payload
            return (-(first or 0), -int(crate_id))
        crate_id = payload[-1] if isinstance(payload, list) else payload
        crate = next((c for c in self.crates.values() if c.id == crate_id), None)
        if crate is None:
            raise ValueError(seek)
        return self._seek_key(sort, q, crate)

    def _query_with(self, request: RequestRecord, new: dict[str, str]) -> str:
        """``req.query_with_params``: the request's query, ``new`` replacing or appended."""
        params = dict(request.params)
        params.update(new)
        return "?" + urlencode(params, quote_via=quote)

    # --- objects, field for field as crates.io's encodable views -------------------------------

    def _listed(self, c: FakeCrate, q: str) -> dict[str, Any]:
        newest = c.newest()
        stable = [v for v in c.versions if not v.yanked]
        top = max(stable, key=lambda v: v.created_at, default=newest)
        return {
            "id": c.name,
            "name": c.name,
            "updated_at": c.updated_at,
            "versions": None,
            "keywords": None,
            "categories": None,
            "badges": [],
            "created_at": c.created_at,
            "downloads": c.downloads,
            "recent_downloads": c.recent_downloads,
            "default_version": top.num if top else None,
            "num_versions": len(c.versions),
            "yanked": bool(c.versions) and not stable,
            "max_version": top.num if top else "0.0.0",
            "newest_version": newest.num if newest else "0.0.0",
            "max_stable_version": top.num if top else None,
            "description": c.description,
            "homepage": c.homepage,
            "documentation": c.documentation,
            "repository": c.repository,
            "links": {
                "version_downloads": f"/api/v1/crates/{c.name}/downloads",
                "versions": f"/api/v1/crates/{c.name}/versions",
                "owners": f"/api/v1/crates/{c.name}/owners",
                "owner_team": f"/api/v1/crates/{c.name}/owner_team",
                "owner_user": f"/api/v1/crates/{c.name}/owner_user",
                "reverse_dependencies": f"/api/v1/crates/{c.name}/reverse_dependencies",
            },
            "exact_match": bool(q) and c.name == q,
            "trustpub_only": False,
        }

    def _show(self, c: FakeCrate) -> dict[str, Any]:
        versions = sorted(c.versions, key=lambda v: v.id, reverse=True)
        crate = self._listed(c, "")
        crate.update(
            versions=[v.id for v in versions],
            keywords=list(c.keywords),
            categories=list(c.categories),
        )
        crate["links"]["versions"] = None
        return {
            "crate": crate,
            "versions": [self._version(c, v) for v in versions],
            "keywords": [
                {"id": k, "keyword": k, "created_at": c.created_at, "crates_cnt": 1} for k in c.keywords
            ],
            "categories": [
                {
                    "id": k,
                    "category": k.title(),
                    "slug": k,
                    "description": f"Crates about {k}.",
                    "created_at": c.created_at,
                    "crates_cnt": 1,
                }
                for k in c.categories
            ],
        }

    @staticmethod
    def _version(c: FakeCrate, v: FakeVersion) -> dict[str, Any]:
        base = f"/api/v1/crates/{c.name}/{v.num}"
        return {
            "id": v.id,
            "crate": c.name,
            "num": v.num,
            "dl_path": f"{base}/download",
            "readme_path": f"{base}/readme",
            "updated_at": v.updated_at,
            "created_at": v.created_at,
            "downloads": v.downloads,
            "features": {},
            "yanked": v.yanked,
            "yank_message": None,
            "lib_links": None,
            "license": v.license,
            "links": {
                "dependencies": f"{base}/dependencies",
                "version_downloads": f"{base}/downloads",
                "authors": f"{base}/authors",
            },
            "crate_size": v.crate_size,
            "published_by": None,
            "audit_actions": [],
            "checksum": "0" * 64,
            "rust_version": v.rust_version,
            "has_lib": True,
            "bin_names": [],
            "edition": "2021",
            "description": c.description,
            "homepage": c.homepage,
            "documentation": c.documentation,
            "repository": c.repository,
            "trustpub_data": None,
        }

    @staticmethod
    def _downloads(c: FakeCrate) -> dict[str, Any]:
        rows = [
            {"version": v.id, "downloads": n, "date": day}
            for v in sorted(c.versions, key=lambda v: v.id, reverse=True)
            for day, n in v.daily
        ]
        return {"version_downloads": rows, "meta": {"extra_downloads": []}}

    @staticmethod
    def _dependency(v: FakeVersion, d: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": d["id"],
            "version_id": v.id,
            "crate_id": d["crate"],
            "req": d.get("req", "*"),
            "optional": d.get("optional", False),
            "default_features": d.get("default_features", True),
            "features": d.get("features", []),
            "target": d.get("target"),
            "kind": d.get("kind", "normal"),
            "downloads": 0,
        }

"""The search tests' data set, and the oracle that says which URLs a query must find.

``ROWS`` and ``ALSO`` (URLs a second source reports too) are written into a store
as :func:`batches`, each through :func:`copy_batch`; :func:`merged` is what any
store must then hold of each URL (:class:`Merged`), computed here in Python, and
``Q`` pairs each query of the search language with the predicate that picks the
URLs it must return.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trawl.records.batches import UrlBatch
from trawl.records.ecs import url_fields


@dataclass(frozen=True)
class Row:
    url: str
    first: str | None
    last: str | None
    captures: int
    statuses: str
    mimes: str
    source: str


ROWS = [
    Row("https://example.com/", "20050101000000", "20240101000000", 50, "200", "text/html", "wayback"),
    Row(
        "http://example.com/index.html",
        "20060315120000",
        "20100101000000",
        3,
        "200,301",
        "text/html",
        "wayback",
    ),
    Row(
        "https://www.example.com/app.js",
        "20150601000000",
        "20200101000000",
        7,
        "200",
        "application/javascript",
        "wayback",
    ),
    Row(
        "https://www.example.com/static/Main.JS",
        "20190101000000",
        "20190101000000",
        1,
        "200",
        "application/javascript",
        "urlscan",
    ),
    Row(
        "https://api.example.com/api/v1/users?id=1&sort=asc",
        "20200101000000",
        "20211231235959",
        4,
        "200",
        "application/json",
        "otx",
    ),
    Row(
        "https://api.example.com/graphql",
        "20210101000000",
        "20220101000000",
        2,
        "200,400",
        "application/json",
        "otx",
    ),
    Row(
        "https://dev.api.example.com/swagger/index.html",
        "20220202000000",
        "20220202000000",
        1,
        "401",
        "text/html",
        "urlscan",
    ),
    Row(
        "https://example.com/login.php?next=/admin",
        "20100101000000",
        "20120101000000",
        5,
        "200,302",
        "text/html",
        "wayback",
    ),
    Row(
        "https://example.com/Admin/Panel",
        "20110101000000",
        "20110101000000",
        1,
        "403",
        "text/html",
        "wayback",
    ),
    Row("https://example.com/admin/", "20120101000000", "20130101000000", 2, "404", "text/html", "otx"),
    Row(
        "https://example.com/backup.sql",
        "20130101000000",
        "20130101000000",
        1,
        "200",
        "application/octet-stream",
        "wayback",
    ),
    Row(
        "https://example.com/file.tar.gz",
        "20140101000000",
        "20140101000000",
        1,
        "200",
        "application/gzip",
        "wayback",
    ),
    Row(
        "https://example.com/.htaccess", "20160101000000", "20160101000000", 1, "403", "text/plain", "wayback"
    ),
    Row(
        "https://blog.example.com/docs/report.PDF",
        "20170101000000",
        "20180101000000",
        2,
        "200",
        "application/pdf",
        "wayback",
    ),
    Row(
        "https://blog.example.com/search?q=a%20b",
        "20180101000000",
        "20180101000000",
        1,
        "200",
        "text/html",
        "otx",
    ),
    Row(
        "https://example.com:8080/status",
        "20190101000000",
        "20190101000000",
        1,
        "500",
        "text/plain",
        "wayback",
    ),
    Row("http://example.com/wp-login.php", "20090101000000", "20090101000000", 1, "", "", "wayback"),
    Row("https://shop.example.com/cart?item=5&item=6", None, None, 1, "", "", "urlscan"),
    Row("https://example.com/a_b%25c", "20080101000000", "20080101000000", 1, "200", "text/html", "wayback"),
    Row(
        "https://example.com/x.JSON?cb=1",
        "20230101000000",
        "20230101000000",
        1,
        "200",
        "application/json",
        "otx",
    ),
]
#: URLs a second source reports too: their provenance merges (sources union, dates min/max...).
ALSO = [
    Row("https://example.com/", "20040101000000", "20230101000000", 9, "301", "text/html", "otx"),
    Row(
        "https://www.example.com/app.js",
        "20160101000000",
        "20230601000000",
        2,
        "304",
        "text/javascript",
        "urlscan",
    ),
    Row("https://example.com/admin/", "20120101000000", "20150101000000", 1, "200", "text/html", "wayback"),
]


def batches() -> list[UrlBatch]:
    out = []
    for rows in (ROWS, ALSO):
        by_source: dict[str, list[Row]] = {}
        for row in rows:
            by_source.setdefault(row.source, []).append(row)
        for source, group in by_source.items():
            out.append(
                UrlBatch.from_columns(
                    source,
                    urls=[r.url for r in group],
                    hosts=[url_fields(r.url)["domain"] for r in group],  # type: ignore[misc]
                    first_seen=[r.first for r in group],
                    last_seen=[r.last for r in group],
                    captures=[r.captures for r in group],
                    statuses=[r.statuses for r in group],
                    mimes=[r.mimes for r in group],
                )
            )
    return out


@dataclass
class Merged:
    """What both stores should hold for a URL: the oracle's view."""

    url: str
    host: str
    sources: set[str]
    first: str | None
    last: str | None
    captures: int
    statuses: set[str]
    mimes: set[str]
    fields: dict[str, Any]


def merged() -> dict[str, Merged]:
    out: dict[str, Merged] = {}
    for row in ROWS + ALSO:
        fields = url_fields(row.url)
        m = out.get(row.url)
        statuses = set(filter(None, row.statuses.split(",")))
        mimes = set(filter(None, row.mimes.split(",")))
        if m is None:
            out[row.url] = Merged(
                row.url,
                str(fields["domain"]),
                {row.source},
                row.first,
                row.last,
                row.captures,
                statuses,
                mimes,
                fields,
            )
            continue
        m.sources.add(row.source)
        m.first = min(filter(None, [m.first, row.first]), default=None)
        m.last = max(filter(None, [m.last, row.last]), default=None)
        m.captures += row.captures
        m.statuses |= statuses
        m.mimes |= mimes
    return out


def copy_batch(batch: UrlBatch) -> UrlBatch:
    # Frames are immutable: stores replace columns (``with_columns``), they never write into them.
    return UrlBatch(batch.source, batch.frame, batch.page, batch.page_rows)


def ext(m: Merged) -> str | None:
    return m.fields.get("extension")  # type: ignore[return-value]


def has(text: str) -> Callable[[Merged], bool]:
    return lambda m: text.lower() in m.url.lower()


def seen(field: str, low: str, high: str) -> Callable[[Merged], bool]:
    return lambda m: getattr(m, field) is not None and low <= getattr(m, field) <= high


Q: list[tuple[str, Callable[[Merged], bool]]] = [
    ("*", lambda m: True),
    ("host:api.example.com", lambda m: m.host == "api.example.com"),
    ("host:API.Example.com", lambda m: m.host == "api.example.com"),
    ("host:api.example.com AND ext:js", lambda m: False),
    ("host:www.example.com AND ext:js", lambda m: m.host == "www.example.com" and ext(m) == "js"),
    ("ext:js", lambda m: ext(m) == "js"),
    ("ext:gz", lambda m: ext(m) == "gz"),
    ("ext:*", lambda m: ext(m) is not None),
    ("NOT ext:*", lambda m: ext(m) is None),
    ("status:200", lambda m: "200" in m.statuses),
    ("status:[400 TO 499]", lambda m: any(400 <= int(s) <= 499 for s in m.statuses)),
    ("status:{400 TO 403}", lambda m: any(400 < int(s) < 403 for s in m.statuses)),
    ("status:>=500", lambda m: any(int(s) >= 500 for s in m.statuses)),
    ("status:*", lambda m: bool(m.statuses)),
    ("NOT status:*", lambda m: not m.statuses),
    ("url:*admin*", has("admin")),
    ("url:*ADMIN*", has("admin")),
    ("url:https://example.com/admin/", lambda m: m.url == "https://example.com/admin/"),
    ("url:https://example.com/*", lambda m: m.url.lower().startswith("https://example.com/")),
    ("url:http?://example.com/*", lambda m: m.url.lower().startswith("https://example.com/")),
    ("admin", has("admin")),
    ('"a_b%25c"', has("a_b%25c")),
    ("a_b", has("a_b")),
    ("source:otx", lambda m: "otx" in m.sources),
    ("source:otx AND source:wayback", lambda m: {"otx", "wayback"} <= m.sources),
    ("source:url*", lambda m: "urlscan" in m.sources),
    ("-source:wayback", lambda m: "wayback" not in m.sources),
    ("mime:application/json", lambda m: "application/json" in m.mimes),
    ("mime:*javascript", lambda m: any(x.endswith("javascript") for x in m.mimes)),
    (
        "mime:text/* NOT mime:text/html",
        lambda m: any(x.startswith("text/") for x in m.mimes) and "text/html" not in m.mimes,
    ),
    ("first_seen:[2020 TO 2022]", seen("first", "20200101000000", "20221231235959")),
    ("first_seen:{2010 TO 2013}", seen("first", "20110101000000", "20121231235959")),
    ("first_seen:2012", seen("first", "20120101000000", "20121231235959")),
    ("first_seen:2006-03", seen("first", "20060301000000", "20060331235959")),
    ("last_seen:>=2023", seen("last", "20230101000000", "99999999999999")),
    ("last_seen:<2010", seen("last", "00000000000000", "20091231235959")),
    ("first_seen:*", lambda m: m.first is not None),
    (
        "NOT first_seen:[2005 TO 2030]",
        lambda m: not (m.first and "20050101000000" <= m.first <= "20301231235959"),
    ),
    ("captures:>=5", lambda m: m.captures >= 5),
    ("captures:[2 TO 4]", lambda m: 2 <= m.captures <= 4),
    ("captures:1", lambda m: m.captures == 1),
    ("domain:example.com", lambda m: m.host == "example.com" or m.host.endswith(".example.com")),
    ("domain:api.example.com", lambda m: m.host in ("api.example.com", "dev.api.example.com")),
    ("host:*.example.com", lambda m: m.host.endswith(".example.com")),
    ("subdomain:api", lambda m: m.fields.get("subdomain") == "api"),
    ("scheme:http", lambda m: m.url.startswith("http://")),
    ("port:8080", lambda m: m.fields.get("port") == 8080),
    ("port:443", lambda m: m.fields.get("port") == 443),
    ("path:/admin*", lambda m: str(m.fields["path"]).lower().startswith("/admin")),
    ("path:/admin/", lambda m: m.fields["path"] == "/admin/"),
    ("query:*", lambda m: "query" in m.fields),
    ("query:*next=*", lambda m: "next=" in str(m.fields.get("query", ""))),
    ("param:item", lambda m: "item=" in str(m.fields.get("query", ""))),
    ("param:*", lambda m: bool(m.fields.get("query"))),
    ("tld:com", lambda m: m.fields.get("top_level_domain") == "com"),
    (
        "host:(api.example.com OR blog.example.com)",
        lambda m: m.host in ("api.example.com", "blog.example.com"),
    ),
    (
        "(ext:js OR ext:json) AND NOT host:api.example.com",
        lambda m: ext(m) in ("js", "json") and m.host != "api.example.com",
    ),
    (
        "ext:js OR ext:json AND source:otx",
        lambda m: ext(m) == "js" or (ext(m) == "json" and "otx" in m.sources),
    ),
    ("login OR graphql", lambda m: "login" in m.url.lower() or "graphql" in m.url.lower()),
    ("url:*\\?*", lambda m: "?" in m.url),
    ("status:200 source:otx", lambda m: "200" in m.statuses and "otx" in m.sources),
    ("url.domain:blog.example.com", lambda m: m.host == "blog.example.com"),
]

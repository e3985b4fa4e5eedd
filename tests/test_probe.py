"""``trawl crawl probe``: stored URLs asked again, against a generated site under real host names.

The site (tests/servers/website.py) is reached through a local forward proxy
(``PROXY_LIST``, or the ``http_proxy`` environment variable), so redirects,
origins and soft-404 detection work on ``www.example.com``, not on ports.
Everything asserted is what a user sees: the records stored, the lines
printed, the requests the site logged.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import mmh3
import pytest
from scrapy.settings import Settings

from trawl.pipeline.context import RunContext
from trawl.records.batches import UrlBatch
from trawl.sources.probe.fingerprint import bit_counts, hamming, simhash
from trawl.sources.probe.patterns import patterns
from trawl.stores.sqlite import SqliteStore

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.servers.website import (
        FAVICON,
        SERVER,
        SLOW_SECONDS,
        SOFT_PAGES,
        WWW_PAGES,
        HostProxy,
        TlsSite,
        Website,
    )
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from servers.website import (  # type: ignore[no-redef]
        FAVICON,
        SERVER,
        SLOW_SECONDS,
        SOFT_PAGES,
        WWW_PAGES,
        HostProxy,
        TlsSite,
        Website,
    )

W = "http://www.example.com"
S = "http://soft.example.com"
URLS = [
    f"{W}/",
    f"{W}/admin/",
    f"{W}/old",
    f"{W}/item/1",
    f"{W}/item/2",
    f"{W}/item/3",
    f"{W}/search?q=a",
    f"{W}/search?q=b",
    f"{W}/missing",
    f"{W}/slow",
    f"{W}/loop",
    f"{W}/big.bin",
    f"{W}/large.html",
    f"{S}/",
    f"{S}/about",
    f"{S}/gone-page",
    "https://secure.example.com/",
    "http://other.example.org/",  # not of the domain: never asked
]
#: One URL per pattern (tests/servers/website.py): /item/2, /item/3 and /search?q=b are repeats.
REPEATS = {f"{W}/item/2", f"{W}/item/3", f"{W}/search?q=b"}
LIVE_WWW = ["/", "/admin/", "/big.bin", "/item/1", "/large.html", "/old", "/search?q=a", "/slow"]


def seed(db: Path, urls: list[str]) -> None:
    """URLs in a SQLite store, as a crawl of an archive would leave them."""
    stats = SimpleNamespace(values={}, get_stats=dict, inc_value=lambda *a, **k: None)
    crawler = SimpleNamespace(settings=Settings({}), stats=stats)
    spider = SimpleNamespace(name="wayback")
    context = RunContext(crawler=crawler, spider=spider, run_id="seed", plugins=None)  # type: ignore[arg-type]
    store = SqliteStore(f"sqlite:///{db}", context)
    store.open()
    hosts = [urlsplit(u).hostname or "" for u in urls]
    n = len(urls)
    none: list[str | None] = [None] * n
    batch = UrlBatch.from_columns("wayback", urls, hosts, none, none, [1] * n, ["200"] * n, [""] * n)
    store.write_batch(batch)
    store.close("finished")


@pytest.fixture(scope="module")
def site() -> Iterator[SimpleNamespace]:
    with Website() as web, TlsSite() as tls, HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy:
        yield SimpleNamespace(web=web, tls=tls, proxy=proxy)


def probe(workdir: Path, site: SimpleNamespace, *args: str, env: dict | None = None, proxy_list: bool = True):
    settings = ["-s", f"PROXY_LIST={site.proxy.url}"] if proxy_list else []
    return run_scrapy(workdir, "crawl", "probe", "-a", "domain=example.com", *settings, *args, env=env)


def records(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM probe_records")}


@pytest.fixture(scope="module")
def default_run(site: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One probe with the defaults (one URL per pattern), through PROXY_LIST, exporting jsonl and txt."""
    workdir = tmp_path_factory.mktemp("probe")
    seed(workdir / "trawl.db", URLS)
    site.web.seen.clear()
    site.proxy.requests.clear()
    result = probe(workdir, site, "-o", "probe.jsonl", "-o", "live.txt")
    return SimpleNamespace(
        result=result,
        workdir=workdir,
        records=records(workdir / "trawl.db"),
        www=site.web.paths("www.example.com"),
        proxied=list(site.proxy.requests),
    )


def sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def test_the_probe_ends_complete_with_its_table(default_run: SimpleNamespace) -> None:
    result = default_run.result
    assert result.returncode == 0, result.stderr[-3000:]
    assert_no_traceback(result)
    assert "probe: 14 URLs: 11 live, 1 soft-404, 2 dead" in result.stderr
    table = [line.split("] INFO: ", 1)[1] for line in result.stderr.splitlines() if "[probe] INFO: " in line]
    start = table.index("status    URLs")
    assert table[start : start + 4] == [
        "status    URLs",
        "200         12",
        "404          1",
        "none         1",
    ]


def test_one_url_per_pattern_and_only_the_domain(default_run: SimpleNamespace) -> None:
    expected = {u for u in URLS if "example.com" in u and u not in REPEATS}
    assert set(default_run.records) == expected
    asked = [p for p in default_run.www if len(p) != 25 and p != "/favicon.ico"]  # not the random path
    assert "/item/1" in asked and "/search?q=a" in asked
    assert not {"/item/2", "/item/3", "/search?q=b"} & set(asked)
    assert "/favicon.ico" in default_run.www
    assert len([p for p in default_run.www if len(p) == 25]) == 1  # one random path per origin
    assert not any("other.example.org" in line for line in default_run.proxied)


def test_the_fields_are_exact(default_run: SimpleNamespace) -> None:
    r = default_run.records
    icon = mmh3.hash(base64.encodebytes(FAVICON))
    home = r[f"{W}/"]
    status, body, headers = WWW_PAGES["/"]
    assert home["verdict"] == "live" and home["live"] == 1 and home["status"] == 200
    assert home["final_url"] == f"{W}/" and json.loads(home["redirects"]) == []
    assert home["content_type"] == headers["Content-Type"] and home["content_length"] == len(body)
    assert home["title"] == "Example home" and home["server"] == SERVER
    assert home["body_sha256"] == sha(body) and home["favicon_mmh3"] == icon
    assert home["body_simhash"] == f"{simhash(body.decode()):016x}" and home["truncated"] == 0
    assert home["tls_subject"] is None and home["error"] is None
    old = r[f"{W}/old"]
    assert old["final_url"] == f"{W}/new" and old["title"] == "New page" and old["status"] == 200
    assert json.loads(old["redirects"]) == [[301, f"{W}/old"], [302, f"{W}/moved"]]
    assert r[f"{W}/admin/"]["title"] == "Admin login"
    missing = r[f"{W}/missing"]
    assert (missing["status"], missing["verdict"], missing["live"]) == (404, "dead", 0)
    loop = r[f"{W}/loop"]
    assert (loop["status"], loop["verdict"], loop["error"]) == (None, "dead", "too many redirects")
    assert r[f"{W}/slow"]["response_ms"] >= SLOW_SECONDS * 1000
    large = r[f"{W}/large.html"]
    large_body = WWW_PAGES["/large.html"][1]
    assert large["truncated"] == 1 and large["content_length"] == len(large_body)
    assert large["title"] == "Large page" and large["body_sha256"] != sha(large_body)
    big = r[f"{W}/big.bin"]
    assert big["content_type"] == "application/octet-stream" and big["content_length"] == 2_000_000
    assert big["body_sha256"] is None and big["title"] is None and big["verdict"] == "live"
    secure = r["https://secure.example.com/"]
    assert secure["tls_subject"] == "O=Trawl Test,CN=secure.example.com"
    assert secure["tls_issuer"] == secure["tls_subject"]  # self-signed
    assert secure["tls_not_after"] == "2020-01-01T00:00:00Z"
    assert secure["title"] == "Secure home" and secure["verdict"] == "live"


def test_the_soft_404_host_is_marked(default_run: SimpleNamespace) -> None:
    r = default_run.records
    assert r[f"{S}/gone-page"]["status"] == 200
    assert (r[f"{S}/gone-page"]["verdict"], r[f"{S}/gone-page"]["live"]) == ("soft-404", 0)
    assert r[f"{S}/"]["verdict"] == "live" and r[f"{S}/about"]["verdict"] == "live"
    assert r[f"{S}/about"]["body_sha256"] == sha(SOFT_PAGES["/about"])
    assert r[f"{S}/"]["favicon_mmh3"] is None  # its /favicon.ico is its HTML "not found" page


def test_exports(default_run: SimpleNamespace) -> None:
    rows = [json.loads(line) for line in (default_run.workdir / "probe.jsonl").read_text().splitlines()]
    assert {row["url"] for row in rows} == set(default_run.records)
    assert {row["verdict"] for row in rows if row["url"] == f"{S}/gone-page"} == {"soft-404"}
    live = (default_run.workdir / "live.txt").read_text().split()
    assert sorted(live) == sorted(u for u, rec in default_run.records.items() if rec["live"])


@pytest.mark.parametrize(
    "query, expected",
    [
        ("live:true AND host:www.example.com", [f"{W}{p}" for p in LIVE_WWW]),
        ("status_live:404", [f"{W}/missing"]),
        ("title:*admin*", [f"{W}/admin/"]),
        ("verdict:soft-404", [f"{S}/gone-page"]),
        ("NOT live:* AND domain:example.com", sorted(REPEATS)),
    ],
)  # fmt: skip
def test_search_fields(default_run: SimpleNamespace, query: str, expected: list[str]) -> None:
    result = run_scrapy(default_run.workdir, "search", query)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == expected


def test_probe_fields_on_a_store_never_probed_match_nothing(tmp_path: Path) -> None:
    seed(tmp_path / "trawl.db", [f"{W}/"])
    assert run_scrapy(tmp_path, "search", "live:true").stdout == ""
    assert run_scrapy(tmp_path, "search", "NOT live:true").stdout.split() == [f"{W}/"]
    bad = run_scrapy(tmp_path, "search", "live:yes")
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "trawl: error: bad query: live takes true or false, not 'yes'"
    )


def test_all_asks_every_url_once(site: SimpleNamespace, tmp_path: Path) -> None:
    seed(tmp_path / "trawl.db", URLS)
    site.web.seen.clear()
    result = probe(tmp_path, site, "-a", "all=true", "-a", "query=host:www.example.com AND path:/item/*")
    assert result.returncode == 0, result.stderr[-3000:]
    asked = [p for p in site.web.paths("www.example.com") if p.startswith("/item/")]
    assert sorted(asked) == ["/item/1", "/item/2", "/item/3"]
    assert set(records(tmp_path / "trawl.db")) == {f"{W}/item/1", f"{W}/item/2", f"{W}/item/3"}


def test_the_proxy_environment_variable_is_honoured(site: SimpleNamespace, tmp_path: Path) -> None:
    seed(tmp_path / "trawl.db", URLS)
    site.proxy.requests.clear()
    env = {"http_proxy": site.proxy.url, "https_proxy": site.proxy.url, "no_proxy": ""}
    result = probe(tmp_path, site, "-a", "query=host:secure.example.com", env=env, proxy_list=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "CONNECT secure.example.com:443" in site.proxy.requests
    assert (
        records(tmp_path / "trawl.db")["https://secure.example.com/"]["tls_not_after"]
        == "2020-01-01T00:00:00Z"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["-s", "STORE_URI="],
            "trawl: error: the probe asks the URLs a store holds: it needs a store (STORE_URI)",
        ),
        (
            ["-a", "query=live:maybe"],
            "trawl: error: -a query=: bad query: live takes true or false, not 'maybe'",
        ),
        (["-a", "limit=-1"], "trawl: error: -a limit= must be at least 0, got -1"),
        (["-s", "PROBE_MAX_BYTES=10"], "trawl: error: PROBE_MAX_BYTES must be"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_scrapy(tmp_path, "crawl", "probe", "-a", "domain=example.com", *args)
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stderr[-2000:]


def test_the_pattern_rule() -> None:
    assert patterns(
        [
            "https://Shop.example.com/item/123/reviews?sort=asc&page=2&page=3",
            "http://x.example.com/u/123e4567-e89b-12d3-a456-426614174000",
            "http://x.example.com/a/0f1e2d3c4b5a6978/x.js",
            "http://x.example.com/page2.html#top",
        ]
    ) == [
        "shop.example.com/item/{n}/reviews?page&sort",
        "x.example.com/u/{uuid}?",
        "x.example.com/a/{hex}/x.js?",
        "x.example.com/page{n}.html?",
    ]


def test_simhash_tells_near_duplicates() -> None:
    hashes = [int.from_bytes(hashlib.sha256(bytes([i])).digest()[:8], "big") for i in range(200)]
    assert bit_counts(hashes) == [sum((h >> bit) & 1 for h in hashes) for bit in range(64)]
    from tests.servers.website import not_found, page  # noqa: PLC0415

    error_a, error_b = simhash(not_found("/x1").decode()), simhash(not_found("/admin/login.php").decode())
    other = simhash(page("Products", "Our catalogue of widgets, gadgets and gizmos for every need.").decode())
    assert hamming(error_a, error_b) <= 12 < hamming(error_a, other)

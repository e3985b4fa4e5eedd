"""``trawl crawl probe``: stored URLs asked again, against a generated site under real host names.

The site (tests/servers/website.py) is reached through a local forward proxy
(``PROXY_LIST``, or the ``http_proxy`` environment variable), so redirects,
origins and soft-404 detection work on ``www.example.com``, not on ports.
Everything asserted is what a user sees: the records stored, the lines
printed, the requests the site logged.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import random
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import quote, unquote, urlsplit

import mmh3
import pytest
from scrapy.http import HtmlResponse, Request

from trawl.sources.probe.answers import answer_row
from trawl.sources.probe.fingerprint import bit_counts, hamming, simhash
from trawl.sources.probe.patterns import patterns
from trawl.sources.probe.soft404 import SOFT404_DISTANCE, Origin, verdict

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.probe import seed
    from tests.servers.website import (
        FAVICON,
        SERVER,
        SLOW_SECONDS,
        SOFT_PAGES,
        WWW_PAGES,
        HostProxy,
        TlsSite,
        Website,
        not_found,
        page,
    )
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.website import (  # type: ignore[no-redef]
        FAVICON,
        SERVER,
        SLOW_SECONDS,
        SOFT_PAGES,
        WWW_PAGES,
        HostProxy,
        TlsSite,
        Website,
        not_found,
        page,
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


# --- soft-404 pages that echo what they were asked ------------------------------------------

#: Words of the random paths: many are the error pages' own words ("the", "page", "not", "found").
PATH_WORDS = (
    "the page does not exist sorry try search box go back home found here no article named "
    "docs how to install thing on linux api v2 users admin login blog post 2024 report annual "
    "new old item widget blue red a of and for with index caf\u00e9 men\u00fc stra\u00dfe \u65e5\u672c"
).split()
#: Hand-picked paths first: the test site's, one long path of many words, template words only.
FIXED_PATHS = [
    "/gone-page",
    "/gone",
    "/page",
    "/docs/how-to-install-the-thing-on-linux",
    "/the/page/does/not/exist",
    "/caf%C3%A9/men%C3%BC%20du%20jour",
    "/search?q=the+page&sort=new",
]


def echo_paths(count: int = 200, seed: int = 404) -> list[str]:
    """``count`` paths: the fixed ones, then seeded random ones of 1 to 6 segments of 1 to 12 words."""
    rng = random.Random(seed)
    paths = list(FIXED_PATHS)
    while len(paths) < count:
        segments = []
        for _ in range(rng.choice((1, 1, 2, 2, 3, 4, 6))):
            words = [quote(w) for w in rng.choices(PATH_WORDS, k=rng.choice((1, 1, 2, 3, 5, 8, 12)))]
            segments.append(rng.choice(("-", "-", "_", "%20", ".")).join(words))
        path = "/" + "/".join(segments) + rng.choice(("", "", "/", ".html", ".php"))
        if rng.random() < 0.2:
            path += f"?id={rng.randrange(1000)}&sort=new"
        paths.append(path)
    return paths


def _last_segment(url: str) -> str:
    return unquote([s for s in urlsplit(url).path.split("/") if s][-1])


def _error_page(title: str, text: str) -> bytes:
    """A longer error page than the test site's: a menu, the text, a footer of links."""
    menu = " ".join(f'<a href="/{w}">{w.title()}</a>' for w in ("news", "sport", "weather", "shop", "help"))
    return (
        f"<html><head><title>{html.escape(title)}</title><style>p {{ color: red }}</style></head><body>"
        f"<header>{menu}</header><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
        "<footer>Example Media Group. Terms of use, privacy policy, cookie settings. Follow us.</footer>"
        "</body></html>"
    ).encode()


#: How a host's error page may echo the URL it was asked (each: the URL -> the page).
ECHOES = {
    "the test site's page (the path)": lambda url: not_found(urlsplit(url).path),
    "the full URL": lambda url: _error_page(
        "404 Not Found", f"The requested URL {url} was not found on this server."
    ),
    "the path and query": lambda url: page(
        "Not found", f"Nothing at {urlsplit(url).path}?{urlsplit(url).query}, sorry. Go back home."
    ),
    "the decoded path, twice": lambda url: _error_page(
        f"Error: {unquote(urlsplit(url).path)}",
        f"We looked everywhere for {unquote(urlsplit(url).path)} but found nothing.",
    ),
    "the last segment": lambda url: _error_page(
        f"{_last_segment(url)} - Wiki",
        f'There is no article named "{_last_segment(url)}" yet. Search for it, or start it.',
    ),
    "the last segment's words": lambda url: page(
        "Page not found",
        f"Did you mean {re.sub(r'[-_.]', ' ', _last_segment(url))}? Try the search box or go back home.",
    ),
}
#: Real pages of one host: its own texts (some quote their own path), never its error page.
REAL_TEXTS = (
    "Our catalogue of widgets, gadgets and gizmos for every need, shipped within two days.",
    "Release notes: version 2.4 fixes the login loop and adds dark mode to the dashboard.",
    "Meet the team that builds the thing: twelve engineers, two designers and a very patient manager.",
    "Install the package with pip, then run the setup command and follow the prompts on screen.",
)


def _answer(url: str, body: bytes) -> HtmlResponse:
    return HtmlResponse(
        url, body=body, encoding="utf-8", request=Request(url), headers={"Content-Type": "text/html"}
    )


def _echo_cases() -> Iterator[tuple[str, str, str, str]]:
    """(echo, origin, its random path's URL, the URL asked): a fresh origin and random path for each."""
    rng = random.Random(1404)
    for echo in ECHOES:
        for i, path in enumerate(echo_paths()):
            origin = f"http://h{i}.example.com"
            yield echo, origin, f"{origin}/{rng.getrandbits(96):024x}", origin + path


#: Given an origin, its random path's URL and the host's error page: is this answer that page?
Judge = Callable[[str, str, Callable[[str], bytes]], Callable[[HtmlResponse], bool]]


def assert_echoing_error_pages_are_told(judge: Judge) -> None:
    """Each echoing error page, for 200 seeded paths of 1 to 40 words: its host's soft-404 page;
    each real page of the same host, in the same template, some quoting their own path: not."""
    missed, wrong = [], []
    for echo, origin, random_url, url in _echo_cases():
        make = ECHOES[echo]
        is_error_page = judge(origin, random_url, make)
        if not is_error_page(_answer(url, make(url))):
            missed.append((echo, url))
        text = REAL_TEXTS[len(url) % len(REAL_TEXTS)]
        for real in (page(_last_segment(url), text), page("Docs", f"{text} Source: {urlsplit(url).path}")):
            if is_error_page(_answer(url, real)):
                wrong.append((echo, url))
    total = len(ECHOES) * len(echo_paths())
    assert not missed, f"{len(missed)} of {total} echoing error pages not recognised, e.g. {missed[:5]}"
    assert not wrong, f"{len(wrong)} of {2 * total} real pages taken for the error page, e.g. {wrong[:5]}"


def test_error_pages_that_echo_the_path_are_the_hosts_soft_404() -> None:
    """The probe's rule (soft404.verdict on answer_row's hashes, as ProbeSpider applies it)."""

    def probe_judge(
        origin: str, random_url: str, make: Callable[[str], bytes]
    ) -> Callable[[HtmlResponse], bool]:
        baseline = answer_row(_answer(random_url, make(random_url)))[1]
        known = Origin(
            baseline_status=200, baseline_simhashes=baseline, baseline_done=True, favicon_done=True
        )

        def is_error_page(response: HtmlResponse) -> bool:
            row, hashed = answer_row(response)
            return verdict(row, known, hashed, SOFT404_DISTANCE) == "soft-404"

        return is_error_page

    assert_echoing_error_pages_are_told(probe_judge)


def test_the_live_crawls_trap_guard_knows_echoing_error_pages() -> None:
    """The live crawl's guard (SoftHosts: it asks the origin a random path of its own, then judges pages)."""
    from trawl.sources.live.guard import SoftHosts  # noqa: PLC0415

    def guard_judge(
        origin: str, _random_url: str, make: Callable[[str], bytes]
    ) -> Callable[[HtmlResponse], bool]:
        async def download_async(request: Request) -> HtmlResponse:
            return _answer(request.url, make(request.url))

        crawler = SimpleNamespace(engine=SimpleNamespace(download_async=download_async))
        soft = SoftHosts(crawler, SOFT404_DISTANCE, {})
        known = asyncio.run(soft.origin(origin))
        assert known.answers_everything and len(soft.origins) == 1
        return lambda response: soft.is_soft404(known, response)

    assert_echoing_error_pages_are_told(guard_judge)

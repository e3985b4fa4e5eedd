"""``trawl crawl live``: a breadth-first crawl of the test site under its real host names.

The site (tests/servers/website.py and tests/servers/shop.py) is reached through
a local forward proxy (``PROXY_LIST``), so robots.txt, scope and the root's
redirect to ``shop.example.com`` run on real names. What is asserted is what a
user sees: the requests the site logged, the lines printed, the records stored.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

try:  # pywb ships a top-level ``tests`` package into site-packages that can shadow ours.
    from tests.conftest import assert_no_traceback, run_scrapy
    from tests.helpers.probe import seed
    from tests.servers.website import HostProxy, TlsSite, Website
except ImportError:
    from conftest import assert_no_traceback, run_scrapy  # type: ignore[no-redef]
    from helpers.probe import seed  # type: ignore[no-redef]
    from servers.website import HostProxy, TlsSite, Website  # type: ignore[no-redef]

SHOP = "http://shop.example.com"
#: A random path asked once per origin (the soft-404 check): 24 hex digits.
RANDOM = re.compile(r"^/[0-9a-f]{24}$")
#: Every page a crawl of depth 10 with LIVE_PATTERN_CAP=3 fetches: (host, path?query), robots.txt aside.
PAGES = {
    ("example.com", "/"), ("example.com", "/sitemap.xml"),
    ("shop.example.com", "/"), ("shop.example.com", "/sitemap.xml"), ("shop.example.com", "/about.html"),
    ("shop.example.com", "/products/"), ("shop.example.com", "/products/item?id=1"),
    ("shop.example.com", "/products/item?id=2"), ("shop.example.com", "/contact"),
    ("shop.example.com", "/search"), ("shop.example.com", "/sitemap-only.html"),
    ("shop.example.com", "/static/app.js"), ("shop.example.com", "/api/v1/status"),
    ("shop.example.com", "/api/v1/users"), ("shop.example.com", "/api/v1/orders?status=open"),
    ("shop.example.com", "/files/report.pdf"), ("shop.example.com", "/slow"),
    ("shop.example.com", "/loop"), ("shop.example.com", "/loop2"),
    ("shop.example.com", "/calendar/2024/01"), ("shop.example.com", "/calendar/2024/02"),
    ("shop.example.com", "/calendar/2023/12"),
    ("shop.example.com", "/cart?sid=1"), ("shop.example.com", "/cart?sid=2"),
    ("shop.example.com", "/cart?sid=3"),
    ("www.example.com", "/admin/"), ("www.example.com", "/sitemap.xml"),
    ("soft.example.com", "/about"), ("soft.example.com", "/gone"), ("soft.example.com", "/sitemap.xml"),
    ("api.example.com", "/v2/items"), ("api.example.com", "/sitemap.xml"),
    ("secure.example.com", "/"), ("secure.example.com", "/sitemap.xml"),
}  # fmt: skip
OUT_OF_SCOPE = [
    "http://www.iana.org/domains/example",
    "https://cdn.othersite.net/lib.js",
    "https://twitter.com/example",
]


@pytest.fixture(scope="module")
def site() -> Iterator[SimpleNamespace]:
    with Website() as web, TlsSite() as tls, HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy:
        yield SimpleNamespace(web=web, tls=tls, proxy=proxy)


def crawl(
    workdir: Path, site: SimpleNamespace, *args: str, proxy_env: bool = False, domain_arg: str = "example.com"
) -> SimpleNamespace:
    """One ``trawl crawl live`` through the proxy (``PROXY_LIST``, or ``http_proxy``): what the site saw."""
    site.web.seen.clear()
    site.tls.seen.clear()
    site.proxy.requests.clear()
    proxy = [] if proxy_env else ["-s", f"PROXY_LIST={site.proxy.url}"]
    env = {"http_proxy": site.proxy.url, "https_proxy": site.proxy.url} if proxy_env else None
    result = run_scrapy(
        workdir, "crawl", "live", "-a", f"domain={domain_arg}", *proxy,
        "-s", f"STORE_URI=sqlite:///{workdir / 'trawl.db'}", *args, env=env,
    )  # fmt: skip
    asked = [*site.web.seen, *(("secure.example.com", path) for path in site.tls.seen)]
    pages = [(host, path) for host, path in asked if not RANDOM.match(path) and path != "/robots.txt"]
    return SimpleNamespace(
        result=result, asked=asked, pages=pages, proxied=list(site.proxy.requests), db=workdir
    )


def links(workdir: Path) -> dict[str, dict]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM link_records")}


def stored_urls(workdir: Path) -> dict[str, str]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        return dict(con.execute("SELECT url, sources FROM urls"))


def log_lines(result) -> list[str]:
    return [
        line.split("[live] INFO: ", 1)[1]
        for line in result.stderr.splitlines()
        if "[live] INFO: live: " in line
    ]


@pytest.fixture(scope="module")
def full(site: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Depth 10, three pages per pattern: the traps stop at the cap, not at the depth; each host's
    /sitemap.xml guessed (-a sitemap=guess), not only the one shop.example.com's robots.txt names."""
    args = ("-a", "depth=10", "-a", "sitemap=guess", "-s", "LIVE_PATTERN_CAP=3")
    return crawl(tmp_path_factory.mktemp("live"), site, *args)


def test_the_crawl_visits_exactly_the_reachable_allowed_in_scope_pages_once_each(
    full: SimpleNamespace,
) -> None:
    assert full.result.returncode == 0, full.result.stderr[-3000:]
    assert_no_traceback(full.result)
    assert Counter(full.pages) == Counter(PAGES)  # each once, none else
    robots = Counter(host for host, path in full.asked if path == "/robots.txt")
    assert set(robots) == {host for host, _ in PAGES} and max(robots.values()) == 1
    assert ("shop.example.com", "/private/secret.html") not in full.asked  # robots.txt disallows it
    assert ("shop.example.com", "/contact/send") not in full.asked  # a POST form: stored, not submitted
    assert not [r for r in full.proxied if "iana" in r or "othersite" in r or "twitter" in r]


def test_the_finish_line_counts_the_pages_fetched(full: SimpleNamespace) -> None:
    summary = next(line for line in log_lines(full.result) if " pages fetched (" in line)
    fetched = int(summary.split(" pages fetched", 1)[0].rsplit(" ", 1)[1].replace(",", ""))
    assert fetched >= len(PAGES)
    finish = [line for line in full.result.stderr.splitlines() if "live: complete (finished) in " in line]
    assert len(finish) == 1 and f" {fetched:,} pages, " in finish[0], finish


def test_the_traps_are_capped_and_reported_and_the_out_of_scope_listed(full: SimpleNamespace) -> None:
    lines = log_lines(full.result)
    assert "live: trap: shop.example.com/calendar/{n}/{n}? capped at 3 pages, 2 URLs not fetched" in lines
    assert "live: trap: shop.example.com/cart?sid capped at 3 pages, 1 URLs not fetched" in lines
    at = lines.index("live: 3 out-of-scope URLs not fetched:")
    assert lines[at + 1 : at + 4] == [f"live:   {url}" for url in OUT_OF_SCOPE]
    summary = next(line for line in lines if " pages fetched (" in line)
    assert summary.startswith(f"live: {len(PAGES)} pages fetched (") and "2 soft-404" in summary


def test_stored_urls_carry_their_provenance(full: SimpleNamespace) -> None:
    found = links(full.db)
    assert {k: v for k, v in found[f"{SHOP}/about.html"].items() if "run" not in k} | {"found_at": None} == {
        "url": f"{SHOP}/about.html", "host": "shop.example.com", "found_on": f"{SHOP}/", "depth": 1,
        "how": "a", "found_at": None, "status": 200, "content_type": "text/html", "verdict": "page",
    }  # fmt: skip
    assert (found[f"{SHOP}/api/v1/users"]["found_on"], found[f"{SHOP}/api/v1/users"]["how"]) == (
        f"{SHOP}/static/app.js",
        "js",
    )
    assert found[f"{SHOP}/api/v1/status"]["how"] == "js"  # an inline script's endpoint
    assert found[f"{SHOP}/search"]["how"] == "form" and found[f"{SHOP}/contact/send"]["how"] == "form-post"
    assert found[f"{SHOP}/contact/send"]["status"] is None
    assert found[f"{SHOP}/sitemap-only.html"]["how"] == "sitemap"
    assert found[f"{SHOP}/files/report.pdf"]["verdict"] == "headers-only"
    assert found["http://soft.example.com/gone"]["verdict"] == "soft-404"
    assert found[f"{SHOP}/private/secret.html"]["verdict"] == "robots"
    assert found[f"{SHOP}/cart?sid=4"]["status"] is None  # found past the cap: stored, not fetched
    assert found[f"{SHOP}/"]["how"] == "redirect" and found[f"{SHOP}/"]["found_on"] == "http://example.com/"
    assert (
        found[f"{SHOP}/products/item?id=1"]["found_on"] == f"{SHOP}/products/"
    )  # one URL, #fragment and case
    assert not [url for url in found if "iana" in url or "twitter" in url or "othersite" in url]
    urls = stored_urls(full.db)
    assert f"{SHOP}/cart?sid=4" in urls and "live" in urls[f"{SHOP}/about.html"]


def test_depth_limits_the_pages_fetched(site: SimpleNamespace, tmp_path: Path) -> None:
    run = crawl(tmp_path, site, "-a", "depth=1")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    pages = set(run.pages)
    assert ("shop.example.com", "/calendar/2024/01") in pages and ("shop.example.com", "/about.html") in pages
    assert ("shop.example.com", "/calendar/2024/02") not in pages  # depth 2
    assert ("shop.example.com", "/api/v1/users") not in pages  # named by app.js, at depth 2
    assert len(run.pages) == len(pages)
    assert links(tmp_path)[f"{SHOP}/calendar/2024/02"]["depth"] == 2  # stored all the same


def test_max_pages_limits_the_pages_fetched(site: SimpleNamespace, tmp_path: Path) -> None:
    run = crawl(tmp_path, site, "-a", "max_pages=5")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    assert len(run.pages) == 5, run.pages
    assert any("URLs past max_pages, not fetched" in line for line in log_lines(run.result))


def test_host_scope_follows_the_roots_redirect_and_stays_on_that_host(
    site: SimpleNamespace, tmp_path: Path
) -> None:
    run = crawl(tmp_path, site, "-a", "scope=host")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    hosts = {host for host, _ in run.pages}
    assert hosts == {"example.com", "shop.example.com"}, hosts
    assert ("shop.example.com", "/products/item?id=2") in run.pages
    lines = log_lines(run.result)
    assert (
        "live:   http://www.example.com/admin/" in lines
        and "live:   http://api.example.com/v2/items" in lines
    )


def test_a_slow_page_times_out_and_is_retried(site: SimpleNamespace, tmp_path: Path) -> None:
    # Through PROXY_LIST: a target's timeout is not the proxy's fault, so the only proxy never rests.
    run = crawl(tmp_path, site, "-a", "depth=1", "-s", "DOWNLOAD_TIMEOUT=0.2", "-s", "RETRY_TIMES=1")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    assert "banned" not in run.result.stderr
    assert run.pages.count(("shop.example.com", "/slow")) == 2  # asked, and retried once
    assert links(tmp_path)[f"{SHOP}/slow"]["verdict"] == "error"
    assert links(tmp_path)[f"{SHOP}/about.html"]["verdict"] == "page"


def test_without_robots_the_disallowed_folder_and_robots_paths_are_crawled(
    site: SimpleNamespace, tmp_path: Path
) -> None:
    run = crawl(tmp_path, site, "-a", "depth=1", "-s", "ROBOTSTXT_OBEY=False")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    assert ("shop.example.com", "/private/secret.html") in run.pages
    assert links(tmp_path)[f"{SHOP}/private/"]["how"] == "robots"  # robots.txt's paths are seeds


def test_seed_store_starts_from_the_stored_urls_too(site: SimpleNamespace, tmp_path: Path) -> None:
    seed(tmp_path / "trawl.db", [f"{SHOP}/orphan.html", "http://other.example.org/x"])
    run = crawl(tmp_path, site, "-a", "depth=1", "-a", "seed=store")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    assert ("shop.example.com", "/orphan.html") in run.pages
    assert ("shop.example.com", "/orphan-child") in run.pages  # depth 1 from the stored seed
    assert links(tmp_path)[f"{SHOP}/orphan-child"]["found_on"] == f"{SHOP}/orphan.html"
    plain = crawl(tmp_path / "plain", site, "-a", "depth=1")
    assert ("shop.example.com", "/orphan.html") not in plain.pages
    sitemaps = {host for host, path in plain.pages if path == "/sitemap.xml"}
    assert sitemaps == {"shop.example.com"}  # the one robots.txt names; no other host's guessed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-a", "scope=planet"], "trawl: error: -a scope= must be domain, rdn, host or regex:PATTERN"),
        (["-a", "scope=regex:("], "trawl: error: -a scope=: not a regular expression"),
        (["-a", "depth=deep"], "trawl: error: -a depth= expects a whole number"),
        (["-a", "max_pages=-1"], "trawl: error: -a max_pages= must be at least 0"),
        (["-a", "seed=everything"], "trawl: error: -a seed= must be root, store or alive"),
        (["-a", "sitemap=all"], "trawl: error: -a sitemap= must be robots or guess"),
        (["-s", "LIVE_PATTERN_CAP=0"], "trawl: error: LIVE_PATTERN_CAP"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_scrapy(tmp_path, "crawl", "live", "-a", "domain=example.com", *args)
    assert result.returncode == 2
    assert_no_traceback(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(errors) == 1 and errors[0].startswith(message), result.stderr[-2000:]


# --- distributed: three trawl workers share one live crawl's pages ------------------------------


def test_three_workers_one_killed_crawl_the_same_pages_as_one_machine(tmp_path: Path) -> None:
    """The live source is spreadable: its pages are tasks on the run's Redis queue. One worker is killed
    (``kill -9``) once it has fetched a page; the page set is a one-machine crawl's."""
    import signal
    import subprocess
    import threading
    import time

    import redis

    try:
        from tests.helpers.workers import COMMON, TRAWL, WorkerProcess
        from tests.servers.redis_server import RedisServer
    except ImportError:
        from helpers.workers import COMMON, TRAWL, WorkerProcess  # type: ignore[no-redef]
        from servers.redis_server import RedisServer  # type: ignore[no-redef]
    from trawl.distributed.queue import WorkQueue

    with (
        Website(latency=0.1) as web,
        TlsSite() as tls,
        HostProxy(web._httpd.server_address[1], tls.bound_port) as proxy,
        RedisServer() as server,
    ):
        site = SimpleNamespace(web=web, tls=tls, proxy=proxy)
        alone = crawl(tmp_path / "one", site)
        assert alone.result.returncode == 0, alone.result.stderr[-3000:]
        expected = set(alone.pages)
        assert len(alone.pages) == len(expected) > 20
        web.seen.clear()
        web.agents.clear()
        tls.seen.clear()
        store = tmp_path / "spread.db"
        common = {**COMMON, "TRAWL_REDIS_URL": server.url, "STORE_URI": f"sqlite:///{store}",
                  "QUEUE_HEARTBEAT": "1", "SPREAD_PAGES": "True", "SPREAD_HOLD": "2",
                  "PROXY_LIST": proxy.url}  # fmt: skip
        workers = [WorkerProcess(tmp_path, {**common, "USER_AGENT": f"worker-{n}"}) for n in range(3)]
        try:
            for worker in workers:
                worker.wait_for("waiting for work")
            command = [
                *TRAWL,
                "enqueue",
                "example.com",
                "-a",
                "sources=live",
                "-s",
                f"TRAWL_REDIS_URL={server.url}",
            ]
            done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr[-2000:]
            deadline = time.monotonic() + 120
            while True:  # polled: a joiner that has fetched a page
                joiners = [
                    n for n, w in enumerate(workers) if w.count(r"spreading run \w+'s pages \(joiner\)")
                ]
                fetched = {agent for _, _, agent in web.agents}
                ready = [n for n in joiners if f"worker-{n}" in fetched]
                if ready:
                    break
                assert time.monotonic() < deadline, "\n\n".join(w.tail() for w in workers)
                threading.Event().wait(0.02)
            victim = workers[ready[0]]
            victim.process.kill()  # kill -9: what it holds stays in its held list until reaped
            victim.process.wait()
            queue = WorkQueue(redis.Redis.from_url(server.url))
            while not (sum(w.count(r" done in ") for w in workers) >= 1 and queue.idle()):
                assert time.monotonic() < deadline + 60, "\n\n".join(w.tail() for w in workers)
                threading.Event().wait(0.2)
            for worker in workers:
                if worker.process.poll() is None:
                    worker.process.send_signal(signal.SIGTERM)
            for worker in workers:
                if worker is not victim:
                    worker.finish(60)
        finally:
            for worker in workers:
                worker.stop()
        assert "Traceback" not in "\n".join(line for w in workers for line in w.lines), workers[0].tail()
        asked = [*web.seen, *(("secure.example.com", path) for path in tls.seen)]
        pages = [(host, path) for host, path in asked if not RANDOM.match(path) and path != "/robots.txt"]
        assert set(pages) == expected  # the same page set as one machine
        agents = {
            agent for host, path, agent in web.agents if path != "/robots.txt" and not RANDOM.match(path)
        }
        assert len(agents) >= 2, agents  # spread: more than one worker fetched pages
        assert len(pages) - len(expected) <= 2  # fetched twice: at most what the dead worker held
        assert {url for url in stored_urls_of(store)} >= {f"{SHOP}/about.html", f"{SHOP}/api/v1/users"}


def stored_urls_of(store: Path) -> list[str]:
    with sqlite3.connect(store) as con:
        return [row[0] for row in con.execute("SELECT url FROM urls")]


def test_rdn_scope_crawls_and_stores_the_registered_domain(site: SimpleNamespace, tmp_path: Path) -> None:
    run = crawl(tmp_path, site, "-a", "depth=1", "-a", "scope=rdn", domain_arg="shop.example.com")
    assert run.result.returncode == 0, run.result.stderr[-3000:]
    assert ("www.example.com", "/admin/") in run.pages  # another host of example.com
    assert "http://www.example.com/admin/" in stored_urls(tmp_path)

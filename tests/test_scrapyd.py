"""trawl deployed to a real scrapyd and run there, as an operator does (docs/scrapyd.md).

One scrapyd for the module (``max_proc=4``), with trawl deployed by
``scrapyd-deploy``; upstreams are the local fake servers. What is checked is
what an operator sees: the store, the job log, the items file scrapyd keeps,
``listjobs.json``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FAST, ROOT, CrawlResult, crawl_args, run_scrapy
from tests.servers.commoncrawl import FakeCommonCrawl, cc_record
from tests.servers.ghostarchive import FakeGhostArchive
from tests.servers.ia_cdx import FakeCdxServer, make_capture
from tests.servers.intelx import FakeIntelX
from tests.servers.otx import FakeOtxServer, OtxUrl
from tests.servers.scrapyd import ScrapydServer
from tests.servers.urlscan import FakeUrlscanServer, make_result
from tests.servers.virustotal import FakeVirusTotal, build_report

OTX_KEY = "OTX-KEY-5c1e77-SECRET"
URLSCAN_KEY = "URLSCAN-KEY-90ad2b-SECRET"


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-data")


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory, data_home: Path) -> Iterator[ScrapydServer]:
    """scrapyd as an operator starts it: no TRAWL_STORE_URI, so jobs use trawl's default store."""
    env = {"TRAWL_STORE_URI": None, "XDG_DATA_HOME": str(data_home), "OTX_API_KEY": None}
    with ScrapydServer(tmp_path_factory.mktemp("scrapyd"), max_proc=4, env=env) as server:
        server.deploy(ROOT)
        yield server


def urls(domain: str, count: int) -> list[str]:
    return [f"https://{'www.' if i % 3 == 0 else ''}{domain}/page/{i}?q={i}" for i in range(count)]


def cdx(domain_urls: list[str], gate: AllArrived | None = None, **options: object) -> GatedCdx:
    captures = [make_capture(u, f"2020{1 + i % 12:02d}01000000") for i, u in enumerate(domain_urls)]
    server = GatedCdx(captures, **options)
    server.gate = gate
    return server


class AllArrived:
    """No answer until every one of ``parties`` servers has been asked something.

    Each job is one process with its store opened before its first request: so
    held, the jobs are certainly all running, and writing, at the same time.
    """

    def __init__(self, parties: int, timeout: float = 180.0) -> None:
        self.parties, self.timeout = parties, timeout
        self.arrived: set[int] = set()
        self.lock = threading.Lock()
        self.event = threading.Event()

    def wait(self, server: object) -> None:
        with self.lock:
            self.arrived.add(id(server))
            if len(self.arrived) >= self.parties:
                self.event.set()
        self.event.wait(self.timeout)  # on timeout the test fails on the overlap of the runs


class GatedCdx(FakeCdxServer):
    gate: AllArrived | None = None

    def handle(self, path_qs, headers):  # noqa: ANN001, ANN201 - FakeCdxServer's signature
        if self.gate is not None:
            self.gate.wait(self)
        return super().handle(path_qs, headers)


class SlowOtx(FakeOtxServer):
    """OTX answering each page after ``delay`` seconds, and after ``gate`` opens if there is one."""

    delay = 0.0
    gate: AllArrived | None = None

    def handle(self, request):  # noqa: ANN001, ANN201 - FakeOtxServer's signature
        if self.gate is not None:
            self.gate.wait(self)
        time.sleep(self.delay)
        return super().handle(request)


def otx(
    domain_urls: list[str], delay: float = 0.0, gate: AllArrived | None = None, **options: object
) -> SlowOtx:
    server = SlowOtx(
        urls=[OtxUrl(u, f"2022-{1 + i % 12:02d}-15T10:00:00") for i, u in enumerate(domain_urls)]
    )
    server.delay, server.gate = delay, gate
    for name, value in options.items():
        setattr(server, name, value)
    return server


def stored(db: Path) -> dict[str, dict]:
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM urls")}


def store_line(log: str) -> str:
    return next(line.split("] INFO: ", 1)[1] for line in log.splitlines() if "] INFO: store: " in line)


# --- one job, the default store, the items file -----------------------------------------------


def test_a_job_and_a_hand_run_share_the_default_store(
    scrapyd: ScrapydServer, data_home: Path, tmp_path: Path
) -> None:
    default = data_home / "trawl" / "trawl.db"
    for leftover in default.parent.glob("trawl.db*"):  # another test's job may have used it first
        leftover.unlink()
    wayback_urls = urls("example.com", 25)
    with cdx(wayback_urls, lines_per_page=4) as wayback:
        job = scrapyd.schedule(
            "wayback", settings={"WAYBACK_BASE_URL": wayback.base_url, **FAST}, domain="example.com"
        )
        scrapyd.wait_finished(job, timeout=120)
    log = scrapyd.job_log(job)
    assert store_line(log) == f"store: sqlite:///{default}", log[-3000:]
    assert f"scrapyd job: {job}" in log
    assert set(stored(default)) == set(wayback_urls)
    assert "Traceback" not in log and "] ERROR:" not in log, log[-3000:]

    # The items file scrapyd keeps: one JSON object per URL per line, each URL once.
    lines = scrapyd.items_path(job).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert sorted(r["url"] for r in records) == sorted(wayback_urls)
    assert all(r["sources"] == ["wayback"] for r in records)

    # By hand, from another directory, with the same user's environment: the same store.
    otx_only = "https://example.com/only-otx"
    with otx([wayback_urls[0], otx_only]) as server:
        hand = run_scrapy(
            tmp_path / "elsewhere",
            *crawl_args("otx", "example.com", {"OTX_BASE_URL": server.base_url}),
            env={"TRAWL_STORE_URI": "", "XDG_DATA_HOME": str(data_home)},
        )
    assert hand.returncode == 0, hand.stderr[-3000:]
    assert store_line(hand.stderr) == f"store: sqlite:///{default}"
    assert not (tmp_path / "elsewhere" / "trawl.db").exists()
    rows = stored(default)
    assert set(rows) == {*wayback_urls, otx_only}
    assert rows[wayback_urls[0]]["sources"] == "otx,wayback"


def test_every_source_runs_under_scrapyd(scrapyd: ScrapydServer, tmp_path: Path) -> None:
    """Each source as a job of its own, its arguments as form fields, each into its own store."""
    vt_key, ix_key = "vt-test-key-0123456789abcdef", "ix-test-key-0123456789"
    url = {name: f"https://example.com/from-{name}" for name in SOURCES}
    newest_crawl = [cc_record(url["commoncrawl"], "20250801000000", crawl="CC-MAIN-2025-33")]
    servers = {
        "wayback": cdx([url["wayback"]]),
        "commoncrawl": FakeCommonCrawl({"CC-MAIN-2025-33": newest_crawl}),
        "otx": otx([url["otx"]]),
        "urlscan": FakeUrlscanServer(results=[make_result(url["urlscan"], "2023-01-01T00:00:00.000Z")]),
        "virustotal": FakeVirusTotal(
            keys={vt_key}, reports={"example.com": build_report([(url["virustotal"], "2020-01-01 00:00:00")])}
        ),
        "intelx": FakeIntelX(keys={ix_key}, selectors={"example.com": [url["intelx"]]}),
        "ghostarchive": FakeGhostArchive(archives={".example.com": [url["ghostarchive"]]}),
    }
    extra = {
        "commoncrawl": {"TRAWL_CACHE_DIR": str(tmp_path / "cache")},
        "virustotal": {"VIRUSTOTAL_API_KEY": vt_key},
        "intelx": {"INTELX_API_KEY": ix_key, "INTELX_FALLBACK_BASE_URL": "", "INTELX_POLL_INTERVAL": 0},
    }
    for server in servers.values():
        server.__enter__()
    try:
        jobs = {}
        for name, server in servers.items():
            settings = {
                f"{name.upper()}_BASE_URL": server.base_url,
                "STORE_URI": f"sqlite:///{tmp_path / name}.db",
                **FAST,
                **extra.get(name, {}),
            }
            jobs[name] = scrapyd.schedule(name, settings=settings, domain="example.com", subs="true")
        for job in jobs.values():
            scrapyd.wait_finished(job, timeout=180)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    for name, job in jobs.items():
        log = scrapyd.job_log(job)
        assert set(stored(tmp_path / f"{name}.db")) == {url[name]}, (name, log[-3000:])
        assert "Traceback" not in log and "] ERROR:" not in log, (name, log[-3000:])


SOURCES = ("wayback", "commoncrawl", "otx", "urlscan", "virustotal", "intelx", "ghostarchive")


# --- refused input ---------------------------------------------------------------------------

REFUSED = {
    "typo": ({"sub": "false"}, {}, "trawl: error: unknown argument for the wayback source: -a sub= (known: "),
    "domain": ({"domain": "co.uk"}, {}, "trawl: error: 'co.uk' is a public suffix, not a domain"),
    "date": ({"from_date": "2020-13"}, {}, "trawl: error: -a from_date= is not a real date: '2020-13'"),
    "setting": ({}, {"RATE_LIMITS": '{"wayback": "lots"}'}, "trawl: error: RATE_LIMITS"),
    "log setting": ({}, {"TRAWL_LOG_JSON": "maybe"}, "trawl: error: TRAWL_LOG_JSON"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_bad_input_fails_the_job_with_one_line_last_in_its_log(
    scrapyd: ScrapydServer, tmp_path: Path, case: str
) -> None:
    arguments, settings, expected = REFUSED[case]
    db = tmp_path / "refused.db"
    with cdx(urls("example.com", 3)) as wayback:
        fields = {"domain": "example.com", **arguments}
        base = {"WAYBACK_BASE_URL": wayback.base_url, "STORE_URI": f"sqlite:///{db}", **FAST}
        job = scrapyd.schedule("wayback", settings={**base, **settings}, **fields)
        scrapyd.wait_finished(job, timeout=60)
        assert wayback.requests == []
    log = scrapyd.job_log(job)
    last = log.rstrip("\n").splitlines()[-1]
    assert last.startswith(expected), log[-2000:]
    assert log.count("trawl: error:") == 1
    assert "Traceback" not in log
    assert not db.exists()


# --- four jobs at once into one store ---------------------------------------------------------


def test_four_concurrent_jobs_share_one_store_exactly(scrapyd: ScrapydServer, tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    domains = {"example.com": urls("example.com", 300), "example.org": urls("example.org", 300)}
    gate = AllArrived(4)
    servers = {}
    for domain, domain_urls in domains.items():
        servers[(domain, "wayback")] = cdx(domain_urls, gate, lines_per_page=10, latency=0.05)
        servers[(domain, "otx")] = otx(domain_urls, delay=0.05, gate=gate, max_limit=10)
    for server in servers.values():
        server.__enter__()
    try:
        jobs = {}
        for (domain, source), server in servers.items():
            base = "WAYBACK_BASE_URL" if source == "wayback" else "OTX_BASE_URL"
            settings = {base: server.base_url, "STORE_URI": f"sqlite:///{db}", **FAST}
            jobs[scrapyd.schedule(source, settings=settings, domain=domain, filters="false")] = (
                domain,
                source,
            )
        for job in jobs:
            scrapyd.wait_finished(job, timeout=300)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)

    for job in jobs:
        log = scrapyd.job_log(job)
        assert "database is locked" not in log and "Traceback" not in log, log[-3000:]
        assert "] ERROR:" not in log, log[-3000:]
    rows = stored(db)
    for domain, domain_urls in domains.items():
        mine = {url: row for url, row in rows.items() if row["host"].endswith(domain)}
        assert set(mine) == set(domain_urls)  # none lost, none doubled (url is the key), none foreign
        for i, url in enumerate(domain_urls):
            row = mine[url]
            wayback_ts, otx_ts = f"2020{1 + i % 12:02d}01000000", f"2022{1 + i % 12:02d}15100000"
            assert (row["sources"], row["captures"]) == ("otx,wayback", 2), row
            assert (row["first_seen"], row["last_seen"]) == (wayback_ts, otx_ts), row
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        runs = con.execute("SELECT started_at, finished_at, finish_reason FROM runs").fetchall()
    assert len(runs) == 4 and all(reason == "finished" for *_, reason in runs)
    # The four runs were writing at the same time: each opened the store before any closed it.
    assert gate.event.is_set(), "the four jobs never had a request in flight at the same time"
    assert max(start for start, _, _ in runs) < min(end for _, end, _ in runs), runs


# --- keys ------------------------------------------------------------------------------------


def test_no_api_key_in_a_job_log_or_items_file(scrapyd: ScrapydServer, tmp_path: Path) -> None:
    db = tmp_path / "keyed.db"
    page = "https://example.com/keyed"
    with (
        otx([page], valid_keys={OTX_KEY}) as otx_server,
        FakeUrlscanServer(results=[make_result(page, "2023-01-01T00:00:00.000Z")]) as urlscan,
    ):
        common = {"STORE_URI": f"sqlite:///{db}", **FAST}
        otx_job = scrapyd.schedule(
            "otx", settings={"OTX_BASE_URL": otx_server.base_url, "OTX_API_KEY": OTX_KEY, **common},
            domain="example.com",
        )  # fmt: skip
        urlscan_job = scrapyd.schedule(
            "urlscan",
            settings={"URLSCAN_BASE_URL": urlscan.base_url, "URLSCAN_API_KEY": URLSCAN_KEY, **common},
            domain="example.com",
        )
        # A key beside a bad setting: the refusal must not show it either.
        refused = scrapyd.schedule(
            "otx",
            settings={"OTX_BASE_URL": "nonsense", "OTX_API_KEY": OTX_KEY, **common},
            domain="example.com",
        )
        for job in (otx_job, urlscan_job, refused):
            scrapyd.wait_finished(job, timeout=120)
        assert any(r.header("X-OTX-API-KEY") == OTX_KEY for r in otx_server.requests)  # the key was used
        assert any(URLSCAN_KEY in str(r.headers) for r in urlscan.requests)
    assert set(stored(db)) == {page}
    assert scrapyd.job_log(refused).splitlines()[-1].startswith("trawl: error: OTX_BASE_URL")
    written = [scrapyd.job_log(job) for job in (otx_job, urlscan_job, refused)]
    written += [scrapyd.items_path(job).read_text() for job in (otx_job, urlscan_job)]
    assert all("Overridden settings" in log for log in written[:2])  # the settings dump is there, masked
    for text in written:
        assert OTX_KEY not in text and URLSCAN_KEY not in text


def test_an_all_job_stores_every_source_and_writes_its_items(scrapyd: ScrapydServer, tmp_path: Path) -> None:
    """The plain path once more, through the `all` spider: one job, several sources, items from the store."""
    db = tmp_path / "all.db"
    page_urls = urls("example.net", 6)
    with cdx(page_urls, lines_per_page=2) as wayback, otx(page_urls[:3]) as otx_server:
        settings = {
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx_server.base_url,
            "STORE_URI": f"sqlite:///{db}",
            **FAST,
        }
        job = scrapyd.schedule("all", settings=settings, domain="example.net", sources="wayback,otx")
        scrapyd.wait_finished(job, timeout=120)
    log = scrapyd.job_log(job)
    assert "Traceback" not in log, log[-3000:]
    assert set(stored(db)) == set(page_urls)
    records = [json.loads(line) for line in scrapyd.items_path(job).read_text().splitlines()]
    assert sorted(r["url"] for r in records) == sorted(page_urls)
    assert {tuple(r["sources"]) for r in records} == {("otx", "wayback"), ("wayback",)}


def test_a_second_job_adds_nothing_and_the_report_says_so(
    scrapyd: ScrapydServer, data_home: Path, tmp_path: Path
) -> None:
    rerun_urls = urls("rerun-example.org", 12)
    jobs = []
    with cdx(rerun_urls, lines_per_page=5) as wayback:
        for _ in range(2):
            job = scrapyd.schedule(
                "wayback", settings={"WAYBACK_BASE_URL": wayback.base_url, **FAST}, domain="rerun-example.org"
            )
            scrapyd.wait_finished(job, timeout=120)
            jobs.append(job)
    first, second = (scrapyd.job_log(job) for job in jobs)
    assert " 12 unique, 12 new this run," in first, first[-3000:]
    assert " 12 unique, 0 new this run," in second, second[-3000:]

    # The report, by hand, reads the jobs' store (the same user's default) and finds nothing new.
    def report(*since: str) -> CrawlResult:
        env = {"TRAWL_STORE_URI": "", "XDG_DATA_HOME": str(data_home)}
        return run_scrapy(tmp_path, "report", "new", "--domain", "rerun-example.org", *since, env=env)

    nothing = report()
    assert nothing.returncode == 0, nothing.stderr[-3000:]
    assert nothing.stdout == ""
    assert nothing.stderr.startswith("trawl: 0 new URLs for rerun-example.org in the last crawl (job ")
    everything = report("--since", "2000-01-01")
    assert everything.returncode == 0, everything.stderr[-3000:]
    assert set(everything.stdout.split()) == set(rerun_urls)

"""A hostile upstream costs a bounded amount of memory and time, and is said so.

Before: an answer was bounded only by Scrapy's 1 GiB ``DOWNLOAD_MAXSIZE`` (an
endless chunked CDX page took a crawl to 1.17 GB of RSS, a gzip bomb the same);
a page cut off at the limit was two lines naming the whole request URL, the
second one ``cannot reach ...: DownloadCancelledError``; a page still dribbling
at the timeout was ``no answer within 120 s``, four times. Each test runs the
real ``trawl crawl`` against a hostile local server (tests/servers/hostile.py)
that answers page 0 of a CDX query properly and page 1 with the hostile body.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TEST_DEFAULTS, CrawlResult, assert_no_traceback
from tests.helpers import processes
from tests.helpers.probe import seed
from tests.helpers.sources import crawler_settings, registered_sources
from tests.servers.hostile import HOSTILE_PAGE, HostileServer, Mode, example_site

QUICK = {"RETRY_BACKOFF_BASE": 0.01, "RETRY_BACKOFF_MAX": 0.05}
#: Page 0 of the CDX answer: three captures in the plain-text form trawl asks for.
PAGE_0 = b"".join(
    b"http://example.com/p%d 20200101000000 200 text/html DIGEST%d 100\n" % (n, n) for n in range(3)
)


def cdx(path: str) -> bytes | None:
    """What the hostile server answers properly: the page count (2) and page 0."""
    if "showNumPages=true" in path:
        return b"2\n"
    if path.endswith("&page=0"):
        return PAGE_0
    return None


def trawl_crawl(workdir: Path, *args: str, settings: dict[str, object]) -> CrawlResult:
    """``trawl crawl ARGS -s NAME=VALUE...`` as a user runs it, with the tests' defaults."""
    given = {**TEST_DEFAULTS, **QUICK, **settings}
    command = [sys.executable, "-m", "trawl.cli", "crawl", *args, "-a", "domain=example.com"]
    command += [arg for name, value in given.items() for arg in ("-s", f"{name}={value}")]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    proc = processes.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    return CrawlResult(proc.returncode, proc.stdout, proc.stderr, workdir)


def hostile_wayback(workdir: Path, mode: Mode, settings: dict[str, object], **server: object) -> tuple:
    with HostileServer(mode, normal=cdx, **server) as srv:  # type: ignore[arg-type]
        result = trawl_crawl(workdir, "wayback", settings={"WAYBACK_BASE_URL": srv.base_url, **settings})
        pages = [line for line in srv.requests if "&page=" in line]
        return result, srv, pages


def warnings(result: CrawlResult) -> list[str]:
    return [line for line in result.stderr.splitlines() if "] WARNING:" in line]


def assert_one_failed_page(result: CrawlResult) -> None:
    """Exit 1, page 0 stored, one error: the run says partial, in its finish line too."""
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert set(result.stored()) == {f"http://example.com/p{n}" for n in range(3)}
    assert result.stat("trawl/outcome") == "partial"
    assert re.search(r"wayback: partial \(finished\) in .*: \d+ requests, 1 page, .* 1 error,", result.stderr)


@pytest.mark.parametrize(
    ("setting", "limit"),
    [
        ({"SOURCE_DOWNLOAD_MAXSIZE": '{"wayback": 1048576}'}, "1 MiB"),
        ({"DOWNLOAD_MAXSIZE": 2000000}, "2,000,000 bytes"),
    ],
)
def test_an_endless_page_is_cut_off_at_the_limit_and_said_once(
    workdir: Path, setting: dict[str, object], limit: str
) -> None:
    result, srv, pages = hostile_wayback(workdir, "endless", setting)
    assert_one_failed_page(result)
    host = srv.base_url.split("//")[1]
    assert result.errors == [result.errors[0]]
    assert (
        f"] ERROR: wayback: page 1 from {host}: answer over the size limit of {limit} (DOWNLOAD_MAXSIZE): "
        "cut off after "
    ) in result.errors[0]
    assert "the page is not read" in result.errors[0]
    assert not any("download max size" in line for line in result.stderr.splitlines())  # Scrapy's, once ours
    assert pages.count(pages[-1]) == 1 and len(pages) == 2  # not retried: it would be as large again
    assert result.stat("trawl/errors/too_large") == "1"
    assert srv.sent < 64 << 20  # the client hung up near the limit


def test_a_gzip_bomb_stops_at_each_sources_own_limit(workdir: Path) -> None:
    """1 GiB of zeros in 1 MB of gzip, against wayback (64 MiB) and otx (8 MiB) in one ``crawl all``."""

    def otx(path: str) -> bytes | None:
        return None  # every OTX page is the bomb

    with HostileServer("bomb", normal=cdx) as wayback, HostileServer("bomb", normal=otx) as otx_server:
        settings = {
            "WAYBACK_BASE_URL": wayback.base_url,
            "OTX_BASE_URL": otx_server.base_url,
            "RETRY_TIMES": 1,
        }
        result = trawl_crawl(workdir, "all", "-a", "sources=wayback,otx", settings=settings)
    assert_no_traceback(result)
    assert result.returncode == 1
    said = result.errors
    over = (
        r"page 1 from [\d.:]+: answer over the size limit of {} \(DOWNLOAD_MAXSIZE\): "
        r"[\d.]+ MiB once decompressed"
    )
    assert any(re.search("wayback: " + over.format("64 MiB"), e) for e in said), said
    assert any(re.search("otx: " + over.format("8 MiB"), e) for e in said), said
    assert len(said) == 2
    assert not any(
        "Ignored response" in line or "during decompression" in line for line in result.stderr.splitlines()
    )
    rows = {row[0]: row[1:] for row in (line.split() for line in result.stdout.splitlines()[2:]) if row}
    # source, requests, pages, URLs, new URLs, errors, duration, state: the failed page is an error.
    assert (
        rows["wayback"][1:3] == ["1", "3"] and rows["wayback"][4] == "1" and rows["wayback"][-1] == "partial"
    )
    assert rows["otx"][1] == "0" and rows["otx"][4] == "1" and rows["otx"][-1] == "failed"


def test_a_page_still_dribbling_at_the_timeout_is_named_and_tried_twice_not_four_times(workdir: Path) -> None:
    settings = {"SOURCE_DOWNLOAD_TIMEOUT": '{"wayback": 1}', "RETRY_TIMES": 3}
    result, srv, pages = hostile_wayback(workdir, "dribble", settings)
    assert_one_failed_page(result)
    host = srv.base_url.split("//")[1]
    still = re.compile(
        rf"page 1 from {re.escape(host)}: answer still arriving after 1 s \(\d[\d,]* bytes received\)"
    )
    said = warnings(result)
    assert any(still.search(line) and line.endswith("; retry 1 of 1") for line in said), said
    assert any(still.search(line) and line.endswith("; giving up") for line in said), said
    assert not any("no answer" in line for line in said)
    assert len(result.errors) == 1
    assert still.search(result.errors[0]) and result.errors[0].endswith("; gave up after 1 retry")
    assert len(pages) == 3  # page 0, page 1 and its one retry


def test_a_bad_size_setting_is_one_line(workdir: Path) -> None:
    result = trawl_crawl(workdir, "wayback", settings={"SOURCE_DOWNLOAD_MAXSIZE": '{"wayback": "big"}'})
    assert result.returncode == 2
    assert_no_traceback(result)
    assert "SOURCE_DOWNLOAD_MAXSIZE['wayback'] must be a whole number" in result.stderr


#: The record sources, each bounded its own way (the URL sources: their ``default_download_maxsize``).
#: The live crawl and the probe read a capped part of each answer: the cap's setting.
READ_CAPS = {"live": "LIVE_MAX_BYTES", "probe": "PROBE_MAX_BYTES"}


def test_each_source_declares_a_size_limit_that_bounds_a_hostile_crawl(workdir: Path) -> None:
    """Every registered source's answers are bounded, and by a limit that fits the source.

    The URL sources declare theirs (``default_download_maxsize``), at most 64 MiB, on the wire
    and inflated. The record sources: the crates.io dump is one answer of 8 GiB at most, streamed
    (what waits for the reader is at most ``HIGH_WATER``; what it inflates to: the crates test
    below); responses' lookups have the project's 64 MiB and its files ``RESPONSES_MAX_BYTES``,
    seen at work on a gzip bomb here; the live crawl and the probe cut each answer at their cap
    (:data:`READ_CAPS`), and what a compressed one inflates to is bounded too (below).
    """
    from trawl.sources.builtin import BUILTIN_RECORD_SOURCES, BUILTIN_SOURCES
    from trawl.sources.crates import stream
    from trawl.sources.crates.spider import STREAMING_HANDLER

    sources = registered_sources()
    url_sources = {source.name for source in BUILTIN_SOURCES}
    record_sources = {source.name for source in BUILTIN_RECORD_SOURCES}
    assert set(sources) == url_sources | record_sources == url_sources | {"crates", "responses", *READ_CAPS}
    settings = {name: crawler_settings(source) for name, source in sources.items()}
    limits = {name: given.getint("DOWNLOAD_MAXSIZE") for name, given in settings.items()}
    for name in url_sources:
        source = sources[name]
        assert source.default_download_maxsize == limits[name] <= 64 << 20, name
        assert source.default_download_warnsize and source.default_download_warnsize < limits[name], name
    assert limits["otx"] < limits["wayback"]
    # crates: the whole dump in one answer, streamed to its reader, never whole in memory.
    assert sources["crates"].default_download_maxsize == limits["crates"] == 8 << 30
    assert settings["crates"].getdict("DOWNLOAD_HANDLERS")["https"] == STREAMING_HANDLER
    assert stream.LOW_WATER < stream.HIGH_WATER <= 64 << 20
    # responses: its CDX lookups under the project's limit, each file under RESPONSES_MAX_BYTES.
    assert limits["responses"] <= 64 << 20
    assert sources["responses"].declared_settings()["RESPONSES_MAX_BYTES"].default <= 128 << 20
    # live, probe: each answer cut at the cap, which is under the limit of what it inflates to.
    for name, cap in READ_CAPS.items():
        assert sources[name].declared_settings()[cap].default <= limits[name] <= 64 << 20, name

    # responses: a stored URL's archived response is a 1 GiB gzip bomb; RESPONSES_MAX_BYTES of 1 MiB.
    def archive(path: str) -> bytes | None:
        return b"http://example.com/a 20200101000000 200 text/html DIGESTA 100\n" if "/cdx/" in path else None

    seed(workdir / "trawl.db", ["http://example.com/a"])
    with HostileServer("bomb", normal=archive, content_type="text/html") as srv:
        given = {
            "WAYBACK_BASE_URL": srv.base_url,
            "RESPONSES_MAX_BYTES": 1 << 20,
            "STORE_URI": "sqlite:///trawl.db",
        }
        result = trawl_crawl(workdir, "responses", settings=given)
        replays = [line for line in srv.requests if "/web/" in line]
    assert_no_traceback(result)
    said = warnings(result)
    over = "responses: http://example.com/a at 20200101000000 over RESPONSES_MAX_BYTES: not stored"
    assert len(said) == 1 and said[0].endswith(over) and not result.errors, said + result.errors
    assert len(replays) == 1 and result.stat("responses/too_big") == "1"


def request_of(name: str, source: type) -> Any:
    """A page request as the live crawl or the probe makes it (its meta: ``download_maxsize`` 0...)."""
    spider = object.__new__(source)  # the request builders use no state of the spider
    if name == "live":
        return spider._request("http://example.com/page", 1, None, "a", (), False)
    return spider._request(
        "http://example.com/page", spider.parse_answer, spider.answer_failed, "http://example.com", 0
    )


def test_what_an_answer_to_the_live_crawl_inflates_to_is_bounded() -> None:
    """Its requests' ``download_maxsize: 0`` (not to fail a 2 GB ISO on its Content-Length) made
    Scrapy inflate a compressed answer without limit: 64 MiB here, 1 GiB as well."""
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from tests.servers.hostile import gzip_bomb
    from trawl.politeness.bounds import BoundedCompressionMiddleware, ResponseTooLarge

    source = registered_sources()["live"]
    crawler = get_crawler(source, {"DOWNLOAD_MAXSIZE": 2 << 20, "LIVE_MAX_BYTES": 1 << 20})
    middleware = BoundedCompressionMiddleware(crawler=crawler)
    request = request_of("live", source)
    assert request.meta["download_maxsize"] == 0
    body = gzip_bomb(64 << 20)
    response = HtmlResponse(request.url, body=body, headers={"Content-Encoding": "gzip"}, request=request)
    with pytest.raises(ResponseTooLarge) as raised:
        middleware.process_response(request, response)
    limit = crawler.settings.getint("LIVE_MAX_BYTES")
    told = raised.value
    assert (told.limit, told.setting, told.wire) == (limit, "LIVE_MAX_BYTES", len(body))
    assert limit < raised.value.received <= limit + (64 << 10)  # stopped at the limit, 64 KiB at a time


@pytest.mark.parametrize("members", [1, 8])
def test_what_an_answer_to_the_probe_inflates_to_is_cut_at_probe_max_bytes(members: int) -> None:
    """The probe keeps the first ``PROBE_MAX_BYTES`` of any body: a compressed one inflates that far
    and is cut there, flagged as a body cut on the wire (it inflated to ``DOWNLOAD_MAXSIZE``,
    64 MiB by default, and failed, its status lost). Several gzip members are read in turn."""
    import gzip

    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from trawl.politeness.bounds import BoundedCompressionMiddleware

    source = registered_sources()["probe"]
    crawler = get_crawler(source, {"DOWNLOAD_MAXSIZE": 2 << 20, "PROBE_MAX_BYTES": 65536})
    middleware = BoundedCompressionMiddleware(crawler=crawler)
    request = request_of("probe", source)
    assert request.meta["download_maxsize"] == 0
    page = b"<html><body>" + b"<p>many words</p>" * 200_000
    step = len(page) // members + 1
    body = b"".join(gzip.compress(page[i : i + step]) for i in range(0, len(page), step))
    response = HtmlResponse(request.url, body=body, headers={"Content-Encoding": "gzip"}, request=request)
    cut = middleware.process_response(request, response)
    assert cut.body == page[:65536]
    assert "download_stopped" in cut.flags
    small = HtmlResponse(request.url, body=gzip.compress(page[:1000]), headers={"Content-Encoding": "gzip"})
    whole = middleware.process_response(request, small)
    assert (whole.body, whole.flags) == (page[:1000], [])


#: Runs ``trawl.cli`` and writes the process's own peak RSS (VmHWM) to ``peak_rss_kb`` as it ends.
PEAK_RSS_WRAPPER = """
import atexit, re, runpy, sys
def hwm():
    status = open("/proc/self/status").read()
    open("peak_rss_kb", "w").write(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
atexit.register(hwm)
sys.argv = ["trawl", *sys.argv[1:]]
runpy.run_module("trawl.cli", run_name="__main__")
"""


def live_links(workdir: Path) -> dict[str, dict]:
    with sqlite3.connect(workdir / "trawl.db") as con:
        con.row_factory = sqlite3.Row
        return {row["url"]: dict(row) for row in con.execute("SELECT * FROM link_records")}


def test_a_gzip_bomb_on_the_live_crawl_stops_at_live_max_bytes_and_is_said_once(workdir: Path) -> None:
    """A page of 256 MiB of zeros in 256 KB of gzip, sent despite the crawl's
    ``Accept-Encoding: identity``. Before: the live requests' ``download_maxsize: 0`` switched
    off the decompressed-size bound too and ``LIVE_MAX_BYTES`` counted the bytes on the wire only:
    the whole page inflated (1.18 GB of peak RSS here; 4.36 GB for a 1 GiB bomb), was stored as
    ``page 200 text/html``, and nothing was said."""
    with HostileServer("bomb", normal=example_site, bomb_bytes=256 << 20, content_type="text/html") as srv:
        given = {**TEST_DEFAULTS, **QUICK, "PROXY_LIST": srv.base_url, "STORE_URI": "sqlite:///trawl.db"}
        command = [sys.executable, "-c", PEAK_RSS_WRAPPER, "crawl", "live", "-a", "domain=example.com"]
        command += [arg for name, value in given.items() for arg in ("-s", f"{name}={value}")]
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        proc = processes.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
        asked = [line for line in srv.requests if HOSTILE_PAGE in line]
    result = CrawlResult(proc.returncode, proc.stdout, proc.stderr, workdir)
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]  # the target's page, not the run, failed
    page = f"http://example.com{HOSTILE_PAGE}"
    said = [line for line in result.stderr.splitlines() if ("] WARNING:" in line or "] ERROR:" in line)]
    named = [line for line in said if page in line]
    assert len(named) == 1, said
    assert re.search(
        rf"\] WARNING: live: {re.escape(page)}: answer over the size limit of 8 MiB \(LIVE_MAX_BYTES\): "
        r"8\.\d MiB once decompressed, from [\d.]+ KiB on the wire; the page is not read$",
        named[0],
    ), named[0]
    assert not any("Ignored response" in line or "decompression" in line for line in said)
    assert asked == [f"GET {page} HTTP/1.1"]  # not retried: it would be as large again
    row = live_links(workdir)[page]
    assert (row["verdict"], row["status"], row["content_type"]) == ("error", None, None), row
    assert result.stat("trawl/live/too_large") == "1"
    peak = int((workdir / "peak_rss_kb").read_text()) / 1024
    assert peak < 256, f"peak RSS {peak:.0f} MB: the 256 MiB page was inflated"


def crates_dump_bomb(member: str, inflated: int) -> bytes:
    """A db-dump tar.gz of about ``inflated / 1000`` bytes whose ``member`` (under the snapshot
    folder) is a line of ``inflated`` bytes without end, built without holding it."""
    import io
    import tarfile

    from tests.servers.crates_dump import SNAPSHOT

    class Endless(io.RawIOBase):
        def __init__(self, head: bytes, size: int) -> None:
            self.head, self.left = head, size

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            head, self.head = self.head[: len(buffer)], self.head[len(buffer) :]
            size = len(head) + min(len(buffer) - len(head), self.left)
            buffer[:size] = head + b"x" * (size - len(head))
            self.left -= size - len(head)
            return size

    metadata = b'{"timestamp": "2026-09-01T02:00:03Z", "crates_io_commit": "%s"}' % (b"0" * 40)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=9) as archive:
        folder = tarfile.TarInfo(SNAPSHOT)
        folder.type = tarfile.DIRTYPE
        archive.addfile(folder)
        members = {"metadata.json": (metadata, 0), "data/crates.csv": (b"id,name\n1,", 0)}
        members[member] = (members[member][0], inflated)
        for name, (head, size) in members.items():
            info = tarfile.TarInfo(f"{SNAPSHOT}/{name}")
            info.size = len(head) + size
            archive.addfile(info, io.BufferedReader(Endless(head, size)))
    return out.getvalue()


@pytest.mark.parametrize("member", ["data/crates.csv", "metadata.json"])
def test_a_crates_dump_inflating_to_a_record_without_end_stops_at_the_record_limit(
    workdir: Path, member: str
) -> None:
    """The dump is streamed (8 GiB on the wire at most, 32 MiB of it in memory), but what a member
    inflates to was not bounded: a record grew its block until it held it, a small file was read
    whole. Before: a 255 KB dump whose crates.csv is one 256 MiB record took the crawl to 2.0 GB of
    peak RSS in 15 s, and the run was complete, that record stored as a crate."""
    from tests.servers.crates_dump import FakeCratesDumpServer

    with FakeCratesDumpServer(crates_dump_bomb(member, 256 << 20)) as server:
        given = {**TEST_DEFAULTS, **QUICK, "CRATES_DUMP_URL": server.dump_url, "STORE_URI": "sqlite:///x.db"}
        command = [sys.executable, "-c", PEAK_RSS_WRAPPER, "crawl", "crates"]
        command += [arg for name, value in given.items() for arg in ("-s", f"{name}={value}")]
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
        proc = processes.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    result = CrawlResult(proc.returncode, proc.stdout, proc.stderr, workdir)
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, result.errors
    name = member.rsplit("/", 1)[-1]
    over = rf"\] ERROR: crates: the db-dump \S+: {re.escape(name)}: (a record )?over 64 MiB"
    assert re.search(over, result.errors[0]), result.errors[0]
    peak = int((workdir / "peak_rss_kb").read_text()) / 1024
    assert peak < 512, f"peak RSS {peak:.0f} MB: the 256 MiB record was held"

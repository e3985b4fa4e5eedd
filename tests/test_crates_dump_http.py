"""The streamed db-dump follows HTTP as any page does: encodings, redirects, proxies, bounds.

The dump is read as a stream (``trawl/sources/crates/stream.py``), past Scrapy's
whole-body middlewares. A server, a mirror or a proxy that compresses it on the
fly (a ``.tar.gz`` is then gzip twice), a host that moved it, a proxy the user set,
an answer or an archive past its bound: each is tried here against a local server
(tests/servers/crates_http.py) and the forward proxy of tests/servers/proxy.py, and
the user sees the rows of the dump, exactly, or one ERROR line and exit 1 with the
snapshot held before left live.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import CrawlResult, assert_no_traceback, crawl_args, run_scrapy
from tests.helpers import processes
from tests.helpers.crates_tables import (
    CRATE_SQL,
    DEPENDENCY_SQL,
    EXPECTED_CRATES,
    EXPECTED_DEPENDENCIES,
    EXPECTED_VERSIONS,
    TABLES,
    VERSION_SQL,
)
from tests.servers.crates_api import FakeCrate, FakeCratesApi, FakeVersion
from tests.servers.crates_dump import make_dump
from tests.servers.crates_http import CuttingProxy, EncodingDumpServer, Redirector
from tests.servers.proxy import FakeProxy

FIRST = "2026-09-01-020003"
SECOND = "2026-09-02-020001"


def crawl(workdir: Path, url: str, *extra: str, env: dict | None = None, **settings: object) -> CrawlResult:
    given = {"STORE_URI": "sqlite:///x.db", "CRATES_DUMP_URL": url, **settings}
    return run_scrapy(workdir, *crawl_args("crates", None, given, *extra), env=env)


def rows(workdir: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(workdir / "x.db") as con:
        return con.execute(sql).fetchall()


def snapshots(workdir: Path) -> list[str]:
    return [r[0] for r in rows(workdir, "SELECT snapshot FROM crates_dump_records ORDER BY snapshot")]


def assert_loaded(result: CrawlResult, workdir: Path) -> None:
    """The run ended well and the store holds the test dump's rows, exactly."""
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.errors == []
    assert rows(workdir, CRATE_SQL) == EXPECTED_CRATES
    assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
    assert rows(workdir, DEPENDENCY_SQL) == EXPECTED_DEPENDENCIES
    assert snapshots(workdir) == [FIRST]


def assert_one_error(result: CrawlResult, *parts: str) -> str:
    assert_no_traceback(result)
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(result.errors) == 1, result.errors
    for part in parts:
        assert part in result.errors[0], result.errors[0]
    return result.errors[0]


def second_dump(**extra: bytes) -> bytes:
    """A newer dump (its versions emptied: a switch to it would show), with ``extra`` members."""
    tables = {**TABLES, "versions": (TABLES["versions"][0], [])}
    return make_dump(tables, snapshot=SECOND, timestamp="2026-09-02T02:00:01Z", extra=extra, compresslevel=1)


# --- Content-Encoding --------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_a_dump_compressed_on_the_fly_loads_exactly(workdir: Path, encoding: str) -> None:
    """A ``.tar.gz`` sent ``Content-Encoding: gzip`` (gzip twice), deflate, br, zstd."""
    with EncodingDumpServer(make_dump(TABLES), encoding) as server:
        result = crawl(workdir, server.dump_url)
        [seen] = server.requests
    assert encoding in seen.headers.get("accept-encoding", "")
    assert_loaded(result, workdir)


def test_the_zip_variant_compressed_on_the_fly_loads_exactly(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES, as_zip=True), "gzip") as server:
        result = crawl(workdir, server.zip_url)
    assert_loaded(result, workdir)


def test_a_tar_gz_labelled_gzip_but_sent_once_compressed_loads(workdir: Path) -> None:
    """An object store's ``Content-Encoding: gzip`` on the ``.tar.gz`` itself (one gzip layer, not
    two): once the encoding is taken off, what is left is the tar: it is read as such."""

    class Labelled(EncodingDumpServer):
        def answer(self, request):  # type: ignore[no-untyped-def]
            status, body, headers = super().answer(request)
            return status, body, {**headers, "Content-Encoding": "gzip"} if status == 200 else headers

    with Labelled(make_dump(TABLES)) as server:
        result = crawl(workdir, server.dump_url)
    assert_loaded(result, workdir)


def test_an_encoding_that_cannot_be_decoded_is_one_error_line(workdir: Path) -> None:
    class Compress(EncodingDumpServer):
        def answer(self, request):  # type: ignore[no-untyped-def]
            status, body, headers = super().answer(request)
            return status, body, {**headers, "Content-Encoding": "compress"}

    with Compress(make_dump(TABLES)) as server:
        result = crawl(workdir, server.dump_url)
    assert_one_error(result, "Content-Encoding 'compress'", "cannot be decoded")


# --- redirects ----------------------------------------------------------------------------------


def test_a_dump_behind_redirects_loads(workdir: Path) -> None:
    """301, then 302, then the dump: each hop a request the server saw, the dump read once."""
    with EncodingDumpServer(make_dump(TABLES)) as server:
        result = crawl(workdir, server.moved(2))
        paths = [r.path for r in server.requests]
    assert paths == ["/moved/2/db-dump.tar.gz", "/moved/1/db-dump.tar.gz", "/db-dump.tar.gz"]
    assert_loaded(result, workdir)


def test_a_moved_dump_compressed_on_the_fly_loads(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES), "gzip") as server:
        result = crawl(workdir, server.moved(1))
    assert_loaded(result, workdir)


def test_a_redirect_loop_ends_in_one_error_line_after_the_limit(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES)) as server:
        result = crawl(workdir, f"{server.base_url}/loop", REDIRECT_MAX_TIMES=3)
        hops = len(server.requests)
    assert_one_error(result, "over 3 redirects (REDIRECT_MAX_TIMES)")
    assert hops == 4  # the first request and 3 redirects followed


def test_redirects_switched_off_are_one_error_line(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES)) as server:
        result = crawl(workdir, server.moved(1), REDIRECT_ENABLED=False)
        hops = len(server.requests)
    assert_one_error(result, "HTTP 302 from", "/moved/1/db-dump.tar.gz")
    assert hops == 1


def test_sigint_while_the_moved_dumps_next_hop_waits_at_the_gate_ends_within_seconds(workdir: Path) -> None:
    """The stream stays open across a redirect (the next hop streams into it): a stop before that
    hop is answered still ends the spider's wait for it, and the run, at once."""
    import signal

    from tests.conftest import TEST_DEFAULTS
    from tests.interrupts import Trawl

    with EncodingDumpServer(make_dump(TABLES)) as server:
        given = {
            **TEST_DEFAULTS,
            "STORE_URI": "sqlite:///x.db",
            "CRATES_DUMP_URL": server.moved(2),
            "RATE_LIMITS_ENABLED": "True",  # the next hop waits a minute at the source's gate
            "RATE_LIMITS": '{"crates": "1/60s"}',
        }
        with Trawl(workdir, *crawl_args("crates", None, given)) as run:
            run.wait_for("fetching the db-dump")
            run.wait_until(lambda: len(server.requests) >= 1)
            run.send(signal.SIGINT)
            code, took = run.finish(timeout=30)
    assert code == 1, run.stderr[-3000:]
    assert took < 10, f"stopped {took:.1f} s after SIGINT"
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert [r.path for r in server.requests] == ["/moved/2/db-dump.tar.gz"]


# --- proxies ------------------------------------------------------------------------------------


def test_the_dump_is_fetched_through_proxy_list(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES)) as server, FakeProxy() as proxy:
        result = crawl(workdir, server.dump_url, PROXY_LIST=proxy.url)
        direct = len(server.requests)
        proxied = [r.url for r in proxy.requests]
    assert proxied == [server.dump_url]
    assert direct == 1  # the proxy's own request
    assert_loaded(result, workdir)


def test_the_dump_is_fetched_through_http_proxy_from_the_environment(workdir: Path) -> None:
    with EncodingDumpServer(make_dump(TABLES), "gzip") as server, FakeProxy() as proxy:
        env = {"http_proxy": proxy.url, "HTTP_PROXY": proxy.url, "no_proxy": "", "NO_PROXY": ""}
        result = crawl(workdir, server.dump_url, env=env)
        proxied = [r.url for r in proxy.requests]
    assert proxied == [server.dump_url]
    assert_loaded(result, workdir)


def test_a_banned_proxy_hands_the_dump_to_the_next_which_streams_it(workdir: Path) -> None:
    """The first proxy answers 403 (banned, rested); the request goes again through the second,
    and its answer streams into the same reader (the stream was ended at the 403 before)."""
    with EncodingDumpServer(make_dump(TABLES)) as server, FakeProxy("ban") as banned, FakeProxy() as good:
        result = crawl(workdir, server.dump_url, PROXY_LIST=f"{banned.url},{good.url}")
        tried = ([r.url for r in banned.requests], [r.url for r in good.requests])
    assert tried == ([server.dump_url], [server.dump_url])
    assert "proxy #1 banned (HTTP 403)" in result.stderr
    assert_loaded(result, workdir)


# --- bounds -------------------------------------------------------------------------------------


def load_first(workdir: Path, server: EncodingDumpServer) -> None:
    server.dump = make_dump(TABLES)
    first = crawl(workdir, server.dump_url)
    assert_loaded(first, workdir)


def assert_first_is_live(workdir: Path) -> None:
    assert snapshots(workdir) == [FIRST]
    assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS


def test_a_proxy_failing_mid_answer_is_not_asked_again_through_another(workdir: Path) -> None:
    """Half the dump came through the first proxy when it dropped the connection: the reader is
    midway, so the request is not sent again through the second proxy (whose whole answer would
    start the archive anew under it); one ERROR line, the snapshot held stays live."""
    with EncodingDumpServer(b"") as server, CuttingProxy() as cutting, FakeProxy() as good:
        load_first(workdir, server)
        server.dump = second_dump(**{"export.sql": os.urandom(2 << 20)})
        result = crawl(workdir, server.dump_url, PROXY_LIST=f"{cutting.base_url},{good.url}")
        asked = (len(cutting.requests), len(good.requests))
    assert asked == (1, 0)
    assert_one_error(result)
    assert_first_is_live(workdir)


def test_an_answer_inflating_past_the_size_limit_is_one_error_line_and_the_snapshot_stays(
    workdir: Path,
) -> None:
    """``Content-Encoding: gzip`` on a 5 MB dump of zeros: a few KB on the wire, past the 1 MiB
    ``SOURCE_DOWNLOAD_MAXSIZE`` once decoded: cut there, as a page is."""
    with EncodingDumpServer(b"") as server:
        load_first(workdir, server)
        server.dump = make_dump(
            {**TABLES, "versions": (TABLES["versions"][0], [])},
            snapshot=SECOND,
            extra={"export.sql": bytes(5 << 20)},
            compresslevel=0,
        )
        server.encoding = "gzip"
        result = crawl(workdir, server.dump_url, "-s", 'SOURCE_DOWNLOAD_MAXSIZE={"crates": 1048576}')
    assert_one_error(result, "over the size limit of 1 MiB", "once decompressed", "DOWNLOAD_MAXSIZE")
    assert_first_is_live(workdir)


def test_an_archive_inflating_past_crates_dump_max_bytes_is_one_error_line_and_the_snapshot_stays(
    workdir: Path,
) -> None:
    """A bomb inside the archive: 64 MiB of zeros in one member, 64 KB compressed."""
    with EncodingDumpServer(b"") as server:
        load_first(workdir, server)
        server.dump = second_dump(**{"export.sql": bytes(64 << 20)})
        result = crawl(workdir, server.dump_url, CRATES_DUMP_MAX_BYTES=16 << 20)
    assert_one_error(result, "CRATES_DUMP_MAX_BYTES", "16 MiB")
    assert_first_is_live(workdir)


@pytest.mark.parametrize("value", ["0", "-1", "lots"])
def test_a_bad_crates_dump_max_bytes_is_one_line(workdir: Path, value: str) -> None:
    result = crawl(workdir, "http://127.0.0.1:9/db-dump.tar.gz", CRATES_DUMP_MAX_BYTES=value)
    assert_no_traceback(result)
    assert result.returncode == 2
    assert "CRATES_DUMP_MAX_BYTES" in result.stderr


#: Runs scrapy and writes its own peak RSS (VmHWM of this process, not of the forked parent).
PEAK_RSS = """
import atexit, re, runpy, sys
def hwm():
    status = open("/proc/self/status").read()
    open("peak_rss_kb", "w").write(re.search(r"VmHWM:\\s+(\\d+)", status).group(1))
atexit.register(hwm)
sys.argv = ["scrapy", *sys.argv[1:]]
runpy.run_module("scrapy", run_name="__main__")
"""


def peak_rss(workdir: Path, url: str, **settings: object) -> tuple[int, float, str]:
    """Exit status, peak RSS (MB) and the log of one load in a process of its own."""
    import os
    import sys

    given = {"STORE_URI": "sqlite:///x.db", "CRATES_DUMP_URL": url, **settings}
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="trawl.settings")
    with (workdir / "crawl.log").open("w") as log:
        status = processes.run(
            [sys.executable, "-c", PEAK_RSS, *crawl_args("crates", None, given)],
            cwd=workdir, env=env, stdout=log, stderr=log, timeout=300,
        ).returncode  # fmt: skip
    return status, int((workdir / "peak_rss_kb").read_text()) / 1024, (workdir / "crawl.log").read_text()


def test_a_dump_compressed_on_the_fly_is_decoded_as_it_streams_never_whole(workdir: Path) -> None:
    """A 300 MB member (incompressible, skipped unread), the dump sent gzip on top: decoded a
    step at a time as it arrives, the process never holding the body."""
    import os

    dump = make_dump(TABLES, extra={"export.sql": os.urandom(300 << 20)}, compresslevel=0)
    with EncodingDumpServer(dump, "gzip") as server:
        status, peak, log = peak_rss(workdir, server.dump_url)
    assert status == 0, log[-3000:]
    assert rows(workdir, VERSION_SQL) == EXPECTED_VERSIONS
    assert peak < 300, f"peak RSS {peak:.0f} MB for a 300 MB dump sent gzip"


def test_a_bomb_sent_gzip_on_the_wire_stops_at_the_bound_in_bounded_memory(workdir: Path) -> None:
    """512 MiB of zeros in one member, the dump sent gzip: 0.5 MB on the wire. Stopped at a 128 MiB
    ``DOWNLOAD_MAXSIZE`` once decoded, the process no bigger than a plain load."""
    dump = make_dump(TABLES, extra={"export.sql": bytes(512 << 20)}, compresslevel=0)
    with EncodingDumpServer(dump, "gzip") as server:
        limit = '{"crates": 134217728}'
        status, peak, log = peak_rss(workdir, server.dump_url, SOURCE_DOWNLOAD_MAXSIZE=limit)
    assert status == 1, log[-3000:]
    errors = [line for line in log.splitlines() if "] ERROR:" in line]
    assert len(errors) == 1 and "over the size limit of 128 MiB (DOWNLOAD_MAXSIZE)" in errors[0], errors
    assert "Traceback" not in log
    assert peak < 200, f"peak RSS {peak:.0f} MB"


# --- the per-day archive (-a history=) ----------------------------------------------------------


def test_the_per_day_archive_on_a_moved_mirror_is_followed(workdir: Path) -> None:
    """``CRATES_ARCHIVE_BASE_URL`` answering 301 to where the days are: followed, the days stored
    (each day was ``HTTP 301 from ...`` and nothing stored: its request took every status whole)."""
    day = (datetime.now(UTC).date() - timedelta(days=91)).isoformat()
    version = FakeVersion(31, "0.1.0", "2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z")
    tiny = FakeCrate(3, "tiny", "2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z", versions=[version])
    with FakeCratesApi([tiny]) as api, Redirector(api.archive_url) as moved:
        api.archive = {day: f"version_id,downloads,date\n31,7,{day}\n".encode()}
        settings = {
            "CRATES_BASE_URL": api.base_url,
            "CRATES_ARCHIVE_BASE_URL": moved.base_url,
            "CRATES_USER_AGENT": "trawl-tests (tests@example.org)",
            "STORE_URI": "sqlite:///x.db",
        }
        args = crawl_args("crates", None, settings, "-a", "mode=api", "-a", "crates=tiny", "-a", "history=1")
        result = run_scrapy(workdir, *args)
        hops = [r.path for r in moved.requests]
    assert_no_traceback(result)
    assert result.returncode == 0, result.stderr[-3000:]
    assert hops == [f"/{day}.csv"]
    got = rows(workdir, "SELECT version_id, date, downloads FROM version_download_archive_records")
    assert got == [(31, day, 7)]

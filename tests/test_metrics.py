"""``/metrics`` (trawl.metrics): scraped from a real crawl, while it runs and once it is over.

The crawl's notification is held by the test's receiver: the process has
finished every source and built its run summary, and waits for the receiver,
with its metrics server still up. The test scrapes then and compares each
counter with the summary the receiver was sent (what a user reads), so the
values compared are the final ones, not a guess at when to look. A page held
by the fake CDX server shows the live values: a request in flight.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import FAST, run_scrapy
from tests.interrupts import Trawl
from tests.servers.devdata import build_dataset
from tests.servers.devserver import DEV_KEY, crawl_arguments, crawl_settings, start_upstreams
from tests.servers.ia_cdx import FakeCdxServer, make_capture, service_unavailable
from tests.servers.local import SeenRequest
from tests.servers.receiver import FakeReceiver

HOOK_SECRET = "hooksecret-Zq81xWv5Kp0"
WAYBACK_ARGS = ["-a", "domain=example.com", "-a", "filters=false"]
SERVING = re.compile(r"metrics: serving (http://127\.0\.0\.1:(\d+)/metrics)")


class HeldReceiver(FakeReceiver):
    """Takes the notification, then holds its answer until :attr:`release` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def answer(self, request: SeenRequest) -> tuple[int, bytes, dict[str, str]]:
        answer = super().answer(request)
        self.release.wait(60)
        return answer


class HeldPage(FakeCdxServer):
    """A CDX server that holds one page's answer until :attr:`release` is set."""

    def __init__(self, *args: object, hold: str, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.hold = hold
        self.arrived = threading.Event()
        self.release = threading.Event()

    def handle(self, path_qs: str, headers: object) -> object:  # type: ignore[override]
        if f"page={self.hold}" in path_qs.split("?", 1)[-1].split("&"):
            self.arrived.set()
            self.release.wait(60)
        return super().handle(path_qs, headers)  # type: ignore[arg-type]


def scrape(url: str) -> tuple[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    """The endpoint's text, and every sample by (name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    return text, samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def settings_args(settings: dict[str, object]) -> list[str]:
    return [arg for name, v in settings.items() for arg in ("-s", f"{name}={v}")]


def metrics_url(run: Trawl) -> str:
    match = SERVING.search(run.wait_for("metrics: serving"))
    assert match is not None
    return match.group(1)


def test_crawl_all_metrics_agree_with_the_run_summary(tmp_path: Path) -> None:
    data = build_dataset(300, sources=("wayback", "otx", "urlscan"))
    with ExitStack() as stack, HeldReceiver() as receiver:
        servers = start_upstreams(data, stack)
        settings = {
            **crawl_settings(servers),
            "PROMETHEUS_PORT": 0,
            "PROGRESS_INTERVAL": 0,
            "NOTIFY_URLS": json.dumps([f"{receiver.base_url}/hook/{HOOK_SECRET}"]),
            "NOTIFY_TIMEOUT": 120,
        }
        args = ["crawl", "all", *crawl_arguments(data), *settings_args(settings)]
        with Trawl(tmp_path, *args) as run:
            url = metrics_url(run)
            assert len(SERVING.findall(run.stderr)) == 1  # one server for the three crawlers
            run.wait_until(lambda: receiver.requests)
            text, samples = scrape(url)  # every source done, the process still up
            receiver.release.set()
            code, _ = run.finish()
        assert code == 0, run.stderr[-3000:]
    summary = receiver.bodies()[0]
    assert [s["source"] for s in summary["sources"]] == ["wayback", "otx", "urlscan"]
    for counts in summary["sources"]:
        source = counts["source"]
        assert counts["outcome"] == "complete" and counts["pages"] > 0 and counts["urls"] > 0
        assert value(samples, "trawl_requests_total", source=source) == counts["requests"]
        assert value(samples, "trawl_pages_total", source=source) == counts["pages"]
        assert value(samples, "trawl_urls_unique_total", source=source) == counts["urls"]
        assert value(samples, "trawl_urls_new_total", source=source) == counts["new_urls"]
        assert value(samples, "trawl_urls_seen_total", source=source) >= counts["urls"]
        assert value(samples, "trawl_crawls_total", source=source, outcome="complete") == 1
        assert value(samples, "trawl_crawls_running", source=source) == 0
        assert value(samples, "trawl_requests_in_flight", source=source) == 0
        assert value(samples, "trawl_store_write_seconds_count", source=source) >= 1
        assert value(samples, "trawl_pause_seconds_total", source=source) == 0
    assert sum(c["new_urls"] for c in summary["sources"]) == summary["new_count"] > 0
    assert not [k for k in samples if k[0] == "trawl_errors_total"]  # a clean run: no error series
    for secret in (HOOK_SECRET, DEV_KEY):
        assert secret not in text


def test_a_request_in_flight_and_the_counters_so_far(tmp_path: Path) -> None:
    captures = [make_capture(f"https://example.com/p{i}", "20200101000000") for i in range(12)]
    with HeldPage(captures, lines_per_page=3, hold="3") as server:
        settings = {**FAST, "WAYBACK_BASE_URL": server.base_url, "PROMETHEUS_PORT": 0, "PROGRESS_INTERVAL": 0}
        args = ["crawl", "wayback", *WAYBACK_ARGS, *settings_args(settings)]
        with Trawl(tmp_path, *args) as run:
            url = metrics_url(run)
            run.wait_until(server.arrived.is_set)
            # Pages 0-2 are read and stored; page 3 is on the wire.
            run.wait_until(lambda: value(scrape(url)[1], "trawl_urls_unique_total", source="wayback") == 9)
            _, live = scrape(url)
            server.release.set()
            code, _ = run.finish()
    assert code == 0, run.stderr[-3000:]
    assert value(live, "trawl_requests_in_flight", source="wayback") == 1
    assert value(live, "trawl_crawls_running", source="wayback") == 1
    assert value(live, "trawl_pages_total", source="wayback") == 3
    # the page count, pages 0-3: four requests sent, one of them unanswered
    assert value(live, "trawl_requests_total", source="wayback") == 5


def test_errors_by_kind_and_pause_seconds(tmp_path: Path) -> None:
    captures = [make_capture(f"https://example.com/p{i}", "20200101000000") for i in range(9)]
    retry_after = (429, b"slow down", {"Content-Type": "text/html", "Retry-After": "1"})
    # page 0: a pause, then its answer; page 2: 503 twice, given up after its one retry
    faults = {0: [retry_after], 2: [service_unavailable(), service_unavailable()]}
    with FakeCdxServer(captures, lines_per_page=3, fail_pages=faults) as server, HeldReceiver() as receiver:
        settings = {
            "WAYBACK_BASE_URL": server.base_url,
            "RATE_LIMITS": '{"wayback": "1000/1s"}',
            "AUTOTHROTTLE_ENABLED": False,
            "RETRY_TIMES": 1,
            "RETRY_BACKOFF_BASE": 0,
            "PROMETHEUS_PORT": 0,
            "PROGRESS_INTERVAL": 0,
            "NOTIFY_URLS": json.dumps([f"{receiver.base_url}/hook"]),
            "NOTIFY_TIMEOUT": 120,
        }
        args = ["crawl", "wayback", *WAYBACK_ARGS, *settings_args(settings)]
        with Trawl(tmp_path, *args) as run:
            url = metrics_url(run)
            run.wait_until(lambda: receiver.requests)
            _, samples = scrape(url)
            receiver.release.set()
            code, _ = run.finish()
    assert code == 1, run.stderr[-3000:]  # a page lost: partial
    (counts,) = receiver.bodies()[0]["sources"]
    assert counts["outcome"] == "partial" and counts["errors"] == 1
    assert value(samples, "trawl_errors_total", source="wayback", kind="http") == 1
    assert value(samples, "trawl_crawls_total", source="wayback", outcome="partial") == 1
    assert value(samples, "trawl_requests_total", source="wayback") == counts["requests"]
    assert value(samples, "trawl_pages_total", source="wayback") == counts["pages"] == 2
    assert value(samples, "trawl_urls_unique_total", source="wayback") == counts["urls"] == 6
    assert value(samples, "trawl_pauses_total", source="wayback") == 1
    assert 0.9 <= value(samples, "trawl_pause_seconds_total", source="wayback") <= 1.5


def listening_ports(pid: int) -> set[int]:
    """TCP ports process ``pid`` listens on (from /proc: its socket inodes in LISTEN state)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_without_prometheus_port_nothing_listens(tmp_path: Path) -> None:
    captures = [make_capture(f"https://example.com/p{i}", "20200101000000") for i in range(6)]
    with HeldPage(captures, lines_per_page=3, hold="1") as server:
        settings = {**FAST, "WAYBACK_BASE_URL": server.base_url, "PROGRESS_INTERVAL": 0}
        args = ["crawl", "wayback", *WAYBACK_ARGS, *settings_args(settings)]
        with Trawl(tmp_path, *args) as run:
            run.wait_until(server.arrived.is_set)
            ports = listening_ports(run.proc.pid)
            server.release.set()
            code, _ = run.finish()
    assert code == 0, run.stderr[-3000:]
    assert ports == set()
    assert "metrics" not in run.stderr


def test_a_port_in_use_is_one_line_and_nothing_is_sent(workdir: Path) -> None:
    capture = make_capture("https://example.com/", "20200101000000")
    with socket.socket() as taken, FakeCdxServer([capture]) as server:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for source in ("wayback", "all"):
            result = run_scrapy(
                workdir, "crawl", source, "-a", "domain=example.com",
                "-s", f"WAYBACK_BASE_URL={server.base_url}", "-s", f"PROMETHEUS_PORT={port}",
            )  # fmt: skip
            assert result.returncode == 2, result.stderr[-2000:]
            assert result.stderr.splitlines()[-1] == (
                f"trawl: error: PROMETHEUS_PORT: cannot serve metrics on 127.0.0.1:{port}: "
                "address already in use"
            )
            assert "Traceback" not in result.stderr
        assert server.requests == []
        # TRAWL_PLUGINS_DISABLED=metrics: no metrics, so no port to take; the crawl runs
        off = run_scrapy(
            workdir, "crawl", "wayback", "-a", "domain=example.com",
            "-s", f"WAYBACK_BASE_URL={server.base_url}",
            "-s", f"PROMETHEUS_PORT={port}", "-s", "TRAWL_PLUGINS_DISABLED=metrics",
        )  # fmt: skip
        assert off.returncode == 0, off.stderr[-2000:]
        assert "metrics: serving" not in off.stderr and "PROMETHEUS_PORT:" not in off.stderr


def test_bad_values_are_refused_in_one_line(workdir: Path) -> None:
    for setting, bad, says in (
        ("PROMETHEUS_PORT", "abc", "PROMETHEUS_PORT must be a whole number from 0 to 65535, got 'abc'"),
        ("PROMETHEUS_PORT", "70000", "PROMETHEUS_PORT must be a whole number from 0 to 65535, got '70000'"),
        ("PROMETHEUS_ADDRESS", "http://0.0.0.0", "PROMETHEUS_ADDRESS must be an IP address or a host name"),
    ):
        result = run_scrapy(workdir, "crawl", "wayback", "-a", "domain=example.com", "-s", f"{setting}={bad}")
        assert result.returncode == 2
        assert result.stderr.splitlines()[-1].startswith(f"trawl: error: {says}"), result.stderr[-1000:]


class _Stats:
    def __init__(self, values: dict[str, object]) -> None:
        self.values = values

    def get_stats(self) -> dict[str, object]:
        return self.values


class _Crawler:
    """What the collector reads of a crawler: its stats."""

    def __init__(self, **values: object) -> None:
        self.stats = _Stats(values)


def collected() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client import generate_latest

    from trawl.metrics.collector import REGISTRY

    families = text_string_to_metric_families(generate_latest(REGISTRY).decode())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_a_source_crawled_again_in_one_process_counts_on_from_its_total() -> None:
    """A worker runs crawl after crawl: each starts its stats at 0, the counter goes on."""
    from trawl.metrics.collector import crawler_finished, crawler_started

    first = _Crawler(**{"downloader/request_count": 5, "trawl/pages": 4, "trawl/outcome": "complete"})
    crawler_started(first, "folded-source")
    assert value(collected(), "trawl_requests_total", source="folded-source") == 5
    crawler_finished(first)
    second = _Crawler(**{"downloader/request_count": 2, "trawl/pages": 1, "trawl/errors/http": 1})
    crawler_started(second, "folded-source")
    samples = collected()
    assert value(samples, "trawl_requests_total", source="folded-source") == 7
    assert value(samples, "trawl_pages_total", source="folded-source") == 5
    assert value(samples, "trawl_errors_total", source="folded-source", kind="http") == 1
    assert value(samples, "trawl_crawls_running", source="folded-source") == 1
    assert value(samples, "trawl_crawls_total", source="folded-source", outcome="complete") == 1
    crawler_finished(second)
    assert value(collected(), "trawl_requests_total", source="folded-source") == 7


def test_the_queue_sets_its_depth_or_is_asked_for_it() -> None:
    from trawl.metrics import set_queue_depth, watch_queue_depth

    set_queue_depth("queued-a", 12)
    set_queue_depth("queued-b", 3)
    assert value(collected(), "trawl_queue_depth", source="queued-a") == 12
    watch_queue_depth(lambda: {"queued-b": 40})
    samples = collected()
    assert value(samples, "trawl_queue_depth", source="queued-a") == 12
    assert value(samples, "trawl_queue_depth", source="queued-b") == 40

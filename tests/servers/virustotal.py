"""A local stand-in for VirusTotal's v2 ``/vtapi/v2/domain/report`` endpoint.

The body for ``jppost-ge.top`` is the real 2019 answer recorded by mihari
(``tests/data/vt_v2_domain_report_mihari_cassette.yml``, served verbatim with
its recorded headers). Other domains get reports built in the same shape:
``undetected_urls`` as arrays ``[url, sha256, positives, total, scan_date]``,
``detected_urls`` as objects, ``subdomains`` as host names.

How the real API says no, reproduced here: a key it does not know gets HTTP
403 with an empty body; over quota it answers HTTP 204 with an empty body; a
domain it has no report for is ``{"response_code": 0, ...}`` (the
``verbose_msg`` text is a guess). ``faults`` queues other answers (429, 5xx,
an HTML page with status 200, malformed JSON) for the next requests.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.servers.local import LocalServer, SeenRequest

DATA = Path(__file__).resolve().parents[1] / "data"
CASSETTE = DATA / "vt_v2_domain_report_mihari_cassette.yml"
RECORDED_DOMAIN = "jppost-ge.top"
REPORT_PATH = "/vtapi/v2/domain/report"

#: (status, body, headers) answered instead of the report.
Fault = tuple[int, bytes, dict[str, str]]

_GOOGLE = {"Server": "Google Frontend", "Cache-Control": "no-cache"}


def recorded_report() -> tuple[bytes, dict[str, str]]:
    """The recorded body, byte for byte, and the recorded response headers."""
    cassette = yaml.safe_load(CASSETTE.read_text(encoding="utf-8"))
    response = cassette["http_interactions"][0]["response"]
    headers = {k: v[0] for k, v in response["headers"].items() if k not in ("Content-Length", "Date")}
    return response["body"]["string"].encode("utf-8"), headers


def build_report(
    undetected: Iterable[tuple[str, str]] = (),
    detected: Iterable[tuple[str, str]] = (),
    subdomains: Iterable[str] | None = None,
) -> bytes:
    """A report in the recorded shape; URL rows are ``(url, "YYYY-MM-DD hh:mm:ss")``."""
    report: dict[str, object] = {
        "domain_siblings": [],
        "undetected_urls": [
            [url, hashlib.sha256(url.encode()).hexdigest(), 0, 70, date] for url, date in undetected
        ],
        "whois": "Domain Name: example.com",
        "whois_timestamp": 1565063924,
        "response_code": 1,
        "detected_urls": [
            {"url": url, "positives": 3, "total": 71, "scan_date": date} for url, date in detected
        ],
        "verbose_msg": "Domain found in dataset",
        "resolutions": [{"last_resolved": "2019-07-04 09:25:34", "ip_address": "93.184.216.34"}],
    }
    if subdomains is not None:
        report["subdomains"] = list(subdomains)
    return json.dumps(report).encode()


UNKNOWN_DOMAIN = json.dumps({"response_code": 0, "verbose_msg": "Domain not found"}).encode()
HTML_200 = b"<!DOCTYPE html><html><head><title>VirusTotal</title></head><body>Sign in</body></html>"


def over_quota() -> Fault:
    """What v2 answers over quota: 204, no body (virustotal_api gem PR #2)."""
    return (204, b"", dict(_GOOGLE))


def rate_limited() -> Fault:
    """A 429 (v3's error shape; v2 normally answers 204 instead)."""
    body = json.dumps({"error": {"code": "QuotaExceededError", "message": "Quota exceeded"}}).encode()
    return (429, body, {"Content-Type": "application/json", **_GOOGLE})


def server_error(status: int = 500) -> Fault:
    return (status, b"<html><body><h1>Error</h1></body></html>", {"Content-Type": "text/html", **_GOOGLE})


def html_200() -> Fault:
    return (200, HTML_200, {"Content-Type": "text/html; charset=utf-8", **_GOOGLE})


def malformed() -> Fault:
    return (
        200,
        b'{"response_code": 1, "undetected_urls": [["http://exa',
        {"Content-Type": "application/json"},
    )


@dataclass
class FakeVirusTotal(LocalServer):
    """Context manager: serves on 127.0.0.1, ``base_url`` while running."""

    keys: set[str] = field(default_factory=lambda: {"vt-test-key-0123456789abcdef"})
    reports: dict[str, bytes] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    requests: list[SeenRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._recorded, self._recorded_headers = recorded_report()

    # --- lifecycle ---------------------------------------------------------------------

    # --- answers -------------------------------------------------------------------------

    def answer(self, request: SeenRequest) -> tuple[int, bytes, dict[str, str]]:
        with self._lock:
            self.requests.append(request)
        path, params = request.path, request.params
        if path != REPORT_PATH:
            return 404, b"", {"Content-Type": "text/html"}
        if params.get("apikey") not in self.keys:
            return 403, b"", dict(_GOOGLE)
        with self._lock:
            fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            return fault
        domain = params.get("domain", "")
        if domain == RECORDED_DOMAIN and domain not in self.reports:
            return 200, self._recorded, dict(self._recorded_headers)
        body = self.reports.get(domain, UNKNOWN_DOMAIN)
        return 200, body, {"Content-Type": "application/json", **_GOOGLE}

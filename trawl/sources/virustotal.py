"""VirusTotal's v2 domain report: the URLs VirusTotal scanned on a domain, and its subdomains.

One request makes a run: ``GET {VIRUSTOTAL_BASE_URL}/vtapi/v2/domain/report?apikey=<key>&domain=<d>``
(the endpoint waymore uses). The v2 API takes its key only in the query
string, so the request URL holds it: trawl.common.secrets masks registered keys in
every log line (Scrapy's DEBUG "Crawled <GET ...>" line included) and this
spider names keys by position (``key #1``) in its own messages.

What the answer holds (see ``/work/shared/api-formats.md`` section f):
``undetected_urls`` rows are arrays ``[url, sha256, positives, total,
scan_date]``, ``detected_urls`` rows are objects ``{url, positives, total,
scan_date}`` (both shapes are read in both lists), ``subdomains`` is a list of
host names, each reported as ``http://<sub>/`` as waymore does. Lists are
capped by VirusTotal (about 100 each); URLs of other domains are left to the
scope filter.

How VirusTotal says no: over quota the v2 API answers HTTP 204 with an empty
body; a bad key gets 403; an unknown domain is ``response_code: 0`` (an empty
result, not an error).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

import orjson
import scrapy
from scrapy.http import Response

from trawl.common import statkeys
from trawl.records.batches import CaptureBatch
from trawl.settings_checks import Setting, seconds
from trawl.sources.base import SourceSpider

REPORT_PATH = "/vtapi/v2/domain/report"


def scan_date_timestamp(value: object) -> str:
    """``"2019-07-03 07:40:50"`` -> ``"20190703074050"``; ``""`` when it is not a date."""
    if not isinstance(value, str):
        return ""
    digits = "".join(ch for ch in value if ch.isdigit())
    return digits if len(digits) == 14 else ""


def _url_and_date(row: object) -> tuple[object, object]:
    """A URL row in either shape: ``[url, sha256, positives, total, scan_date]`` or an object."""
    if isinstance(row, dict):
        return row.get("url"), row.get("scan_date")
    if isinstance(row, list) and row:
        return row[0], row[4] if len(row) > 4 else None
    return None, None


def report_rows(report: Mapping[str, Any]) -> tuple[list[str], list[str], dict[str, int]]:
    """URLs and 14-digit timestamps of a domain report, and how many came from each list."""
    urls: list[str] = []
    stamps: list[str] = []
    counts = {"detected": 0, "undetected": 0, "subdomains": 0}
    for kind in ("detected", "undetected"):
        rows = report.get(f"{kind}_urls")
        for row in rows if isinstance(rows, list) else ():
            url, date = _url_and_date(row)
            if isinstance(url, str) and url.strip():
                urls.append(url.strip())
                stamps.append(scan_date_timestamp(date))
                counts[kind] += 1
    subdomains = report.get("subdomains")
    for host in subdomains if isinstance(subdomains, list) else ():
        if isinstance(host, str) and host.strip():
            urls.append(f"http://{host.strip()}/")
            stamps.append("")
            counts["subdomains"] += 1
    return urls, stamps, counts


class VirustotalSpider(SourceSpider):
    """URLs and subdomains VirusTotal knows for a domain (API key required)."""

    name = "virustotal"
    default_rate_limit = "4/60s"
    default_download_timeout = 30
    # One domain report, its lists capped by VirusTotal at about 100 entries each: well under 1 MB.
    default_download_maxsize = 16 << 20
    default_download_warnsize = 4 << 20
    base_url_setting = "VIRUSTOTAL_BASE_URL"
    default_base_url = "https://www.virustotal.com"
    api_key_setting = "VIRUSTOTAL_API_KEY"
    api_key_required = True
    settings_declared = {
        "VIRUSTOTAL_QUOTA_WAIT": Setting(
            60,
            seconds(0, maximum=86400),
            "seconds to wait after an over-quota answer (HTTP 204) before the one retry; at most a day, "
            "the longest quota window of a public key (500 lookups a day)",
        ),
    }

    #: Seconds to wait after an over-quota answer before the one retry.
    quota_wait: float

    def configure(self, settings: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
        super().configure(settings, arguments)
        self.quota_wait = float(self.setting(settings, "VIRUSTOTAL_QUOTA_WAIT"))
        self.quota_retried = False

    async def start(self) -> AsyncIterator[Any]:
        self.log_target()
        if self.should_skip():
            return
        if self.check_only:
            # There is no cheaper request than the report itself; sending it
            # would spend the quota (4 a minute, 500 a day on a public key).
            self.logger.info(
                "%s: check_only: a full run is 1 request (the domain report); none sent", self.name
            )
            self.report_estimate(1)
            return
        key = self.keys.next_key()
        if key is not None:
            yield self.report_request(key)

    def report_request(self, key: str) -> scrapy.Request:
        query = urlencode([("apikey", key), ("domain", self.target.domain)])
        return scrapy.Request(
            f"{self.base_url}{REPORT_PATH}?{query}",
            callback=self.parse_report,
            errback=self.on_request_error,
            dont_filter=True,  # a retry after 204 asks the same URL again
            meta={
                "handle_httpstatus_all": True,
                # The callback says it in one ERROR line when retries run out.
                "key_index": self.keys.keys.index(key),
            },
        )

    # --- callbacks -------------------------------------------------------------------------

    async def parse_report(self, response: Response) -> AsyncIterator[Any]:
        key = self.keys.keys[response.meta["key_index"]]
        status = response.status
        if status == 204 or (status == 200 and not response.body.strip()):
            retry = await self._after_quota(key, status)
            if retry is not None:
                yield retry
            return
        if status in (401, 403):
            retry = self._after_refusal(key, status)
            if retry is not None:
                yield retry
            return
        report = self._read_report(response)
        if isinstance(report, scrapy.Request):  # an unreadable body, asked for again
            yield report
            return
        if report is None:
            return
        stats = self.crawler.stats
        stats.set_value(statkeys.PAGES_TOTAL, 1)
        code = report.get("response_code")
        if code == 0:
            stats.inc_value(statkeys.PAGES)
            self.logger.info(
                "%s: VirusTotal has no report for %s (response_code 0: %s)",
                self.name,
                self.target.domain,
                report.get("verbose_msg") or "not in its dataset",
            )
            return
        if code != 1:
            self.record_error(
                "api",
                "VirusTotal answered response_code %r for %s: %s",
                code,
                self.target.domain,
                report.get("verbose_msg") or "no message",
            )
            return
        stats.inc_value(statkeys.PAGES)
        for item in self._batches(report):
            yield item

    def _read_report(self, response: Response) -> dict[str, Any] | scrapy.Request | None:
        """The decoded report; the request again if its body does not parse; or ``None``
        after one error line saying why not."""
        status = response.status
        if status == 429:
            self.record_error(
                "rate_limited", "rate limited (HTTP 429) after %s retries", self.settings.get("RETRY_TIMES")
            )
            return None
        if status != 200:
            self.record_error("http", "HTTP %d from %s", status, self.describe_url(response.url))
            return None
        if self.reject_html(response, "domain report", "a JSON domain report", sender="VirusTotal"):
            return None
        try:
            report = orjson.loads(response.body)
        except orjson.JSONDecodeError as exc:
            return self.retry_bad_body(response, "unreadable domain report (%s)", exc)
        if not isinstance(report, dict):
            self.record_error(
                "malformed", "unreadable domain report (a JSON %s, not an object)", type(report).__name__
            )
            return None
        return report

    def _batches(self, report: Mapping[str, Any]) -> Iterable[CaptureBatch]:
        urls, stamps, counts = report_rows(report)
        self.logger.info(
            "%s: %d detected URL(s), %d undetected URL(s), %d subdomain(s) for %s",
            self.name,
            counts["detected"],
            counts["undetected"],
            counts["subdomains"],
            self.target.domain,
        )
        if urls:
            yield CaptureBatch.from_columns(source=self.name, urls=urls, timestamps=stamps, page="report")

    # --- refusals --------------------------------------------------------------------------

    async def _after_quota(self, key: str, status: int) -> scrapy.Request | None:
        """HTTP 204, empty body: this key's quota is spent. One retry, then an error."""
        label = self.keys.label(key)
        self.keys.rest(key, time.time() + self.quota_wait)
        if self.quota_retried:
            self.record_error(
                "rate_limited",
                "quota exceeded: VirusTotal answered HTTP %d with an empty body again for %s "
                "(a public key allows 4 requests a minute and 500 a day); try later",
                status,
                label,
            )
            return None
        self.quota_retried = True
        other = self.keys.next_key()
        if other is not None and other != key:
            self.logger.warning(
                "%s: quota exceeded for %s (HTTP %d, empty body); trying %s",
                self.name,
                label,
                status,
                self.keys.label(other),
            )
            return self.report_request(other)
        self.logger.warning(
            "%s: quota exceeded for %s (HTTP %d, empty body); asking once more in %g s",
            self.name,
            label,
            status,
            self.quota_wait,
        )
        await self.wait(self.quota_wait)
        return self.report_request(self.keys.next_key() or key)

    def _after_refusal(self, key: str, status: int) -> scrapy.Request | None:
        """403: the key is wrong or disabled. Drop it; try the next one if there is one."""
        label = self.keys.label(key)
        self.keys.drop(key)
        other = self.keys.next_key()
        if other is None:
            self.record_error(
                "bad_key",
                "VirusTotal refused %s (HTTP %d: wrong or disabled key); check %s",
                label,
                status,
                self.api_key_setting,
            )
            return None
        self.logger.warning(
            "%s: VirusTotal refused %s (HTTP %d); trying %s", self.name, label, status, self.keys.label(other)
        )
        return self.report_request(other)

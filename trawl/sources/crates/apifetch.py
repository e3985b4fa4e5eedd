"""One crates.io API request, awaited, and what its answer means: JSON, or one line and a decision.

The decisions (each said once, naming what was asked and where):

* 403: crates.io refuses the crawler (no User-Agent, or a blocked one): every
  further request would be refused too, so the crawl **stops** (``blocked``);
* 429 once its retries are spent (the gate paused the source for each
  ``Retry-After`` meanwhile): the crawl **stops** (``rate_limited``);
* 404 for a crate or a version: it vanished since it was listed (or was never
  there: ``-a crates=``): a WARNING and the crate is **skipped**;
* a body that is not JSON: asked for again after a backoff
  (:meth:`~trawl.sources.base.Source.retry_bad_body`), then the crate is
  **skipped** with one ERROR line (the listing: the crawl stops);
* any other status, a connection that fails after its retries: one ERROR line;
  the crate is skipped, a failed listing stops the crawl.

:class:`Skip` and :class:`Stop` carry no message: the line is written before
they are raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import scrapy
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.python.failure import Failure

from trawl.common import statkeys

if TYPE_CHECKING:
    from trawl.sources.crates.host import CratesHost


class Skip(Exception):  # noqa: N818 - a decision, said already, not an error to report
    """This crate is left out (said already); the crawl goes on with the next."""


class Stop(Exception):  # noqa: N818 - a decision, said already
    """The crawl cannot go on (said already)."""


def error_detail(body: bytes) -> str:
    """crates.io's ``{"errors":[{"detail":"..."}]}``, or the start of a plain-text body (its 403s)."""
    try:
        data = orjson.loads(body)
    except ValueError:
        text = body[:400].decode("utf-8", "replace").strip()
        return " ".join(text.split())[:300]
    errors = data.get("errors") if isinstance(data, dict) else None
    if isinstance(errors, list):
        details = [e["detail"] for e in errors if isinstance(e, dict) and isinstance(e.get("detail"), str)]
        return " - ".join(details)[:300]
    return ""


class Fetcher:
    """GETs through the engine's downloader (gate, proxies, retries), with the crawl's User-Agent."""

    def __init__(self, spider: CratesHost, user_agent: str) -> None:
        self.spider = spider
        self.headers = {"User-Agent": user_agent, "Accept": "application/json"}

    async def json(self, url: str, what: str, *, listing: bool = False) -> Any:
        """The answer's JSON; :class:`Skip` or :class:`Stop` (after one line) when there is none."""
        spider = self.spider
        if not spider.take_request():  # limit_requests spent: said once by take_request
            raise Stop
        request = scrapy.Request(
            url, headers=self.headers, meta={"handle_httpstatus_all": True, "page": what}, dont_filter=True
        )
        give_up = Stop if listing else Skip
        while True:
            response = await self._download(request)
            status = response.status
            if status == 200:
                try:
                    data = orjson.loads(response.body)
                except ValueError:
                    retry = spider.retry_bad_body(
                        response,
                        "%s: not JSON (%d bytes from %s)",
                        what,
                        len(response.body),
                        self._where(url),
                    )
                    if retry is None:
                        raise give_up from None
                    request = retry
                    continue
                spider.crawler.stats.inc_value(statkeys.PAGES)
                return data
            self._refused(response, what, url, listing)

    async def _download(self, request: scrapy.Request) -> Response:
        spider = self.spider
        try:
            return await maybe_deferred_to_future(
                deferred_from_coro(spider.crawler.engine.download_async(request))
            )
        except Exception as exc:  # noqa: BLE001 - said in one line by the errback every source uses
            failure = Failure(exc)
            failure.request = request  # type: ignore[attr-defined]
            spider.on_request_error(failure)
            raise Stop from None

    def _refused(self, response: Response, what: str, url: str, listing: bool) -> None:
        """Say what an answer other than 200 means, and raise the decision."""
        spider, status, where = self.spider, response.status, self._where(url)
        detail = error_detail(response.body)
        said = f": {detail}" if detail else ""
        if status == 403:
            spider.record_blocked(f"{what}: crates.io refused the crawler (HTTP 403 from {where}){said}")
            raise Stop
        if status == 429:
            tries = response.meta.get("retry_times", 0)
            spider.record_error(
                "rate_limited",
                "%s: rate limited (HTTP 429 from %s) after %d retries%s",
                what,
                where,
                tries,
                said,
            )
            raise Stop
        if status == 404 and not listing:
            spider.crawler.stats.inc_value("crates/vanished")
            spider.logger.warning(
                "%s: %s: not found (HTTP 404 from %s)%s; skipped", spider.name, what, where, said
            )
            raise Skip
        spider.record_error("http", "%s: HTTP %d from %s%s", what, status, where, said)
        raise Stop if listing or status == 400 else Skip

    def _where(self, url: str) -> str:
        return self.spider.describe_url(url)

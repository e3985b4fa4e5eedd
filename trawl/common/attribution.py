"""ERROR lines counted per crawler: what a source's outcome reads.

Scrapy's ``log_count/ERROR`` is counted by a handler on the root logger per
crawler, and each of those handlers counts every record of the process: in
``scrapy crawl all`` one source's ERROR line made every other source
"partial". Here one handler for the whole process gives each record to the
crawler it belongs to:

* a record that names a spider (``spider.logger``, and Scrapy's own errors:
  "Spider error processing", "Error processing item", signal handler and
  close failures all carry ``extra={"spider": ...}``) belongs to that
  spider's crawler;
* a record that names none belongs to the crawler when the process runs
  only one (a plain ``scrapy crawl X``: any ERROR line still makes it
  partial, as before);
* otherwise nobody can tell whose it is: it is counted for the process
  (:func:`unattributed_errors`), and ``crawl all`` exits 1 and says so,
  without marking a healthy source partial.

The count is the stat ``trawl/log_errors``, set to 0 when the crawler is
registered so that :func:`trawl.common.outcome.error_count` knows it is there; a run
without this extension falls back to ``log_count/ERROR`` (stricter, never
looser).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING

from scrapy import signals

from trawl.common import statkeys

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

LOG_ERRORS = statkeys.LOG_ERRORS


class _Attribution(logging.Handler):
    """The one root handler: ERROR records -> the stats of the crawler they belong to."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.crawlers: list[Crawler] = []
        self.registered = 0
        self.unattributed: list[str] = []
        #: crawler -> its first ERROR line (kept out of the stats, which the log dumps: a second line).
        self.first: weakref.WeakKeyDictionary[Crawler, str] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()

    def register(self, crawler: Crawler) -> None:
        with self._guard:
            self.crawlers.append(crawler)
            self.registered += 1

    def unregister(self, crawler: Crawler) -> None:
        with self._guard:
            self.crawlers = [c for c in self.crawlers if c is not crawler]

    def emit(self, record: logging.LogRecord) -> None:
        crawler = self.owner(record)
        if crawler is None:
            self.unattributed.append(f"{record.name}: {_message(record)}")
            return
        if record.levelno >= _shown_level(crawler):
            assert crawler.stats is not None
            crawler.stats.inc_value(LOG_ERRORS)
            with self._guard:
                self.first.setdefault(crawler, _message(record))

    def owner(self, record: logging.LogRecord) -> Crawler | None:
        """The crawler a record belongs to, or ``None`` if it cannot be told."""
        spider = getattr(record, "spider", None)
        with self._guard:
            crawlers = list(self.crawlers)
            alone = self.registered == 1
        if spider is not None:
            mine = getattr(spider, "crawler", None)
            return next((c for c in crawlers if c is mine or c.spider is spider), None)
        return crawlers[0] if alone and crawlers else None


def _message(record: logging.LogRecord) -> str:
    """The record's first line, short: enough to find it in the log."""
    try:
        text = record.getMessage()
    except Exception:  # noqa: BLE001 - a broken format string is still an error line
        text = str(record.msg)
    return (text.splitlines() or [""])[0][:200]


def _shown_level(crawler: Crawler) -> int:
    """Records below ``LOG_LEVEL`` were not shown; Scrapy's counter skips them too."""
    level = crawler.settings.get("LOG_LEVEL") or logging.ERROR
    if isinstance(level, str):
        level = logging.getLevelName(level.upper())
    return level if isinstance(level, int) else logging.ERROR


_HANDLER = _Attribution()


def first_error(crawler: Crawler) -> str | None:
    """The first ERROR line ``crawler`` logged (its first line, short), if any: what a dead letter names."""
    with _HANDLER._guard:
        return _HANDLER.first.get(crawler)


def unattributed_errors() -> list[str]:
    """ERROR lines of this process no single crawler can be blamed for (first line of each)."""
    return list(_HANDLER.unattributed)


class ErrorAttribution:
    """Registers the crawler with the process's attribution handler (see the module docstring)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ErrorAttribution:
        extension = cls(crawler)
        assert crawler.stats is not None
        crawler.stats.set_value(LOG_ERRORS, 0)
        if _HANDLER not in logging.root.handlers:
            logging.root.addHandler(_HANDLER)
        _HANDLER.register(crawler)
        # After spider_closed: errors of the closing steps still count for this crawler.
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def engine_stopped(self) -> None:
        _HANDLER.unregister(self.crawler)

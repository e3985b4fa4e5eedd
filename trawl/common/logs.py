"""trawl's log handler: a short console, everything in ``LOG_FILE``, JSON on request.

A default ``make crawl`` printed 598 stderr lines: Scrapy's 12-line
start banner, then per source the overridden settings, four "Enabled ..." lists
and the stats dump, around seven useful lines, and every one-line ``trawl:
error:`` came after the banner. The console now shows, at ``LOG_LEVEL=INFO``,
trawl's own lines (progress, summary, what a source decided) and every WARNING
and ERROR; Scrapy's INFO lines and other libraries' go to ``LOG_FILE``, and to
the console at ``LOG_LEVEL=DEBUG`` or with ``TRAWL_LOG_ALL=True``.
``TRAWL_LOG_JSON=True`` writes one JSON object a line (time, level, source,
message, and counters on progress and summary lines) for log shippers.

The crawl command installs this handler before Scrapy builds its process and
sets ``LOG_INSTALL_ROOT_HANDLER=False``, so Scrapy never installs (nor, when a
crawler is made, replaces) a root handler of its own: the selection and the
format cannot be lost half-way through a run, which is how the masking filter
used to be lost (trawl.common.secrets). The stream is opened here, not by a
``FileHandler``: ``configure_logging``'s ``dictConfig`` closes every existing
handler, and a closed ``FileHandler`` opened in ``w`` mode drops what follows.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any

import orjson

from trawl.common import statkeys
from trawl.common.secrets import RedactingFilter, install_record_factory, redact

if TYPE_CHECKING:  # a type only: read commands (trawl queue) log without importing Scrapy
    from scrapy.settings import BaseSettings

#: Scrapy's INFO lines the console keeps: Ctrl-C's "Received SIGINT, shutting down gracefully".
_SCRAPY_LINES_KEPT = ("Received ",)

#: Progress and summary lines carry these stats as ``counters`` in JSON (name: stat key).
COUNTERS = {
    "pages": statkeys.PAGES,
    "pages_total": statkeys.PAGES_TOTAL,
    "requests": "downloader/request_count",
    "captures": statkeys.CAPTURES,
    "urls_unique": statkeys.URLS_UNIQUE,
    "urls_new": statkeys.URLS_NEW,
    "duplicates": statkeys.DUPLICATES,
    "errors": statkeys.ERRORS,
    "outcome": statkeys.OUTCOME,
}

_installed: logging.Handler | None = None


def is_trawl_record(record: logging.LogRecord) -> bool:
    """A line trawl wrote: its modules' loggers, and spiders' (which Scrapy names after the source)."""
    name = record.name
    if name == "scrapy" or name.startswith("scrapy."):
        return False
    return name == "trawl" or name.startswith("trawl.") or getattr(record, "spider", None) is not None


class ConsoleSelection(logging.Filter):
    """Below WARNING, only trawl's own lines (see the module docstring).

    ``stdout`` is what a command printed, logged instead with ``LOG_STDOUT``
    (the table of ``crawl all``): output, not chatter.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or is_trawl_record(record) or record.name == "stdout":
            return True
        return isinstance(record.msg, str) and record.msg.startswith(_SCRAPY_LINES_KEPT)


def record_source(record: logging.LogRecord) -> str | None:
    """The source a record is about: its spider's name, or its crawler's spider class's."""
    spider = getattr(record, "spider", None)
    if spider is not None:
        return getattr(spider, "name", None)
    crawler = getattr(record, "crawler", None)
    spidercls = getattr(crawler, "spidercls", None)
    return getattr(spidercls, "name", None)


def record_counters(record: logging.LogRecord) -> dict[str, Any] | None:
    """The counters of a progress or summary line (``trawl.run.progress``), else ``None``.

    Read from the crawler's stats when the line is written, so the progress
    line's wording can change without touching the JSON.
    """
    given = getattr(record, "trawl_counters", None)
    if given is not None:
        return dict(given)
    if record.module != "progress":
        return None
    crawler = getattr(getattr(record, "spider", None), "crawler", None)
    stats = getattr(crawler, "stats", None)
    if stats is None:
        return None
    values = stats.get_stats()
    counters = {name: values.get(key, 0) for name, key in COUNTERS.items()}
    counters["pages_total"] = values.get(COUNTERS["pages_total"])  # None: not known yet
    if COUNTERS["outcome"] not in values:
        del counters["outcome"]  # set when the run ends
    return counters


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time``, ``level``, ``source``, ``logger``, ``message`` [, ``counters``]."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "source": record_source(record),
            "logger": record.name,
            "message": record.getMessage(),
        }
        counters = record_counters(record)
        if counters is not None:
            entry["counters"] = counters
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exception"] = record.exc_text
        return orjson.dumps(entry, default=str).decode()


def _open_stream(settings: BaseSettings) -> IO[str] | None:
    filename = settings.get("LOG_FILE")
    if filename:
        mode = "a" if settings.getbool("LOG_FILE_APPEND") else "w"
        return open(filename, mode, encoding=settings.get("LOG_ENCODING"))  # noqa: SIM115 - lives as long as the process
    return sys.stderr if settings.getbool("LOG_ENABLED") else None


def build_handler(settings: BaseSettings) -> logging.Handler:
    """The handler Scrapy's ``_get_handler`` would build, with trawl's filters and format."""
    stream = _open_stream(settings)
    if stream is None:
        return logging.NullHandler()
    handler = logging.StreamHandler(stream)
    if settings.getbool("TRAWL_LOG_JSON"):
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(settings.get("LOG_FORMAT"), settings.get("LOG_DATEFORMAT")))
    level = logging.getLevelName(str(settings.get("LOG_LEVEL")).upper())
    handler.setLevel(level)
    handler.addFilter(RedactingFilter())
    if settings.getbool("LOG_SHORT_NAMES"):
        from scrapy.utils.log import TopLevelFormatter

        handler.addFilter(TopLevelFormatter(["scrapy"]))
    console = not settings.get("LOG_FILE")
    if console and level > logging.DEBUG and not settings.getbool("TRAWL_LOG_ALL"):
        handler.addFilter(ConsoleSelection())
    return handler


def install_log_handler(settings: BaseSettings) -> logging.Handler:
    """Make trawl's handler the root handler, and keep Scrapy from installing its own.

    Call before the ``CrawlerProcess`` is made (``process_options``), with the
    logging settings already checked (:mod:`trawl.validation`).
    """
    global _installed  # noqa: PLW0603 - one root handler per process
    install_record_factory()
    handler = build_handler(settings)
    root = logging.getLogger()
    if _installed is not None and _installed in root.handlers:
        root.removeHandler(_installed)
    root.addHandler(handler)
    root.setLevel(logging.NOTSET)  # as Scrapy's install_scrapy_root_handler does: the handler decides
    _installed = handler
    settings.set("LOG_INSTALL_ROOT_HANDLER", False, priority="cmdline")
    return handler


def write_usage_error(settings: BaseSettings, message: str) -> None:
    """The one ``trawl: error: ...`` line of a refused input: on stderr, and last in ``LOG_FILE``.

    A job scrapyd starts has no exit status anyone sees, and its stderr goes to
    scrapyd's own log: the job log (``LOG_FILE``, which scrapyd sets) is where
    its user looks, so the line ends that file too, as written on stderr (not
    as a formatted record: ``TRAWL_LOG_JSON`` keeps it plain, see
    docs/settings.md). A ``LOG_FILE`` that cannot be written leaves stderr only.
    """
    line = f"trawl: error: {redact(message)}\n"
    sys.stderr.write(line)
    filename = settings.get("LOG_FILE")
    if not filename:
        return
    stream = getattr(_installed, "stream", None)
    if stream is not None and stream is not sys.stderr and not stream.closed:
        stream.write(line)
        stream.flush()
        return
    try:
        with open(filename, "a", encoding=settings.get("LOG_ENCODING") or "utf-8") as file:
            file.write(line)
    except (OSError, LookupError):
        pass

"""Keeping API keys and proxy credentials out of every line trawl writes.

Keys are registered here as soon as a spider reads them. Every log record is
made by :class:`RedactedLogRecord` (a log record factory installed when this
module is imported), whose message, traceback and stack text come out with
every registered secret replaced by ``***``. The masking lives in the record
itself, not in a handler or an extension, because Scrapy replaces the root
handler whenever a crawler is made (``Crawler._update_root_log_handler``) and
the Progress extension that used to re-attach a handler filter can be switched
off: with ``PROGRESS_INTERVAL=-1`` a DEBUG VirusTotal run printed
``...report?apikey=<the key>`` twice. Whatever handler, formatter or
``LOG_FILE`` writes a record, and whichever component is disabled, the record
cannot show a key. Stats and stored records never receive request URLs, only
the URLs a source reported.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

MASK = "***"
_MIN_SECRET_LENGTH = 4  # shorter values would mask ordinary words
_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            _secrets.add(value)
        install_redaction()


def redact(text: str) -> str:
    if not _secrets or not text:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _masked_text(name: str) -> property:
    """A record attribute that reads back masked (formatters fill ``exc_text`` late)."""

    def read(record: logging.LogRecord) -> Any:
        value = record.__dict__.get(name)
        return redact(value) if isinstance(value, str) else value

    def write(record: logging.LogRecord, value: Any) -> None:
        record.__dict__[name] = value

    return property(read, write)


class RedactedLogRecord(logging.LogRecord):
    """A log record that cannot show a registered secret, however it is formatted."""

    exc_text = _masked_text("exc_text")
    stack_info = _masked_text("stack_info")

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        return redact(super().getMessage())


_previous_factory: Callable[..., logging.LogRecord] | None = None


def _make_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    assert _previous_factory is not None
    record = _previous_factory(*args, **kwargs)
    if type(record) is logging.LogRecord:  # another factory's own class is left alone
        record.__class__ = RedactedLogRecord
    return record


def install_record_factory() -> None:
    """Make every log record a :class:`RedactedLogRecord` (idempotent; keeps a previous factory)."""
    global _previous_factory  # noqa: PLW0603 - one factory per process
    current = logging.getLogRecordFactory()
    if current is _make_record:
        return
    _previous_factory = current
    logging.setLogRecordFactory(_make_record)


class RedactingFilter(logging.Filter):
    """Rewrites a record so that no registered secret survives formatting.

    A second line of defence for records made without the factory (a record
    built by hand, ``logging.makeLogRecord``): trawl's own log handler has it.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if not _secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is not ours to raise
            message = str(record.msg)
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_FILTER = RedactingFilter()


def install_redaction() -> None:
    """Ensure the record factory, and attach the filter to every root handler (idempotent).

    Handler filters see records from every logger, propagated ones included,
    which a filter on a logger would not.
    """
    install_record_factory()
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)


install_record_factory()

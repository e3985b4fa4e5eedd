"""Keeping API keys and proxy credentials out of every line trawl writes.

Keys are registered here as soon as a spider reads them; a logging filter on
every root handler replaces them with ``***`` in messages, arguments and
tracebacks, so no code path (Scrapy's "Crawled <GET ...?apikey=...>" debug
line included) can print one. Stats and stored records never receive
request URLs, only the URLs a source reported.
"""

from __future__ import annotations

import logging
import threading

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


class RedactingFilter(logging.Filter):
    """Rewrites a record so that no registered secret survives formatting."""

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
    """Attach the filter to every handler of the root logger (idempotent).

    Handler filters see records from every logger, propagated ones included,
    which a filter on a logger would not.
    """
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)

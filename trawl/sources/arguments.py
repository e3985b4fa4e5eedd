"""Reading spider arguments (``-a name=value``), which always arrive as strings."""

from __future__ import annotations

import re

from trawl.errors import TrawlUsageError

_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f", ""}
_DATE = re.compile(r"\d{4}(?:\d{2}(?:\d{2}(?:\d{2}(?:\d{2}(?:\d{2})?)?)?)?)?")


def parse_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise TrawlUsageError(f"-a {name}= expects true or false, got {value!r}")


def parse_int(name: str, value: object, minimum: int = 0) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise TrawlUsageError(f"-a {name}= expects a whole number, got {value!r}") from None
    if number < minimum:
        raise TrawlUsageError(f"-a {name}= must be at least {minimum}, got {number}")
    return number


def parse_date(name: str, value: object) -> str | None:
    """``YYYY[MM[DD[hh[mm[ss]]]]]`` (dashes allowed), checked for real months and days."""
    if value is None:
        return None
    text = str(value).strip().replace("-", "").replace(":", "").replace(" ", "")
    if not text:
        return None
    if not _DATE.fullmatch(text):
        raise TrawlUsageError(f"-a {name}= expects a date as YYYY[MM[DD]], got {value!r}")
    month = int(text[4:6]) if len(text) >= 6 else 1
    day = int(text[6:8]) if len(text) >= 8 else 1
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise TrawlUsageError(f"-a {name}= is not a real date: {value!r}")
    return text


def split_list(value: object) -> list[str]:
    """A comma-separated string (or a list) as a list of stripped, non-empty items."""
    if value is None:
        return []
    if isinstance(value, (list, tuple, set)):
        items = [str(v) for v in value]
    else:
        items = str(value).split(",")
    return [item.strip() for item in items if item.strip()]


def check_repeated(pairs: list[str], option: str = "-a") -> None:
    """Refuse a ``NAME=VALUE`` given twice: Scrapy keeps the last one without a word.

    ``-a domain=a.com -a domain=b.com`` crawled b.com. Names
    are compared as the sources read them, without case.
    """
    seen: set[str] = set()
    for pair in pairs:
        name = pair.partition("=")[0].strip()
        if name.lower() in seen:
            raise TrawlUsageError(f"{option} {name}= is given twice: give each argument once")
        seen.add(name.lower())

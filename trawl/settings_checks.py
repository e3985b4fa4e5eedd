"""How a component declares a setting: its default, its check, one line of doc.

trawl's core settings are in :mod:`trawl.settings`; every component (a source
class, a store class, a notifier receiver kind, a plugin module) declares the
settings it reads itself, next to the code that reads them::

    class MySource(SourceSpider):
        settings_declared = {
            "MYSOURCE_PAGE_SIZE": Setting(100, whole(1, 1000), "results per request"),
        }

so a third-party component gets what a built-in gets: its default applies
(:func:`apply_defaults`, at Scrapy's ``default`` priority, under anything a
project or ``-s`` sets), :func:`trawl.validation.validate_settings` refuses a
bad value in one line before the reactor starts, and the docs test sees it.
One place per default: a reader that may run without the defaults applied
(a store opened by ``trawl search``) falls back to the declaration
(:func:`read`), never to a default of its own.

The checks here are the ones :mod:`trawl.validation` and the components share.
A check is ``check(settings, name, sources)``: it reads the value, raises
:class:`~trawl.errors.TrawlUsageError` naming the setting and its valid form,
and never creates anything.

Every duration has an upper bound (:func:`seconds`, ``maximum``; one day
unless the declaration says otherwise, and every one of trawl's says, with
its reason): ``NOTIFY_TIMEOUT=1e9`` was accepted and kept a process alive
until a hanging receiver let go, and a wait nobody would choose
is a typo or a unit mistake (milliseconds), better refused in one line than
discovered a day later. ``inf`` and ``nan`` are not numbers of seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError

if TYPE_CHECKING:  # a type only: a read command checks settings without importing Scrapy (0.25 s)
    from scrapy.settings import BaseSettings

__all__ = [
    "DAY",
    "Check",
    "Duration",
    "Setting",
    "apply_defaults",
    "http_url",
    "one_of",
    "read",
    "real",
    "scrapy_bool",
    "seconds",
    "status_list",
    "text",
    "text_list",
    "whole",
    "word_bool",
]

#: ``check(settings, name, sources)``: raise :class:`TrawlUsageError` for a bad value.
#: ``sources`` are the known source names (``None``: unknown), for settings keyed by source.
Check = Callable[["BaseSettings", str, Collection[str] | None], None]


@dataclass(frozen=True)
class Setting:
    """One setting a component reads: its default, its check, what it is for."""

    default: Any
    check: Check
    doc: str = ""


def apply_defaults(settings: BaseSettings, declared: Mapping[str, Setting]) -> None:
    """Give every declared setting that has no value its default, at Scrapy's lowest priority.

    A value from trawl's settings module, a project's or ``-s`` stays: they all
    have a higher priority. Frozen settings (a running crawler's) are left alone.
    """
    if getattr(settings, "frozen", False):
        return
    for name, setting in declared.items():
        if settings.get(name) is None:
            settings.set(name, setting.default, priority="default")


def read(settings: Mapping[str, Any] | None, declared: Mapping[str, Setting], name: str) -> Any:
    """``settings[name]``, or the declared default when it has no value there."""
    value = settings.get(name) if settings is not None else None
    return declared[name].default if value is None else value


def fail(name: str, expected: str, raw: Any) -> TrawlUsageError:
    return TrawlUsageError(f"{name} {expected}, got {raw!r}")


# --- value checks: (value, label) -> parsed value, or TrawlUsageError --------------------


def whole_value(raw: Any, label: str, minimum: int | None, maximum: int | None) -> int:
    form = _range_text("a whole number", minimum, maximum)
    if isinstance(raw, bool) or isinstance(raw, float) and not raw.is_integer():
        raise fail(label, f"must be {form}", raw)
    try:
        value = int(raw) if isinstance(raw, int | float) else int(str(raw).strip())
    except (TypeError, ValueError):
        raise fail(label, f"must be {form}", raw) from None
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise fail(label, f"must be {form}", raw)
    return value


def real_value(
    raw: Any, label: str, minimum: float | None, above: bool, unit: str = "", maximum: float | None = None
) -> float:
    form = f"a number of {unit}" if unit else "a number"
    if minimum is not None:
        form += f" ({'above' if above else 'at least'} {minimum:g})"
    if isinstance(raw, bool):
        raise fail(label, f"must be {form}", raw)
    try:
        value = float(raw) if isinstance(raw, int | float) else float(str(raw).strip())
    except (TypeError, ValueError):
        raise fail(label, f"must be {form}", raw) from None
    if maximum is not None and value > maximum:  # +inf included
        raise fail(label, f"must be at most {bound_text(maximum, unit)}", raw)
    if not math.isfinite(value) or (minimum is not None and (value <= minimum if above else value < minimum)):
        raise fail(label, f"must be {form}", raw)
    return value


def bound_text(maximum: float, unit: str = "") -> str:
    """``86400 seconds (1 day)``: a bound as the docs and the error lines write it."""
    number = f"{int(maximum)}" if float(maximum).is_integer() else f"{maximum:g}"
    text = f"{number} {unit}".strip()
    if unit == "seconds" and maximum >= 60:
        for size, word in ((86400, "day"), (3600, "hour"), (60, "minute")):
            if maximum % size == 0:
                count = int(maximum // size)
                return f"{text} ({count} {word}{'s' if count > 1 else ''})"
    return text


def _range_text(what: str, minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f"{what} from {minimum} to {maximum}"
    if minimum is not None:
        return f"{what} (at least {minimum})"
    return what


# --- setting checks -----------------------------------------------------------------------


def whole(minimum: int | None = 0, maximum: int | None = None) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        whole_value(settings.get(name), name, minimum, maximum)

    return check


def real(minimum: float | None = 0.0, above: bool = False, unit: str = "") -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        real_value(settings.get(name), name, minimum, above, unit)

    return check


#: The bound of a duration whose declaration names none (a plugin's).
DAY = 86400.0


@dataclass(frozen=True)
class Duration:
    """A number of seconds from ``minimum`` (``None``: any, e.g. ``-1`` for "off") to ``maximum``.

    A class, not a closure, so that the docs test can read the bound of every
    duration trawl declares and find it in docs/settings.md. ``whole``: whole
    seconds only (a value sent to an API that takes an integer).
    """

    minimum: float | None = 0.0
    above: bool = False
    maximum: float = DAY
    whole: bool = False

    def __call__(self, settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        self.value(settings.get(name), name)

    def value(self, raw: Any, label: str) -> float:
        """``raw`` as seconds, or :class:`TrawlUsageError` naming ``label`` and the valid form."""
        if self.whole:
            low = None if self.minimum is None else int(self.minimum)
            return whole_value(raw, label, low, int(self.maximum))
        return real_value(raw, label, self.minimum, self.above, "seconds", self.maximum)


def seconds(
    minimum: float | None = 0.0, above: bool = False, maximum: float = DAY, whole: bool = False
) -> Duration:
    """A duration setting's check; give ``maximum`` (the longest an operator would mean) and say why."""
    return Duration(minimum, above, maximum, whole)


def scrapy_bool(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Read with Scrapy's ``getbool``, which raises on anything but 0/1/True/False/true/false."""
    try:
        settings.getbool(name)
    except ValueError:
        raise fail(name, "must be True or False (or 1 or 0)", settings.get(name)) from None


_WORDS = {"1", "0", "true", "false", "yes", "no", "on", "off", ""}


def word_bool(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """A boolean the store reads as text (``true``/``false``, ``yes``/``no``, ``on``/``off``, 1/0)."""
    raw = settings.get(name)
    if not isinstance(raw, bool | int) and str(raw).strip().lower() not in _WORDS:
        raise fail(name, "must be true or false", raw)


def text(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    raw = settings.get(name)
    if raw is not None and not isinstance(raw, str):
        raise fail(name, "must be text", raw)


def text_list(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Comma-separated text or a list of texts (the waymore filter lists)."""
    raw = settings.get(name)
    if not (isinstance(raw, str) or isinstance(raw, list | tuple) and all(isinstance(v, str) for v in raw)):
        raise fail(name, "must be a comma-separated list", raw)


def one_of(*choices: str) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        raw = settings.get(name)
        if str(raw).strip().lower() not in choices:
            raise fail(name, f"must be one of {', '.join(choices)}", raw)

    return check


def http_url(optional: bool = False) -> Check:
    def check(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
        raw = settings.get(name)
        value = str(raw or "").strip()
        if optional and not value:
            return
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise fail(name, "must be an http(s) URL such as https://host[:port][/path]", raw)

    return check


def status_list(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """HTTP statuses as Scrapy's ``getlist`` reads them: ``[403, 407]``, or ``403,407`` as text."""
    raw = settings.get(name)
    if isinstance(raw, str) and raw.strip().startswith("["):
        try:
            values = json.loads(raw)
        except ValueError:
            raise fail(name, "must be HTTP statuses such as [403, 407] or 403,407", raw) from None
    else:
        values = settings.getlist(name)
    if not isinstance(values, list):
        raise fail(name, "must be HTTP statuses such as [403, 407] or 403,407", raw)
    for value in values:
        whole_value(value, name, 100, 599)

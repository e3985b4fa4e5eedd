"""The store's settings, read with no fallback: their defaults live in ``trawl/settings.py`` only.

A default repeated here as well could drift from the one the settings module
and the README document, and nothing would show it. Settings built without
trawl's module therefore fail in one line naming the setting, instead of
running with a value nobody chose.
"""

from __future__ import annotations

from typing import Any

from trawl.errors import TrawlUsageError

_FALSE = ("0", "false", "no", "off", "")


def setting(settings: Any, name: str) -> Any:
    """``settings[name]``; :class:`TrawlUsageError` when it has no value at all."""
    value = settings.get(name) if settings is not None else None
    if value is None:
        raise TrawlUsageError(f"the setting {name} has no value (its default is in trawl.settings)")
    return value


def setting_bool(settings: Any, name: str) -> bool:
    """A boolean setting; ``-s NAME=false`` arrives as text."""
    value = setting(settings, name)
    if isinstance(value, str):
        return value.strip().lower() not in _FALSE
    return bool(value)

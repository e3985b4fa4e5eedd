"""The human part of an upstream's JSON error body, for the one line that reports it."""

from __future__ import annotations

import orjson


def json_error_text(
    body: bytes, fields: tuple[str, ...] = ("detail", "error", "message", "description")
) -> str:
    """The human part of a JSON error body (its text fields, joined), cut short for a log line."""
    try:
        data = orjson.loads(body)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    parts = [data[name] for name in fields if isinstance(data.get(name), str) and data[name]]
    return " - ".join(parts)[:300]

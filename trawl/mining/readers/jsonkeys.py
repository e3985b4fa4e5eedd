"""JSON: every key is a parameter name, every URL-looking string value an endpoint (``json``).

A key that is itself a path (an OpenAPI ``paths`` object: ``"/users/{id}"``) is an
endpoint, not a parameter, with ``{id}`` as the unknown part ``EXPR``; an OpenAPI
parameter object's ``name`` is a parameter name too. Values go through
the precision policy. The walk is iterative, and orjson refuses nesting deeper than
1,024 (the file then goes to the regex fallback), so depth costs nothing.

JSON has no positions once parsed: a finding's line is where its quoted text first
occurs after the previous finding's, which is its own line in every file that does not
repeat the same string earlier under another key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import orjson

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.policy import api_like
from trawl.mining.resolve import EXPR, Lines, collapse

#: A key that can be a parameter name (not prose, not a path, not a hash).
_PARAM = re.compile(r"^[A-Za-z_$][\w$.\-\[\]]{0,63}$")
#: Where an OpenAPI/Swagger parameter object (``{"name": "limit", "in": "query"}``) puts it.
_OPENAPI_IN = frozenset({"query", "path", "header", "cookie", "formData", "body"})
_TEMPLATE = re.compile(r"\{[^{}/]{1,64}\}")


class _Positions:
    """Lines of strings found in document order, by a cursor that only moves forward."""

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._lines = Lines(body)
        self._at = 0

    def line(self, value: str) -> int:
        at = self._body.find(orjson.dumps(value), self._at)
        if at < 0:
            return 0
        self._at = at + 1
        return self._lines.line(at)


def _entries(container: object) -> Iterator[tuple[str | None, object]]:
    if isinstance(container, dict):
        return iter(container.items())
    return ((None, value) for value in container)  # type: ignore[attr-defined]


def _walk(data: object, collector: Collector, positions: _Positions) -> None:
    """Keys and values in document order (a stack of iterators, not recursion)."""
    if not isinstance(data, dict | list):
        _value(data, collector, positions)
        return
    stack = [_entries(data)]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        key, value = entry
        if key is not None:
            path = collapse(_TEMPLATE.sub(EXPR, key)) if key.startswith("/") else ""
            if path and api_like(path):
                collector.add(path, "json", positions.line(key))
            elif _PARAM.match(key):
                collector.params.add(key)
        if isinstance(value, dict | list):
            if (
                isinstance(value, dict)
                and value.get("in") in _OPENAPI_IN
                and isinstance(value.get("name"), str)
            ):
                collector.params.add(value["name"])  # an OpenAPI/Swagger parameter object
            stack.append(_entries(value))
        else:
            _value(value, collector, positions)


def _value(value: object, collector: Collector, positions: _Positions) -> None:
    if isinstance(value, str) and api_like(value):
        collector.add(value, "json", positions.line(value))


def read(body: bytes, url: str, *, source: str | None = None) -> FileFindings | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    collector = Collector(url, source)
    _walk(data, collector, _Positions(body))
    return collector.findings("json")


def read_import_map(body: bytes, url: str, *, source: str | None = None) -> FileFindings | None:
    """An import map's addresses: URLs relative to the page by the spec, so no policy applies."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    collector = Collector(url, source)
    positions = _Positions(body)
    maps = [data.get("imports")] + list((data.get("scopes") or {}).values()) if isinstance(data, dict) else []
    for mapping in maps:
        if isinstance(mapping, dict):
            for address in mapping.values():
                if isinstance(address, str):
                    collector.add(address, "importmap", positions.line(address))
    return collector.findings("json")

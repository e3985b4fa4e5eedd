"""Turning a raw value found in a file into the URL an endpoint records.

One place decides what is dropped (``data:``, ``javascript:``, ``mailto:``, ``blob:``,
``tel:``, ``about:`` and every other non-web scheme, bare ``#fragments``) and how a
value is resolved (absolute, root-relative and relative against the file's URL), so
that every reader agrees: the corpus test compares URLs across readers.

``EXPR`` is jsluice's placeholder for the unknown part of a concatenation or a
template literal. A value that *starts* with it (``base + "/users"``) has no known
base and is kept as it is; anywhere else it is an ordinary path character.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from urllib.parse import unquote, urljoin, urlsplit

EXPR = "EXPR"
#: Schemes an endpoint may have; any other scheme (``data:``, ``webpack:``, ``chrome-extension:``) is dropped.
WEB_SCHEMES = frozenset({"http", "https", "ws", "wss"})
#: Longer values are not URLs a client builds (inline data, minified blobs).
MAX_URL = 2048
_ABSOLUTE_PREFIXES = ("http://", "https://", "ws://", "wss://")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_EXPRS = re.compile(r"(?:EXPR){2,}")


def collapse(value: str) -> str:
    """``EXPREXPR`` (two unknown parts side by side) is one unknown part."""
    return _EXPRS.sub(EXPR, value)


@lru_cache(maxsize=1 << 16)  # the same paths recur across a site's files and captures
def resolve(raw: str, base: str) -> str | None:
    """The absolute URL ``raw`` names from a file at ``base``; ``None`` when it is dropped."""
    value = raw.strip()
    if not value or value.startswith("#") or len(value) > MAX_URL:
        return None
    scheme = _SCHEME.match(value)
    if scheme and scheme.group(1).lower() not in WEB_SCHEMES:
        return None
    value = value.split("#", 1)[0]
    if value.startswith(EXPR):
        return value or None
    # Fast paths (urljoin costs ~50 us; a dense file has thousands of values): an absolute
    # web URL is itself, a root-relative path is the base's origin + path, unless a dot
    # segment needs urljoin's normalising.
    if "/." not in value:
        if value.startswith(_ABSOLUTE_PREFIXES):
            return value
        if value.startswith("/") and not value.startswith("//"):
            origin = _origin(base)
            if origin:
                return origin + value
    try:
        absolute = urljoin(base, value) if base else value
    except ValueError:  # an invalid IPv6 literal in the value or the base
        return None
    return absolute or None


@lru_cache(maxsize=1 << 16)
def query_names(url: str) -> tuple[str, ...]:
    """The parameter names of ``url``'s query string, sorted; unknown (``EXPR``) names left out."""
    if "?" not in url:
        return ()
    return form_names(url.split("?", 1)[1].split("#", 1)[0])


@lru_cache(maxsize=1 << 12)
def _origin(base: str) -> str | None:
    """``scheme://host:port`` of a web base URL; ``None`` for anything else."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme.lower() in WEB_SCHEMES and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


def form_names(encoded: str) -> tuple[str, ...]:
    """Names in an ``a=1&b=2`` string (a query, or a form-encoded body)."""
    names = set()
    for part in encoded.split("&"):
        name = unquote(part.split("=", 1)[0]).strip()
        if name and name != EXPR and len(name) <= 128:
            names.add(name)
    return tuple(sorted(names))


class Lines:
    """Line numbers of offsets in one text, by bisection (a count per match would be quadratic)."""

    def __init__(self, text: str | bytes, first: int = 1) -> None:
        newline = "\n" if isinstance(text, str) else b"\n"
        self._starts: list[int] = []
        at = text.find(newline)  # type: ignore[arg-type]
        while at != -1:
            self._starts.append(at)
            at = text.find(newline, at + 1)  # type: ignore[arg-type]
        self._first = first

    def line(self, offset: int) -> int:
        return bisect_right(self._starts, offset - 1) + self._first

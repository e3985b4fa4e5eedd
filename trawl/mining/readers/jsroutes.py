"""Route strings, path placeholders and ``new URL(path, base)`` in JavaScript.

- A route string, ``"GET /repos/{owner}/{repo}"`` (Octokit's table, many SDKs' and
  routers' tables): the path is an endpoint (``route``) with the method the string names.
- Placeholders: ``{owner}`` and ``:owner`` path segments are unknown parts (``EXPR``) and
  their names are parameters; RFC 6570's ``{?name,label}`` names query parameters and
  a leading ``{origin}`` is an unknown base.
- ``new URL(path, base)`` resolves ``path`` against ``base`` when the file says what the
  base is (an absolute URL); with an unknown base (a client's configured URL, a
  parameter) it is ``EXPR/path``: resolving ``rest/v1`` against the bundle's own folder
  names a URL no client asks (measured on supabase-js: every API base was wrong).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from trawl.mining.resolve import EXPR, collapse

#: Methods a route string may name (upper case, as route tables write them).
ROUTE = re.compile(r"^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) +((?:/|\{[A-Za-z_]\w*\}/)[^\s\"'<>\\`]*)$")
_QUERY_TEMPLATE = re.compile(r"\{\?([\w,]{1,256})\}")
_BRACES = re.compile(r"\{([A-Za-z_$][\w$.-]{0,63})\}")
_COLON = re.compile(r"(?<=/):([A-Za-z_]\w{0,63})(?=[/?#]|$)")
_ABSOLUTE = ("http://", "https://", "ws://", "wss://")


def placeholders(path: str) -> tuple[str, set[str], set[str]]:
    """``path`` with ``{x}``/``:x`` segments as ``EXPR``; the path parameter names; the query names
    of a ``{?a,b}`` template. ``/repos/{owner}/{repo}`` is (``/repos/EXPR/EXPR``, {owner, repo}, {})."""
    if "{" not in path and "/:" not in path:
        return path, set(), set()
    names: set[str] = set()
    query: set[str] = set()

    def take_query(match: re.Match[str]) -> str:
        query.update(n for n in match.group(1).split(",") if n)
        return ""

    def take(match: re.Match[str]) -> str:
        names.add(match.group(1))
        return EXPR

    path = _QUERY_TEMPLATE.sub(take_query, path)
    path = _COLON.sub(take, _BRACES.sub(take, path))
    return collapse(path), names, query


def route(value: str) -> tuple[str, str, set[str], set[str]] | None:
    """(method, path, path parameter names, query names) of a route string; ``None`` for anything else."""
    if len(value) > 2048 or " " not in value:
        return None
    match = ROUTE.match(value)
    if match is None:
        return None
    path, names, query = placeholders(match.group(2))
    return match.group(1), path, names, query


def joined(path: str, base: str | None) -> str:
    """What ``new URL(path, base)`` names: resolved when ``base`` is a known absolute URL,
    else ``EXPR/path`` for a relative ``path`` (an unknown base, kept unresolved)."""
    if path.startswith(_ABSOLUTE) or path.startswith(EXPR):
        return path
    if base and base.startswith(_ABSOLUTE) and EXPR not in base.split("//", 1)[1].split("/", 1)[0]:
        try:
            return urljoin(base, path)
        except ValueError:
            pass
    if path.startswith("//"):
        return path
    return collapse(EXPR + "/" + path.removeprefix("./").lstrip("/"))

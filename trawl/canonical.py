"""Canonical form of a URL, so that one resource is one row.

Rules: scheme and host lower-cased, IDN hosts as punycode, default ports removed
(:80 for http, :443 for https), fragment removed, percent-encoding normalized
(unreserved characters decoded, other escapes upper-cased, unsafe characters
escaped), query arguments kept in their order. ``http`` and ``https`` stay
distinct: they are different resources and archives report both.

w3lib does the general case (``safe_url_string`` handles non-ASCII paths, IDNA
and unsafe characters). ``w3lib.url.canonicalize_url`` is not used because it
sorts query arguments and keeps default ports. Measured here, w3lib costs about
9 us a URL; a million captures made that the pipeline's largest cost, so plain
ASCII URLs without escapes, the vast majority of archive records, take a
regex fast path (about 1 us) that yields exactly what the general path yields.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import safe_url_string

# scheme :// host [:port] [rest]; the rest holds only characters that need no
# escaping and no normalization (no '%', no spaces, no non-ASCII).
_FAST = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)\.?"
    r"(?::(?P<port>[0-9]{1,5}))?"
    r"(?P<rest>[/?][A-Za-z0-9\-._~!$&'()*+,;=:@/?]*)?"
    r"(?:#.*)?",
    re.DOTALL,
)
_OTHER_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?![0-9]{1,5}(?:[/?#]|$))")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_WEB_SCHEMES = frozenset(("http", "https"))


def _normalize_escape(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    if code in _UNRESERVED:
        return chr(code)
    return "%" + match.group(1).upper()


def canonicalize(url: str) -> str | None:
    """Return the canonical form of ``url``, or ``None`` if it is not a web URL."""
    result = canonicalize_with_host(url)
    return None if result is None else result[0]


def canonicalize_with_host(url: str) -> tuple[str, str] | None:
    """``(canonical URL, host)``, or ``None``: the host comes free with the parse.

    A URL without a scheme (some sources report bare ``host/path``) is read as
    ``http://``, the way the archives that report them replay them.
    """
    url = url.strip()
    if not url:
        return None
    if "://" not in url[:12]:
        if _OTHER_SCHEME.match(url):
            return None  # mailto:, javascript:, data: ...
        url = "http://" + url.lstrip("/")
    fast = _FAST.fullmatch(url)
    if fast is not None:
        scheme, host, port, rest = fast.groups()
        scheme = scheme.lower()
        if scheme not in _WEB_SCHEMES:
            return None
        host = host.lower()
        if not rest:
            rest = "/"
        elif rest[0] == "?":
            rest = "/" + rest
        if rest[-1] == "?" and rest.count("?") == 1:
            rest = rest[:-1]  # an empty query is no query (as urlunsplit has it)
        if port is None:
            return f"{scheme}://{host}{rest}", host
        number = int(port)
        if not 0 < number < 65536:
            return None
        if str(number) == _DEFAULT_PORTS[scheme]:
            return f"{scheme}://{host}{rest}", host
        return f"{scheme}://{host}:{number}{rest}", host
    slow = _canonicalize_slow(url)
    return None if slow is None else (slow, host_of(slow))


def _canonicalize_slow(url: str) -> str | None:
    """General path: non-ASCII, escapes, odd characters, userinfo, IPv6."""
    try:
        safe = safe_url_string(url)
        parts = urlsplit(safe)
        scheme = parts.scheme.lower()
        if scheme not in _WEB_SCHEMES:
            return None
        host = parts.hostname  # lower-cased by urlsplit
        if not host:
            return None
        host = host.rstrip(".")
        port = parts.port
    except ValueError:  # bad port, bad IPv6 literal, IDNA failure
        return None
    if ":" in host:
        host = f"[{host}]"
    netloc = host
    if port is not None and str(port) != _DEFAULT_PORTS[scheme]:
        if port == 0:
            return None
        netloc = f"{host}:{port}"
    path = _ESCAPE.sub(_normalize_escape, parts.path) or "/"
    query = _ESCAPE.sub(_normalize_escape, parts.query)
    return urlunsplit((scheme, netloc, path, query, ""))


def host_of(canonical_url: str) -> str:
    """Host of a URL produced by :func:`canonicalize` (no port, no brackets)."""
    start = canonical_url.index("://") + 3
    end = canonical_url.find("/", start)
    netloc = canonical_url[start:] if end < 0 else canonical_url[start:end]
    if netloc.startswith("["):
        return netloc[1 : netloc.index("]")]
    colon = netloc.rfind(":")
    return netloc if colon < 0 else netloc[:colon]


def canonicalize_many(urls: list[str]) -> tuple[list[str | None], list[str | None]]:
    """Canonical URL and host of each of ``urls`` (``None`` for invalid ones)."""
    results = [canonicalize_with_host(u) if u else None for u in urls]
    return [r[0] if r else None for r in results], [r[1] if r else None for r in results]

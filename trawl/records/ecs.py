"""ECS ``url.*`` fields of a canonical URL, the same for every backend.

The Elasticsearch store indexes these fields and the search command's SQLite
backend computes them on the fly with the same function, so ``ext:js`` or
``port:8080`` mean exactly the same thing on both.

Field rules (Elastic Common Schema 8.x, ``url`` field set):

* ``full`` and ``original``: the canonical URL (trawl keeps only that form).
* ``scheme``: ``http`` / ``https``, without ``:``.
* ``domain``: the host; ``registered_domain``, ``subdomain``,
  ``top_level_domain``: split with the public-suffix list bundled with
  tldextract (never fetched); absent for IP addresses and unknown suffixes.
* ``port``: the port in use, explicit or the scheme's default (443 for https).
* ``path``: the path (``/`` at least).
* ``query``: what follows ``?``, without it; absent when the URL has no ``?``.
* ``extension``: of the last path segment, without the dot, lower-cased, only
  the last one (``a.tar.gz`` -> ``gz``); absent when the segment has none, when
  it is a dot-file (``.htaccess``), or when what follows the dot is not 1-10
  letters, digits, ``_`` or ``-``. A ``;param`` path suffix is ignored.

``params`` (not ECS: trawl's own) lists the query's parameter names, decoded,
each once, in order of appearance.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import parse_qsl

from trawl.records.canonical import host_of
from trawl.sources.target import _extractor

_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "ws": 80, "wss": 443}
_EXTENSION = re.compile(r"[A-Za-z0-9_-]{1,10}")

#: Names of the parts :func:`url_part` can return.
PARTS = (
    "scheme",
    "domain",
    "registered_domain",
    "subdomain",
    "top_level_domain",
    "port",
    "path",
    "query",
    "extension",
)


@lru_cache(maxsize=65536)
def domain_parts(host: str) -> tuple[str, str, str]:
    """``(registered_domain, subdomain, top_level_domain)``; empty strings where unknown."""
    if not host or host[0] == "[" or ":" in host or host.replace(".", "").isdigit():
        return "", "", ""
    parts = _extractor()(host)
    registered = parts.top_domain_under_public_suffix
    if not registered:
        return "", "", parts.suffix
    return registered, parts.subdomain, parts.suffix


def split_url(url: str) -> tuple[str, str, int | None, str, str | None]:
    """``(scheme, host, port, path, query)`` of a canonical URL (no fragment)."""
    scheme_end = url.find("://")
    scheme = url[:scheme_end].lower() if scheme_end > 0 else ""
    start = scheme_end + 3 if scheme_end > 0 else 0
    slash = url.find("/", start)
    question = url.find("?", start)
    end = min(i for i in (slash, question, len(url)) if i >= 0)
    netloc = url[start:end]
    rest = url[end:]
    port: int | None = None
    bracket = netloc.rfind("]")
    colon = netloc.rfind(":")
    if colon > bracket and netloc[colon + 1 :].isdigit():
        port = int(netloc[colon + 1 :])
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    if "?" in rest:
        path, query = rest.split("?", 1)
    else:
        path, query = rest, None
    return scheme, host_of(url) if scheme_end > 0 else netloc, port, path or "/", query


def extension_of(path: str) -> str | None:
    segment = path.rsplit("/", 1)[-1].split(";", 1)[0]
    dot = segment.rfind(".")
    if dot <= 0:
        return None
    ext = segment[dot + 1 :]
    if not _EXTENSION.fullmatch(ext):
        return None
    return ext.lower()


def param_names(query: str | None) -> list[str]:
    if not query:
        return []
    names: dict[str, None] = {}
    for name, _ in parse_qsl(query, keep_blank_values=True):
        if name:
            names.setdefault(name, None)
    return list(names)


def url_fields(url: str, host: str | None = None) -> dict[str, object]:
    """The ECS ``url`` object for a canonical URL (absent parts left out)."""
    scheme, parsed_host, port, path, query = split_url(url)
    host = host or parsed_host
    fields: dict[str, object] = {"full": url, "original": url, "scheme": scheme, "domain": host, "path": path}
    registered, subdomain, tld = domain_parts(host)
    if registered:
        fields["registered_domain"] = registered
    if subdomain:
        fields["subdomain"] = subdomain
    if tld:
        fields["top_level_domain"] = tld
    if port is not None:
        fields["port"] = port
    if query is not None:
        fields["query"] = query
    extension = extension_of(path)
    if extension:
        fields["extension"] = extension
    return fields


def url_part(url: str, part: str) -> str | int | None:
    """One part of :func:`url_fields` (``None`` where absent), or ``params`` comma-joined.

    For SQL functions: computes only what the part needs.
    """
    scheme, host, port, path, query = split_url(url)
    if part == "extension":
        return extension_of(path)
    if part == "path":
        return path
    if part == "query":
        return query
    if part == "port":
        return port
    if part == "scheme":
        return scheme
    if part == "domain":
        return host
    if part == "params":
        return ",".join(param_names(query))
    registered, subdomain, tld = domain_parts(host)
    value = {"registered_domain": registered, "subdomain": subdomain, "top_level_domain": tld}.get(part)
    return value or None

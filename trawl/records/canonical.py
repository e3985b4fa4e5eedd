"""Canonical form of a URL, so that one resource is one row.

The canonical form is the WHATWG URL Standard's ``href``, as ada (the WHATWG
parser in C++, PyPI ``ada-url``) computes it, with trawl's deviations (see
docs/canonical.md for the why of each):

* only ``http`` and ``https`` are web URLs; they stay distinct (archives report
  both and they are different resources);
* fragment and userinfo dropped; an empty query (``/a?``) dropped like none;
* trailing dots of the host dropped (``example.com.`` is ``example.com``);
  hosts ``.`` and ``..`` are then empty, so invalid, and so is ``foo.09..``
  (``foo.09`` would be an invalid IPv4 address);
* escapes of unreserved characters decoded, other escapes upper-cased, in path
  and query (``%7e`` is ``~``, ``%2f`` is ``%2F``); query order kept;
* a URL without a scheme (``example.com/x``, ``//example.com/x``) is read as
  ``http://``, the way the archives that report bare host/path replay them;
* ``xn--`` labels that are not valid IDNA are rejected: ada 4.0 passes ASCII
  labels through unchecked (WPT ``http://a.b.c.xn--pokxncvks``,
  ``https://xn--/``; 743 of WPT's 2,622 IdnaTestV2 cases), so they go through
  ada's ToUnicode, which leaves an undecodable label as it was.

How, and why so. Hand-written parsing (w3lib's ``safe_url_string`` and a
regex) could not follow the standard (dot segments, IPv4 spellings, UTS46,
forbidden host code points), so every URL goes through ada, except those a
regex shows need no parser at all (:data:`_FAST`; a test proves it agrees
with ada byte for byte). ada is called through its cffi ``lib``: parsing
alone, over 200,000 distinct archive-like URLs, ``ada_url.normalize_url``
took 4.6 us a URL and ``URL(u).href`` 5.1 us (a dict, getattr and an
``ffi.gc`` finaliser per call), ``ada_parse``/``ada_get_href``/``ada_free``
1.4 us.

Measured with bench/bench_canonical.py (200,000 distinct URLs, CPU time, best
of 3 on this shared 2-core machine, load average about 5, so absolute figures
are high), :func:`canonicalize_many` against the w3lib code it replaces:
10% messy URLs 4.8 us a URL against 5.8 us; plain ones 4.1 against 4.4;
all messy 8.4 against 18.5. In CPU instructions, which load does not skew
(valgrind): 17,100 against 21,300, 15,300 against 14,800, 33,700 against
78,400. The fast path saves 16% on plain URLs (18,100 instructions without it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ada_url import idna_to_unicode
from ada_url._ada_wrapper import ffi, lib

if TYPE_CHECKING:
    import polars as pl

#: What WHATWG strips from both ends of an input, and removes anywhere in it.
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_NO_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")
#: A scheme, unless the "scheme" is a host followed by a port (``localhost:8080/``).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?![0-9]{1,5}(?:[/\\?#]|$))")
_WEB_SCHEMES = frozenset(("http", "https"))
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
#: A prefix of the URLs whose canonical form needs no parser: lower-case scheme
#: and host, a port without leading zero below 10000, a path and a query of
#: characters WHATWG never escapes or rewrites (no '%', no '\\'); any fragment.
#: Used with ``match`` and an end check, not ``fullmatch``: the parts cannot
#: overlap, so greedy is the only parse, and a miss costs no backtracking
#: (``fullmatch`` with dot-segment look-aheads cost 16,000 CPU instructions
#: a miss). :func:`_fast_form` checks the rest. A test proves the fast path
#: agrees byte for byte with ada on all WPT data, the table and fuzzed URLs.
_FAST = re.compile(
    r"(https?)://([a-z0-9.-]+)(?::([1-9][0-9]{0,3}))?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)?"
    r"(\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]*)?(?:#.*)?",
    re.DOTALL,
).match
_DEFAULT_PORTS = {"http": "80", "https": "443"}
#: WHATWG's "ends in a number": such a host must be IPv4, so "foo.09" is invalid.
_ENDS_IN_NUMBER = re.compile(r"(?:^|\.)(?:[0-9]+|0x[0-9a-f]*)$")
_SURROGATE = re.compile("[\ud800-\udfff]")

_parse, _get_href, _free, _unpack = (
    lib.ada_parse,
    lib.ada_get_href,
    lib.ada_free,
    ffi.unpack,
)


def _escape_table() -> dict[str, str]:
    """Every ``%XX`` spelling, in either case, to its canonical form."""
    table = {}
    for code in range(256):
        char, (high, low) = chr(code), f"{code:02X}"
        canonical = char if char in _UNRESERVED else f"%{high}{low}"
        for h in {high, high.lower()}:
            for lo in {low, low.lower()}:
                table[f"%{h}{lo}"] = canonical
    return table


_ESCAPES = _escape_table()


def _normalize_escape(match: re.Match[str]) -> str:
    return _ESCAPES[match.group()]


def canonicalize(url: str) -> str | None:
    """Return the canonical form of ``url``, or ``None`` if it is not a web URL."""
    result = canonicalize_with_host(url)
    return None if result is None else result[0]


def canonicalize_with_host(url: str) -> tuple[str, str] | None:
    """``(canonical URL, host)``, or ``None``: the host comes free with the parse."""
    plain = _FAST(url)
    if plain is not None and plain.end() == len(url):
        result = _fast_form(plain)
        if result is not None:
            return result
    return _canonicalize_by_ada(url)


def _canonicalize_by_ada(url: str) -> tuple[str, str] | None:
    """:func:`canonicalize_with_host` without the fast path: ada, then trawl's edits."""
    if not url.startswith(("http://", "https://")):
        url = _with_scheme(url)
        if url is None:
            return None
    href = _ada_href(url)
    return None if href is None else _trawl_form(href)


def _fast_form(plain: re.Match[str]) -> tuple[str, str] | None:
    """The canonical form of a whole-URL :data:`_FAST` match; ``None``: ask ada.

    ada is asked for what the regex cannot see: empty labels and trailing dots,
    a last label not starting with a letter (WHATWG would read the host as
    IPv4), ``xn--`` labels, and dot segments (any ``/.``: ``/.well-known`` too).
    """
    scheme, host, port, path, query = plain.groups()
    if "xn--" in host or ".." in host or host[0] == "." or host[-1] == ".":
        return None
    if not "a" <= host[host.rfind(".") + 1] <= "z":
        return None
    if path is None:
        path = "/"
    elif "/." in path:
        return None
    if query is None or query == "?":
        query = ""
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{host}:{port}{path}{query}", host
    return f"{scheme}://{host}{path}{query}", host


def canonicalize_many(urls: list[str]) -> tuple[list[str | None], list[str | None]]:
    """Canonical URL and host of each of ``urls`` (``None``, ``None`` if invalid).

    Archives repeat a URL once per capture, so each distinct string is
    canonicalized once and the rows are mapped through that table (C-level
    loops, no Python frame per row).
    """
    if not urls:
        return [], []
    table = {url: canonicalize_with_host(url) or _INVALID for url in set(urls)}
    canonical, hosts = zip(*map(table.__getitem__, urls), strict=True)
    return list(canonical), list(hosts)


_INVALID: tuple[None, None] = (None, None)


#: URLs that are already in canonical form, as a Rust regex (no look-around):
#: lower-case http(s) scheme and ASCII host whose last label starts with a
#: letter (so never an IPv4 spelling, WHATWG's "ends in a number"), an optional
#: port of 1-4 digits, a path and query of characters neither WHATWG nor trawl
#: rewrite (no '%', no "'" in the query, which special URLs escape), and no
#: fragment. :data:`_FAST_COLUMN_EXCLUDED` takes out dot segments and ``xn--`` labels.
#: ``tests/test_canonical.py`` proves the fast path gives what ada gives.
_FAST_COLUMN = (
    r"^https?://(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?(?::[1-9][0-9]{0,3})?"
    r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]+)?$"
)
_FAST_COLUMN_EXCLUDED = r"/\.\.?(?:/|\?|$)|^https?://[^/]*xn--"
#: Default ports, the one change the fast path makes.
_DEFAULT_PORT = r"^(http://[^/:]+):80/|^(https://[^/:]+):443/"


def fast_path(series: pl.Series) -> pl.Series:
    """Which of ``series`` are canonical already, but for a default port (see :data:`_FAST_COLUMN`).

    A URL :data:`_FAST_COLUMN_EXCLUDED` matches holds ``/.`` or ``xn--``: one
    Aho-Corasick pass for those literals spares the regex on every other URL
    (the unanchored regex cost more than the anchored one, 67 against 46 ms a
    500,000 archive URLs).
    """
    quick = series.str.contains(_FAST_COLUMN)
    suspects = series.str.contains_any(["/.", "xn--"])
    if suspects.any():
        quick = quick & ~(suspects & series.str.contains(_FAST_COLUMN_EXCLUDED))
    return quick


#: Distinct share of a batch's URLs above which each row is canonicalized on its own.
_MOSTLY_DISTINCT = 0.5


def canonicalize_series(series: pl.Series) -> pl.DataFrame:
    """Columns ``url`` and ``host`` (Utf8, null where invalid) for a Utf8 series.

    URLs in canonical form already (nearly all archive records) are recognised
    by one regex in polars and only lose a default port; the rest go through
    ada one by one (:func:`canonicalize_many`). Archives repeat a URL once per
    capture: when most rows repeat another, only the distinct
    values are canonicalized and a left join puts the rows back in order;
    when most are distinct, the join costs more than it saves, and each row
    is read on its own (500,000 captures, 374,141 distinct: 0.34 -> 0.23 s of
    CPU; repeated ten times over, 0.06 s either way by the join). Both give
    the same columns. A null input gives null outputs.
    """
    import polars as pl  # only batch users pay polars' import time

    text = series.cast(pl.Utf8)
    uniques = text.drop_nulls().unique()
    if len(uniques) > _MOSTLY_DISTINCT * len(text):
        url, host = _forms(text)
        return pl.DataFrame({"url": url, "host": host})
    url, host = _forms(uniques)
    table = pl.DataFrame({"key": uniques, "url": url, "host": host})
    return text.to_frame("key").join(table, on="key", how="left", maintain_order="left").select("url", "host")


def _forms(text: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Canonical URL and host of each row of a Utf8 series (null where invalid or null)."""
    import polars as pl

    quick = fast_path(text).fill_null(False)
    url = text
    ported = quick & text.str.contains_any([":80/", ":443/"])  # what _DEFAULT_PORT can match
    if ported.any():
        rows = ported.arg_true()
        url = text.clone().scatter(rows, text.gather(rows).str.replace(_DEFAULT_PORT, "$1$2/"))
    host = url.str.extract(r"^https?://([^/:]+)", 1)
    slow = ~quick & text.is_not_null()
    if slow.any():
        rows = slow.arg_true()
        canonical, hosts = canonicalize_many(text.gather(rows).to_list())
        url = url.clone().scatter(rows, pl.Series(canonical, dtype=pl.Utf8))
        host = host.scatter(rows, pl.Series(hosts, dtype=pl.Utf8))
    return url, host


def host_of(canonical_url: str) -> str:
    """Host of a URL produced by :func:`canonicalize` (no port, no brackets)."""
    start = canonical_url.index("://") + 3
    end = canonical_url.find("/", start)
    netloc = canonical_url[start:] if end < 0 else canonical_url[start:end]
    if netloc.startswith("["):
        return netloc[1 : netloc.index("]")]
    colon = netloc.rfind(":")
    return netloc if colon < 0 else netloc[:colon]


def _with_scheme(url: str) -> str | None:
    """``url`` as ada should parse it: ``http://`` added if it has no scheme.

    ``None`` for another scheme (``mailto:``, ``javascript:``, ``ftp:``...). The
    scheme is looked for the way WHATWG does: after stripping C0 controls and
    spaces from the ends and removing tabs and newlines.
    """
    clean = url.strip(_C0_OR_SPACE).translate(_NO_TAB_OR_NEWLINE)
    scheme = _SCHEME.match(clean)
    if scheme is not None:
        return url if scheme.group(1).lower() in _WEB_SCHEMES else None
    if clean.lower().startswith(("http:", "https:")):
        return url  # "http:80" has a scheme: the port look-ahead must not hide it
    return "http://" + clean if clean else None


def _ada_href(url: str) -> str | None:
    """WHATWG ``href`` of ``url`` parsed with no base, or ``None`` if invalid."""
    try:
        data = url.encode()
    except UnicodeEncodeError:  # lone surrogates: WHATWG's USVString makes them U+FFFD
        data = _SURROGATE.sub("\ufffd", url).encode()
    parsed = _parse(data, len(data))
    try:
        href = _get_href(parsed)  # empty if invalid: no ada_is_valid call needed
        # A special URL's href is ASCII: hosts are punycode, the rest percent-encoded.
        return _unpack(href.data, href.length).decode("latin-1") if href.length else None
    finally:
        _free(parsed)


def _trawl_form(href: str) -> tuple[str, str] | None:
    """Apply trawl's deviations to a WHATWG href; ``None`` if not a web URL.

    Most hrefs need none (no fragment, userinfo, escape, trailing host dot,
    empty query or ``xn--`` label to check): membership tests, cheaper than
    any call, say so and the host is sliced out (4,700 CPU instructions a URL
    against 8,700 for :func:`_trawl_form_edit`, 4,400 for one regex match).
    ``href[4]`` tells http from https because :func:`_with_scheme` lets only
    those schemes reach ada.
    """
    if "#" in href or "@" in href or "%" in href or "xn--" in href or href[-1] == "?":
        return _trawl_form_edit(href)
    start = 7 if href[4] == ":" else 8
    host = href[start : href.index("/", start)]
    if ":" in host:  # a port, or IPv6
        if host[0] == "[":
            return _trawl_form_edit(href)
        host = host[: host.index(":")]
    if host[-1] == ".":
        return _trawl_form_edit(href)
    return href, host


def _trawl_form_edit(href: str) -> tuple[str, str] | None:
    """:func:`_trawl_form` for any href, by plain string operations.

    The href is WHATWG-serialized, so '#', '@' and '?' can only be delimiters
    (they are escaped elsewhere) and a special URL's path starts with '/'.
    """
    if href.startswith("http://"):
        start = 7
    elif href.startswith("https://"):
        start = 8
    else:
        return None
    slash = href.find("/", start)
    authority, rest = href[start:slash], href[slash:]
    if "#" in rest:
        rest = rest[: rest.index("#")]
    if "@" in authority:
        authority = authority[authority.rindex("@") + 1 :]
    if authority[0] == "[":
        host = authority[1 : authority.index("]")]
    else:
        host = authority.partition(":")[0]
        if host[-1] == ".":
            host = host.rstrip(".")
            if not host or _ENDS_IN_NUMBER.search(host):
                return None  # "." and "..", or "foo.09..", valid only with its dots
            authority = host + authority[authority.index(":") :] if ":" in authority else host
        if "xn--" in host and not _valid_punycode(host):
            return None
    if rest[-1] == "?" and rest.index("?") == len(rest) - 1:
        rest = rest[:-1]
    if "%" in rest:
        rest = _ESCAPE.sub(_normalize_escape, rest)
    return href[:start] + authority + rest, host


def _valid_punycode(host: str) -> bool:
    """Whether every ``xn--`` label of ``host`` decodes to valid IDNA.

    ada's ToUnicode returns a label it cannot decode, or whose decoding UTS46
    disallows, unchanged; a decoded label never starts with ``xn--`` (UTS46
    forbids it), so a label still starting so is invalid.
    """
    return not any(label.startswith("xn--") for label in idna_to_unicode(host).split("."))

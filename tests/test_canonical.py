"""Canonical URL form: one resource, one row (docs/canonical.md).

Two sources of cases: trawl's own table (runs everywhere) and the WPT URL data
(``urltestdata.json``, ``IdnaTestV2.json``) in the repo root's sibling
``shared/wpt-url/``, skipped on a clone without it.

Which WPT cases apply. trawl parses absolute URLs with no base, so:

* a success case applies if its ``href`` is http(s). trawl is given the input
  itself when the base is null, else the absolute URL ada resolves the input
  to (a source reports absolute URLs; resolving references is not trawl's job).
  The expected key is the ``href`` less fragment and userinfo, with trawl's
  host-dot, empty-query and escape policies (:func:`trawl_form_of`).
* a failure case applies if its input has an http(s) scheme and the base cannot
  change the outcome: the base is null, or of another scheme, or the input has
  an authority (two slashes or backslashes after the scheme). trawl must give
  ``None``. Failure cases without a scheme (``a``, ``a/``) fail in WPT
  only for want of a base: trawl deliberately reads them as ``http://``.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from ada_url import URL

from tests.servers.ia_cdx import generate_dataset
from trawl.records import canonical
from trawl.records.canonical import (
    canonicalize,
    canonicalize_many,
    canonicalize_series,
    canonicalize_with_host,
    fast_path,
    host_of,
)

WPT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "wpt-url"

CASES = [
    # Scheme and host case, default ports (http and https each its own).
    ("HTTP://WWW.Example.COM/a", "http://www.example.com/a"),
    ("HTTPS://EXAMPLE.COM:443", "https://example.com/"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com:0/", "http://example.com:0/"),  # WHATWG: port 0 is a port
    ("http://[::1]:80/", "http://[::1]/"),
    # Fragment and userinfo dropped.
    ("http://example.com/a#section", "http://example.com/a"),
    ("http://example.com/a?b#", "http://example.com/a?b"),
    ("http://user:pass@example.com/a", "http://example.com/a"),
    ("https://user@example.com:8443/", "https://example.com:8443/"),
    # Path and query: order kept, empty query dropped, escapes normalized.
    ("http://example.com", "http://example.com/"),
    ("http://example.com?x=1", "http://example.com/?x=1"),
    ("http://example.com/a?b=2&a=1", "http://example.com/a?b=2&a=1"),
    ("http://example.com/x?", "http://example.com/x"),
    ("http://example.com/x?#f", "http://example.com/x"),
    ("http://example.com/a%7eb", "http://example.com/a~b"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/?q=%41%3d", "http://example.com/?q=A%3D"),
    ("http://example.com/?q='&x=~", "http://example.com/?q=%27&x=~"),  # WHATWG escapes ' in a query
    ("http://example.com/?q='&x=%7e", "http://example.com/?q=%27&x=~"),
    ("http://example.com/?q=%27&x=%7E", "http://example.com/?q=%27&x=~"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/%zz", "http://example.com/%zz"),  # not an escape: left alone
    ("http://example.com/ä?ü", "http://example.com/%C3%A4?%C3%BC"),
    ("http://example.com/a\x01b", "http://example.com/a%01b"),
    # Dot segments: six spellings of /foo/.
    ("http://example.com/foo/", "http://example.com/foo/"),
    ("http://example.com/foo/bar/../", "http://example.com/foo/"),
    ("http://example.com/foo/bar/..", "http://example.com/foo/"),
    ("http://example.com/foo/./", "http://example.com/foo/"),
    ("http://example.com/./foo/bar/%2e%2E/", "http://example.com/foo/"),
    ("http://example.com/x/../foo/%2e/", "http://example.com/foo/"),
    ("http://example.com\\foo\\bar\\.%2e\\", "http://example.com/foo/"),
    # Hosts: IDNA (UTS46 non-transitional), IPv4 spellings, IPv6, escapes, dots.
    ("http://bücher.example.com/ä", "http://xn--bcher-kva.example.com/%C3%A4"),
    ("http://faß.example/", "http://xn--fa-hia.example/"),
    ("http://FASS.example/", "http://fass.example/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://4294967295/", "http://255.255.255.255/"),
    ("http://0xffffffff/", "http://255.255.255.255/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://[0:0::1]/", "http://[::1]/"),
    ("http://[2001:DB8:0:0:0:0:0:1]/", "http://[2001:db8::1]/"),
    ("http://ex%61mple.com/", "http://example.com/"),
    ("http://exa\nmple.com/", "http://example.com/"),  # WHATWG removes tabs and newlines
    ("http://example.com./a", "http://example.com/a"),
    ("http://example.com../a", "http://example.com/a"),
    ("http:/example.com/", "http://example.com/"),
    ("http:\\\\example.com/", "http://example.com/"),
    # No scheme: read as http://.
    ("example.com/path", "http://example.com/path"),
    ("//example.com/x", "http://example.com/x"),
    ("example.com:8080/x", "http://example.com:8080/x"),
    ("localhost:8080", "http://localhost:8080/"),
    ("a", "http://a/"),
    ("  http://example.com/a  ", "http://example.com/a"),
    ("\x00\x1f http://example.com/a\x7f", "http://example.com/a%7F"),
]

REJECTED = [
    "",
    "   ",
    "#",
    "?",
    # Other schemes.
    "ftp://example.com/",
    "mailto:a@example.com",
    "javascript:alert(1)",
    "data:text/html,x",
    "file:///etc/passwd",
    "ws://example.com/",
    "sc://example.com/",
    # Hosts WHATWG rejects.
    "http://:80/",
    "http://./",
    "http://../",
    "http://foo.09../",  # trailing dots dropped, "foo.09" would be an invalid IPv4
    "http://exa\x01mple.com/",
    "http://exa mple.com/",
    "http://exa%mple.com/",
    "http://%25/",
    "http://ex%00ample.com/",
    "http://256.256.256.256/",
    "http://1.2.3.4.5/",
    "http://[::1/",
    "http://[google.com]/",
    "http://example.com:65536/",
    "http://example.com:port/",
    "http://a.b.c.xn--pokxncvks/",  # ada accepts; WHATWG says invalid IDNA
    "https://xn--/",  # likewise
    "http://\ud800.com/",  # lone surrogate: U+FFFD, disallowed in a host
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_canonical_form(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected
    assert canonicalize(expected) == expected


@pytest.mark.parametrize("raw", REJECTED)
def test_rejected(raw: str) -> None:
    assert canonicalize(raw) is None
    assert canonicalize_with_host(raw) is None


def test_http_and_https_stay_distinct() -> None:
    assert canonicalize("http://example.com/") != canonicalize("https://example.com/")


def test_host_comes_with_the_url() -> None:
    assert canonicalize_with_host("http://[0:0::1]:8080/x") == ("http://[::1]:8080/x", "::1")
    assert canonicalize_with_host("HTTP://U@Example.COM.:81/") == ("http://example.com:81/", "example.com")
    for raw, expected in CASES:
        assert canonicalize_with_host(raw) == (expected, host_of(expected))


def test_host_of() -> None:
    assert host_of("http://a.example.com:8080/x") == "a.example.com"
    assert host_of("https://example.com/") == "example.com"
    assert host_of("http://[::1]:8080/") == "::1"


def test_batch_entry_points_agree_with_canonicalize() -> None:
    raws = [raw for raw, _ in CASES] + REJECTED
    raws = raws + raws[::-1]  # repeated, as archives repeat a URL per capture
    singles = [canonicalize_with_host(raw) or (None, None) for raw in raws]
    expected_urls, expected_hosts = [s[0] for s in singles], [s[1] for s in singles]
    assert canonicalize_many(raws) == (expected_urls, expected_hosts)
    assert canonicalize_many([]) == ([], [])

    printable = [raw for raw in raws if "\ud800" not in raw]  # polars holds UTF-8 only
    frame = canonicalize_series(pl.Series("u", [*printable, None], dtype=pl.Utf8))
    assert frame.columns == ["url", "host"]
    assert frame.dtypes == [pl.Utf8, pl.Utf8]
    many_urls, many_hosts = canonicalize_many(printable)
    assert frame["url"].to_list() == [*many_urls, None]
    assert frame["host"].to_list() == [*many_hosts, None]


# --- WPT -------------------------------------------------------------------------------

_HREF = re.compile(
    r"(?P<scheme>https?://)(?:[^@/]*@)?(?P<host>\[[^\]]*\]|[^:/]*)(?P<port>:[0-9]+)?"
    r"(?P<path>/[^?#]*)(?P<query>\?[^#]*)?(?:#.*)?",
    re.DOTALL,
)
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]")


def _escape_policy(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if _UNRESERVED.fullmatch(char) else match.group(0).upper()

    return re.sub(r"%([0-9A-Fa-f]{2})", one, text)


def trawl_form_of(href: str) -> str | None:
    """trawl's key for a WHATWG http(s) ``href``, written apart from trawl.records.canonical."""
    parts = _HREF.fullmatch(href)
    assert parts is not None, href
    host = parts["host"]
    if host.endswith("."):
        host = host.rstrip(".")
        last = host.rsplit(".", 1)[-1]
        if not host or last.isdigit() or last.startswith("0x"):
            return None  # ".", "..", or a dropped dot making the host IPv4-like
    query = parts["query"] or ""
    if query == "?":
        query = ""
    path = _escape_policy(parts["path"])
    return f"{parts['scheme']}{host}{parts['port'] or ''}{path}{_escape_policy(query)}"


def _load(name: str) -> list[dict]:
    path = WPT_DIR / name
    if not path.exists():
        pytest.skip(f"no {path}: the WPT URL data is in the repo's sibling shared/ only")
    return [case for case in json.loads(path.read_text(encoding="utf-8")) if isinstance(case, dict)]


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _scheme(text: str) -> tuple[str, str]:
    """(scheme, rest) of a WHATWG input, after its stripping; ``""`` if none."""
    text = text.strip("".join(map(chr, range(0x21)))).translate(str.maketrans("", "", "\t\n\r"))
    match = _SCHEME.match(text)
    return (match.group(1).lower(), text[match.end() :]) if match else ("", text)


def _base_ignored(case: dict) -> bool:
    scheme, rest = _scheme(case["input"])
    if scheme not in ("http", "https"):
        return False
    base = case["base"]
    return base is None or _scheme(base)[0] != scheme or re.match(r"[/\\]{2}", rest) is not None


@pytest.fixture(scope="module")
def urltestdata() -> list[dict]:
    return _load("urltestdata.json")


@pytest.fixture(scope="module")
def success_cases(urltestdata: list[dict]) -> list[tuple[str, str]]:
    """(what trawl is given, the WHATWG href) of each http(s) success case."""
    cases = []
    for case in urltestdata:
        href = case.get("href")
        if href is None or not href.startswith(("http:", "https:")):
            continue
        given = case["input"] if case["base"] is None else URL(case["input"], case["base"]).href
        cases.append((given, href))
    assert len(cases) > 200
    return cases


def test_wpt_success_cases(success_cases: list[tuple[str, str]]) -> None:
    wrong = [
        (given, href, canonicalize(given))
        for given, href in success_cases
        if canonicalize(given) != trawl_form_of(href)
    ]
    assert wrong == [], f"{len(wrong)} of {len(success_cases)} success cases differ"


def test_wpt_failure_cases(urltestdata: list[dict]) -> None:
    failures = [c["input"] for c in urltestdata if c.get("failure") and _base_ignored(c)]
    assert len(failures) > 150
    accepted = [(raw, canonicalize(raw)) for raw in failures if canonicalize(raw) is not None]
    assert accepted == [], f"{len(accepted)} of {len(failures)} failure cases accepted"


def test_wpt_output_is_idempotent_and_one_line(success_cases: list[tuple[str, str]]) -> None:
    outputs = {canonicalize(s) for pair in success_cases for s in pair} - {None}
    for url in outputs:
        assert canonicalize(url) == url
        assert all(0x21 <= ord(char) <= 0x7E for char in url), url  # printable ASCII only


def test_wpt_one_resource_one_key(success_cases: list[tuple[str, str]]) -> None:
    """Every spelling of one resource (inputs and hrefs alike) gives the same key."""
    spellings: dict[str | None, set[str]] = defaultdict(set)
    for given, href in success_cases:
        spellings[trawl_form_of(href)].update((given, href))
    spellings.pop(None, None)
    assert sum(len(group) > 2 for group in spellings.values()) > 10  # real groups, not pairs
    for key, group in spellings.items():
        assert {canonicalize(spelling) for spelling in group} == {key}, group


# ada 4.0's UTS46 data and this WPT file disagree on U+32931 and U+32B9A (in
# the block Unicode 17 gives CJK Extension J): WPT says disallowed (V7), ada
# accepts them. Not worth a table of our own: no archive host uses them.
_IDNA_KNOWN_DIVERGENCES = {
    "\U0003293120.\u97f3.\ua8661.",
    "xn--20-9802c.xn--0w5a.xn--1-eg4e.",
    "xn--9-i0j5967eg3qz.ss",
}


def test_wpt_idna_hosts() -> None:
    """UTS46 through trawl, as WPT's IdnaTestV2.window.js runs it (``https://{input}/x``)."""
    cases = [
        c
        for c in _load("IdnaTestV2.json")
        if c["input"] and not re.search(r"[\t\n\r]", c["input"]) and c["input"] not in _IDNA_KNOWN_DIVERGENCES
    ]
    wrong = []
    for case in cases:
        result = canonicalize_with_host(f"https://{case['input']}/x")
        expected = case["output"] and case["output"].rstrip(".")  # trawl drops trailing dots
        if (result and result[1]) != (expected or None):
            wrong.append((case["input"], case["output"], result))
    assert wrong == [], f"{len(wrong)} of {len(cases)} IDNA cases differ"


# --- the polars fast path gives exactly what ada gives ----------------------------------------

_SURROGATES = re.compile("[\ud800-\udfff]")
_SAFE = "abzAZ09-._~!$&'()*+,;=:@/?"
_ALPHABET = "aZ09-._~!$&'()*+,;=:@/?#%[]\\ \t\"<>`{}|^xn.:80443ß"


def _fuzz_urls(count: int, seed: int = 8) -> list[str]:
    """URL-like strings around the fast path's edges: ports, dots, escapes, odd characters."""
    rng = random.Random(seed)
    hosts = ["example.com", "a.example.com", "EXAMPLE.com", "xn--fa-hia.example", "0x7f.1", "1.2.3.4",
             "a-.example.com", "example.com.", "x.09", "localhost", "a..b", "ex%61mple.com"]  # fmt: skip
    ports = ["", ":80", ":443", ":8080", ":0", ":080", ":65536", ":1", ":99999"]
    urls = []
    for _ in range(count):
        odd = rng.random() < 0.05
        path = "".join(rng.choice(_ALPHABET if odd else _SAFE) for _ in range(rng.randint(0, 9)))
        segments = rng.choice(["", "", "", "/x", "/.", "/..", "/./x", "/../x", "/a/.", "/a/..?q"])
        urls.append(f"{rng.choice(['http', 'https', 'HTTP'])}://{rng.choice(hosts)}{rng.choice(ports)}/"
                    f"{path}{segments}")  # fmt: skip
    return urls


def test_fast_path_gives_what_ada_gives() -> None:
    inputs = [raw for raw, _ in CASES] + REJECTED + _fuzz_urls(40_000)
    if (WPT_DIR / "urltestdata.json").exists():
        # Batches hold decoded text: inputs with lone surrogates never reach polars.
        inputs += [case["input"] for case in _load("urltestdata.json")
                   if isinstance(case, dict) and not _SURROGATES.search(case["input"])]  # fmt: skip
    series = pl.Series([raw for raw in inputs if not _SURROGATES.search(raw)], dtype=pl.String)
    quick = fast_path(series)
    assert quick.sum() > 500  # the fuzz corpus reaches the fast path, not only the slow one
    fast = canonicalize_series(series.filter(quick))
    for raw, url, host in zip(series.filter(quick).to_list(), fast.get_column("url").to_list(),
                              fast.get_column("host").to_list(), strict=True):  # fmt: skip
        assert (url, host) == canonicalize_with_host(raw), raw


# --- The fast path ---------------------------------------------------------------------


def _fuzzed_urls(count: int, seed: int = 0) -> list[str]:
    """http(s) URLs built from the pieces a fast path could get wrong."""
    rng = random.Random(seed)
    schemes = ["http://", "https://", "HTTP://", "http:/", "http:", "ftp://", ""]
    labels = [
        "a",
        "example",
        "Example",
        "com",
        "0",
        "09",
        "0x1f",
        "xn--fa-hia",
        "xn--",
        "a-",
        "-a",
        "1a",
        "a_b",
        "",
        "ü",
        "%61",
        "127",
        "255",
    ]
    ports = ["", ":", ":0", ":80", ":443", ":080", ":8080", ":9999", ":65535", ":65536", ":x"]
    pieces = [
        "a",
        "B",
        ".",
        "..",
        "%2e",
        "%2E",
        "%7e",
        "%41",
        "~",
        "'",
        '"',
        " ",
        "\t",
        "\\",
        "^",
        "`",
        "{",
        "|",
        "[",
        "]",
        "@",
        ":",
        ";",
        "=",
        "&",
        "+",
        "!",
        "$",
        "(",
        "*",
        ",",
        "é",
        "\x00",
        "\x7f",
        "-",
        "_",
    ]
    separators = ["/", "/", "/", "?", "#", "", "//"]
    urls = []
    for _ in range(count):
        tame = rng.random() < 0.5  # mostly plain, so that the fast path is taken often
        some = (lambda items: items[:4]) if tame else (lambda items: items)
        host = ".".join(rng.choice(some(labels)) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.1:
            host += "."
        rest = "".join(
            rng.choice(separators) + "".join(rng.choice(some(pieces)) for _ in range(rng.randint(0, 3)))
            for _ in range(rng.randint(0, 5))
        )
        urls.append(rng.choice(some(schemes)) + host + rng.choice(ports) + rest)
    return urls


def _fast_path_corpus() -> list[str]:
    corpus = [raw for raw, _ in CASES] + [expected for _, expected in CASES] + REJECTED
    corpus += _fuzzed_urls(30_000)
    corpus += [capture.original for capture in generate_dataset(2_000, 2_000)]
    for name in ("urltestdata.json", "IdnaTestV2.json"):
        path = WPT_DIR / name
        if path.exists():
            for case in json.loads(path.read_text(encoding="utf-8")):
                if isinstance(case, dict):
                    corpus += [case["input"], f"https://{case['input']}/x", case.get("href") or ""]
                    corpus += [case.get("output") or ""]
    return corpus


def test_fast_path_agrees_with_ada_byte_for_byte() -> None:
    """The regex fast path gives exactly what ada gives, wherever it applies."""
    corpus = _fast_path_corpus()
    taken = 0
    for url in corpus:
        plain = canonical._FAST(url)
        fast = None if plain is None or plain.end() < len(url) else canonical._fast_form(plain)
        if fast is not None:
            taken += 1
            assert fast == canonical._canonicalize_by_ada(url), url
    assert taken > 2_000  # the comparison is not vacuous


def test_fast_path_takes_plain_archive_urls() -> None:
    plain = [
        "http://example.com/a/b.html",
        "https://www.example.com:443/search?q=1&page=2",
        "http://blog.example.com:80/",
        "https://example.com/x#top",
        "http://example.com:8080",
    ]
    for url in plain:
        match = canonical._FAST(url)
        assert match is not None and match.end() == len(url) and canonical._fast_form(match), url


def test_series_gives_the_same_rows_whether_they_repeat_or_not() -> None:
    """canonicalize_series reads mostly distinct rows one by one, and mostly repeated ones
    through their distinct values and a join: row for row, both give canonicalize_with_host's."""
    raws = [raw for raw in dict.fromkeys(_fast_path_corpus()) if not _SURROGATES.search(raw)]
    distinct = [*raws, None]
    for rows in (distinct, distinct * 4):  # the first read row by row, the second through the join
        frame = canonicalize_series(pl.Series(rows, dtype=pl.Utf8))
        expected = [canonicalize_with_host(raw) or (None, None) if raw else (None, None) for raw in rows]
        assert list(zip(frame["url"].to_list(), frame["host"].to_list(), strict=True)) == expected
    assert fast_path(pl.Series(raws, dtype=pl.Utf8)).sum() > 2_000  # the fast path is not left untried

"""Canonical URL form: one resource, one row."""

import pytest

from trawl.canonical import _canonicalize_slow, canonicalize, host_of

CASES = [
    ("HTTP://WWW.Example.COM/a", "http://www.example.com/a"),
    ("http://example.com:80/a", "http://example.com/a"),
    ("https://example.com:443/a", "https://example.com/a"),
    ("http://example.com:443/a", "http://example.com:443/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com/a#section", "http://example.com/a"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com?x=1", "http://example.com/?x=1"),
    ("http://example.com/a?b=2&a=1", "http://example.com/a?b=2&a=1"),  # query order kept
    ("http://example.com/x?", "http://example.com/x"),
    ("http://example.com/a%7eb", "http://example.com/a~b"),  # unreserved decoded
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),  # reserved kept, upper-cased
    ("http://example.com/?q=%41%3d", "http://example.com/?q=A%3D"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://bücher.example.com/ä", "http://xn--bcher-kva.example.com/%C3%A4"),
    ("http://example.com./a", "http://example.com/a"),
    ("example.com/path", "http://example.com/path"),
    ("  http://example.com/a  ", "http://example.com/a"),
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_canonical_form(raw: str, expected: str) -> None:
    assert canonicalize(raw) == expected


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_fast_path_agrees_with_w3lib_path(raw: str, expected: str) -> None:
    raw = raw.strip()
    assert _canonicalize_slow(raw if "://" in raw else "http://" + raw) == expected


def test_http_and_https_stay_distinct() -> None:
    assert canonicalize("http://example.com/") != canonicalize("https://example.com/")


@pytest.mark.parametrize(
    "raw", ["", "ftp://example.com/", "mailto:a@example.com", "http://example.com:0/", "http://:80/"]
)
def test_not_web_urls(raw: str) -> None:
    assert canonicalize(raw) is None


def test_host_of() -> None:
    assert host_of("http://a.example.com:8080/x") == "a.example.com"
    assert host_of("https://example.com/") == "example.com"
    assert host_of("http://[::1]:8080/") == "::1"

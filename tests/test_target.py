"""Reading -a domain=: sensible input works, the rest fails with one clear line."""

import pytest

from trawl.errors import TrawlUsageError
from trawl.sources.target import parse_target


@pytest.mark.parametrize(
    ("raw", "domain"),
    [
        ("example.com", "example.com"),
        ("Example.COM", "example.com"),
        ("https://example.com/x?y=1", "example.com"),
        ("*.example.com", "example.com"),
        ("example.com/some/path", "example.com"),
        ("sub.example.co.uk", "sub.example.co.uk"),
        ("bücher.de", "xn--bcher-kva.de"),
    ],
)
def test_accepted(raw: str, domain: str) -> None:
    assert parse_target(raw).domain == domain


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "missing domain"),
        ("", "missing domain"),
        ("   ", "missing domain"),
        ("1.2.3.4", "IP address"),
        ("2001:db8::1", "IP address"),
        ("example.invalidtld", "unknown top-level domain"),
        ("../etc/passwd", "not a domain"),
        ("a" * 300 + ".com", "label too long"),
        ("co.uk", "public suffix"),
        ("exa mple.com", "not a valid domain"),
    ],
)
def test_rejected(raw: str | None, message: str) -> None:
    with pytest.raises(TrawlUsageError, match=message) as info:
        parse_target(raw)
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 200


def test_scope() -> None:
    target = parse_target("example.com")
    assert target.in_scope("example.com")
    assert target.in_scope("a.b.example.com")
    assert not target.in_scope("notexample.com")
    assert not target.in_scope("example.com.evil.net")
    exact = parse_target("example.com", include_subdomains=False)
    assert exact.in_scope("www.example.com")
    assert not exact.in_scope("a.example.com")


def test_url_input_is_noted() -> None:
    assert any("taking the host" in note for note in parse_target("https://example.com/x").notes)

"""The domain a crawl is about: parsing user input and deciding scope.

Users paste all sorts of things into ``-a domain=``: a URL, ``*.example.com``,
an upper-case host. Anything that can sensibly mean a domain is accepted (and
the reading is logged); anything else fails before a request is sent, with one
line that says what is wrong.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from functools import lru_cache
from urllib.parse import urlsplit

import tldextract

from trawl.errors import TrawlUsageError

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|[a-z0-9_][a-z0-9_-]{0,62}")


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # The suffix list bundled with tldextract: never fetched, never cached on disk.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@dataclass(frozen=True, slots=True)
class Target:
    """A validated domain and whether its subdomains are in scope."""

    domain: str
    include_subdomains: bool = True
    #: Human-readable notes about how the input was read (logged once).
    notes: tuple[str, ...] = field(default=(), compare=False)

    def in_scope(self, host: str) -> bool:
        """True if ``host`` is the domain or (when enabled) one of its subdomains.

        Without subdomains, ``www.`` is still the domain: the CDX prefix query
        ``domain/*`` matches it, since SURT keys drop ``www``.
        """
        domain = self.domain
        if host == domain:
            return True
        if self.include_subdomains:
            return host.endswith(domain) and host[-len(domain) - 1] == "."
        return host == "www." + domain

    @property
    def registered_domain(self) -> str:
        return _extractor()(self.domain).top_domain_under_public_suffix


def _show(raw: str) -> str:
    """Quote user input for an error line, cut so the line stays one line."""
    shown = raw if len(raw) <= 60 else raw[:57] + "..."
    return repr(shown)


def _reject_ip(text: str, raw: str) -> None:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return
    raise TrawlUsageError(
        f"{_show(raw)} is an IP address; trawl collects URLs by domain name (give a host name)"
    )


def parse_target(raw: str | None, include_subdomains: bool = True) -> Target:
    """Read user input as a domain, or raise :class:`TrawlUsageError`."""
    if raw is None or not raw.strip():
        raise TrawlUsageError("missing domain: pass -a domain=example.com")
    text = raw.strip()
    notes: list[str] = []
    if "://" in text:
        try:
            host = urlsplit(text).hostname or ""
        except ValueError:
            host = ""
        if not host:
            raise TrawlUsageError(f"cannot read a host from {_show(raw)}")
        notes.append(f"taking the host {host!r} from the URL {_show(raw)}")
        text = host
    elif "/" in text:
        head = text.split("/", 1)[0]
        if head in ("", ".", "..") or not head.strip("."):
            raise TrawlUsageError(f"not a domain: {_show(raw)}")
        notes.append(f"taking the host {head!r} from {_show(raw)}")
        text = head
    if text.startswith("*."):
        text = text[2:]
        if not include_subdomains:
            raise TrawlUsageError(f"{_show(raw)} asks for subdomains but subs=false was given")
        notes.append(f"{_show(raw)} read as {text!r} with its subdomains")
    text = text.rstrip(".").lower()
    _reject_ip(text, raw)
    if ":" in text:
        text, _, port = text.partition(":")
        if port:
            notes.append(f"ignoring the port {port!r}: archives index hosts, not ports")
        _reject_ip(text, raw)
    for label in text.split("."):
        if len(label) > 63:
            raise TrawlUsageError(
                f"domain label too long ({len(label)} characters, at most 63) in {_show(raw)}"
            )
    try:
        text = text.encode("idna").decode("ascii")
    except UnicodeError:
        raise TrawlUsageError(f"not a valid domain name: {_show(raw)}") from None
    if len(text) > 253:
        raise TrawlUsageError(f"domain too long ({len(text)} characters, at most 253): {_show(raw)}")
    labels = text.split(".")
    for label in labels:
        if not _LABEL.fullmatch(label):
            raise TrawlUsageError(f"not a valid domain name: {_show(raw)}")
    extracted = _extractor()(text)
    if not extracted.suffix:
        raise TrawlUsageError(
            f"unknown top-level domain {labels[-1]!r} in {_show(raw)} (not in the public suffix list)"
        )
    if not extracted.domain:
        raise TrawlUsageError(f"{_show(raw)} is a public suffix, not a domain")
    return Target(domain=text, include_subdomains=include_subdomains, notes=tuple(notes))

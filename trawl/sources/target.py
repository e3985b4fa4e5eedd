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
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError

if TYPE_CHECKING:
    import tldextract

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?|[a-z0-9_][a-z0-9_-]{0,62}")


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    # The suffix list bundled with tldextract: never fetched, never cached on disk. Imported
    # here, by the one reading that needs it: it costs a read command 0.05-0.1 s of CPU.
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@dataclass(frozen=True, slots=True)
class Target:
    """A validated domain and whether its subdomains are in scope."""

    domain: str
    include_subdomains: bool = True
    #: The port a lab target was given with (``-a allow_private=true``); ``None``: any.
    port: int | None = None
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

    @property
    def netloc(self) -> str:
        """``host[:port]`` as a URL holds it (an IPv6 address in brackets)."""
        host = f"[{self.domain}]" if ":" in self.domain else self.domain
        return f"{host}:{self.port}" if self.port else host


def _show(raw: str) -> str:
    """Quote user input for an error line, cut so the line stays one line."""
    shown = raw if len(raw) <= 60 else raw[:57] + "..."
    return repr(shown)


#: The argument of the sources that talk to a target (probe, live) that lets it be an address.
PRIVATE_ARGUMENT = "-a allow_private=true"


def _reject_ip(text: str, raw: str, allow_private: bool | None = None) -> None:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return
    hint = f", or {PRIVATE_ARGUMENT} for a lab or internal target" if allow_private is False else ""
    raise TrawlUsageError(
        f"{_show(raw)} is an IP address; trawl collects URLs by domain name (give a host name{hint})"
    )


def _lab_target(text: str, raw: str, include_subdomains: bool, notes: list[str]) -> Target | None:
    """``-a allow_private=true``: an address, ``localhost``, a name without a public suffix, or
    any host with its port, as given; ``None``: a public name without a port (read as usual)."""
    host, port_text = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else rest
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    port: int | None = None
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise TrawlUsageError(f"not a port: {port_text[:20]!r} in {_show(raw)}")
        port = int(port_text)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        return Target(str(address), include_subdomains, port, tuple(notes))
    if not host or not all(_LABEL.fullmatch(label) for label in host.split(".")):
        raise TrawlUsageError(f"not a valid host name: {_show(raw)}")
    if port is None and _extractor()(host).suffix and _extractor()(host).domain:
        return None
    return Target(host, include_subdomains, port, tuple(notes))


def _port_of(url: str) -> int | None:
    try:
        return urlsplit(url.strip()).port
    except ValueError:
        raise TrawlUsageError(f"not a port in {_show(url)}") from None


def parse_target(
    raw: str | None, include_subdomains: bool = True, allow_private: bool | None = None
) -> Target:
    """Read user input as a domain, or raise :class:`TrawlUsageError`.

    ``allow_private``: ``None`` for a source that reads archives (an address is never
    a target), ``False`` for one that offers :data:`PRIVATE_ARGUMENT` (the refusal
    names it), ``True`` when it was given (:func:`_lab_target`).
    """
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
        if allow_private:  # a lab target keeps its port
            port = _port_of(raw)
            text = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
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
    if allow_private:
        lab = _lab_target(text, raw, include_subdomains, notes)
        if lab is not None:
            return lab
    _reject_ip(text, raw, allow_private)
    if ":" in text:
        text, _, port = text.partition(":")
        if port:
            kept = f" ({PRIVATE_ARGUMENT} keeps it)" if allow_private is False else ""
            notes.append(f"ignoring the port {port!r}: archives index hosts, not ports{kept}")
        _reject_ip(text, raw, allow_private)
    if allow_private is False and (text == "localhost" or text.endswith(".localhost")):
        raise TrawlUsageError(f"{_show(raw)} is this machine: {PRIVATE_ARGUMENT} allows it (lab testing)")
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
            f"unknown top-level domain {labels[-1]!r} in {_show(raw)} (not in the public suffix list"
            + (f"; {PRIVATE_ARGUMENT} allows an internal name)" if allow_private is False else ")")
        )
    if not extracted.domain:
        raise TrawlUsageError(f"{_show(raw)} is a public suffix, not a domain")
    return Target(domain=text, include_subdomains=include_subdomains, notes=tuple(notes))

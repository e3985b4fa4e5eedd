"""Which URLs the live crawl may fetch: katana's scope model, one rule per run.

``-a scope=``:

* ``domain`` (the default): the domain and its subdomains, as the URL sources'
  ``subs=true`` (``example.com``, ``www.example.com``, ``a.b.example.com``);
* ``rdn``: the registered domain under its public suffix and all its
  subdomains (``-a domain=www.example.co.uk`` crawls ``*.example.co.uk``);
* ``host``: the domain's host exactly;
* ``regex:PATTERN``: any http(s) URL the regular expression matches (``re.search``).

Only ``http`` and ``https`` URLs are ever in scope, and never a loopback,
private, link-local or reserved address (``127.0.0.1``, ``10.0.0.5``,
``[::1]``, ``169.254.169.254``) or ``localhost``: the target is a name
(:func:`trawl.sources.target.parse_target` refuses an address), so such a URL
is a redirect or a link toward the machine or network trawl runs on, whatever
a ``regex:`` scope matches. With ``-a allow_private=true`` the target may be
such an address (a lab): then that host and port only (:attr:`Scope.local`;
any of its ports if none was given), never another local one (a redirect from
``127.0.0.1:8000`` to ``127.0.0.1:6379`` stays out). A redirect is followed
only into scope, except the seeds': the root that redirects to another host of
the registered domain (``example.com`` -> ``www.example.com``, the case that
leaves other crawlers with no output, hakrawler #120) is followed whatever the
scope, and that host joins the scope for the pages reached from it (carried in
each request's meta, so another worker of a spread run knows it too).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from trawl.errors import TrawlUsageError
from trawl.sources.target import Target

KINDS = ("domain", "rdn", "host", "regex")


@dataclass(frozen=True)
class Scope:
    """One run's scope (:func:`parse_scope`)."""

    kind: str
    domain: str
    registered: str
    pattern: re.Pattern[str] | None = None
    #: The local targets in scope (``-a allow_private=true``): ``host:port`` (:func:`local_netloc`).
    local: frozenset[str] = frozenset()

    def allows(self, url: str, hosts: tuple[str, ...] = ()) -> bool:
        """Is ``url`` (canonical) in scope? ``hosts``: hosts a seed redirected to."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return False
        host = (parts.hostname or "").lower()
        if local_host(host) and local_netloc(url) not in self.local:
            return False
        if host in hosts:
            return True
        if self.kind == "regex":
            assert self.pattern is not None
            return self.pattern.search(url) is not None
        if self.kind == "host":
            return host == self.domain
        base = self.registered if self.kind == "rdn" else self.domain
        return _under(host, base)

    def seed_may_go(self, url: str) -> bool:
        """A seed's redirect target: in scope, or another host of the registered domain."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        return self.allows(url) or (parts.scheme in ("http", "https") and _under(host, self.registered))

    def describe(self) -> str:
        if self.local and self.kind != "regex":  # a lab target: that host and port
            return "the host " + " and ".join(sorted(self.local))
        if self.kind == "regex":
            assert self.pattern is not None
            return f"regex {self.pattern.pattern!r}"
        if self.kind == "rdn":
            return f"{self.registered} and its subdomains"
        if self.kind == "host":
            return f"the host {self.domain}"
        return f"{self.domain} and its subdomains"


def local_host(host: str) -> bool:
    """``localhost``, or an address that is not a public one (loopback, private, link-local...)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return not ipaddress.ip_address(host.strip("[]")).is_global
    except ValueError:
        return False


def local_netloc(url: str) -> str:
    """``host:port`` of a URL, the port spelled out (``http://127.0.0.1/`` -> ``127.0.0.1:80``)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    default = 443 if parts.scheme == "https" else 80
    return f"{(parts.hostname or '').lower()}:{port or default}"


def local_targets(target: Target) -> frozenset[str]:
    """The ``host:port`` pairs a local target stands for: its port, else 80 and 443."""
    if not local_host(target.domain):
        return frozenset()
    ports = (target.port,) if target.port else (80, 443)
    return frozenset(f"{target.domain}:{port}" for port in ports)


def _under(host: str, base: str) -> bool:
    return host == base or host.endswith("." + base)


def parse_scope(raw: object, target: Target) -> Scope:
    """``-a scope=`` read, or one :class:`TrawlUsageError` line."""
    text = str(raw if raw is not None else "domain").strip()
    registered = target.registered_domain or target.domain
    if text.lower().startswith("regex:"):
        source = text[len("regex:") :]
        if not source:
            raise TrawlUsageError("-a scope=regex: needs a pattern (regex:^https://www\\.example\\.com/)")
        try:
            pattern = re.compile(source)
        except re.error as exc:
            raise TrawlUsageError(f"-a scope=: not a regular expression ({exc}): {source[:60]!r}") from None
        return Scope("regex", target.domain, registered, pattern, local_targets(target))
    kind = text.lower() or "domain"
    if kind not in KINDS[:3]:
        raise TrawlUsageError(f"-a scope= must be domain, rdn, host or regex:PATTERN, got {text[:60]!r}")
    return Scope(kind, target.domain, registered, local=local_targets(target))

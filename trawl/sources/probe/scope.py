"""Which URLs the probe may ask, and which redirects it follows (:mod:`trawl.sources.live.redirects`).

With ``-a domain=``: the domain (its subdomains with ``subs=true``). With
``-a list=`` and no domain: the list's hosts, exactly (``httpx -fhr``: a
redirect to another host is the answer, not followed). Never a loopback,
private or reserved address or ``localhost``, unless ``-a allow_private=true``
made it a target: then that ``host:port`` only (:attr:`ProbeScope.local`),
so a lab at ``127.0.0.1:8000`` cannot send the probe to ``127.0.0.1:6379``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from trawl.sources.live.scope import local_host, local_netloc
from trawl.sources.target import Target


@dataclass(frozen=True)
class ProbeScope:
    """``target``'s hosts, else ``hosts``; on local addresses, only the ``local`` ``host:port``."""

    target: Target | None
    hosts: frozenset[str]
    local: frozenset[str]

    def allows(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return False
        host = (parts.hostname or "").lower()
        if local_host(host):
            return local_netloc(url) in self.local
        if self.target is not None:
            return self.target.in_scope(host)
        return host in self.hosts

    def describe(self) -> str:
        if self.target is not None:
            return self.target.netloc
        return f"{len(self.hosts) + len(self.local)} hosts of the list"

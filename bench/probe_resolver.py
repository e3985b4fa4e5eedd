"""A DNS resolver for bench_probe.py: every ``*.bench.example.com`` name is 127.0.0.1.

So that the benchmark's hosts are host names (one download slot and one
connection pool each, as real hosts are) without touching /etc/hosts.
Set with ``-s DNS_RESOLVER=bench.probe_resolver.LoopbackResolver``.
"""

from __future__ import annotations

from typing import Any

from scrapy.resolver import CachingHostnameResolver

SUFFIX = ".bench.example.com"


class LoopbackResolver(CachingHostnameResolver):
    def resolveHostName(self, resolutionReceiver: Any, hostName: str, *args: Any, **kwargs: Any) -> Any:  # noqa: N802, N803
        if hostName.endswith(SUFFIX):
            hostName = "127.0.0.1"
        return super().resolveHostName(resolutionReceiver, hostName, *args, **kwargs)

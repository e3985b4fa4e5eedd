"""Prometheus metrics for long-running processes: ``crawl``, ``crawl all``, scrapyd jobs, workers.

Off unless ``PROMETHEUS_PORT`` is set. Then one HTTP server per process
(:mod:`.server`) serves ``/metrics`` from one process-wide registry, and every
crawler of the process adds its source's series to it (:mod:`.extension`,
registered in trawl's ``EXTENSIONS``). The counters are read from each
crawler's Scrapy stats and the source's gate when Prometheus scrapes
(:mod:`.collector`), not counted a second time by hooks in the modules that
count them already; the store write latency, the one value no stat holds, is
timed around the pipeline's store write, and the queue depth is set by the
queue (:func:`set_queue_depth`).

This module is a built-in plugin (``metrics`` in ``trawl plugins``) for one
reason: it declares the settings it reads (:data:`settings_declared`), so
they are checked, defaulted and documented as every component's are.
``TRAWL_PLUGINS_DISABLED=metrics`` switches the metrics off too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from trawl.lazyclasses import lazy_attributes
from trawl.settings_checks import Setting, fail, whole_value

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["set_queue_depth", "settings_declared", "watch_queue_depth"]

# prometheus_client, imported on first use: registering the plugin costs a read command nothing.
__getattr__ = lazy_attributes(
    __name__,
    {name: f"trawl.metrics.collector:{name}" for name in ("set_queue_depth", "watch_queue_depth")},
)

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*$")


def read_port(settings: BaseSettings | dict) -> int | None:
    """``PROMETHEUS_PORT``: ``None`` when not set (no metrics), else 0 (any free port) to 65535."""
    raw = settings.get("PROMETHEUS_PORT")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    return whole_value(raw, "PROMETHEUS_PORT", 0, 65535)


def _check_port(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    read_port(settings)


def _check_address(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """An IP address or a host name to listen on; a URL or a port here is a mistake."""
    raw = settings.get(name)
    text = str(raw).strip() if isinstance(raw, str) else ""
    try:
        ipaddress.ip_address(text)
        return
    except ValueError:
        pass
    if not _HOSTNAME.match(text):
        raise fail(name, "must be an IP address or a host name to listen on (127.0.0.1, 0.0.0.0, ::)", raw)


#: The settings the metrics read.
settings_declared = {
    "PROMETHEUS_PORT": Setting(
        "",
        _check_port,
        "port of the /metrics endpoint (Prometheus); empty: no metrics, 0: any free port (logged)",
    ),
    "PROMETHEUS_ADDRESS": Setting(
        "127.0.0.1",
        _check_address,
        "address the /metrics endpoint listens on; 0.0.0.0 for a Prometheus on another machine",
    ),
}

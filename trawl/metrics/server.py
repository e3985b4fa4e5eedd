"""The one ``/metrics`` HTTP server of a process, started once, whoever asks first.

``trawl crawl`` and ``crawl all`` (and so scrapyd's jobs, which run them)
start it before any crawler exists, so that a port in use is one ``trawl:
error:`` line and exit status 2, before anything is sent: a long run that
was asked for metrics and would serve none is refused, not found out hours
later. The extension starts it too (:mod:`.extension`), for processes that
build crawlers without the crawl command (a script's ``CrawlerProcess``):
there a port in use is one WARNING and the crawl runs without metrics, since
an extension cannot end a run in one line. Every later crawler of the process
reuses the server; the first settings that asked decide its port and address.

The server is prometheus_client's WSGI server on a daemon thread: a scrape
is answered while the reactor is busy, and the thread ends with the process.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from prometheus_client import start_wsgi_server

from trawl.errors import TrawlUsageError
from trawl.metrics.collector import REGISTRY, SERVING
from trawl.settings_checks import read

logger = logging.getLogger(__name__)

#: The metrics extension, as trawl's ``EXTENSIONS`` names it.
EXTENSION = "trawl.metrics.extension.Metrics"
#: Its name in ``trawl plugins`` and ``TRAWL_PLUGINS_DISABLED``.
PLUGIN = "metrics"

_lock = threading.Lock()
_url: str | None = None


def wanted(settings: Any) -> bool:
    """``PROMETHEUS_PORT`` is set, and neither the extension nor the plugin is switched off."""
    from trawl.metrics import read_port
    from trawl.pipeline.manager import PluginConfig

    if read_port(settings) is None:
        return False
    getwithbase = getattr(settings, "getwithbase", None)
    if getwithbase is not None and getwithbase("EXTENSIONS").get(EXTENSION) is None:
        return False
    return PLUGIN not in PluginConfig.from_settings(settings).disabled


def start_metrics(settings: Any) -> str | None:
    """Serve ``/metrics`` if the settings ask for it; its URL, or ``None`` when they do not.

    Raises :class:`TrawlUsageError` (one line) when the address cannot be listened on.
    """
    global _url
    from trawl.metrics import read_port, settings_declared

    if not wanted(settings):
        return None
    with _lock:
        if _url is not None:
            return _url
        port = read_port(settings)
        assert port is not None
        address = str(read(settings, settings_declared, "PROMETHEUS_ADDRESS")).strip()
        try:
            server, _ = start_wsgi_server(port, address, registry=REGISTRY)
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise TrawlUsageError(
                f"PROMETHEUS_PORT: cannot serve metrics on {_host(address)}:{port}: {reason.lower()}"
            ) from None
        _url = f"http://{_host(address)}:{server.server_port}/metrics"
        SERVING.set()
    logger.info("metrics: serving %s", _url)
    return _url


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address

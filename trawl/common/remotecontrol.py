"""Scrapy's remote-control extension, loaded only when a user turns it on.

Scrapy enables ``RemoteControl`` by default, and its module imports aiohttp as it is
loaded: 0.13-0.17 s of CPU and 10 MB at every crawl start, although trawl turns the
extension off (``REMOTE_CONTROL_ENABLED=False``: no listening port that runs code on a
crawler machine). Scrapy loads every key of ``EXTENSIONS`` and ``EXTENSIONS_BASE``,
even one set to None, so turning it off there does not avoid the import:
:func:`defer_remote_control` puts this stand-in in its place in ``EXTENSIONS_BASE``
(every source does, as it updates its crawl's settings); it reads the setting first,
and builds Scrapy's extension only for whoever sets it to true.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

SCRAPY_EXTENSION = "scrapy.extensions.remote_control.RemoteControl"
STAND_IN = "trawl.common.remotecontrol.RemoteControlWhenEnabled"


def defer_remote_control(settings: BaseSettings) -> None:
    """``EXTENSIONS_BASE`` with Scrapy's ``RemoteControl`` replaced by :class:`RemoteControlWhenEnabled`.

    In place: ``settings.set`` on a dict setting merges into it, so a key cannot be taken out that way.
    """
    base = settings["EXTENSIONS_BASE"]
    if base is None or SCRAPY_EXTENSION not in base:
        return
    order = base[SCRAPY_EXTENSION]
    del base[SCRAPY_EXTENSION]
    base[STAND_IN] = order


class RemoteControlWhenEnabled:
    """Scrapy's ``RemoteControl``, imported only when ``REMOTE_CONTROL_ENABLED`` is true."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if not crawler.settings.getbool("REMOTE_CONTROL_ENABLED"):
            raise NotConfigured
        from scrapy.extensions.remote_control import RemoteControl
        from scrapy.utils.misc import build_from_crawler

        return build_from_crawler(RemoteControl, crawler)

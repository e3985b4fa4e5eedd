"""Redirects that Scrapy follows for the probe and the live crawl, followed only into scope.

The live crawl follows its pages' redirects itself, a hop at a time, each hop
scoped (:mod:`.spider`). Scrapy's ``RedirectMiddleware`` and
``MetaRefreshMiddleware`` still follow the redirects of every request that
does not say ``dont_redirect``: all of the probe's, and the live crawl's
random-path request (the soft-404 check) and robots.txt. These commands talk to
hosts the user may test and to no other, so the two middlewares are replaced
here by subclasses that ask the spider first (``redirect_in_scope(url,
request)``): a redirect out of scope is not followed, and the answer that
asked for it goes on as the answer (a 302 with its ``Location``, a page with
its ``<meta http-equiv=refresh>``), its request's meta naming the refused URL
(:data:`REFUSED`) for the record to say so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

#: request.meta key: the URL a redirect out of scope asked for (not followed).
REFUSED = "trawl_redirect_refused"


def _scoped(crawler: Any, request: Request, response: Response, result: Any) -> Any:
    """``result`` (the middleware's), unless it is a redirect the spider's scope refuses."""
    if not isinstance(result, Request):
        return result
    allowed = getattr(crawler.spider, "redirect_in_scope", None)
    if allowed is None or allowed(result.url, request):
        return result
    request.meta[REFUSED] = result.url
    return response


class ScopedRedirectMiddleware(RedirectMiddleware):
    """Scrapy's, following a ``Location`` only into the spider's scope."""

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        return _scoped(self.crawler, request, response, super().process_response(request, response))


class ScopedMetaRefreshMiddleware(MetaRefreshMiddleware):
    """Scrapy's, following a ``<meta http-equiv=refresh>`` only into the spider's scope."""

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        return _scoped(self.crawler, request, response, super().process_response(request, response))


def install(settings: BaseSettings) -> None:
    """The scoped middlewares in place of Scrapy's, at their places in the chain.

    Set at the spider's priority, as a spider's ``update_settings`` sets the rest: the
    crawler process merges the project's settings into each crawler's at theirs.
    """
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    for old, new, order in (
        (RedirectMiddleware, ScopedRedirectMiddleware, 600),
        (MetaRefreshMiddleware, ScopedMetaRefreshMiddleware, 580),
    ):
        middlewares[_path(old)] = None
        middlewares[_path(new)] = order
    settings.set("DOWNLOADER_MIDDLEWARES", middlewares, priority="spider")


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"

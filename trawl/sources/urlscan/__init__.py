"""urlscan.io search: the pages scans of a domain landed on, and the URLs they were asked for.

One concern a module:

* :mod:`.spider`: :class:`UrlscanSpider` (the source ``urlscan``): its settings,
  its requests, what each answer leads to;
* :mod:`.paging`: the search query (``domain:<d>``, ``date:[A TO B]``), the
  ``search_after`` paging and why it does not stop on ``has_more: false``;
* :mod:`.rotation`: API keys in turn, resting on a 429, dropped on a 401/403,
  and the wait (without blocking the reactor) when every key rests;
* :mod:`.results`: a page's JSON and the URLs each scan gives.
"""

from __future__ import annotations

from trawl.sources.urlscan.spider import UrlscanSpider

__all__ = ["UrlscanSpider"]

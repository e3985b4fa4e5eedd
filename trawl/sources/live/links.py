"""The URLs one answer names: links of an HTML page, endpoints of a script, a sitemap's, robots.txt's.

Each is ``(url, how)``, absolute (resolved against the answer's URL, or its
``<base href>``), not yet canonical. ``how`` says where it came from:

* ``a`` (``<a>``, ``<area>``), ``link`` (``<link>``, ``<iframe>``, ``<frame>``),
  ``script`` (``<script src>``): Scrapy's :class:`~scrapy.linkextractors.LinkExtractor`,
  every extension kept (a PDF's URL is stored; only its headers are fetched);
* ``form`` (a ``GET`` form's action, fetched without its fields) and
  ``form-post`` (any other method: stored, never fetched, since submitting a
  form changes things on the target);
* ``js``: an endpoint :func:`trawl.mining.extract_file` found in a JavaScript
  file or in an inline ``<script>`` (the same reader as archived responses);
* ``sitemap`` (a ``<loc>`` of a sitemap; ``sitemap-index`` for a sitemap named
  by a sitemap index or by robots.txt) and ``robots`` (a path robots.txt names).
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.sitemap import Sitemap

from trawl.mining import extract_file

Link = tuple[str, str]

_EXTRACTORS = (
    ("a", LinkExtractor(tags=("a", "area"), attrs=("href",), deny_extensions=[])),
    ("link", LinkExtractor(tags=("link", "iframe", "frame"), attrs=("href", "src"), deny_extensions=[])),
    ("script", LinkExtractor(tags=("script",), attrs=("src",), deny_extensions=[])),
)
_ROBOTS_LINE = re.compile(r"^\s*(allow|disallow|sitemap)\s*:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def page_kind(content_type: str, url: str) -> str:
    """``html``, ``js``, ``xml``, ``text`` or ``other`` (read no further than its headers)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    if "html" in kind:
        return "html"
    if "javascript" in kind or "ecmascript" in kind:
        return "js"
    if kind.endswith("/xml") or kind.endswith("+xml"):
        return "xml"
    if kind == "text/plain" or (not kind and url.endswith("/robots.txt")):
        return "text"
    if not kind:
        return "html"  # no type at all: look at it, as a browser would sniff
    return "other"


def html_links(response: Response) -> list[Link]:
    """Links, forms and inline scripts' endpoints of an HTML page."""
    if not isinstance(response, TextResponse):
        return []
    found: list[Link] = []
    for how, extractor in _EXTRACTORS:
        found.extend((link.url, how) for link in extractor.extract_links(response))
    base = response.url
    for form in response.css("form"):
        action = (form.attrib.get("action") or "").strip()
        method = (form.attrib.get("method") or "get").strip().lower()
        url = response.urljoin(action) if action else base
        found.append((url.split("#", 1)[0], "form" if method == "get" else "form-post"))
    for text in response.css("script:not([src])::text").getall():
        if text.strip():
            found.extend(script_links(text.encode("utf-8"), base))
    return found


def script_links(body: bytes, url: str) -> list[Link]:
    """Endpoints of a JavaScript file (:func:`trawl.mining.extract_file`)."""
    findings = extract_file(body, url, "application/javascript")
    return [(endpoint.url, "js") for endpoint in findings.endpoints if "EXPR" not in endpoint.url]


def sitemap_links(body: bytes, url: str) -> list[Link]:
    """A sitemap's pages, or a sitemap index's sitemaps; nothing for XML that is neither."""
    try:
        sitemap = Sitemap(body)
    except Exception:  # noqa: BLE001 - lxml's many errors: an XML file that is not a sitemap
        return []
    how = "sitemap-index" if sitemap.type == "sitemapindex" else "sitemap"
    if sitemap.type not in ("urlset", "sitemapindex"):
        return []
    found: list[Link] = []
    for entry in sitemap:
        loc = entry.get("loc")
        if loc:
            found.append((urljoin(url, loc.strip()), how))
    return found


def robots_links(body: bytes, url: str) -> list[Link]:
    """The sitemaps robots.txt names, and the plain paths of its rules (katana's robots seeds)."""
    found: list[Link] = []
    for name, value in _ROBOTS_LINE.findall(body.decode("utf-8", "replace")):
        if name.lower() == "sitemap":
            found.append((urljoin(url, value), "sitemap-index"))
        elif "*" not in value and "$" not in value and value != "/":
            found.append((urljoin(url, value), "robots"))
    return found

"""The URLs one answer names: links of an HTML page, endpoints of a script, a sitemap's, robots.txt's.

Each is ``(url, how)``, absolute (resolved against the answer's URL, or its
``<base href>``), not yet canonical. ``how`` says where it came from:

* ``a`` (``<a>``, ``<area>``), ``link`` (``<link>``, ``<iframe>``, ``<frame>``),
  ``script`` (``<script src>``): every extension kept (a PDF's URL is stored;
  only its headers are fetched). One walk of the page's tree (the one Scrapy's
  selector parsed) finds them, the forms and the inline scripts: three Scrapy
  ``LinkExtractor`` instances walked it three times and joined every link, 37.7 of
  65.9 profiled seconds of a crawl of the Python documentation (530 pages of
  about 330 links each); one walk that joins each distinct link once takes a
  tenth of that;
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
from urllib.parse import urljoin, urlsplit

from lxml import etree
from scrapy.http import Response, TextResponse
from scrapy.utils.sitemap import Sitemap
from w3lib.html import strip_html5_whitespace

from trawl.mining import extract_file
from trawl.mining.findings import FileFindings

Link = tuple[str, str]

#: Tag -> (attribute, how) of the links the walk keeps.
_LINK_TAGS = {
    "a": ("href", "a"), "area": ("href", "a"), "link": ("href", "link"),
    "iframe": ("src", "link"), "frame": ("src", "link"), "script": ("src", "script"),
}  # fmt: skip
#: A name made of identifiers joined by dots (``a.b``, ``a.b.C``).
_DOTTED = re.compile(r"^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$")
#: Extensions of the files a site serves, as written in lower case in their paths.
_WEB_EXTENSIONS = frozenset(
    "action asp aspx cfm cgi css csv do gif htm html ico jpeg jpg js json jsp jsx map md mjs "
    "pdf php pl png py rss svg ts tsx txt webmanifest webp woff woff2 xhtml xml yaml yml zip".split()
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
    """Links, forms and inline scripts' endpoints of an HTML page, in one walk of its tree."""
    if not isinstance(response, TextResponse):
        return []
    root = response.selector.root
    if not hasattr(root, "iter"):
        return []
    base = response.url
    for element in root.iter("base"):  # <base href> before anything is joined, as a browser does
        href = strip_html5_whitespace(element.get("href") or "")
        if href:
            base = urljoin(base, href)
        break
    raw: dict[tuple[str, str], None] = {}  # (value, how), in order: each distinct value joined once
    scripts: list[str] = []
    for element in root.iter(etree.Element):
        tag = element.tag
        if not isinstance(tag, str):
            continue
        known = _LINK_TAGS.get(tag)
        if known is not None:
            value = element.get(known[0])
            if value is not None:
                raw[(strip_html5_whitespace(value).split("#", 1)[0], known[1])] = None
            elif tag == "script" and element.text and element.text.strip():
                scripts.append(element.text)
        elif tag == "form":
            action = strip_html5_whitespace(element.get("action") or "")
            method = (element.get("method") or "get").strip().lower()
            raw[(action.split("#", 1)[0], "form" if method == "get" else "form-post")] = None
    found: list[Link] = []
    for value, how in raw:
        try:
            found.append((urljoin(base, value) if value else base, how))
        except ValueError:  # a bogus link ("http://[::1")
            continue
    for text in scripts:
        found.extend(script_links(text.encode("utf-8"), base))
    return found


def release_parsed(response: Response) -> None:
    """Drop the parsed tree and decoded text a text answer caches once its links are read.

    An answer stays alive while its items wait in the store's pipeline (89 at
    once in a crawl of the Python documentation), and Scrapy keeps its lxml tree
    (several MB for a 300 KB page) and its text on it: 200 MB of that crawl's
    300 MB peak. The body stays; anything that asks again parses again.
    """
    for cache in ("_cached_selector", "_cached_ubody"):
        if getattr(response, cache, None) is not None:
            setattr(response, cache, None)


def script_links(body: bytes, url: str) -> list[Link]:
    """Endpoints of a JavaScript file (:func:`trawl.mining.extract_file`), dotted names aside."""
    return findings_links(extract_file(body, url, "application/javascript"), url)


def findings_links(findings: FileFindings, url: str) -> list[Link]:
    """The endpoints a script at ``url`` was found to name, as links; dotted names aside."""
    folders = {"/", urlsplit(urljoin(url, ".")).path}  # where a bare name in the script lands
    return [
        (endpoint.url, "js")
        for endpoint in findings.endpoints
        if "EXPR" not in endpoint.url and not (dotted_name(endpoint.url) and _folder(endpoint.url) in folders)
    ]


def _folder(url: str) -> str:
    path = urlsplit(url).path
    return path[: path.rfind("/") + 1] or "/"


def dotted_name(url: str) -> bool:
    """Is the last segment of ``url``'s path a dotted identifier, not a file name?

    ``optparse.Option.action``, ``xml.etree.ElementTree.XML``, ``argparse.Action``,
    ``os.path.join``: a documentation site's JavaScript (its search index) is full
    of them, and a path made of one is a 404 (9 of them on the Python
    documentation). A name is a file's when its extension is a known web one in
    lower case and the parts before it have no capital past the first
    (``login.action``, ``feed.xml``, ``jquery.min.js``, ``Main.js`` are kept).
    Only a bare name is judged (one that landed in the script's folder or at
    the root): ``/api/chat.postMessage`` is an API's method, kept.
    """
    parts = urlsplit(url)
    if parts.query:
        return False
    name = parts.path.rsplit("/", 1)[-1]
    if not _DOTTED.match(name):
        return False
    pieces = name.split(".")
    if pieces[-1] not in _WEB_EXTENSIONS:
        return True
    return any(piece[:1].isupper() for piece in pieces[1:-1])


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

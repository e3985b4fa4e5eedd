"""XML and sitemaps through lxml, with everything that reaches outside the file turned off.

The parser resolves no entities (an XXE ``SYSTEM "file:///etc/passwd"`` stays an
unexpanded reference), loads no DTD, touches no network and keeps libxml2's limits on
(no ``huge_tree``): a billion-laughs file is refused or left unexpanded, in
milliseconds (tests/test_mining_extract.py has both).

- A sitemap (``<urlset>``/``<sitemapindex>``): every ``<loc>`` (pages, images, videos)
  and ``xhtml:link href``: ``sitemap``.
- Any other XML (RSS, Atom, SVG, configs): an element text that is an absolute URL, and
  an attribute value the precision policy accepts that is absolute or root-relative: ``xml``.
"""

from __future__ import annotations

from lxml import etree

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.policy import api_like

_SITEMAP_ROOTS = frozenset({"urlset", "sitemapindex"})


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _absolute(value: str) -> bool:
    return value.startswith(("http://", "https://", "//")) and api_like(value)


def read(body: bytes, url: str, *, source: str | None = None) -> FileFindings | None:
    try:
        root = etree.fromstring(body, parser=_parser())
    except (etree.XMLSyntaxError, ValueError):
        return None
    if root is None:
        return None
    collector = Collector(url, source)
    sitemap = _local(root.tag) in _SITEMAP_ROOTS
    for element in root.iter(etree.Element):
        line = element.sourceline or 0
        name = _local(element.tag)
        text = (element.text or "").strip()
        if sitemap and name == "loc" and text:
            collector.add(text, "sitemap", line)
            continue
        if sitemap and name == "link" and element.get("href"):
            collector.add(element.get("href", ""), "sitemap", line)
            continue
        if text and _absolute(text):
            collector.add(text, "xml", line)
        for value in element.attrib.values():
            value = value.strip()
            if (_absolute(value) or value.startswith("/")) and api_like(value):
                collector.add(value, "xml", line)
    return collector.findings("xml")

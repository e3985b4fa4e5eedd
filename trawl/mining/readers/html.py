"""HTML through lxml's parser (libxml2, error-recovering): links, resources, forms, meta refresh.

- ``srcset`` candidates of ``<img>``/``<source>`` and ``<video poster>``: ``src`` too.
- ``<a>``/``<area href>``: ``href``; ``<link href>``: ``link``; ``<script src>``: ``script``;
  ``<img>``, ``<iframe>``, ``<frame>``, ``<embed>``, ``<source>``, ``<audio>``, ``<video>``,
  ``<track>`` ``src`` and ``<object data>``: ``src``; ``<meta http-equiv=refresh>``: ``meta-refresh``.
- ``<form>``: ``form`` with its method (``GET`` when absent, as browsers do) and the names
  of its ``input``/``select``/``textarea``/``button`` fields, as query parameters for a
  ``GET`` form and body parameters otherwise; no ``action`` is the page itself.
- Inline scripts and ``on*`` handler attributes go to the JavaScript reader (lines
  counted in the page); ``application/json`` and ``ld+json`` scripts to the JSON reader;
  an import map's addresses are URLs by the spec (``importmap``).
- Every field name and every ``<meta name>`` is also a parameter name (xnLinkFinder's
  wordlist does the same). ``<base href>`` changes what relative links resolve against.
"""

from __future__ import annotations

import dataclasses
import re

import lxml.html
from lxml import etree

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.readers import javascript, jsonkeys
from trawl.mining.resolve import resolve

_ATTRIBUTES = {
    "a": ("href", "href"),
    "area": ("href", "href"),
    "link": ("href", "link"),
    "script": ("src", "script"),
    "img": ("src", "src"),
    "iframe": ("src", "src"),
    "frame": ("src", "src"),
    "embed": ("src", "src"),
    "source": ("src", "src"),
    "audio": ("src", "src"),
    "video": ("src", "src"),
    "track": ("src", "src"),
    "object": ("data", "src"),
}
#: Elements whose ``srcset``/``poster`` hold image URLs too.
_SRCSET = frozenset({"img", "source", "video"})
_FIELDS = ("input", "select", "textarea", "button")
_JS_TYPES = frozenset(
    {
        "",
        "text/javascript",
        "application/javascript",
        "module",
        "text/ecmascript",
        "application/ecmascript",
        "text/babel",
        "text/jsx",
    }
)
_REFRESH = re.compile(r"^\s*\d*\.?\d*\s*[;,]?\s*(?:url\s*=\s*)?['\"]?([^'\"]+)['\"]?\s*$", re.IGNORECASE)


def _shift(findings: FileFindings, lines: int) -> FileFindings:
    """An inline script's findings with lines counted from the top of the page."""
    findings.endpoints = [dataclasses.replace(e, line=e.line + lines) for e in findings.endpoints]
    return findings


def read(body: bytes, url: str, *, source: str | None = None) -> FileFindings | None:
    # huge_tree lifts libxml2's depth limit from 256 to 2,048 (the HTML parser expands no
    # entities, so nothing else grows); deeper than that libxml2 drops the rest of the page,
    # which is then read by the regex fallback instead.
    parser = lxml.html.HTMLParser(recover=True, no_network=True, remove_comments=True, huge_tree=True)
    try:
        root = lxml.html.document_fromstring(body, parser=parser)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None
    if any(error.type_name == "ERR_RESOURCE_LIMIT" for error in parser.error_log):
        return None
    base = url
    for element in root.iter("base"):
        if element.get("href"):
            base = resolve(element.get("href", ""), url) or url
            break
    collector = Collector(base, source)
    for element in root.iter(etree.Element):
        tag = element.tag if isinstance(element.tag, str) else ""
        line = element.sourceline or 0
        if tag in _ATTRIBUTES:
            attribute, how = _ATTRIBUTES[tag]
            if element.get(attribute):
                collector.add(element.get(attribute, ""), how, line)
        for attribute in ("srcset", "poster") if tag in _SRCSET else ():
            for candidate in _candidates(element.get(attribute) or "", attribute):
                collector.add(candidate, "src", line)
        if tag == "form":
            _form(element, collector, line)
        elif tag in _FIELDS and element.get("name"):
            collector.params.add(element.get("name", ""))
        elif tag == "meta":
            _meta(element, collector, line)
        elif tag == "script" and not element.get("src") and element.text:
            _inline(element, collector, base, source, line)
        for name, value in element.attrib.items():
            if name.startswith("on") and value:
                script = javascript.read(value.encode("utf-8"), base, source=source)
                if script is not None:
                    collector.merge(_shift(script, line - 1))
    return collector.findings("html")


def _candidates(value: str, attribute: str) -> list[str]:
    """``poster``'s one URL; ``srcset``'s URLs (``/a.webp 2x, /b.webp 1x``: the descriptors dropped)."""
    if attribute == "poster":
        return [value.strip()] if value.strip() else []
    return [part.split()[0] for part in value.split(",") if part.split()]


def _form(form: lxml.html.HtmlElement, collector: Collector, line: int) -> None:
    method = (form.get("method") or "GET").strip().upper() or "GET"
    names = {field.get("name", "") for field in form.iter(*_FIELDS) if field.get("name")}
    query, body = (names, set()) if method == "GET" else (set(), names)
    collector.add(form.get("action") or collector.base, "form", line, method=method, query=query, body=body)


def _meta(meta: lxml.html.HtmlElement, collector: Collector, line: int) -> None:
    if meta.get("name"):
        collector.params.add(meta.get("name", ""))
    if (meta.get("http-equiv") or "").lower() == "refresh":
        found = _REFRESH.match(meta.get("content") or "")
        if found and found.group(1).strip():
            collector.add(found.group(1).strip(), "meta-refresh", line)


def _inline(
    script: lxml.html.HtmlElement, collector: Collector, base: str, source: str | None, line: int
) -> None:
    kind = (script.get("type") or "").strip().lower()
    content = script.text or ""
    if kind in _JS_TYPES:
        findings = javascript.read(content.encode("utf-8"), base, source=source)
    elif kind == "importmap":
        findings = jsonkeys.read_import_map(content.encode("utf-8"), base, source=source)
    elif "json" in kind:
        findings = jsonkeys.read(content.encode("utf-8"), base, source=source)
    else:
        return
    if findings is not None:
        collector.merge(_shift(findings, line - 1))

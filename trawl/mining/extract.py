"""Pick a reader for a file and run it: the one entry point callers use.

Which reader: the MIME type first (archives record it), then the URL's extension, then
the first bytes (``{``/``[``: JSON, ``<?xml``: XML, ``<``: HTML). A file whose MIME type
says JavaScript but whose bytes are an HTML page (an error page archived under a
``.js`` URL) is read as HTML. Images, fonts, audio and video are skipped; anything
else unknown goes to the regex fallback, and so does a file a parser refuses.

Size: at most :data:`MAX_BYTES` of a file are read (xnLinkFinder's cap; the rest is
cut and ``truncated`` set); files over :data:`PARSE_MAX_BYTES` skip the parsers and go to
the regex fallback, which is linear (docs/mining.md has the measurements behind both).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from trawl.mining import secrets as secret_rules
from trawl.mining.findings import FileFindings
from trawl.mining.readers import fallback, html, javascript, jsonkeys, sourcemap, xml

#: Bytes of one file read at most (100 MiB, xnLinkFinder's response cap).
MAX_BYTES = 100 * 1024 * 1024
#: Above this a file goes to the regex fallback instead of a parser (8 MiB): tree-sitter's tree
#: and the nodes read from it cost about 70 MB of memory per MB of dense minified code (a
#: 20.7 MB bundle peaked at 1.57 GB and took 36 s of CPU), and a pool runs one file per core.
#: JavaScript is parsed in 256 KiB windows (:mod:`trawl.mining.readers.jswindows`), so for it
#: this bounds the CPU (about 0.8 s per MB), not the memory; HTML, JSON and XML are parsed whole.
PARSE_MAX_BYTES = 8 * 1024 * 1024

_EXTENSIONS = {
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "ts": "javascript",
    "tsx": "javascript",
    "map": "sourcemap",
    "json": "json",
    "webmanifest": "json",
    "html": "html",
    "htm": "html",
    "xhtml": "html",
    "vue": "html",
    "svelte": "html",
    "xml": "xml",
    "rss": "xml",
    "atom": "xml",
    "svg": "xml",
    "xsd": "xml",
    "wsdl": "xml",
}
_SKIPPED = ("image/", "audio/", "video/", "font/")
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)[\s>]", re.IGNORECASE | re.DOTALL
)


def kind_of(body: bytes, url: str, mime: str | None) -> str:
    """The reader for a file: javascript, html, json, sourcemap, xml, fallback or skipped."""
    head = body[:2048]
    media = (mime or "").split(";", 1)[0].strip().lower()
    if media.startswith(_SKIPPED) and "svg" not in media:
        return "skipped"
    path = urlsplit(url).path.lower() if url else ""
    extension = path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
    if _HTML_START.match(head) and extension not in ("xml", "svg"):
        return "html"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if "javascript" in media or "ecmascript" in media:
        return "javascript"
    if "json" in media or extension in ("json", "map", "webmanifest"):
        if extension == "map" or (b'"mappings"' in head and b'"sources"' in head):
            return "sourcemap"
        return "json"
    if "html" in media:
        return "html"
    if "xml" in media:
        return "xml"
    if extension in _EXTENSIONS:
        return _EXTENSIONS[extension]
    if stripped[:1] in (b"{", b"["):
        return "json"
    if stripped.startswith(b"<?xml") or stripped.startswith(b"<urlset") or stripped.startswith(b"<rss"):
        return "xml"
    if stripped[:1] == b"<":
        return "html"
    return "fallback"


def _read(kind: str, body: bytes, url: str, source: str | None, secrets: bool) -> FileFindings:
    """One reader's findings, falling back to regexes when the reader refuses the file."""
    findings: FileFindings | None = None
    if len(body) <= PARSE_MAX_BYTES:
        if kind == "javascript":
            findings = javascript.read(body, url, source=source)
        elif kind == "html":
            findings = html.read(body, url, source=source)
        elif kind == "json":
            findings = jsonkeys.read(body, url, source=source)
        elif kind == "xml":
            findings = xml.read(body, url, source=source)
        elif kind == "sourcemap":

            def original(content: bytes, map_url: str, path: str) -> FileFindings:
                return _read(kind_of(content, path, None), content, map_url, path, secrets)

            findings = sourcemap.read(body, url, original, source=source)
            if findings is not None:
                return findings  # secrets were looked for in each original file
            findings = jsonkeys.read(body, url, source=source)
    if findings is None:
        findings = fallback.read(body, url, source=source)
    if secrets:
        findings.secrets = secret_rules.find(body.decode("utf-8", "replace"), source)
    return findings


def extract_file(body: bytes, url: str, mime: str | None = None, *, secrets: bool = False) -> FileFindings:
    """Everything found in one file, resolved against ``url``."""
    kind = kind_of(body, url, mime)
    if kind == "skipped":
        return FileFindings(reader="skipped")
    truncated = len(body) > MAX_BYTES
    findings = _read(kind, body[:MAX_BYTES] if truncated else body, url, None, secrets)
    findings.truncated = truncated
    return findings

"""Pick a reader for a file and run it (placeholder: a regex reader for every file).

This first version is the interface only: every file goes through one regex for
absolute URLs and root-relative paths. The real readers (tree-sitter JavaScript,
an HTML parser, JSON keys, XML, source maps, secrets) replace its body; the
signature stays.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from trawl.mining.findings import Endpoint, FileFindings

_QUOTED = re.compile(
    rb"""["'`]((?:https?:)?//[^"'`\s<>]{3,2000}|/[A-Za-z0-9_\-.~%]+(?:/[^"'`\s<>]*)?)["'`]"""
)


def extract_file(body: bytes, url: str, mime: str | None = None, *, secrets: bool = False) -> FileFindings:
    """Everything found in one file, resolved against ``url``."""
    findings = FileFindings(reader="regex")
    seen: set[str] = set()
    for match in _QUOTED.finditer(body):
        raw = match.group(1).decode("utf-8", "replace")
        absolute = urljoin(url, raw)
        if absolute in seen:
            continue
        seen.add(absolute)
        query = tuple(sorted({p.split("=", 1)[0] for p in urlsplit(absolute).query.split("&") if p}))
        line = body.count(b"\n", 0, match.start()) + 1
        findings.endpoints.append(Endpoint(url=absolute, how="regex", query=query, line=line))
    return findings

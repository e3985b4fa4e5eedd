"""Regexes, for files no parser can read (broken JavaScript, unknown types, files over the parse cap).

Quoted strings go through the same precision policy as a parser's literals; in a file
that is not code (``text/plain``, a log, a CSV) bare absolute ``http(s)`` URLs count
too. Every pattern is bounded (no nested quantifiers, at most 2,048 characters a
match), so a 100 MB line costs one linear scan per pattern.
"""

from __future__ import annotations

import re

from trawl.mining.collect import Collector
from trawl.mining.findings import FileFindings
from trawl.mining.policy import api_like
from trawl.mining.readers.javascript import SOURCE_MAPPING_URL
from trawl.mining.resolve import EXPR, Lines, collapse

_QUOTED = re.compile(rb"""(["'`])([^"'`\s<>\\]{2,2048})\1""")
_SUBSTITUTION = re.compile(r"\$\{[^}]{0,200}\}")
_BARE_URL = re.compile(
    rb"""(?<![\w/"'`=])https?://[A-Za-z0-9.\-]{1,253}(?::\d{1,5})?(?:/[^\s"'`<>()\[\]{}|\\^]{0,2000})?"""
)


def read(body: bytes, url: str, *, source: str | None = None) -> FileFindings:
    collector = Collector(url, source)
    lines = Lines(body)
    for match in _QUOTED.finditer(body):
        value = match.group(2).decode("utf-8", "replace")
        if "${" in value:  # a template literal: its substitutions are unknown parts
            value = collapse(_SUBSTITUTION.sub(EXPR, value))
        if api_like(value):
            collector.add(value, "regex", lines.line(match.start()))
    for match in _BARE_URL.finditer(body):
        value = match.group(0).decode("utf-8", "replace").rstrip(".,;:!?")
        if api_like(value):
            collector.add(value, "regex", lines.line(match.start()))
    for match in SOURCE_MAPPING_URL.finditer(body):
        collector.add(match.group(1).decode("utf-8", "replace"), "sourcemap", lines.line(match.start()))
    return collector.findings("regex")

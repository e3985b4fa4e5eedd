"""The search language's patterns as SQL ``LIKE`` patterns: one translation for both SQL stores.

``LIKE`` with ``ESCAPE '\\'`` is the same in SQLite and PostgreSQL, so the
SQLite and PostgreSQL stores' query translators (each in its own package,
with its dialect's columns and functions) share this one step.
"""

from __future__ import annotations

_WILDCARDS = {"*": "%", "?": "_"}
_LIKE_SPECIALS = "%_\\"


def like_pattern(pattern: str) -> str:
    """A tree pattern (:class:`~trawl.search.tree.Pattern`: ``*``, ``?``, ``\\`` escapes) for ``LIKE``."""
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            char = pattern[i + 1]
            out.append("\\" + char if char in _LIKE_SPECIALS else char)
            i += 2
            continue
        out.append(_WILDCARDS.get(char) or ("\\" + char if char in _LIKE_SPECIALS else char))
        i += 1
    return "".join(out)

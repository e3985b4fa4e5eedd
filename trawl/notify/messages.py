"""The text a notification says; each kind of receiver (:mod:`.receivers`) sends it its way.

The text is :func:`message_text`: a headline, one line per source, and the
new URLs listed (the first ``NOTIFY_MAX_URLS``), cut to the receiver's limit
with a last line saying how many were left out::

    trawl: example.com: complete, 3 new URLs
    wayback: complete, 5 URLs, 3 new, 0 errors
    New URLs:
    https://example.com/a
    ...
"""

from __future__ import annotations

from trawl.common.counts import counted
from trawl.run.summary import RunSummary


def message_text(summary: RunSummary, limit: int | None = None) -> str:
    """The summary as a short message, at most ``limit`` characters."""
    head = f"trawl: {summary.domain or 'crawl'}: {summary.outcome}, {counted(summary.new_count, 'new URL')}"
    lines = [head]
    for s in summary.sources:
        urls, errors = counted(s.urls, "URL"), counted(s.errors, "error")
        lines.append(f"{s.source}: {s.outcome}, {urls}, {s.new_urls:,} new, {errors}")
    urls = list(summary.new_urls)
    if not urls:
        return cut_text("\n".join(lines), limit)
    lines.append("New URLs:")
    more = summary.more_new_urls
    while True:
        tail = [f"... and {more:,} more"] if more else []
        text = "\n".join(lines + urls + tail)
        if limit is None or len(text) <= limit or not urls:
            return cut_text(text, limit)
        urls.pop()
        more += 1


def cut_text(text: str, limit: int | None) -> str:
    """``text`` in at most ``limit`` characters (``None``: no limit), the last ``…`` when cut."""
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"

"""What each kind of receiver is sent: the payload builders.

* ``webhook``: :meth:`RunSummary.as_dict`, the whole summary as JSON;
* ``slack``: ``{"text": TEXT}`` (Slack's incoming webhooks; Mattermost and
  Rocket.Chat take the same);
* ``discord``: ``{"content": TEXT}``, at most 2,000 characters (Discord's limit);
* ``telegram``: ``{"chat_id": CHAT_ID, "text": TEXT, "disable_web_page_preview": true}``,
  at most 4,096 characters.

``TEXT`` is :func:`message_text`: a headline, one line per source, and the
new URLs listed (the first ``NOTIFY_MAX_URLS``), cut to the receiver's limit
with a last line saying how many were left out::

    trawl: example.com: complete, 3 new URLs
    wayback: complete, 5 URLs, 3 new, 0 errors
    New URLs:
    https://example.com/a
    ...
"""

from __future__ import annotations

from typing import Any

from trawl.notify.targets import Receiver
from trawl.run.counts import counted
from trawl.run.summary import RunSummary

#: Longest text each kind takes (None: no limit trawl needs to mind).
TEXT_LIMITS: dict[str, int | None] = {"slack": 40_000, "discord": 2_000, "telegram": 4_096, "webhook": None}


def message_text(summary: RunSummary, limit: int | None = None) -> str:
    """The summary as a short message, at most ``limit`` characters."""
    head = f"trawl: {summary.domain or 'crawl'}: {summary.outcome}, {counted(summary.new_count, 'new URL')}"
    lines = [head]
    for s in summary.sources:
        urls, errors = counted(s.urls, "URL"), counted(s.errors, "error")
        lines.append(f"{s.source}: {s.outcome}, {urls}, {s.new_urls:,} new, {errors}")
    urls = list(summary.new_urls)
    if not urls:
        return _cut("\n".join(lines), limit)
    lines.append("New URLs:")
    more = summary.more_new_urls
    while True:
        tail = [f"... and {more:,} more"] if more else []
        text = "\n".join(lines + urls + tail)
        if limit is None or len(text) <= limit or not urls:
            return _cut(text, limit)
        urls.pop()
        more += 1


def _cut(text: str, limit: int | None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def payload(receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
    """The JSON body a receiver of this kind is sent."""
    if receiver.kind == "webhook":
        return summary.as_dict()
    text = message_text(summary, TEXT_LIMITS[receiver.kind])
    if receiver.kind == "slack":
        return {"text": text}
    if receiver.kind == "discord":
        return {"content": text}
    return {"chat_id": receiver.chat_id, "text": text, "disable_web_page_preview": True}

"""The built-in notifier: a message when a run ends, to webhooks, Slack, Discord, Telegram.

Implements ``trawl_run_finished``: with ``NOTIFY_URLS`` empty it does nothing.
Otherwise, when ``NOTIFY_ON`` says the run is worth a message (``always``;
``new``: it added URLs to the store; ``error``: its exit status is not 0;
several may be given, ``new,error``), it posts the summary to every receiver at
once, each in the form its kind takes (:mod:`.messages`), within
``NOTIFY_TIMEOUT`` (:mod:`.send`). Receivers and their secrets: :mod:`.targets`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trawl import hookimpl
from trawl.errors import TrawlUsageError
from trawl.notify.messages import message_text, payload
from trawl.notify.send import post_all
from trawl.notify.targets import read_receivers
from trawl.sources.arguments import split_list

if TYPE_CHECKING:
    from trawl.run.summary import RunSummary

NOTIFY_ON = ("always", "new", "error")

__all__ = ["NOTIFY_ON", "message_text", "payload", "read_notify_on", "should_notify", "trawl_run_finished"]


def read_notify_on(value: object) -> frozenset[str]:
    """``NOTIFY_ON``: one of :data:`NOTIFY_ON`, or several, comma-separated or as a list."""
    chosen = frozenset(word.lower() for word in split_list(value))
    unknown = sorted(chosen - set(NOTIFY_ON))
    if not chosen or unknown:
        raise TrawlUsageError(f"NOTIFY_ON must be one or more of {', '.join(NOTIFY_ON)}, got {value!r}")
    return chosen


def should_notify(on: frozenset[str], summary: RunSummary) -> bool:
    return "always" in on or ("new" in on and summary.new_count > 0) or ("error" in on and not summary.ok)


@hookimpl
def trawl_run_finished(summary: RunSummary) -> None:
    settings = summary.settings
    receivers = read_receivers(settings)
    if not receivers or not should_notify(read_notify_on(settings.get("NOTIFY_ON")), summary):
        return
    bodies = [(receiver, payload(receiver, summary)) for receiver in receivers]
    post_all(bodies, settings.getfloat("NOTIFY_TIMEOUT"), str(settings.get("USER_AGENT") or "trawl"))

"""The built-in notifier: a message when a run ends, to webhooks, Slack, Discord, Telegram.

Implements ``trawl_run_finished``: with ``NOTIFY_URLS`` empty it does nothing.
Otherwise, when ``NOTIFY_ON`` says the run is worth a message (``always``;
``new``: it added URLs to the store; ``error``: its exit status is not 0;
several may be given, ``new,error``), it posts the summary to every receiver at
once, each in the form its kind takes (:mod:`.receivers`), within
``NOTIFY_TIMEOUT`` (:mod:`.send`). Which kind each entry is, and its secrets:
:mod:`.targets`. It registers trawl's kinds through ``trawl_register_notifiers``,
as a plugin registers its own, and declares the settings it reads
(:data:`settings_declared`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from trawl import hookimpl
from trawl.errors import TrawlUsageError
from trawl.notify.messages import message_text
from trawl.notify.receivers import BUILTIN_RECEIVERS, ReceiverKind
from trawl.notify.send import post_all
from trawl.notify.targets import payload, read_receivers
from trawl.settings_checks import Setting, read, seconds
from trawl.sources.arguments import split_list

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from trawl.run.summary import RunSummary

NOTIFY_ON = ("always", "new", "error")

__all__ = [
    "NOTIFY_ON",
    "message_text",
    "payload",
    "read_notify_on",
    "settings_declared",
    "should_notify",
    "trawl_register_notifiers",
    "trawl_run_finished",
]


def read_notify_on(value: object) -> frozenset[str]:
    """``NOTIFY_ON``: one of :data:`NOTIFY_ON`, or several, comma-separated or as a list."""
    chosen = frozenset(word.lower() for word in split_list(value))
    unknown = sorted(chosen - set(NOTIFY_ON))
    if not chosen or unknown:
        raise TrawlUsageError(f"NOTIFY_ON must be one or more of {', '.join(NOTIFY_ON)}, got {value!r}")
    return chosen


def _check_urls(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    """Every receiver a kind trawl can notify; their tokens registered as secrets there and then."""
    read_receivers(settings)


def _check_on(settings: BaseSettings, name: str, sources: Collection[str] | None) -> None:
    read_notify_on(settings.get(name))


#: The settings this plugin reads (``NOTIFY_MAX_URLS`` is the run summary's: trawl.settings).
settings_declared = {
    "NOTIFY_URLS": Setting(
        [],
        _check_urls,
        "receivers: https://... (JSON), slack+https://..., discord+https://..., telegram://TOKEN@CHAT_ID",
    ),
    "NOTIFY_ON": Setting(
        "always", _check_on, "always, new (the run added URLs), error (exit status not 0); or several"
    ),
    "NOTIFY_TIMEOUT": Setting(
        5.0,
        seconds(0, above=True, maximum=300),
        "seconds for all receivers together, at most 300: the process waits this long after the crawl, "
        "and a webhook that has not answered in five minutes is down",
    ),
}


def should_notify(on: frozenset[str], summary: RunSummary) -> bool:
    return "always" in on or ("new" in on and summary.new_count > 0) or ("error" in on and not summary.ok)


@hookimpl
def trawl_register_notifiers() -> dict[str, type[ReceiverKind]]:
    return {kind.name: kind for kind in BUILTIN_RECEIVERS}


@hookimpl
def trawl_run_finished(summary: RunSummary) -> None:
    settings = summary.settings
    receivers = read_receivers(settings)
    if not receivers or not should_notify(
        read_notify_on(read(settings, settings_declared, "NOTIFY_ON")), summary
    ):
        return
    bodies = [(receiver, payload(receiver, summary)) for receiver in receivers]
    timeout = float(read(settings, settings_declared, "NOTIFY_TIMEOUT"))
    post_all(bodies, timeout, str(settings.get("USER_AGENT") or "trawl"))

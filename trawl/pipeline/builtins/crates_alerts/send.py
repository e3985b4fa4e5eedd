"""Evaluating the watch rules against a store and sending what fired, as crawl notifications go.

The receivers are ``NOTIFY_URLS``' (:func:`trawl.notify.targets.read_receivers`:
their tokens registered as secrets before anything is logged), each sent the
body its kind builds for a message (``message_payload``: Slack's ``text``,
Discord's ``content``, Telegram's ``sendMessage``, a webhook's JSON with every
event), posted by :func:`trawl.notify.send.post_all`: all at once, within
``NOTIFY_TIMEOUT``, no redirect followed, a failure one WARNING line naming the
receiver by kind and host. ``NOTIFY_ON`` is the run summary's, not the alerts':
an alert is sent whenever one fires. Without receivers the alerts are INFO lines.

The state is saved once the events are posted (or logged): an alert fires once,
whether or not a receiver was up to take it, as a run's summary is sent once.
"""

from __future__ import annotations

import logging
from typing import Any

from trawl.commands._crates_questions.layers import StoreLayer
from trawl.notify import settings_declared as notify_settings
from trawl.notify.send import post_all
from trawl.notify.targets import read_receivers
from trawl.pipeline.builtins.crates_alerts.events import Event, evaluate
from trawl.pipeline.builtins.crates_alerts.rules import (
    load_rules,
    load_state,
    save_state,
    state_path,
    watch_path,
)
from trawl.pipeline.manager import plugin_manager_from_settings
from trawl.settings_checks import read
from trawl.stores.registry import describe_store_uri, store_class

logger = logging.getLogger("trawl.crates.alerts")


def alert_text(events: list[Event]) -> str:
    head = f"trawl: crates.io: {len(events)} alert{'s' if len(events) != 1 else ''}"
    return "\n".join([head, *(event.text() for event in events)])


def check_alerts(settings: Any, uri: str, send: bool = True) -> list[Event]:
    """Evaluate the rules of ``CRATES_WATCH_FILE`` against the store ``uri``; send and remember what fired."""
    rules_file = watch_path(settings.get("CRATES_WATCH_FILE"))
    rules = load_rules(rules_file)
    if rules.empty:
        return []
    plugins = plugin_manager_from_settings(settings)
    klass = store_class(uri, plugins, needs=("read_kinds",))
    store = describe_store_uri(uri, plugins)
    states = state_path(rules_file)
    events, state = evaluate(StoreLayer(klass, uri, settings), rules, load_state(states, store))
    if events and send:
        deliver(events, settings)
    save_state(states, store, state)
    return events


def deliver(events: list[Event], settings: Any) -> None:
    """Post the events to every receiver of ``NOTIFY_URLS``; INFO lines when there is none."""
    text = alert_text(events)
    receivers = read_receivers(settings)
    if not receivers:
        for event in events:
            logger.info("crates alert: %s", event.text())
        return
    data = {"event": "trawl.crates_alerts", "text": text, "alerts": [e.as_dict() for e in events]}
    bodies = []
    for receiver in receivers:
        assert receiver.handler is not None
        bodies.append((receiver, receiver.handler.message_payload(receiver, text, data)))
    timeout = float(read(settings, notify_settings, "NOTIFY_TIMEOUT"))
    post_all(bodies, timeout, str(settings.get("USER_AGENT") or "trawl"))

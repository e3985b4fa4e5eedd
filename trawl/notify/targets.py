"""``NOTIFY_URLS``: where notifications go, which kind each is, and its secrets.

One entry per receiver; its kind (:mod:`trawl.notify.receivers`, extended by
plugins through ``trawl_register_notifiers``) comes from a scheme a kind owns
(``telegram://TOKEN@CHAT_ID``), a ``KIND+https://`` prefix
(``slack+https://...``, ``json+https://...`` for ``webhook``), else from the
host (``https://hooks.slack.com/...`` is ``slack``), else it is ``webhook``:
the summary as JSON, posted to the URL.

Whatever identifies a receiver is a secret (a Slack or Discord webhook's path
*is* its token, a generic webhook may carry one in its query or user info, a
Telegram bot token): every such part is registered with
:mod:`trawl.common.secrets` as soon as the setting is read (the settings check, before
any crawler exists), so no log line, stat or error shows it. Receivers are
named in logs by kind and host only (``slack (hooks.slack.com)``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from trawl.common.secrets import register_secret
from trawl.errors import TrawlUsageError
from trawl.notify.receivers import Receiver, ReceiverKind, WebhookReceiver
from trawl.run.summary import RunSummary

__all__ = ["Receiver", "forms", "payload", "read_entries", "read_receivers", "receiver_kinds"]


def receiver_kinds(settings: Mapping[str, Any]) -> dict[str, type[ReceiverKind]]:
    """Every kind the plugins of these settings register, by name (trawl's own from ``notify``)."""
    from trawl.pipeline.manager import plugin_manager_from_settings

    kinds: dict[str, type[ReceiverKind]] = {}
    for registered in plugin_manager_from_settings(settings).hook.trawl_register_notifiers():
        for name, kind in (registered or {}).items():
            known = kinds.get(name)
            if known is not None and known is not kind:
                raise TrawlUsageError(
                    f"two notifier kinds are named {name!r}: {known.__module__} and {kind.__module__}"
                )
            kinds[name] = kind
    return kinds


def forms(kinds: Mapping[str, type[ReceiverKind]]) -> str:
    """How entries are written, for error messages."""
    shown = [kind.form or f"{name}+https://..." for name, kind in kinds.items()]
    return ", ".join(shown) or "no notifier kind is registered"


def read_entries(settings: Mapping[str, Any], kinds: Mapping[str, type[ReceiverKind]]) -> list[str]:
    """``NOTIFY_URLS`` from the setting, else the environment: a list, a JSON list, or
    text separated by commas, spaces or newlines."""
    raw = settings.get("NOTIFY_URLS")
    if not raw:
        raw = os.environ.get("NOTIFY_URLS", "")
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("["):
            try:
                raw = json.loads(text)
            except ValueError:
                raise TrawlUsageError("NOTIFY_URLS is not a valid JSON list") from None
        else:
            raw = re.split(r"[\s,]+", text)
    if not isinstance(raw, list | tuple) or not all(isinstance(v, str) for v in raw):
        raise TrawlUsageError(f"NOTIFY_URLS takes a list of URLs ({forms(kinds)})")
    return [entry.strip() for entry in raw if entry and entry.strip()]


def read_receivers(settings: Mapping[str, Any]) -> list[Receiver]:
    """Every receiver of ``NOTIFY_URLS``, its secrets registered; ``TrawlUsageError`` for a bad one."""
    raw = settings.get("NOTIFY_URLS") or os.environ.get("NOTIFY_URLS", "")
    if not raw:
        return []
    kinds = receiver_kinds(settings)
    entries = read_entries(settings, kinds)
    picked = [_pick(entry, kinds) for entry in entries]
    for entry, (kind, _) in zip(entries, picked, strict=True):
        # all of them first: an error about the second must not show the first
        for secret in (kind or WebhookReceiver).secrets(entry):
            register_secret(secret)
    receivers = []
    for entry, (kind, url) in zip(entries, picked, strict=True):
        if kind is None:
            raise TrawlUsageError(f"NOTIFY_URLS: {url} is not a kind trawl can notify (use {forms(kinds)})")
        receivers.append(kind.parse(entry, url, settings))
    return receivers


def _pick(entry: str, kinds: Mapping[str, type[ReceiverKind]]) -> tuple[type[ReceiverKind] | None, str]:
    """The kind of an entry and the http(s) URL in it; ``(None, "SCHEME://")`` for no kind."""
    scheme, sep, rest = entry.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise TrawlUsageError(f"NOTIFY_URLS: an entry is not a URL (use {forms(kinds)})")
    for kind in kinds.values():
        if scheme in kind.schemes:
            return kind, entry
    name, plus, transport = scheme.partition("+")
    if plus:
        for kind_name, kind in kinds.items():
            if name in (kind_name, *kind.prefixes) and transport in ("http", "https") and not kind.schemes:
                return kind, f"{transport}://{rest}"
        return None, f"{scheme}://"
    if scheme not in ("http", "https"):
        return None, f"{scheme}://"
    parts = urlsplit(entry)
    for kind in kinds.values():
        if kind.claims(parts):
            return kind, entry
    return kinds.get(WebhookReceiver.name), entry


def payload(receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
    """The JSON body a receiver is sent, as its kind builds it."""
    assert receiver.handler is not None
    return receiver.handler.payload(receiver, summary)

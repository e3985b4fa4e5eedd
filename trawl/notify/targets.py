"""``NOTIFY_URLS``: where notifications go, which kind each is, and its secrets.

One entry per receiver; the kind comes from a scheme prefix, or else from the
host:

* ``https://host/path``: ``webhook``, the summary as JSON, posted to the URL;
  ``json+https://...`` names the kind explicitly;
* ``slack+https://...``, or any ``https://hooks.slack.com/...``: ``slack``;
* ``discord+https://...``, or ``https://discord.com/api/webhooks/...``: ``discord``;
* ``telegram://TOKEN@CHAT_ID``: ``telegram``, posted to
  ``TELEGRAM_API_BASE_URL/botTOKEN/sendMessage``.

Whatever identifies a receiver is a secret (a Slack or Discord webhook's path
*is* its token, a generic webhook may carry one in its query or user info, a
Telegram bot token): every such part is registered with
:mod:`trawl.run.secrets` as soon as the setting is read (the settings check, before
any crawler exists), so no log line, stat or error shows it. Receivers are
named in logs by kind and host only (``slack (hooks.slack.com)``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from trawl.errors import TrawlUsageError
from trawl.run.secrets import register_secret

KINDS = ("webhook", "slack", "discord", "telegram")
_PREFIXES = {"json": "webhook", "webhook": "webhook", "slack": "slack", "discord": "discord"}
_DISCORD_HOSTS = ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")
_TOKEN_LIKE = re.compile(r".*\d.*")
FORMS = "https://..., slack+https://..., discord+https://..., json+https://... or telegram://TOKEN@CHAT_ID"


@dataclass(frozen=True)
class Receiver:
    """One entry of ``NOTIFY_URLS``: its kind, where to post, how logs name it."""

    kind: str
    url: str
    label: str
    chat_id: str = ""


def read_entries(settings: Mapping[str, Any]) -> list[str]:
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
        raise TrawlUsageError(f"NOTIFY_URLS takes a list of URLs ({FORMS})")
    return [entry.strip() for entry in raw if entry and entry.strip()]


def read_receivers(settings: Mapping[str, Any]) -> list[Receiver]:
    """Every receiver of ``NOTIFY_URLS``, its secrets registered; ``TrawlUsageError`` for a bad one."""
    entries = read_entries(settings)
    for entry in entries:  # all of them first: an error about the second must not show the first
        _register_parts(entry)
    base = str(settings.get("TELEGRAM_API_BASE_URL") or "").rstrip("/")
    return [parse_entry(entry, base) for entry in entries]


def parse_entry(entry: str, telegram_base: str) -> Receiver:
    scheme, sep, rest = entry.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise TrawlUsageError(f"NOTIFY_URLS: an entry is not a URL (use {FORMS})")
    if scheme == "telegram":
        token, at, chat = rest.partition("@")
        chat = chat.rstrip("/")
        if not at or not token or not chat:
            raise TrawlUsageError("NOTIFY_URLS: a telegram entry takes the form telegram://TOKEN@CHAT_ID")
        register_secret(token)
        return Receiver("telegram", f"{telegram_base}/bot{token}/sendMessage", "telegram", chat)
    kind, plus, transport = scheme.partition("+")
    if plus:
        if kind not in _PREFIXES or transport not in ("http", "https"):
            raise TrawlUsageError(f"NOTIFY_URLS: {scheme}:// is not a kind trawl can notify (use {FORMS})")
        kind, url = _PREFIXES[kind], f"{transport}://{rest}"
    elif scheme in ("http", "https"):
        kind, url = "webhook", entry
    else:
        raise TrawlUsageError(f"NOTIFY_URLS: {scheme}:// is not a kind trawl can notify (use {FORMS})")
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not host:
        raise TrawlUsageError(f"NOTIFY_URLS: a {kind} entry has no host (use {FORMS})")
    if not plus and host == "hooks.slack.com":
        kind = "slack"
    elif not plus and host in _DISCORD_HOSTS and parts.path.startswith("/api/webhooks/"):
        kind = "discord"
    shown = host if parts.port is None else f"{host}:{parts.port}"
    return Receiver(kind, url, f"{kind} ({shown})")


def _register_parts(entry: str) -> None:
    """Register what in an entry could be a token: the entry, its user info, path and query values."""
    register_secret(entry)
    scheme, _, rest = entry.partition("://")
    if scheme.lower() == "telegram":
        token = rest.partition("@")[0]
        register_secret(token)
        register_secret(token.partition(":")[2])
        return
    parts = urlsplit(entry.partition("+")[2] if "+" in scheme else entry)
    register_secret(parts.password)
    register_secret(parts.path.rstrip("/"))
    for segment in parts.path.split("/"):
        # Tokens, not words: "services" or "webhooks" stay readable.
        if len(segment) >= 20 or (len(segment) >= 8 and _TOKEN_LIKE.fullmatch(segment)):
            register_secret(segment)
    register_secret(parts.query)
    for _, value in parse_qsl(parts.query, keep_blank_values=False):
        register_secret(value)

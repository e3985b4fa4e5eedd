"""The kinds of receiver trawl can notify: one class per kind, registered by name.

A kind says which ``NOTIFY_URLS`` entries are its own (a scheme such as
``telegram://``, a ``NAME+https://`` prefix, or a host it recognises in a plain
``https://`` URL), turns an entry into a :class:`Receiver` (where to post, how
logs name it), says which parts of an entry are secrets, and builds the JSON
body it is sent. trawl's four (``webhook``, ``slack``, ``discord``,
``telegram``) are registered through ``trawl_register_notifiers`` by the
``notify`` plugin, as a third-party plugin registers its own; a plugin's kind
may declare settings of its own (``settings_declared``), as
:class:`TelegramReceiver` does for ``TELEGRAM_API_BASE_URL``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import SplitResult, parse_qsl, unquote, urlsplit

from trawl.errors import TrawlUsageError
from trawl.notify.messages import cut_text, message_text
from trawl.run.summary import RunSummary
from trawl.settings_checks import Setting, http_url, read

_TOKEN_LIKE = re.compile(r".*\d.*")


@dataclass(frozen=True)
class Receiver:
    """One entry of ``NOTIFY_URLS``: its kind, where to post, how logs name it."""

    kind: str
    url: str
    label: str
    chat_id: str = ""
    #: Its kind's class, which builds what it is sent.
    handler: type[ReceiverKind] | None = field(default=None, compare=False, repr=False)


class ReceiverKind:
    """A kind of receiver. Subclass it, set :attr:`name`, and register it with
    ``trawl_register_notifiers`` (``{name: class}``).

    The defaults fit a receiver reached by an http(s) webhook URL: override
    :meth:`payload` at least; :meth:`parse` and :meth:`secrets` for an entry
    that is not an http(s) URL (``telegram://TOKEN@CHAT_ID``).
    """

    #: The kind's name: in logs (``slack (hooks.slack.com)``) and as its ``NAME+https://`` prefix.
    name: ClassVar[str] = ""
    #: Further ``PREFIX+https://`` prefixes that pick this kind (``json`` for ``webhook``).
    prefixes: ClassVar[tuple[str, ...]] = ()
    #: Whole schemes this kind owns (``telegram`` for ``telegram://...``).
    schemes: ClassVar[tuple[str, ...]] = ()
    #: How an entry of this kind is written, for error messages.
    form: ClassVar[str] = ""
    #: Longest text this kind takes (``None``: no limit trawl needs to mind).
    text_limit: ClassVar[int | None] = None
    #: Settings this kind reads, with their defaults and checks (:mod:`trawl.settings_checks`).
    settings_declared: ClassVar[Mapping[str, Setting]] = {}

    @classmethod
    def claims(cls, parts: SplitResult) -> bool:
        """A plain ``https://`` entry this kind recognises by its host (Slack's hooks host)."""
        return False

    @classmethod
    def parse(cls, entry: str, url: str, settings: Mapping[str, Any]) -> Receiver:
        """The receiver of an entry picked for this kind; ``url`` is the http(s) URL in it."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        if not host:
            raise TrawlUsageError(f"NOTIFY_URLS: a {cls.name} entry has no host")
        shown = host if parts.port is None else f"{host}:{parts.port}"
        return Receiver(cls.name, url, f"{cls.name} ({shown})", handler=cls)

    @classmethod
    def secrets(cls, entry: str) -> Iterable[str | None]:
        """What in an entry could be a token: the entry, its user info, path and query values.

        A Slack or Discord webhook's path *is* its token; a generic webhook may
        carry one in its query or user info. A password is masked as written and
        decoded (``p%40ss`` is sent as ``p@ss`` in the basic auth header).
        """
        yield entry
        scheme = entry.partition("://")[0]
        parts = urlsplit(entry.partition("+")[2] if "+" in scheme else entry)
        yield parts.password
        yield unquote(parts.password or "")
        yield parts.path.rstrip("/")
        for segment in parts.path.split("/"):
            # Tokens, not words: "services" or "webhooks" stay readable.
            if len(segment) >= 20 or (len(segment) >= 8 and _TOKEN_LIKE.fullmatch(segment)):
                yield segment
        yield parts.query
        for _, value in parse_qsl(parts.query, keep_blank_values=False):
            yield value

    @classmethod
    def payload(cls, receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
        """The JSON body this kind is sent."""
        raise NotImplementedError

    @classmethod
    def message_payload(cls, receiver: Receiver, text: str, data: dict[str, Any]) -> dict[str, Any]:
        """The JSON body of a message that is not a run's summary (the crates alerts): ``text`` for
        a chat, ``data`` (which holds the text too) for a machine. ``data`` unless a kind says otherwise."""
        return data


class WebhookReceiver(ReceiverKind):
    """Any http(s) URL: :meth:`RunSummary.as_dict`, the whole summary as JSON."""

    name = "webhook"
    prefixes = ("json",)
    form = "https://... or json+https://..."

    @classmethod
    def payload(cls, receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
        return summary.as_dict()


class SlackReceiver(ReceiverKind):
    """``{"text": TEXT}``: Slack's incoming webhooks (Mattermost and Rocket.Chat take the same)."""

    name = "slack"
    form = "slack+https://..."
    text_limit = 40_000

    @classmethod
    def claims(cls, parts: SplitResult) -> bool:
        return (parts.hostname or "").lower() == "hooks.slack.com"

    @classmethod
    def payload(cls, receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
        return {"text": message_text(summary, cls.text_limit)}

    @classmethod
    def message_payload(cls, receiver: Receiver, text: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"text": cut_text(text, cls.text_limit)}


class DiscordReceiver(ReceiverKind):
    """``{"content": TEXT}``, at most 2,000 characters (Discord's limit)."""

    name = "discord"
    form = "discord+https://..."
    text_limit = 2_000
    hosts = ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")

    @classmethod
    def claims(cls, parts: SplitResult) -> bool:
        return (parts.hostname or "").lower() in cls.hosts and parts.path.startswith("/api/webhooks/")

    @classmethod
    def payload(cls, receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
        return {"content": message_text(summary, cls.text_limit)}

    @classmethod
    def message_payload(cls, receiver: Receiver, text: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"content": cut_text(text, cls.text_limit)}


class TelegramReceiver(ReceiverKind):
    """``telegram://TOKEN@CHAT_ID``, posted to ``TELEGRAM_API_BASE_URL/botTOKEN/sendMessage``:
    ``{"chat_id": CHAT_ID, "text": TEXT, "disable_web_page_preview": true}``, at most 4,096 characters."""

    name = "telegram"
    schemes = ("telegram",)
    form = "telegram://TOKEN@CHAT_ID"
    text_limit = 4_096
    settings_declared = {
        "TELEGRAM_API_BASE_URL": Setting(
            "https://api.telegram.org", http_url(), "the Bot API that telegram:// receivers are posted to"
        ),
    }

    @classmethod
    def parse(cls, entry: str, url: str, settings: Mapping[str, Any]) -> Receiver:
        token, at, chat = entry.partition("://")[2].partition("@")
        chat = chat.rstrip("/")
        if not at or not token or not chat:
            raise TrawlUsageError("NOTIFY_URLS: a telegram entry takes the form telegram://TOKEN@CHAT_ID")
        base = str(read(settings, cls.settings_declared, "TELEGRAM_API_BASE_URL")).rstrip("/")
        return Receiver(cls.name, f"{base}/bot{token}/sendMessage", cls.name, chat, handler=cls)

    @classmethod
    def secrets(cls, entry: str) -> Iterable[str | None]:
        token = entry.partition("://")[2].partition("@")[0]
        return (entry, token, token.partition(":")[2])

    @classmethod
    def payload(cls, receiver: Receiver, summary: RunSummary) -> dict[str, Any]:
        return cls.message_payload(receiver, message_text(summary, cls.text_limit), {})

    @classmethod
    def message_payload(cls, receiver: Receiver, text: str, data: dict[str, Any]) -> dict[str, Any]:
        text = cut_text(text, cls.text_limit)
        return {"chat_id": receiver.chat_id, "text": text, "disable_web_page_preview": True}


#: trawl's own kinds, in the order a plain ``https://`` entry is offered to them (webhook last).
BUILTIN_RECEIVERS: tuple[type[ReceiverKind], ...] = (
    SlackReceiver,
    DiscordReceiver,
    TelegramReceiver,
    WebhookReceiver,
)

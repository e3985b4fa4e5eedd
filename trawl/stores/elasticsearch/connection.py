"""Where ``STORE_URI`` points and how the store talks to it: URI, clients, one-line failures.

``elasticsearch://host:9200`` is plain HTTP, ``elasticsearch+https://user:pass@host:9200``
TLS with basic auth; an API key comes from ``ELASTICSEARCH_API_KEY``. Secrets are
registered with :mod:`trawl.common.secrets` so that no log line shows them.

The ``elasticsearch`` client is imported when a client is made, not when the
plugin is loaded: every ``scrapy`` command loads the plugins, few talk to a cluster.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from trawl.common.secrets import register_secret
from trawl.errors import StoreError, TrawlUsageError
from trawl.stores.elasticsearch.config import setting, setting_bool

DEFAULT_PORT = 9200
#: How long the first request (``GET /``) may take: an unreachable cluster is one
#: line after at most this long, whatever ``ELASTICSEARCH_TIMEOUT`` is.
CONNECT_TIMEOUT = 10.0


@dataclass(frozen=True)
class EsTarget:
    """Where ``STORE_URI`` points: the node URL (no credentials) and the basic auth."""

    url: str
    basic_auth: tuple[str, str] | None

    @property
    def shown(self) -> str:
        return self.url


def parse_uri(uri: str) -> EsTarget:
    """``elasticsearch://h:9200``, ``elasticsearch+https://user:pass@h:9200`` -> node URL and auth."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme in ("elasticsearch", "elasticsearch+http"):
        http = "http"
    elif scheme == "elasticsearch+https":
        http = "https"
    else:
        raise TrawlUsageError(
            f"STORE_URI {hide(uri)!r}: use elasticsearch://host:9200 or elasticsearch+https://host:9200"
        )
    try:
        host = parts.hostname
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise TrawlUsageError(f"STORE_URI {hide(uri)!r}: {exc}") from None
    if not host:
        raise TrawlUsageError(f"STORE_URI {hide(uri)!r} names no host (elasticsearch://host:9200)")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise TrawlUsageError(
            f"STORE_URI {hide(uri)!r}: an Elasticsearch URI is scheme://[user:password@]host[:port] only"
            " (the index prefix is the ELASTICSEARCH_INDEX_PREFIX setting)"
        )
    shown_host = f"[{host}]" if ":" in host else host
    auth = None
    if parts.username is not None:
        auth = (unquote(parts.username), unquote(parts.password or ""))
        register_secret(auth[1])
    return EsTarget(f"{http}://{shown_host}:{port}", auth)


def hide(uri: str) -> str:
    """``uri`` with its password masked, for messages."""
    parts = urlsplit(uri)
    if parts.password:
        return uri.replace(f":{parts.password}@", ":***@", 1)
    return uri


def _api_key(settings: Any) -> str:
    key = str(setting(settings, "ELASTICSEARCH_API_KEY") or os.environ.get("ELASTICSEARCH_API_KEY", ""))
    register_secret(key)
    return key


def client_options(uri: str, settings: Any) -> dict[str, Any]:
    """Keyword arguments for ``Elasticsearch(...)`` / ``AsyncElasticsearch(...)``.

    The transport's own retries (immediate, up to 3) serve reads and setup.
    Batch writes switch them off and retry in :mod:`.writer` instead, with
    backoff and knowing what a re-sent bulk request may already have written.
    """
    target = parse_uri(uri)
    options: dict[str, Any] = {
        "hosts": [target.url],
        "request_timeout": float(setting(settings, "ELASTICSEARCH_TIMEOUT")),
        "max_retries": 3,
        "retry_on_timeout": True,
        "retry_on_status": (502, 503, 504),
    }
    if target.basic_auth:
        options["basic_auth"] = target.basic_auth
    key = _api_key(settings)
    if key:
        options["api_key"] = key
    ca_certs = str(setting(settings, "ELASTICSEARCH_CA_CERTS") or "")
    if ca_certs:
        options["ca_certs"] = os.path.expanduser(ca_certs)
    if target.url.startswith("https:"):
        options["verify_certs"] = setting_bool(settings, "ELASTICSEARCH_VERIFY_CERTS")
    try:
        from elasticsearch.serializer import OrjsonSerializer

        options["serializer"] = OrjsonSerializer()
    except ImportError:  # elasticsearch < 8.13 without it
        pass
    return options


def _client_major() -> int:
    from elasticsearch import __versionstr__

    return int(__versionstr__.split(".")[0])


def _compat_transport(base: type) -> type:
    """A transport that asks for the server's major in the compatibility headers.

    The 9.x client sends ``compatible-with=9``, which Elasticsearch 8 refuses;
    both 8 and 9 accept ``compatible-with=8``. The store learns the server's
    major from its first answer and asks for ``min(client, server)``.
    """

    class CompatTransport(base):  # type: ignore[misc,valid-type]
        compat: int | None = 8

        def _fix(self, headers: Any) -> Any:
            compat = self.compat
            if compat is None or headers is None or not hasattr(headers, "items"):
                return headers
            fixed = headers.copy()
            for name, value in headers.items():
                if isinstance(value, str) and "compatible-with=" in value:
                    fixed[name] = value.split("compatible-with=")[0] + f"compatible-with={compat}"
            return fixed

    if inspect.iscoroutinefunction(base.perform_request):

        async def perform_request(self, method, target, **kwargs):  # type: ignore[no-untyped-def]
            if "headers" in kwargs:
                kwargs["headers"] = self._fix(kwargs["headers"])
            return await base.perform_request(self, method, target, **kwargs)

    else:

        def perform_request(self, method, target, **kwargs):  # type: ignore[no-untyped-def]
            if "headers" in kwargs:
                kwargs["headers"] = self._fix(kwargs["headers"])
            return base.perform_request(self, method, target, **kwargs)

    CompatTransport.perform_request = perform_request  # type: ignore[method-assign]
    return CompatTransport


def _quiet_transport_logs() -> None:
    """elastic_transport logs every request (INFO) and every retry with a traceback (WARNING);
    the store reports failures itself, in one line."""
    logging.getLogger("elastic_transport").setLevel(logging.ERROR)


def make_client(uri: str, settings: Any) -> Any:
    """A sync client for ``uri``, not yet connected (see :func:`connect`)."""
    _quiet_transport_logs()
    from elastic_transport import Transport
    from elasticsearch import Elasticsearch

    return Elasticsearch(transport_class=_compat_transport(Transport), **client_options(uri, settings))


def make_async_client(uri: str, settings: Any) -> Any:
    """An ``AsyncElasticsearch`` for ``uri`` (the pipeline awaits its writes on the reactor)."""
    _quiet_transport_logs()
    from elastic_transport import AsyncTransport
    from elasticsearch import AsyncElasticsearch

    return AsyncElasticsearch(
        transport_class=_compat_transport(AsyncTransport), **client_options(uri, settings)
    )


def compat_of(client: Any) -> int:
    """The compatibility major ``client`` asks for (8 until it learnt the server's)."""
    transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
    return getattr(transport, "compat", None) or 8


def set_compat(client: Any, server_major: int) -> None:
    transport = getattr(client, "transport", None) or getattr(client, "_transport", None)
    if transport is not None and hasattr(transport, "compat"):
        transport.compat = min(_client_major(), server_major)


def connect(uri: str, settings: Any) -> Any:
    """A sync client that answered; :class:`StoreError` with one line if the cluster does not."""
    client = make_client(uri, settings)
    shown = parse_uri(uri).shown
    try:
        timeout = min(CONNECT_TIMEOUT, client_options(uri, settings)["request_timeout"])
        answer = client.options(request_timeout=timeout).info()
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line
        client.close()
        raise StoreError(f"cannot reach Elasticsearch at {shown}: {one_line(exc)}") from None
    set_compat(client, int(str(answer["version"]["number"]).split(".")[0]))
    return client


def one_line(exc: BaseException) -> str:
    """One line for an elasticsearch / transport exception."""
    status = getattr(exc, "status_code", None) or getattr(getattr(exc, "meta", None), "status", None)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            message = f"{error.get('type')}: {error.get('reason')}"
    text = f"HTTP {status}: {message}" if isinstance(status, int) else f"{type(exc).__name__}: {message}"
    return " ".join(str(text).split())[:300]

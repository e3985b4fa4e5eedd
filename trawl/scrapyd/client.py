"""A small client for scrapyd's JSON API with basic auth, for ``trawl schedule``.

Standard library only (``urllib``): the command must work where trawl is
installed without the test extras. The password comes from ``--auth``, from
the URL (``http://user:pass@host:6800``, taken out of it before any message
shows the URL) or from ``SCRAPYD_AUTH``; it is registered with
:mod:`trawl.common.secrets`, so no log line or error message can show it.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit
from urllib.request import Request, urlopen

from trawl.common.secrets import redact, register_secret
from trawl.errors import TrawlError, TrawlUsageError

AUTH_ENV = "SCRAPYD_AUTH"


class ScrapydRefused(TrawlUsageError):
    """scrapyd answered ``{"status": "error", ...}``: the input was refused."""


def split_auth(text: str, where: str) -> tuple[str, str]:
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise TrawlUsageError(f"{where} takes USER:PASSWORD")
    register_secret(password)
    return user, password


def resolve(url: str, auth: str | None) -> tuple[str, tuple[str, str] | None]:
    """The URL without credentials, and the basic-auth pair: ``--auth``, the URL's, or ``$SCRAPYD_AUTH``."""
    parts = urlsplit((url or "").strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TrawlUsageError(f"--url takes scrapyd's http(s) URL, e.g. http://localhost:6800, not {url!r}")
    pair = None
    if parts.username is not None:
        pair = (unquote(parts.username), unquote(parts.password or ""))
        register_secret(pair[1])
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    if auth is not None:
        pair = split_auth(auth, "--auth")
    elif pair is None and os.environ.get(AUTH_ENV):
        pair = split_auth(os.environ[AUTH_ENV], AUTH_ENV)
    base = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/", query="", fragment=""))
    return base, pair


class ScrapydClient:
    def __init__(self, url: str, auth: str | None = None, timeout: float = 60.0) -> None:
        self.url, self._auth = resolve(url, auth)
        self.timeout = timeout

    def get(self, endpoint: str, **params: str) -> dict[str, Any]:
        query = f"?{urlencode(params)}" if params else ""
        return self._call(Request(f"{self.url}{endpoint}{query}"), endpoint)

    def post(self, endpoint: str, fields: list[tuple[str, str]]) -> dict[str, Any]:
        return self._call(Request(f"{self.url}{endpoint}", data=urlencode(fields).encode()), endpoint)

    def _call(self, request: Request, endpoint: str) -> dict[str, Any]:
        if self._auth is not None:
            token = base64.b64encode(f"{self._auth[0]}:{self._auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except HTTPError as exc:
            if exc.code == 401:
                how = (
                    "wrong user or password" if self._auth else f"give --auth USER:PASSWORD or set {AUTH_ENV}"
                )
                raise TrawlUsageError(f"scrapyd at {self.url} wants basic auth (HTTP 401): {how}") from None
            if exc.code == 404:
                raise TrawlError(
                    f"scrapyd at {self.url} has no {endpoint}: enable trawl's services in its scrapyd.conf"
                    " (docs/schedules.md)"
                ) from None
            raise TrawlError(f"scrapyd at {self.url} answered HTTP {exc.code} to {endpoint}") from None
        except (URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise TrawlError(f"cannot reach scrapyd at {self.url}: {redact(str(reason))}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise TrawlError(f"scrapyd at {self.url} sent something other than JSON for {endpoint}") from None
        if not isinstance(answer, dict):
            raise TrawlError(f"scrapyd at {self.url} sent an unexpected answer for {endpoint}")
        if answer.get("status") != "ok":
            message = str(answer.get("message") or answer).splitlines()
            raise ScrapydRefused(f"scrapyd refused {endpoint}: {redact(message[-1] if message else '')}")
        return answer

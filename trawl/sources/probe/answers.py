"""One answer as a probe record: status, redirects, headers, title, TLS certificate, hashes.

Pure functions of a Scrapy response (or a failure), so the spider only routes.
Redirects are Scrapy's (``RedirectMiddleware``: each hop passes trawl's
downloader middlewares and the gate like any request); the chain is read from
``redirect_urls`` and ``redirect_reasons``. The TLS certificate is the one
Scrapy's handler (HTTP/1.1 or HTTP/2: :mod:`trawl.politeness.http2`) puts on
``response.certificate`` (Twisted's ``Certificate``, read with
``cryptography``); Scrapy does not verify it, so an expired or self-signed
certificate is reported, not refused. ``protocol`` is what the answer came by.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from scrapy.http import Response, TextResponse

from trawl.politeness.http2 import protocol_name
from trawl.sources.live.redirects import REFUSED
from trawl.sources.probe.fingerprint import sha256_hex, simhash_hex, title_of, visible_words, words_simhash
from trawl.sources.probe.soft404 import echo_free_simhashes

#: request.meta key: the URL as selected from the store (the record's key), before redirects.
PROBE_URL = "trawl_probe_url"
#: request.meta key: read the body (up to the cap) whatever its type (the favicon).
ANY_BODY = "trawl_probe_any_body"
_TEXT_TYPES = ("text/", "html", "xml", "json", "javascript", "ecmascript")


def wants_body(content_type: str) -> bool:
    """Does a body of this type feed a field (title, simhash)? An absent type: look at it."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return not kind or any(marker in kind for marker in _TEXT_TYPES)


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header(response: Response, name: str) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1").strip() if value else None


def redirect_chain(response: Response) -> list[list[Any]]:
    """``[[status, url], ...]``: each hop before the final answer."""
    urls = response.meta.get("redirect_urls") or []
    reasons = response.meta.get("redirect_reasons") or []
    return [[reasons[i] if i < len(reasons) else None, url] for i, url in enumerate(urls)]


def certificate_fields(response: Response) -> dict[str, Any]:
    """Subject, issuer and expiry of the server's certificate (https), else nothing."""
    certificate = getattr(response, "certificate", None)
    if certificate is None:
        return {}
    try:
        cert = certificate.original.to_cryptography()
        expiry = cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "tls_subject": cert.subject.rfc4514_string(),
            "tls_issuer": cert.issuer.rfc4514_string(),
            "tls_not_after": expiry,
        }
    except Exception:  # noqa: BLE001 - a certificate cryptography cannot read: the other fields stand
        return {}


def asked_urls(response: Response) -> list[str]:
    """The URLs an answer was asked as: each redirect's, then the final one (what a page may quote)."""
    return [*(response.meta.get("redirect_urls") or []), response.url]


def answer_row(response: Response, soft: bool = True) -> tuple[dict[str, Any], tuple[int, ...]]:
    """The record of an answer, and its body's echo-free simhashes (:mod:`.soft404`).

    Empty: no text body was read, or ``soft`` is false (the origin's random path
    was not a success with this status, so the answer cannot be its soft-404 page).
    The record's ``body_simhash`` is the page's own, echo and all.
    """
    stopped = "download_stopped" in response.flags  # by transfer.BodyCap, at the headers or the cap
    body_read = not stopped or wants_body(_header(response, "Content-Type") or "")
    truncated = stopped and body_read
    declared = _header(response, "Content-Length")
    length: int | None = int(declared) if declared and declared.isdigit() else None
    if length is None and body_read and not truncated:
        length = len(response.body)
    row: dict[str, Any] = {
        "url": response.meta.get(PROBE_URL, response.url),
        "probed_at": now_iso(),
        "status": response.status,
        "final_url": response.url,
        "redirects": json.dumps(redirect_chain(response)),
        "content_type": _header(response, "Content-Type"),
        "content_length": length,
        "server": _header(response, "Server"),
        "protocol": protocol_name(response),
        "response_ms": round(float(response.meta.get("download_latency") or 0.0) * 1000),
        "truncated": truncated,
        **certificate_fields(response),
    }
    refused = response.meta.get(REFUSED)
    if refused:
        row["error"] = f"redirect out of scope, not followed: {refused}"
    soft_hashes: tuple[int, ...] = ()
    if body_read:
        row["body_sha256"] = sha256_hex(response.body)
        if isinstance(response, TextResponse):
            encoding = response.encoding
            row["title"] = title_of(response.body, encoding)
            text = response.body.decode(encoding, errors="replace")
            words = visible_words(text)
            hashed = words_simhash(words)
            row["body_simhash"] = simhash_hex(hashed)
            if soft:
                soft_hashes = echo_free_simhashes(text, asked_urls(response), (words, hashed))
    return row, soft_hashes


def failure_row(url: str, error: str) -> dict[str, Any]:
    """The record of a URL that got no answer (unreachable, timed out, a redirect loop)."""
    return {"url": url, "probed_at": now_iso(), "error": error, "redirects": "[]"}

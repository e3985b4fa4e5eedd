"""A local Wayback Machine with raw replay (``/web/<timestamp>id_/<url>``) beside its CDX server.

:class:`FakeReplayServer` is :class:`~tests.servers.ia_cdx.FakeCdxServer` (same
base URL, the same CDX answers) plus the replay, modelled on the recorded
answers in ``/work/shared/api-samples/ia_replay_*.txt``:

* an archived capture: ``200``, its bytes as captured, ``Content-Type`` the
  archived type, ``Memento-Datetime``, ``X-Archive-Src``, ``x-ts``;
* a capture whose time is not exact (:meth:`redirect`): ``302 FOUND``, empty
  body, ``Location`` on the nearest capture's ``id_`` URL, no ``Memento-Datetime``;
* an archived redirect (:meth:`archived_redirect`): its archived status (301) with
  ``Memento-Datetime`` and ``Location`` rewritten to an ``id_`` URL;
* anything else: ``404`` with the "Hrm. The Wayback Machine has not archived
  that URL." HTML page, no ``Memento-Datetime`` (:data:`NO_MEMENTO_PAGE`).

Captures that share bytes share a digest (:func:`content_digest`, the archive's
SHA-1 in base32), so "one download per digest" can be checked against
:attr:`FakeReplayServer.replays`, the log of every replay request.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import formatdate

from tests.servers.ia_cdx import Capture, FakeCdxServer, _Response, make_capture

NO_MEMENTO_PAGE = (
    b'<!DOCTYPE html>\n<html lang="en">\n  <head>\n    <title>Wayback Machine</title>\n  </head>\n'
    b'  <body>\n<div id="error">\n<h2>Hrm.</h2>\n'
    b"<p>The Wayback Machine has not archived that URL.</p>\n</div>\n  </body>\n</html>\n"
)


def content_digest(body: bytes) -> str:
    """The archive's digest of a payload: SHA-1 in base32."""
    return base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


@dataclass(frozen=True)
class Memento:
    """One archived answer: what ``id_`` replays for it."""

    status: int
    body: bytes
    mime: str
    location: tuple[str, str] | None = None  # (timestamp, url) of an archived redirect's target


class FakeReplayServer(FakeCdxServer):
    """The CDX server and the ``id_`` replay of the same captures, on one base URL."""

    def __init__(self, captures: Iterable[Capture] = (), **kwargs: object) -> None:
        super().__init__(captures, **kwargs)  # type: ignore[arg-type]
        #: (url, timestamp) -> what the replay answers.
        self.mementos: dict[tuple[str, str], Memento] = {}
        #: (url, timestamp) -> (timestamp, url) the replay redirects to (a time that is not exact).
        self.nearest: dict[tuple[str, str], tuple[str, str]] = {}
        #: Every replay request: (timestamp, url), in arrival order.
        self.replays: list[tuple[str, str]] = []
        self._replay_lock = threading.Lock()

    # --- building the archive ---------------------------------------------------------------

    def archive(
        self, url: str, timestamp: str, body: bytes, mime: str = "application/javascript", in_cdx: bool = True
    ) -> Capture:
        """Archive ``body`` as ``url`` at ``timestamp``; its capture (in the CDX unless not ``in_cdx``)."""
        self.mementos[(url, timestamp)] = Memento(200, body, mime)
        capture = make_capture(url, timestamp, mime, "200", content_digest(body), str(len(body)))
        if in_cdx:
            self.set_captures([*self.captures, capture])
        return capture

    def listed(self, url: str, timestamp: str, body: bytes, mime: str = "application/javascript") -> Capture:
        """A capture the CDX lists, with the digest of ``body``, that the replay does not hold as such
        (a "no memento", or a time :meth:`redirect` sends elsewhere)."""
        capture = make_capture(url, timestamp, mime, "200", content_digest(body), str(len(body)))
        self.set_captures([*self.captures, capture])
        return capture

    def listed_without_memento(self, url: str, timestamp: str, body: bytes = b"gone") -> Capture:
        """A capture the CDX lists but the replay does not have ("no memento")."""
        return self.listed(url, timestamp, body)

    def redirect(self, url: str, timestamp: str, to_timestamp: str, to_url: str | None = None) -> None:
        """The replay of ``url`` at ``timestamp`` is a 302 to the capture at ``to_timestamp``."""
        self.nearest[(url, timestamp)] = (to_timestamp, to_url or url)

    def archived_redirect(
        self, url: str, timestamp: str, to_url: str, to_timestamp: str | None = None
    ) -> None:
        """An archived 301 from ``url`` to ``to_url``, replayed as such."""
        self.mementos[(url, timestamp)] = Memento(301, b"", "text/html", (to_timestamp or timestamp, to_url))

    # --- answering ------------------------------------------------------------------------------

    def handle(self, path_qs: str, headers: Mapping[str, str]) -> _Response:
        web = self.prefix + "/web/"
        if not path_qs.startswith(web):
            return super().handle(path_qs, headers)
        stamp, _, url = path_qs[len(web) :].partition("/")
        timestamp = stamp.removesuffix("id_")
        with self._replay_lock:
            self.replays.append((timestamp, url))
        if self.latency:
            import time

            time.sleep(self.latency)
        if not stamp.endswith("id_"):
            return _Response(400, [("Content-Type", "text/plain")], b"only id_ replays are served here\n")
        target = self.nearest.get((url, timestamp))
        if target is not None:
            return _Response(
                302,
                [
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Location", self._replay(*target)),
                    ("X-Archive-Redirect-Reason", f"found capture at {target[0]}"),
                ],
                b"",
            )
        memento = self.mementos.get((url, timestamp))
        if memento is None:
            return _Response(
                404, [("Content-Type", "text/html; charset=utf-8"), ("x-ts", "404")], NO_MEMENTO_PAGE
            )
        head = [
            ("Content-Type", memento.mime),
            ("Memento-Datetime", formatdate(usegmt=True)),
            ("X-Archive-Src", "fake-20200101-00000.warc.gz"),
            ("x-ts", str(memento.status)),
        ]
        if memento.location is not None:
            head.append(("Location", self._replay(*memento.location)))
        return _Response(memento.status, head, memento.body)

    def _replay(self, timestamp: str, url: str) -> str:
        return f"{self.base_url}/web/{timestamp}id_/{url}"

    def downloads(self) -> list[tuple[str, str]]:
        """The replay requests so far (a copy)."""
        with self._replay_lock:
            return list(self.replays)

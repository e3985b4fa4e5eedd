"""The dev server's Wayback Machine: the CDX captures of the dataset, and their ``id_`` replays.

:func:`dev_replay` turns the dataset's Wayback share into a
:class:`~tests.servers.ia_replay.FakeReplayServer`: the same CDX lines the
wayback source pages through, except that each ``200`` capture's digest is the
archive's digest of the bytes its replay serves (:mod:`tests.servers.devpages`),
so captures of one URL whose bytes did not change share a digest and are
downloaded once, as at archive.org. Redirect, 404 and revisit captures are
listed but have no replay of their own (``trawl crawl responses`` asks for
``200`` captures only).
"""

from __future__ import annotations

from collections.abc import Iterable

from tests.servers.devpages import body_for
from tests.servers.ia_cdx import Capture
from tests.servers.ia_replay import FakeReplayServer, Memento, content_digest


def dev_replay(captures: Iterable[Capture], domain: str, lines_per_page: int) -> FakeReplayServer:
    """The replay server of ``captures`` of ``domain`` (a memento per ``200`` capture), not started."""
    listed: list[Capture] = []
    mementos: dict[tuple[str, str], Memento] = {}
    for capture in captures:
        if capture.statuscode == "200":
            body = body_for(capture.original, capture.mimetype, domain, capture.timestamp)
            mementos[(capture.original, capture.timestamp)] = Memento(200, body, capture.mimetype)
            capture = capture._replace(digest=content_digest(body), length=str(len(body)))
        listed.append(capture)
    server = FakeReplayServer(listed, lines_per_page=lines_per_page)
    server.mementos.update(mementos)
    return server

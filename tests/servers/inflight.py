"""How many requests a fake server had in flight at once.

Each server records one ``(arrived, answered)`` span per request (``time.monotonic()``
when its handler thread has read the request head, and when the answer starts going
out), so a test or a benchmark can tell how much concurrency a client really used. The
span ends *before* the client can have the answer: a client that keeps N requests in
flight is never seen with N + 1, however late the server's thread gets to run again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

Span = tuple[float, float]


class SpanRecordingHandler:
    """Mixin for a fake's request handler: ``do_GET`` records the request's span.

    The handler implements ``_answer()`` (setting ``self.answered`` when the
    answer starts out) and ``span_log()``, the server's list of spans.
    """

    answered: float

    def span_log(self) -> list[Span]:  # pragma: no cover - each handler names its server's list
        raise NotImplementedError

    def _answer(self) -> None:  # pragma: no cover - each handler answers
        raise NotImplementedError

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        arrived = self.answered = time.monotonic()
        try:
            self._answer()
        finally:
            self.span_log().append((arrived, self.answered))


def max_in_flight(spans: Iterable[Span]) -> int:
    """The most spans open at one instant (one that ends as another starts does not overlap it)."""
    events: list[tuple[float, int]] = []
    for start, end in spans:
        events += [(start, 1), (end, -1)]
    events.sort()  # at equal times -1 sorts before +1
    best = current = 0
    for _, delta in events:
        current += delta
        best = max(best, current)
    return best

"""How many requests a fake server had in flight at once.

Each server records one ``(arrived, answered)`` span per request (``time.monotonic()``
when its handler thread has read the request head, and when the answer starts going
out), so a test or a benchmark can tell how much concurrency a client really used. The
span ends *before* the client can have the answer: a client that keeps N requests in
flight is never seen with N + 1, however late the server's thread gets to run again.
"""

from __future__ import annotations

from collections.abc import Iterable

Span = tuple[float, float]


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

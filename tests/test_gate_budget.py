"""The gate's budget window on a fake clock: when the next request of a source may go.

A request keeps its place in the window until T after its answer, plus a margin:
1% of T, at least 0.02 s in one process and 0.15 s for a gate shared by processes
whose clocks differ. The crawls against a server that counts arrivals are in
tests/test_ia_limits.py.
"""

from __future__ import annotations

import pytest

from trawl.politeness import gate
from trawl.politeness.gate import LOCAL_MIN_MARGIN, MIN_MARGIN, SourceLimiter, limiter_for


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def fresh_gates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "_limiters", {})


def next_send_after_answer(limiter: SourceLimiter) -> float:
    """Seconds from the answer of one request until the next may go."""
    clock = Clock()
    limiter.clock = clock
    fired: list[float] = []
    limiter.acquire().addCallback(fired.append)
    assert fired == [clock.now]  # the first goes at once
    clock.now += 0.3  # its answer
    answered = clock.now
    limiter.release()
    return limiter.ready_at() - answered


def test_one_process_waits_the_period_and_a_small_margin() -> None:
    limiter = limiter_for("commoncrawl", "1/1s", 2)
    assert next_send_after_answer(limiter) == pytest.approx(1.0 + LOCAL_MIN_MARGIN)
    assert LOCAL_MIN_MARGIN <= 0.02


def test_a_long_period_keeps_a_margin_of_one_percent() -> None:
    limiter = limiter_for("wayback", "60/60s", 2)
    limiter.requests = 1  # one in the window, so the second waits on the first's answer
    assert next_send_after_answer(limiter) == pytest.approx(60.6)


def test_a_gate_made_for_sharing_keeps_the_larger_margin() -> None:
    made: list[SourceLimiter] = []

    def make(source: str, rate: str | None, concurrency: int) -> SourceLimiter:
        made.append(SourceLimiter.from_spec(source, rate, concurrency))
        return made[-1]

    limiter = limiter_for("commoncrawl", "1/1s", 2, make)
    assert made == [limiter]
    assert next_send_after_answer(limiter) == pytest.approx(1.0 + MIN_MARGIN)

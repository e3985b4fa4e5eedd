"""The rules of trawl.politeness.aimd on a fake clock: cut at once, one cut per episode, slow recovery, bans.

The crawls against the IA-like server are in tests/test_ia_limits.py; these pin
the arithmetic the progress line and the summary report.
"""

from __future__ import annotations

from trawl.politeness.aimd import RECOVERY_WINDOWS, Backpressure
from trawl.politeness.gate import SourceLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate(clock: Clock, rate: str = "60/60s", concurrency: int = 4) -> tuple[SourceLimiter, Backpressure]:
    limiter = SourceLimiter.from_spec("wayback", rate, concurrency)
    limiter.clock = clock
    return limiter, Backpressure(limiter, ban_pause=120.0, max_pause=3600.0, clock=clock)


def test_a_429_cuts_to_what_was_served_and_pauses_one_window() -> None:
    clock = Clock()
    limiter, pressure = gate(clock)
    for _ in range(15):
        pressure.answered(clock.now)
        clock.now += 0.1
    assert pressure.too_many(clock.now - 0.05) == 60.0
    assert (limiter.budget, limiter.concurrency) == ("15/60s", 2)
    assert limiter.paused_until >= clock.now + 60.0
    # an answer to a request sent before the cut is the same episode: no second cut
    assert pressure.too_many(clock.now - 0.2) is None
    assert limiter.budget == "15/60s"


def test_the_budget_grows_back_by_one_after_quiet_windows() -> None:
    clock = Clock()
    limiter, pressure = gate(clock)
    pressure.answered(clock.now)
    pressure.too_many(clock.now)
    assert limiter.budget == "1/60s"
    clock.now += RECOVERY_WINDOWS * 60 - 1
    pressure.answered(clock.now)
    assert limiter.budget == "1/60s"
    clock.now += 1
    pressure.answered(clock.now)
    assert (limiter.budget, limiter.concurrency) == ("2/60s", 3)


def test_consecutive_429s_double_the_pause() -> None:
    clock = Clock()
    _, pressure = gate(clock)
    assert pressure.too_many(clock.now) == 60.0
    clock.now += 61
    assert pressure.too_many(clock.now) == 120.0


def test_a_refused_connection_after_a_429_is_a_ban_that_doubles_and_ends() -> None:
    clock = Clock()
    limiter, pressure = gate(clock)
    # no 429 before: the server is down, not banning
    assert pressure.connection_failed(clock.now, "connection refused") is None
    pressure.too_many(clock.now)
    sent = clock.now
    clock.now += 1
    assert pressure.connection_failed(clock.now, "connection refused") == 120.0
    assert pressure.bans == 1 and limiter.concurrency == 1
    assert pressure.connection_failed(sent, "connection closed") == 0.0  # sent before the ban: it just waits
    for expected in (240.0, 480.0, 960.0, 1920.0, 3600.0):
        clock.now += expected
        assert pressure.connection_failed(clock.now, "connection refused") == expected
    clock.now += 3600
    # the longest pause did not end it: the server is down, retries are spent as for any failure
    assert pressure.connection_failed(clock.now, "connection refused") is None
    assert pressure.bans == 1


def test_an_answer_sent_before_the_cut_does_not_end_the_episode() -> None:
    # Two requests in flight: the server served one, then answered the other 429 and banned.
    # Read in the other order, the stale good answer must not turn the reset into an outage.
    clock = Clock()
    _, pressure = gate(clock)
    served_sent = clock.now
    clock.now += 0.1
    assert pressure.too_many(clock.now) == 60.0
    pressure.answered(served_sent)
    clock.now += 61
    assert pressure.connection_failed(clock.now, "connection closed") == 120.0
    assert pressure.bans == 1
    # a request sent after the ban that is answered ends it
    clock.now += 121
    pressure.answered(clock.now)
    assert pressure.connection_failed(clock.now + 1, "connection closed") is None

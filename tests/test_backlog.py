"""The store backlog pauses downloads on rows or on bytes, whichever bound is reached first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from trawl.pipeline.backlog import BYTES_BOUND, StoreBacklog


class Engine:
    """What the backlog uses of Scrapy's engine: pause, unpause, paused."""

    def __init__(self) -> None:
        self.paused = False

    def pause(self) -> None:
        self.paused = True

    def unpause(self) -> None:
        self.paused = False


@pytest.fixture(autouse=True)
def empty_backlog() -> Iterator[None]:
    yield
    left = StoreBacklog.rows, StoreBacklog.size
    StoreBacklog.rows = StoreBacklog.size = 0
    assert left == (0, 0), "every add was matched by a done"


def test_few_rows_of_many_bytes_pause_until_written() -> None:
    engine = Engine()
    StoreBacklog.add(1_000, engine, 50_000, size=BYTES_BOUND // 2)
    assert not engine.paused
    StoreBacklog.add(1_000, engine, 50_000, size=BYTES_BOUND)
    assert engine.paused  # 2,000 rows, but 1.5x the bytes
    StoreBacklog.add(1_000, None, 50_000, size=BYTES_BOUND // 2)  # another crawler's batch
    StoreBacklog.done(1_000, 50_000, size=BYTES_BOUND // 2)
    assert engine.paused  # still 1.5x the bytes
    StoreBacklog.done(1_000, 50_000, size=BYTES_BOUND)
    assert not engine.paused
    StoreBacklog.done(1_000, 50_000, size=BYTES_BOUND // 2)


def test_many_small_rows_pause_on_the_row_bound() -> None:
    engine = Engine()
    StoreBacklog.add(60_000, engine, 50_000, size=1_000)
    assert engine.paused
    StoreBacklog.done(60_000, 50_000, size=1_000)
    assert not engine.paused


def test_no_bound_never_pauses() -> None:
    engine = Engine()
    StoreBacklog.add(10**6, engine, 0, size=10 * BYTES_BOUND)
    assert not engine.paused
    StoreBacklog.done(10**6, 0, size=10 * BYTES_BOUND)

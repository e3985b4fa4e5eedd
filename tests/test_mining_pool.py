"""The mining pool's worker process: answers, a raising call, a worker that dies, its stop."""

from __future__ import annotations

import os
import signal

import pytest

from trawl.mining.pool import Worker, WorkerDied


@pytest.fixture
def worker():
    started = Worker()
    yield started
    started.stop()


def test_a_call_is_answered_and_a_raising_call_returns_its_exception(worker: Worker) -> None:
    assert worker.call(sorted, ([3, 1, 2],)) == (True, [1, 2, 3])
    ok, error = worker.call(int, ("not a number",))
    assert not ok and isinstance(error, ValueError) and "not a number" in str(error)
    assert worker.call(os.getpid, ()) == (True, worker.process.pid)  # the worker's own process


def test_a_worker_killed_is_a_worker_died_error(worker: Worker) -> None:
    assert worker.call(len, ("abc",)) == (True, 3)
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.wait()
    with pytest.raises(WorkerDied, match="ended"):
        worker.call(len, ("abc",))


def test_stop_ends_the_worker(worker: Worker) -> None:
    worker.stop()
    assert worker.process.returncode == 0

"""The mining process pool, bridged to Twisted: the reactor thread never parses.

Mining is CPU (issue 18 item 3): tree-sitter, an HTML parser and regexes over
megabytes of JavaScript. In the crawl's process it would stall downloads and
store writes for as long as a file takes, and use one core. So whole batches of
files go to a :class:`concurrent.futures.ProcessPoolExecutor` (``MINING_PROCESSES``
workers, both cores by default), and each batch's future is turned into a
Deferred: the executor's own thread calls ``reactor.callFromThread`` when the
future is done, which is what ``Deferred.fromFuture`` does for asyncio futures,
without assuming the asyncio reactor.

Workers are started with ``forkserver``: forking the crawl process itself
would copy its threads' locks (the SQLite writer, Twisted's thread pool) in
whatever state they were. Each worker exits when the crawl process does, even
on ``kill -9`` (:func:`trawl.mining.work.worker_start`); the forkserver and the
resource tracker follow their last worker.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

from twisted.internet.defer import Deferred

from trawl.mining.work import Job, Result, mine_files, worker_start

#: A batch this small, with no more waiting, is mined in the crawl process (a thread) instead of
#: starting the pool. The pool's cold start (forkserver, imports, tree-sitter) took 2-4.5 s on two
#: busy cores and one core mines about 2 MB/s of minified bundles (five npm bundles, 2.7 MB, in
#: 1.3 s), so two workers only catch up with one thread past about 2 x 2 MB/s x 2 s = 8 MB. 4 MiB
#: keeps the crawl process's parse trees near 300 MB (70 MB per MB of dense code at worst).
IN_PROCESS_BYTES = 4 * 1024 * 1024

T = TypeVar("T")


def default_processes() -> int:
    """Every core this process may use (at least one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class MiningPool:
    """Worker processes that mine batches of stored files; each batch's result as a Deferred."""

    def __init__(self, processes: int = 0) -> None:
        self.processes = processes or default_processes()
        context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        self.executor = ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=context,
            initializer=worker_start,
            initargs=(os.getpid(),),
        )
        self.in_flight = 0

    def mine(
        self, jobs: list[Job], root: str, secrets: bool, extractor: str, max_bytes: int
    ) -> Deferred[list[Result]]:
        """Mine ``jobs`` in a worker; the Deferred fires on the reactor thread with one result a job."""
        return self.run(mine_files, jobs, root, secrets, extractor, max_bytes)

    def run(self, function: Callable[..., T], *args: Any) -> Deferred[T]:
        """``function(*args)`` in a worker (picklable); its result as a Deferred on the reactor thread."""
        from twisted.internet import reactor

        deferred: Deferred[T] = Deferred()
        future = self.executor.submit(function, *args)
        self.in_flight += 1

        def done(finished: Future[T]) -> None:
            reactor.callFromThread(self._fire, deferred, finished)  # type: ignore[attr-defined]

        future.add_done_callback(done)
        return deferred

    def _fire(self, deferred: Deferred[T], finished: Future[T]) -> None:
        self.in_flight -= 1
        error: Any = finished.exception()
        if error is not None:
            deferred.errback(error)
        else:
            deferred.callback(finished.result())

    def close(self) -> None:
        """Stop the workers (batches not started are dropped: the run is ending)."""
        self.executor.shutdown(wait=True, cancel_futures=True)

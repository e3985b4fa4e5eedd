"""The mining process pool, bridged to Twisted: the reactor thread never parses.

Mining is CPU: tree-sitter, an HTML parser and regexes over
megabytes of JavaScript. In the crawl's process it would stall downloads and
store writes for as long as a file takes, and use one core. So whole batches of
files go to worker processes (``MINING_PROCESSES``, both cores by default), and
each batch's answer fires a Deferred: the thread that feeds the worker calls
``reactor.callFromThread`` with it.

Workers are plain child processes (``python -m trawl.mining.worker``, see
:mod:`trawl.mining.worker`) fed by one thread each over their pipes, not a
``ProcessPoolExecutor``: its ``forkserver`` (forking the crawl itself would copy
its threads' locks, the SQLite writer's and Twisted's, in whatever state they
were) and the resource tracker it starts were two more interpreters that only
cost memory: 13 and 12 MB of RSS, a tenth of a live crawl's, while the one
worker that mined the Python documentation's search index took 43 MB. A new
process (fork and exec) copies no lock. Each worker exits when the crawl does,
even on ``kill -9`` (:func:`trawl.mining.work.exit_with`), and when its
requests' pipe closes.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred

from trawl.mining.work import Job, Result, mine_files
from trawl.mining.worker import read_frame, write_frame

#: A batch this small, with no more waiting, is mined in the crawl process (a thread) instead of
#: starting the pool. The pool's cold start (a process, imports, tree-sitter) took 2-4.5 s on two
#: busy cores and one core mines about 2 MB/s of minified bundles (five npm bundles, 2.7 MB, in
#: 1.3 s), so two workers only catch up with one thread past about 2 x 2 MB/s x 2 s = 8 MB. A
#: script's tree is at most a 256 KiB window's (about 20 MB), whatever the batch's size.
IN_PROCESS_BYTES = 4 * 1024 * 1024

T = TypeVar("T")


def default_processes() -> int:
    """Every core this process may use (at least one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class WorkerDied(RuntimeError):
    """A worker process ended without answering (killed, out of memory)."""


class Worker:
    """One worker process and its two pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trawl.mining.worker", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.requests = self.process.stdin
        self.replies = self.process.stdout
        write_frame(self.requests, sys.path)

    def call(self, function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
        """``(True, result)`` or ``(False, exception)``; raises :class:`WorkerDied` when it ended."""
        try:
            write_frame(self.requests, (function, args))
        except OSError as exc:  # a broken pipe: the worker is gone
            raise WorkerDied(f"the mining worker ended ({exc})") from None
        answer = read_frame(self.replies)
        if answer is None:
            raise WorkerDied(f"the mining worker ended (exit status {self.process.wait()})")
        return answer  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Close its requests (it exits at end of file); kill it if it has not within 5 s."""
        try:
            self.requests.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.replies.close()


class MiningPool:
    """Worker processes that mine batches of stored files; each batch's result as a Deferred.

    A worker (and the thread that feeds it) starts when a call finds every started
    worker busy, up to ``processes``: a live crawl with one big script starts one.
    """

    def __init__(self, processes: int = 0) -> None:
        self.processes = processes or default_processes()
        self.calls: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], Deferred[Any]] | None]
        self.calls = queue.SimpleQueue()
        self.threads: list[threading.Thread] = []
        self.in_flight = 0

    def mine(
        self, jobs: list[Job], root: str, secrets: bool, extractor: str, max_bytes: int
    ) -> Deferred[list[Result]]:
        """Mine ``jobs`` in a worker; the Deferred fires on the reactor thread with one result a job."""
        return self.run(mine_files, jobs, root, secrets, extractor, max_bytes)

    def run(self, function: Callable[..., T], *args: Any) -> Deferred[T]:
        """``function(*args)`` in a worker (picklable); its result as a Deferred on the reactor thread."""
        deferred: Deferred[T] = Deferred()
        self.in_flight += 1
        self.calls.put((function, args, deferred))
        if len(self.threads) < min(self.in_flight, self.processes):
            thread = threading.Thread(target=self._serve, name="trawl-mining-worker", daemon=True)
            self.threads.append(thread)
            thread.start()
        return deferred

    def _serve(self) -> None:
        """One worker's thread: calls from the queue to the worker, answers to the reactor."""
        from twisted.internet import reactor

        worker: Worker | None = None
        while (call := self.calls.get()) is not None:
            function, args, deferred = call
            try:
                if worker is None:
                    worker = Worker()
                answer = worker.call(function, args)
            except (WorkerDied, OSError) as exc:
                answer = (False, exc if isinstance(exc, WorkerDied) else WorkerDied(str(exc)))
                if worker is not None:
                    worker.stop()
                worker = None  # the next call starts another
            reactor.callFromThread(self._fire, deferred, answer)  # type: ignore[attr-defined]
        if worker is not None:
            worker.stop()

    def _fire(self, deferred: Deferred[Any], answer: tuple[bool, Any]) -> None:
        self.in_flight -= 1
        ok, value = answer
        if ok:
            deferred.callback(value)
        else:
            deferred.errback(value)

    def close(self) -> None:
        """Stop the workers once their current call is done (calls not started are dropped: the run
        is ending)."""
        while True:
            try:
                self.calls.get_nowait()
            except queue.Empty:
                break
        for _ in self.threads:
            self.calls.put(None)
        for thread in self.threads:
            thread.join()
        self.threads.clear()

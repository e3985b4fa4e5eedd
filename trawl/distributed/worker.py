"""``trawl worker``'s loop: take a task, run it as a ``trawl crawl all`` process, acknowledge it.

Each task runs in a child process (``trawl crawl all`` for its one source),
for three reasons: a Scrapy reactor cannot be restarted between tasks, a crawl
that leaks or crashes takes only its task with it, and the child is exactly
the single-process crawl (validation, store, run record, exit status), so a
worker adds no second way of crawling.

What a worker holds is in its processing list until the child has ended
(:mod:`trawl.distributed.queue`); its heartbeat thread keeps it alive there.
``kill -9`` of the worker: the child gets SIGTERM from the kernel
(``PR_SET_PDEATHSIG``), stops as a stopped crawl does (every batch it stored
stays stored), the heartbeat expires, and another worker's reaper returns the
task to the queue. SIGTERM or Ctrl-C: no new work is taken, the tasks held are
finished, exit 0; a second one stops the crawls and hands their tasks back.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trawl.distributed.outage import MAX_DELAY, Outages
from trawl.distributed.queue import MISSED_BEATS, WorkQueue
from trawl.distributed.tasks import Task

logger = logging.getLogger("trawl.worker")
#: The longest one BLMOVE blocks: how soon an idle worker reaps and notices ``--until-empty``.
MAX_TAKE_WAIT = 5.0
_PR_SET_PDEATHSIG = 1


class _Interrupted(Exception):
    """A signal while idle in a blocking take: nothing is held, stop now."""


@dataclass
class _Run:
    raw: bytes
    task: Task
    process: subprocess.Popen[bytes]
    started: float
    stopped_by_us: bool = False


def new_worker_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _die_with_parent() -> None:
    """In the child: SIGTERM when the worker dies, however it dies (Linux; elsewhere a no-op)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


class Worker:
    def __init__(
        self,
        queue: WorkQueue,
        executable: Sequence[str],
        own_settings: Mapping[str, str],
        known_sources: Sequence[str],
        slots: int = 1,
        until_empty: bool = False,
    ) -> None:
        self.queue = queue
        self.executable = list(executable)
        self.own_settings = dict(own_settings)
        self.known_sources = list(known_sources)
        self.slots = slots
        self.until_empty = until_empty
        self.id = new_worker_id()
        self.outages = Outages(logger, min(MAX_DELAY, queue.heartbeat * MISSED_BEATS))
        self.running: list[_Run] = []
        self.signals = 0
        self.idle = False
        self.child_ended = threading.Event()
        self.beating = threading.Event()

    # --- the loop --------------------------------------------------------------------------

    def run(self) -> int:
        self._install_signals()
        self.outages.call(lambda: self.queue.beat(self.id))
        beater = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        beater.start()
        wait = min(self.queue.heartbeat, MAX_TAKE_WAIT)
        logger.info("worker %s: waiting for work (%d at a time)", self.id, self.slots)
        next_reap = 0.0
        try:
            while True:
                self._collect()
                if self.signals:
                    if not self.running:
                        break
                    self._wait_children(wait)
                    continue
                if time.monotonic() >= next_reap:
                    self._reap()
                    next_reap = time.monotonic() + self.queue.heartbeat
                if len(self.running) >= self.slots:
                    self._wait_children(wait)
                    continue
                raw = self._take(wait)
                if raw is not None:
                    self._start(raw)
                elif self.until_empty and not self.running and self.outages.call(self.queue.idle):
                    logger.info("worker %s: the queue is empty and no worker holds work: exiting", self.id)
                    break
        except _Interrupted:
            self.queue.client.connection_pool.disconnect()  # a reply may be half read: start afresh
        finally:
            self.beating.set()
            returned = self.outages.call(lambda: self.queue.release_all(self.id))
            if returned:
                logger.info("worker %s: handed %d task(s) back to the queue", self.id, returned)
        logger.info("worker %s: stopped", self.id)
        return 0

    def _take(self, wait: float) -> bytes | None:
        self.idle = not self.running
        try:
            if self.signals and self.idle:
                raise _Interrupted
            return self.outages.call(lambda: self.queue.take(self.id, wait))
        finally:
            self.idle = False

    def _start(self, raw: bytes) -> None:
        try:
            task = Task.from_json(raw)
        except ValueError as exc:
            reason = str(exc)
            self.outages.call(lambda: self.queue.dead_letter(self.id, raw, reason))
            logger.error("worker %s: dead-lettered an unreadable task: %s", self.id, reason)
            return
        command = task.command(self.executable, self.known_sources, self.own_settings)
        logger.info("worker %s: took %s for %s (task %s)", self.id, task.source, task.domain, task.id[:8])
        process = subprocess.Popen(command, preexec_fn=_die_with_parent, start_new_session=True)  # noqa: S603
        self.running.append(_Run(raw, task, process, time.monotonic()))

    def _collect(self) -> None:
        for run in [r for r in self.running if r.process.poll() is not None]:
            self.running.remove(run)
            self._finished(run, int(run.process.returncode))

    def _finished(self, run: _Run, status: int) -> None:
        task, took = run.task, time.monotonic() - run.started
        what = f"{task.source} for {task.domain}"
        if status == 0:
            self.outages.call(lambda: self.queue.done(self.id, run.raw))
            logger.info("worker %s: %s done in %.1f s", self.id, what, took)
        elif run.stopped_by_us:
            self.outages.call(lambda: self.queue.release(self.id, run.raw))
            logger.info("worker %s: %s stopped; handed back to the queue", self.id, what)
        elif status < 0:
            reason = f"its crawl was killed by signal {-status} on worker {self.id}"
            if self.outages.call(lambda: self.queue.died(self.id, run.raw, reason)):
                logger.error("worker %s: %s dead-lettered: %s", self.id, what, reason)
            else:
                logger.warning("worker %s: %s: %s; back in the queue", self.id, what, reason)
        else:
            reason = (
                "the crawl refused its arguments or settings (exit status 2)"
                if status == 2
                else f"the crawl ended incomplete (exit status {status}: partial, failed or blocked)"
            )
            self.outages.call(lambda: self.queue.dead_letter(self.id, run.raw, reason))
            logger.error("worker %s: %s dead-lettered: %s; see this worker's log", self.id, what, reason)

    def _wait_children(self, timeout: float) -> None:
        """Until a child ends (SIGCHLD) or ``timeout``: the reaper's turn comes round meanwhile."""
        self.child_ended.wait(timeout)
        self.child_ended.clear()

    def _reap(self) -> None:
        for worker, back, dead in self.outages.call(self.queue.reap):
            logger.warning(
                "worker %s: worker %s is dead: %d task(s) back in the queue, %d dead-lettered",
                self.id, worker, back, dead,
            )  # fmt: skip

    # --- heartbeat and signals -------------------------------------------------------------

    def _beat(self) -> None:
        while not self.beating.wait(self.queue.heartbeat):
            self.outages.call(lambda: self.queue.beat(self.id))

    def _install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGCHLD, lambda *_: self.child_ended.set())

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.signals += 1
        self.child_ended.set()
        if self.idle:
            raise _Interrupted
        if self.signals == 1:
            logger.warning(
                "worker %s: %s: taking no more work, finishing the %d task(s) held (again: stop them)",
                self.id, signal.Signals(signum).name, len(self.running),
            )  # fmt: skip
            return
        for run in self.running:
            if run.process.poll() is None and not run.stopped_by_us:
                run.stopped_by_us = True
                run.process.send_signal(signal.SIGTERM)

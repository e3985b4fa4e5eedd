"""A task whose store gave up waiting for its server: back to the queue, never to the dead letters.

A store outage is not the upstream's fault nor the task's. Past
``POSTGRES_OUTAGE_MAX`` a crawl's store drops its batches and the crawl stops;
then a plain task is released (first in line); a spread run's owner goes back
under a new id, a new spread run (the old run acknowledged the dropped pages'
requests: its end would miss them), and the old run is marked over so that its
joiners stop; a join task is acknowledged, its share the owner's rerun's. A
joiner that drops pages marks the run first (:func:`mark_dropped`, before the
first dropped batch leaves its pipeline), and its owner, even if its own store
waited the outage out, hands its task back the same way at its end.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import redis

from trawl.distributed import spreadsched, taskrun

if TYPE_CHECKING:
    from trawl.distributed.outage import Outages
    from trawl.distributed.queue import WorkQueue
    from trawl.distributed.taskrun import HeldTask

logger = logging.getLogger("trawl.worker")


def abandon_spread_run(client: redis.Redis, run_id: str, worker: str) -> None:
    """A spread run given up by its owner (its store lost its server): over for its joiners, which stop,
    and its keys gone an hour later (as a finished run's dedup)."""
    from trawl.distributed.spread import OVER_TTL_MS, RunRequests

    run = RunRequests(client, run_id, worker)
    pipe = client.pipeline(transaction=True)
    pipe.set(run.done_key, b"1", px=OVER_TTL_MS)
    for key in (run.requests, run.seen, run.holders, run.owner, run.reporters, dropped_key(run_id)):
        pipe.pexpire(key, OVER_TTL_MS)
    pipe.execute()


def dropped_key(run_id: str) -> str:
    """Set when a joiner of spread run ``run_id`` dropped pages for a store outage (why, one line)."""
    from trawl.distributed.spread import PREFIX

    return f"{PREFIX}{run_id}:dropped"


def mark_dropped(client: redis.Redis, run_id: str, reason: str) -> None:
    from trawl.distributed.spread import RUN_TTL

    client.set(dropped_key(run_id), reason.encode(), px=int(RUN_TTL * 1000))


def dropped_by_joiner(queue: WorkQueue, outages: Outages, held: HeldTask) -> str | None:
    """Why a joiner of ``held``'s spread run dropped pages, or None: the run must then run again."""
    dropped = outages.call(lambda: queue.client.get(dropped_key(held.task.id)))
    return dropped.decode(errors="replace") if dropped else None


def hand_back(queue: WorkQueue, outages: Outages, worker: str, held: HeldTask, reason: str) -> None:
    """``held``, whose store gave up waiting for its server: back to the queue, never dead-lettered."""
    if held.task.join:  # the run's pages are its owner's task's: its rerun fetches them again
        outages.call(lambda: queue.done(worker, held.raw))
        logger.warning("worker %s: %s: left spread run %s: %s",
                       worker, held.what, held.task.join[:8], reason)  # fmt: skip
    elif held.spread == taskrun.OWNER and held.runs:
        # The run acknowledged the pages whose batches the store dropped: its rest would miss
        # them. Its joiners stop, and the task goes back as a new spread run.
        outages.call(lambda: abandon_spread_run(queue.client, held.task.id, worker))
        outages.call(lambda: queue.requeue(worker, held.raw))
        logger.warning("worker %s: %s handed back to the queue (its rerun a new spread run): %s",
                       worker, held.what, reason)  # fmt: skip
    else:
        outages.call(lambda: queue.release(worker, held.raw))
        logger.warning("worker %s: %s handed back to the queue: %s", worker, held.what, reason)


def joiner_dropping(queue: WorkQueue, outages: Outages, worker: str, settings: Any) -> None:
    """A crawl's store gave up on its server and drops its batches (on its writer thread, before the
    first leaves the pipeline): a joiner's spread run is marked, so that its owner runs the task
    again (the run acknowledged the dropped pages' requests: its end would miss them)."""
    run = str(settings.get(spreadsched.RUN) or "")
    if settings.get(spreadsched.ROLE) != spreadsched.JOINER or not run:
        return
    reason = f"worker {worker}, a joiner of the spread run, lost it and dropped pages"
    outages.call(lambda: mark_dropped(queue.client, run, reason))

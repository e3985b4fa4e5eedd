"""The reliable work queue in Redis: nothing a worker takes is lost when it dies.

Keys (prefix ``trawl:queue:``):

- ``pending``: a list of task JSON; ``enqueue`` pushes on the right, workers take from the left.
- ``processing:<worker>``: what one worker holds. A task moves there from
  ``pending`` in one atomic ``BLMOVE`` (the reliable-queue pattern): at every
  instant it is in exactly one list, so a worker killed between taking and
  finishing leaves it where the reaper finds it. scrapy-redis pops for good
  (``LPOP``/``ZREMRANGEBYRANK``), which is why the queue is not its own.
- ``inbox:<worker>``: join tasks of a spread run addressed to one worker
  (:mod:`.spreadsched`): taken before ``pending``, dropped with a dead worker.
- ``heartbeat:<worker>``: set every ``QUEUE_HEARTBEAT`` seconds, expiring after three.
- ``workers``: the set of worker ids, live or dead-but-not-reaped.
- ``deaths``: a hash, task id -> how many runs of it died.
- ``dead``: the dead-letter list, ``{"reason": ..., "task": ...}``.
- ``queued``: a hash, task fingerprint -> task id: the same work is queued
  once at a time. Entries leave with their task (done or dead-lettered): the
  dedup is bounded by the queue, never by every URL ever seen (the store is
  the record of known URLs).

The reaper is one Lua script, atomic in Redis: two workers reaping at once
cannot both return the same task, and a worker whose heartbeat is back is left
alone.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from trawl.distributed.tasks import Task

if TYPE_CHECKING:
    import redis

PREFIX = "trawl:queue:"
PENDING = PREFIX + "pending"
WORKERS = PREFIX + "workers"
DEATHS = PREFIX + "deaths"
DEAD = PREFIX + "dead"
QUEUED = PREFIX + "queued"
#: The (domain, source) ``trawl queue`` shows for a dead-lettered entry that is no task.
UNREADABLE = ("(unreadable)", "-")
#: Heartbeats a worker may miss before it is dead.
MISSED_BEATS = 3

# KEYS: processing, heartbeat, pending, dead, deaths, workers, queued, inbox;
# ARGV: max deaths, worker id, now.
_REAP = """
if redis.call('EXISTS', KEYS[2]) == 1 then return {-1, 0} end
redis.call('DEL', KEYS[8])
local back, dead = 0, 0
while true do
  local raw = redis.call('RPOP', KEYS[1])
  if not raw then break end
  local ok, task = pcall(cjson.decode, raw)
  local id = (ok and type(task) == 'table' and task['id']) or raw
  local n = redis.call('HINCRBY', KEYS[5], id, 1)
  if n >= tonumber(ARGV[1]) then
    local reason = 'its runs died ' .. n .. ' times (last on worker ' .. ARGV[2] .. ')'
    local entry = '{"reason":' .. cjson.encode(reason) .. ',"at":' .. ARGV[3] .. ',"task":' .. raw .. '}'
    redis.call('LPUSH', KEYS[4], entry)
    redis.call('HDEL', KEYS[5], id)
    if ok and type(task) == 'table' and task['fingerprint'] then
      redis.call('HDEL', KEYS[7], task['fingerprint'])
    end
    dead = dead + 1
  else
    redis.call('LPUSH', KEYS[3], raw)
    back = back + 1
  end
end
redis.call('SREM', KEYS[6], ARGV[2])
return {back, dead}
"""

# KEYS: queued, pending; ARGV: fingerprint, task id, task JSON.
# Both or neither: a dedup entry never outlives its task.
_PUSH = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[3])
return 1
"""


# KEYS: processing, pending, queued, deaths; ARGV: task JSON, the JSON it goes back as, its fingerprint,
# its new id, its old id. Once: sent again after a lost answer, a task no longer held is not pushed twice.
_REQUEUE = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
redis.call('HDEL', KEYS[4], ARGV[5])
return 1
"""


def processing_key(worker: str) -> str:
    return f"{PREFIX}processing:{worker}"


def inbox_key(worker: str) -> str:
    return f"{PREFIX}inbox:{worker}"


def taker_key(worker: str) -> str:
    """The id of the Redis connection ``worker`` takes tasks on (what :meth:`WorkQueue.invite` unblocks)."""
    return f"{PREFIX}taker:{worker}"


def heartbeat_key(worker: str) -> str:
    return f"{PREFIX}heartbeat:{worker}"


def server_uptime(client: redis.Redis) -> int:
    """Seconds since Redis started; ``BusyLoadingError`` (an outage) while it loads its saved data.

    ``INFO`` is one of the few commands Redis answers while loading: taken at its word, a reaper's
    first call after a restart ended the outage, and the next command, refused with ``LOADING``,
    began a second one (the outage said twice)."""
    import redis as redis_module

    info = client.info("server", "persistence")
    if int(info.get("loading", 0)):
        raise redis_module.BusyLoadingError("Redis is loading its saved data")
    return int(info.get("uptime_in_seconds", 0))


@dataclass
class Status:
    """What ``trawl queue`` prints: counts per (domain, source), the workers, the dead letters."""

    pending: Counter[tuple[str, str]] = field(default_factory=Counter)
    in_flight: Counter[tuple[str, str]] = field(default_factory=Counter)
    dead: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: worker id -> (alive, tasks held)
    workers: dict[str, tuple[bool, int]] = field(default_factory=dict)
    #: (domain, source, reason), newest first
    reasons: list[tuple[str, str, str]] = field(default_factory=list)
    unreadable: int = 0


class WorkQueue:
    """The queue's operations, each one or a few Redis commands; the caller handles outages."""

    def __init__(self, client: redis.Redis, max_deaths: int = 3, heartbeat: float = 10.0) -> None:
        self.client = client
        self.max_deaths = max_deaths
        self.heartbeat = heartbeat
        self._reap = client.register_script(_REAP)
        self._push = client.register_script(_PUSH)
        self._requeue = client.register_script(_REQUEUE)

    # --- enqueue ---------------------------------------------------------------------------

    def push(self, task: Task) -> bool:
        """Queue ``task`` unless the same work is already queued or held; True if queued."""
        added = self._push(keys=[QUEUED, PENDING], args=[task.fingerprint, task.id, _with_fingerprint(task)])
        return bool(added)

    # --- the dead letters ------------------------------------------------------------------

    def retry_dead(self) -> tuple[int, int]:
        """Every readable dead letter queued again (counted afresh: no deaths); (queued, already queued).

        An entry is taken off the list before its task is pushed, one at a time, so that two
        retries at once cannot queue a task twice (the push's dedup also refuses the same work).
        """
        queued = skipped = 0
        for entry in self.client.lrange(DEAD, 0, -1):
            if not self.client.lrem(DEAD, 1, entry):
                continue  # another retry or purge took it
            try:
                task = Task.from_json(orjson.dumps(orjson.loads(entry).get("task")))
            except (ValueError, AttributeError):
                self.client.rpush(DEAD, entry)  # not a task: kept for a person to read
                continue
            if self.push(task):
                queued += 1
            else:
                skipped += 1
        return queued, skipped

    def purge_dead(self) -> int:
        """Drop every dead letter; how many."""
        pipe = self.client.pipeline(transaction=True)
        pipe.llen(DEAD)
        pipe.delete(DEAD)
        count, _ = pipe.execute()
        return int(count)

    # --- a worker's side -------------------------------------------------------------------

    def beat(self, worker: str) -> None:
        """This worker is alive for three more heartbeats."""
        ttl_ms = max(int(self.heartbeat * MISSED_BEATS * 1000), 1)
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(WORKERS, worker)
        pipe.set(heartbeat_key(worker), b"1", px=ttl_ms)
        pipe.execute()

    def take(self, worker: str, timeout: float) -> bytes | None:
        """The next task, moved into this worker's processing list; ``None`` after ``timeout`` seconds idle.

        Blocks in Redis (``BLMOVE``): an idle worker sends one command per timeout, not a poll loop.
        A join task in this worker's inbox comes first; :meth:`invite` ends the blocked take at once
        (this connection's id is kept under :func:`taker_key`), so a join does not wait for the take's
        timeout: waiting up to 5 s, joiners came to short spread runs after they had ended.
        """
        pipe = self.client.pipeline(transaction=False)
        pipe.set(taker_key(worker), self.client.client_id(), ex=max(1, int(self.heartbeat * MISSED_BEATS)))
        pipe.lmove(inbox_key(worker), processing_key(worker), "LEFT", "RIGHT")
        raw = pipe.execute()[1]
        if raw is not None:
            return bytes(raw)
        raw = self.client.blmove(PENDING, processing_key(worker), timeout, "LEFT", "RIGHT")
        return bytes(raw) if raw is not None else None

    def done(self, worker: str, raw: bytes) -> None:
        """The task ended: off this worker's list, its dedup entry and death count gone."""
        task = _fingerprint_and_id(raw)
        pipe = self.client.pipeline(transaction=True)
        pipe.lrem(processing_key(worker), 1, raw)
        if task[0]:
            pipe.hdel(QUEUED, task[0])
        pipe.hdel(DEATHS, task[1])
        pipe.execute()

    def dead_letter(self, worker: str, raw: bytes, reason: str) -> None:
        """Give the task up, with the reason: off the worker's list, onto the dead-letter list."""
        fingerprint, task_id = _fingerprint_and_id(raw)
        entry = b'{"reason":' + orjson.dumps(reason) + b',"at":' + str(int(time.time())).encode()
        try:
            orjson.loads(raw)
            entry += b',"task":' + raw + b"}"
        except orjson.JSONDecodeError:  # not a task at all: kept as text, shown as unreadable
            entry += b',"task":' + orjson.dumps(raw.decode(errors="replace")) + b"}"
        pipe = self.client.pipeline(transaction=True)
        pipe.lpush(DEAD, entry)
        pipe.lrem(processing_key(worker), 1, raw)
        if fingerprint:
            pipe.hdel(QUEUED, fingerprint)
        pipe.hdel(DEATHS, task_id)
        pipe.execute()

    def died(self, worker: str, raw: bytes, reason: str) -> bool:
        """A run of the task died (its crawl was killed): back to the queue, or dead-lettered after
        ``QUEUE_MAX_DEATHS``; True if dead-lettered."""
        _, task_id = _fingerprint_and_id(raw)
        deaths = int(self.client.hincrby(DEATHS, task_id, 1))
        if deaths >= self.max_deaths:
            self.dead_letter(worker, raw, f"its runs died {deaths} times (last: {reason})")
            return True
        self.release(worker, raw)
        return False

    def release(self, worker: str, raw: bytes) -> None:
        """Hand a task back untouched (a worker stopping before it ran it): first in line again."""
        pipe = self.client.pipeline(transaction=True)
        pipe.lrem(processing_key(worker), 1, raw)
        pipe.lpush(PENDING, raw)
        pipe.execute()

    def requeue(self, worker: str, raw: bytes) -> bytes:
        """Hand a task back under a new id, first in line: its rerun is a new run, not the rest of this
        one (a spread run whose owner's store gave up). Its dedup entry follows it. The JSON queued."""
        data = orjson.loads(raw)
        old = str(data.get("id") or "")
        data["id"] = uuid.uuid4().hex
        fresh = orjson.dumps(data)
        keys = [processing_key(worker), PENDING, QUEUED, DEATHS]
        self._requeue(keys=keys, args=[raw, fresh, str(data.get("fingerprint") or ""), data["id"], old])
        return fresh

    def release_all(self, worker: str) -> int:
        """Everything this worker still holds back to the queue, and the worker gone from the registry."""
        moved = 0
        while self.client.lmove(processing_key(worker), PENDING, "RIGHT", "LEFT") is not None:
            moved += 1
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(heartbeat_key(worker), inbox_key(worker))
        pipe.srem(WORKERS, worker)
        pipe.execute()
        return moved

    # --- the reaper ------------------------------------------------------------------------

    def reap(self, me: str = "") -> list[tuple[str, int, int]]:
        """Return every dead worker's tasks to the queue (or the dead-letter list): (worker, back, dead).

        Not within twice a heartbeat's expiry of Redis starting: after an outage every
        heartbeat may have expired, and a live worker's backoff (at most one expiry,
        :mod:`trawl.distributed.outage`) and its next beat take that long.
        """
        if server_uptime(self.client) < 2 * self.heartbeat * MISSED_BEATS:
            return []
        reaped = []
        for member in self.client.smembers(WORKERS):
            worker = member.decode() if isinstance(member, bytes) else str(member)
            if worker == me:  # the reaper is alive, whatever its heartbeat says after a stall
                continue
            keys = [processing_key(worker), heartbeat_key(worker), PENDING, DEAD, DEATHS, WORKERS, QUEUED,
                    inbox_key(worker)]  # fmt: skip
            back, dead = self._reap(keys=keys, args=[self.max_deaths, worker, int(time.time())])
            if int(back) >= 0:
                reaped.append((worker, int(back), int(dead)))
        return reaped

    # --- what is where ---------------------------------------------------------------------

    def invite(self, worker: str, task: Task) -> None:
        """A join task for ``worker`` alone: its blocked take is ended, and its next take takes it."""
        pipe = self.client.pipeline(transaction=False)
        pipe.rpush(inbox_key(worker), task.to_json())
        pipe.get(taker_key(worker))
        _, taker = pipe.execute()
        if taker is not None:
            self.client.client_unblock(int(taker))

    def live_workers(self) -> list[str]:
        """The workers whose heartbeat is current."""
        members = sorted(m.decode() if isinstance(m, bytes) else str(m)
                         for m in self.client.smembers(WORKERS))  # fmt: skip
        pipe = self.client.pipeline(transaction=False)
        for worker in members:
            pipe.exists(heartbeat_key(worker))
        return [w for w, alive in zip(members, pipe.execute(), strict=True) if alive]

    def idle(self) -> bool:
        """Nothing pending, nothing held by any worker, live or dead (the reaper may return a dead one's)."""
        if self.client.llen(PENDING):
            return False
        for member in self.client.smembers(WORKERS):
            worker = member.decode() if isinstance(member, bytes) else str(member)
            if self.client.llen(processing_key(worker)) or self.client.llen(inbox_key(worker)):
                return False
        return True

    def status(self) -> Status:
        status = Status()
        for raw in self.client.lrange(PENDING, 0, -1):
            _count(status, status.pending, raw)
        for member in sorted(self.client.smembers(WORKERS)):
            worker = member.decode() if isinstance(member, bytes) else str(member)
            held = self.client.lrange(processing_key(worker), 0, -1)
            for raw in held:
                _count(status, status.in_flight, raw)
            status.workers[worker] = (bool(self.client.exists(heartbeat_key(worker))), len(held))
        for entry in self.client.lrange(DEAD, 0, -1):
            try:
                data = orjson.loads(entry)
                reason = str(data.get("reason", ""))
            except (ValueError, AttributeError):
                status.unreadable += 1
                continue
            try:
                task = Task.from_json(orjson.dumps(data.get("task")))
                where = (task.domain, task.source)
            except ValueError:
                where = UNREADABLE
            status.dead[where] += 1
            status.reasons.append((*where, reason))
        return status


def _with_fingerprint(task: Task) -> bytes:
    """The task's JSON with its fingerprint, so that the reaper (Lua) can clear its dedup entry."""
    data = orjson.loads(task.to_json())
    data["fingerprint"] = task.fingerprint
    return orjson.dumps(data)


def _fingerprint_and_id(raw: bytes) -> tuple[str, str]:
    try:
        data: Any = orjson.loads(raw)
        return str(data.get("fingerprint") or ""), str(data.get("id") or raw.decode(errors="replace"))
    except (orjson.JSONDecodeError, AttributeError):
        return "", raw.decode(errors="replace")


def _count(status: Status, counter: Counter[tuple[str, str]], raw: bytes) -> None:
    try:
        task = Task.from_json(raw)
    except ValueError:
        status.unreadable += 1
        return
    counter[(task.domain, task.source)] += 1

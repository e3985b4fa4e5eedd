"""One run's page requests in Redis, held reliably: the queue for spreading a domain's pages over workers.

The queue under :class:`trawl.distributed.spreadsched.SpreadScheduler`, the
scheduler of a spread run's crawlers (docs/distributed.md, "What is spread
over the workers"). What it gives, against scrapy-redis's queue, which pops a
request for good:

- ``push``: a request serialized with Scrapy's ``Request.to_dict`` (callbacks
  by name, so any worker's spider of the same source can run it), pickled as
  scrapy-redis pickles it. A request that cannot be serialized (a lambda
  callback, a lock in its meta) raises :class:`UnserializableRequest`: it is
  never dropped silently.
- the run's **dedup**, shared by every worker of the run: a Redis set of
  request fingerprints, checked and added in the push's one script (two
  workers pushing the same page at once queue it once). It is bounded by the
  run: it expires ``RUN_TTL`` after the run's last push, and an hour after the
  owner saw the run finished (not scrapy-redis's set that never expires).
  A ``dont_filter`` request (a retry) skips it, with an entry of its own so
  that a batch sent twice after a lost connection still queues it once.
- take (``LMOVE`` from the run's queue into this worker's held list, several
  in one script: the reliable-queue pattern, as for tasks): at every instant a
  request is in exactly one list.
- ``ack``: off the held list once its page is stored (or it finally failed).
- ``reap``: a worker whose heartbeat (the task queue's, :mod:`.queue`) has
  expired gets its held requests put back at the front of the run's queue, in
  one Lua script: a worker killed with ``kill -9`` loses nothing, and what is
  fetched twice is at most what it held.
- the end check: nothing queued and no worker holding anything, read in one
  Lua script (a holder pushes a request's children before it acknowledges the
  request, so at every instant the run's outstanding work is queued or held);
  the owner then says so (joiners stop) and sums the run's counters, which
  every crawler reports (as they are, not as a delta: a batch sent twice
  counts once) in the transaction of its acknowledgements.

:meth:`RunRequests.apply` does all of a batch in one transaction, one round
trip (:mod:`.spreadlane` sends it from a thread of its own).

**What a spider must do to be spreadable** (``spreadable = True`` on its
class; :class:`~trawl.sources.cdx.wayback.WaybackSpider`,
:class:`~trawl.sources.cdx.commoncrawl.CommonCrawlSpider`):

- every request it yields, from ``start()`` or from a callback, goes into the
  run's queue and may be answered by **another process's spider** of the same
  source, built with the same arguments and settings: its callback and errback
  must be methods of the spider (named, not lambdas or closures), and its
  ``meta`` and ``cb_kwargs`` must pickle (no locks, responses, open files);
- a callback must not read state that another callback built in *this*
  process: what it needs travels in the request's meta (as the CDX sources'
  endpoint does, :meth:`~trawl.sources.cdx.base.CdxSpider.endpoint_of`);
- ``start()`` runs on the owner only; a joiner's spider starts nothing;
- a callback never copies a response's meta wholesale into a new request
  (the held request's token would travel with it);
- dedup is the run's, across workers: a request whose fingerprint the run has
  seen is not queued again, so "each page once" holds across workers without
  the spider's help; a request that must be fetched again says
  ``dont_filter=True``;
- per-process counters are folded into the owner's stats only for the
  counters :data:`trawl.distributed.spreadlane.FOLDED_PREFIXES` names;
- no ``JOBDIR``, ``check_only`` or ``limit_requests`` (per-process state):
  such a task runs whole (:func:`trawl.distributed.taskrun.spread_role`).

Keys, under ``trawl:spread:<run>:``: ``requests`` (list), ``seen`` (set),
``holders`` (set of workers, with their role), ``held:<worker>~<role>``
(list), ``owner``, ``done``, ``reporters`` (set) and ``stats:<crawler>`` (each
crawler's counters, JSON); all expire with the run.

A request is stored as its ``to_dict`` without the fields at their defaults
(method GET, no body, headers, cookies, flags or ``cb_kwargs``), pickled and
compressed (zlib, level 6): :func:`decode` restores the defaults. A wayback page
request with the default filters: 2,058 bytes pickled whole, 1,827 without its
defaults (its URL, the filters' query, is 1,600 of them), 687 compressed.
Redis is trusted as the task queue is: a pickled request runs code when read.
"""

from __future__ import annotations

import pickle
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from scrapy.utils.request import request_from_dict

from trawl.distributed.queue import MISSED_BEATS, heartbeat_key, server_uptime
from trawl.errors import TrawlError

if TYPE_CHECKING:
    import redis
    from scrapy import Request, Spider

PREFIX = "trawl:spread:"
#: How long a run's keys live after its last push: a run abandoned by every worker is forgotten.
RUN_TTL = 7 * 24 * 3600
#: How long a run's dedup outlives the run's end (a rerun of its task within it queues nothing again).
OVER_TTL_MS = 3600 * 1000
HOLDER_SEPARATOR = "~"
#: Seconds between two renewals of a holder's registration and its keys' expiry, taking along.
RENEW_EVERY = 10.0

# KEYS: seen, requests; ARGV: ttl ms, then (dedup entry ('' to skip the dedup), request) pairs.
# Every push of a batch in one call: the entries new to the run's dedup go into the queue, in order.
_PUSH = """
local new = {}
for i = 2, #ARGV, 2 do
  if ARGV[i] == '' or redis.call('SADD', KEYS[1], ARGV[i]) == 1 then new[#new + 1] = ARGV[i + 1] end
end
for i = 1, #new, 1000 do redis.call('RPUSH', KEYS[2], unpack(new, i, math.min(i + 999, #new))) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return #new
"""

# KEYS: held, heartbeat, requests, holders; ARGV: worker. A live worker (a heartbeat) is left alone.
_REAP = """
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local back = 0
while redis.call('LMOVE', KEYS[1], KEYS[3], 'RIGHT', 'LEFT') do back = back + 1 end
redis.call('SREM', KEYS[4], ARGV[1])
return back
"""


# KEYS: requests, held, holders; ARGV: how many, worker, ttl ms, '1' to renew the expiries (the first
# take, then every RENEW_EVERY s). Up to N requests moved into the held list, the holder registered.
_TAKE = """
local taken = {}
for i = 1, tonumber(ARGV[1]) do
  local raw = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not raw then break end
  taken[i] = raw
end
if #taken > 0 then
  -- Every take: a reaper may have taken this holder out of the set while it looked dead (a stalled
  -- heartbeat); unregistered, what it holds now would be invisible to the end check.
  redis.call('SADD', KEYS[3], ARGV[2])
  if ARGV[4] == '1' then
    redis.call('PEXPIRE', KEYS[3], ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
  end
end
return taken
"""


# KEYS: requests, holders, done, owner, reporters, seen; ARGV: held prefix, heartbeat prefix, role, ttl ms,
# the dedup's ttl once the run is over. Atomic: no request moves between the reads.
# Owner: finished (nothing queued, nothing held by anyone) -> says so, and answers every crawler's stats.
# Joiner: over when the owner said so, or when its owner is dead and the run finished.
_CHECK = """
local function finished()
  if redis.call('LLEN', KEYS[1]) > 0 then return false end
  for _, worker in ipairs(redis.call('SMEMBERS', KEYS[2])) do
    if redis.call('LLEN', ARGV[1] .. worker) > 0 then return false end
  end
  return true
end
if ARGV[3] == 'owner' then
  if not finished() then return {0} end
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[4])
  redis.call('PEXPIRE', KEYS[6], ARGV[5])
  local reports = {}
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[5])) do
    local report = redis.call('GET', key)
    if report then reports[#reports + 1] = report end
  end
  return {1, reports}
end
if redis.call('EXISTS', KEYS[3]) == 1 then return {1} end
local owner = redis.call('GET', KEYS[4])
if owner and redis.call('EXISTS', ARGV[2] .. owner) == 1 then return {0} end
if finished() then return {1} end
return {0}
"""

#: ``to_dict`` fields left out at these values (``request_from_dict`` takes the Request's defaults).
DEFAULTS: dict[str, Any] = {
    "method": "GET", "body": b"", "headers": {}, "cookies": {}, "encoding": "utf-8", "priority": 0,
    "dont_filter": False, "flags": [], "cb_kwargs": {}, "callback": None, "errback": None,
}  # fmt: skip


class UnserializableRequest(TrawlError):
    """A request that cannot go into the shared queue: the crawl fails loudly rather than drop it."""


def encode(request: Request, spider: Spider) -> bytes:
    """The request as the queue holds it; :class:`UnserializableRequest` when it cannot be."""
    try:
        data = request.to_dict(spider=spider)
        data = {k: v for k, v in data.items() if k not in DEFAULTS or v != DEFAULTS[k]}
        return zlib.compress(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL), 6)
    except (ValueError, TypeError, AttributeError, pickle.PicklingError) as exc:
        raise UnserializableRequest(
            f"{spider.name}: the request for {request.url} cannot be put in the shared queue: {exc}"
        ) from None


def decode(raw: bytes, spider: Spider) -> Request:
    """A request read back, its callbacks bound to this process's spider."""
    return request_from_dict(pickle.loads(zlib.decompress(raw)), spider=spider)  # noqa: S301 - the queue's own Redis


@dataclass
class Applied:
    """What one round trip of a crawler's batch answered."""

    #: The requests taken into this worker's held list, in queue order.
    taken: list[bytes] = field(default_factory=list)
    #: The run is over for this crawler (the owner: finished, and said so; a joiner: the owner said so).
    over: bool = False
    #: The owner, once over: the run's counters, every crawler's last report summed.
    totals: dict[str, float] = field(default_factory=dict)


class RunRequests:
    """One run's requests as seen by one worker."""

    def __init__(
        self, client: redis.Redis, run: str, worker: str, ttl: float = RUN_TTL, role: str = ""
    ) -> None:
        self.client = client
        self.run = run
        self.worker = worker
        #: Who holds requests: the worker, and its role when it has one, since a worker that joined a run
        #: may also take over its dead owner's task: two crawlers of one run in one process, each its list.
        self.holder = f"{worker}{HOLDER_SEPARATOR}{role}" if role else worker
        self.ttl_ms = max(int(ttl * 1000), 1)
        base = f"{PREFIX}{run}:"
        self.requests = base + "requests"
        self.seen = base + "seen"
        self.holders = base + "holders"
        self.owner = base + "owner"
        self.done_key = base + "done"
        self.reporters = base + "reporters"
        #: This crawler's stats report (one key per crawler: a worker may join the same run twice).
        self.report_key = f"{base}stats:{self.holder}:{uuid.uuid4().hex[:8]}"
        self._reported = False
        self._renew_at = 0.0
        self._push = client.register_script(_PUSH)
        self._reap = client.register_script(_REAP)

    def held_key(self, worker: str | None = None) -> str:
        return f"{PREFIX}{self.run}:held:{worker or self.holder}"

    @staticmethod
    def entry(request: Request, spider: Spider, fingerprint: str) -> tuple[str, bytes]:
        """(the dedup entry, the request as queued); raises :class:`UnserializableRequest` first.

        A ``dont_filter`` request (a retry) gets an entry of its own, so that pushing it twice
        (a batch sent again after a lost connection) still queues it once.
        """
        raw = encode(request, spider)
        return ("once:" + uuid.uuid4().hex if request.dont_filter else fingerprint), raw

    # --- one round trip per batch (trawl.distributed.spreadlane) -------------------------------

    def apply(
        self, ops: Sequence[tuple[str, Any]], take: int = 0, check: str = "", stats: Mapping[str, float] = {}
    ) -> Applied:
        """Pushes, acks, the stats report, a take of up to ``take``, the end check: one transaction.

        In this order, which is what keeps the run's outstanding work always queued or held:
        a request's children are pushed before it is acknowledged. Sent again after a lost
        connection, it does nothing twice: a push is deduplicated by its entry, an
        acknowledgement removes what is no longer there; only the take is left out of a
        retry (:meth:`orphans` finds what a lost answer took).
        """
        pipe = self.client.pipeline(transaction=True)
        pushes = [item for kind, value in ops if kind == "push" for item in value]
        # EVAL, not EVALSHA: a pipeline's EVALSHA costs a SCRIPT EXISTS round trip each time, and a
        # NOSCRIPT inside MULTI (a restarted Redis) would fail the pushes and let the acks through.
        if pushes:
            pipe.eval(_PUSH, 2, self.seen, self.requests, self.ttl_ms, *pushes)
        for kind, value in ops:
            if kind == "ack":
                pipe.lrem(self.held_key(), 1, value)
        if stats:  # the crawler's counters as they are now (not a delta: sent twice, counted once)
            pipe.set(self.report_key, orjson.dumps(dict(stats)), px=self.ttl_ms)
            if not self._reported:
                pipe.sadd(self.reporters, self.report_key)
                pipe.pexpire(self.reporters, self.ttl_ms)
        if take > 0:
            renew = "1" if time.monotonic() >= self._renew_at else "0"
            pipe.eval(
                _TAKE, 3, self.requests, self.held_key(), self.holders, take, self.holder, self.ttl_ms, renew
            )
        if check:
            keys = [self.requests, self.holders, self.done_key, self.owner, self.reporters, self.seen]
            held, over_ttl = f"{PREFIX}{self.run}:held:", min(self.ttl_ms, OVER_TTL_MS)
            args = [held, heartbeat_key(""), check, self.ttl_ms, over_ttl]
            pipe.eval(_CHECK, len(keys), *keys, *args)
        replies = pipe.execute()
        if stats:
            self._reported = True
        if take > 0 and replies[-2 if check else -1] and renew == "1":
            self._renew_at = time.monotonic() + RENEW_EVERY
        applied = Applied()
        if check:
            answer = replies.pop()
            applied.over = bool(int(answer[0]))
            for report in answer[1] if len(answer) > 1 else []:
                for name, value in orjson.loads(report).items():
                    applied.totals[name] = applied.totals.get(name, 0.0) + float(value)
        if take > 0:
            applied.taken = [bytes(raw) for raw in replies.pop()]
        return applied

    def orphans(self, known: Counter[bytes]) -> list[bytes]:
        """What this worker's held list has beyond ``known``: taken by a take whose answer was lost."""
        extra = Counter(bytes(raw) for raw in self.client.lrange(self.held_key(), 0, -1)) - known
        return list(extra.elements())

    # --- one command at a time (the tests, the bench) -----------------------------------------

    def push(self, request: Request, spider: Spider, fingerprint: str) -> bool:
        """Queue ``request`` unless the run saw its fingerprint (not for ``dont_filter``); True if queued."""
        seen, raw = self.entry(request, spider, fingerprint)  # raises before anything is queued
        return bool(self._push(keys=[self.seen, self.requests], args=[self.ttl_ms, seen, raw]))

    def pop(self) -> bytes | None:
        """The next request, moved into this worker's held list; ``None`` when none is queued."""
        taken = self.apply((), take=1).taken
        return taken[0] if taken else None

    def ack(self, raw: bytes) -> None:
        """The request's page is stored, or it finally failed: off this worker's held list."""
        self.client.lrem(self.held_key(), 1, raw)

    def hand_back(self) -> int:
        """Everything this worker holds back to the front of the run's queue (a worker stopping)."""
        moved = 0
        while self.client.lmove(self.held_key(), self.requests, "RIGHT", "LEFT") is not None:
            moved += 1
        self.client.srem(self.holders, self.holder)
        return moved

    def reap(self, heartbeat: float = 0.0) -> dict[str, int]:
        """The requests of every holder whose heartbeat expired, back in the queue: worker -> how many.

        Never this worker's own (it is alive, whatever its heartbeat says after a stall), and not
        within two heartbeat expiries of Redis starting (after an outage every heartbeat may have
        expired: :meth:`trawl.distributed.queue.WorkQueue.reap` waits the same).
        """
        if heartbeat:
            if server_uptime(self.client) < 2 * heartbeat * MISSED_BEATS:
                return {}
        reaped = {}
        for member in self.client.smembers(self.holders):
            holder = _text(member)
            worker = holder.split(HOLDER_SEPARATOR, 1)[0]
            if worker == self.worker:
                continue
            keys = [self.held_key(holder), heartbeat_key(worker), self.requests, self.holders]
            back = int(self._reap(keys=keys, args=[holder]))
            if back >= 0:
                reaped[worker] = reaped.get(worker, 0) + back
        return reaped

    def finished(self) -> bool:
        """Nothing queued, nothing held by any worker: the run's pages are all done (read only)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.llen(self.requests)
        for member in self.client.smembers(self.holders):
            pipe.llen(self.held_key(_text(member)))
        return not any(pipe.execute())

    def open(self) -> None:
        """This worker owns the run (a rerun of a dead owner's task takes it over)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.owner, self.worker, px=self.ttl_ms)
        pipe.delete(self.done_key)
        pipe.execute()

    def queued_bytes(self) -> int:
        """Redis's ``MEMORY USAGE`` of the run's queue (the bench divides it by the requests in it)."""
        return int(self.client.memory_usage(self.requests, samples=0) or 0)

    def decode(self, raw: bytes, spider: Any) -> Request:
        return decode(raw, spider)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

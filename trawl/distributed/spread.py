"""One run's page requests in Redis, held reliably: the queue for spreading a domain's pages over workers.

The queue under :class:`trawl.distributed.spreadsched.SpreadScheduler`, the
scheduler of a spread run's crawlers (docs/distributed.md, "Spreading one
domain's pages"). What it gives, against scrapy-redis's queue, which pops a
request for good:

- ``push``: a request serialized with Scrapy's ``Request.to_dict`` (callbacks
  by name, so any worker's spider of the same source can run it), pickled as
  scrapy-redis pickles it. A request that cannot be serialized (a lambda
  callback, a lock in its meta) raises :class:`UnserializableRequest`: it is
  never dropped silently. The run's dedup is a Redis set of fingerprints that
  expires with the run (``ttl``, renewed at each push): bounded, unlike
  scrapy-redis's dupe filter, which never expires.
- ``pop``: ``LMOVE`` from the run's queue into this worker's held list (the
  reliable-queue pattern, as for tasks): at every instant a request is in
  exactly one list.
- ``ack``: off the held list once its page is stored (or it finally failed).
- ``reap``: a worker whose heartbeat (the task queue's, :mod:`.queue`) has
  expired gets its held requests put back at the front of the run's queue, in
  one Lua script: a worker killed with ``kill -9`` loses nothing, and what is
  fetched twice is at most what it held.
- ``finished``: nothing queued and no worker holding anything, read in one
  Lua script (a holder pushes a request's children before it acknowledges the
  request, so at every instant the run's outstanding work is queued or held).
- ``open``/``close``: the owner (the worker whose crawler started the run)
  names itself, and says when the run is over, so that joiners stop.

Keys, under ``trawl:spread:<run>:``: ``requests`` (list), ``seen`` (set),
``holders`` (set of workers), ``held:<worker>`` (list), ``owner``, ``done``;
all expire with the run.

A request is stored as its ``to_dict`` without the fields at their defaults
(method GET, no body, headers, cookies, flags or ``cb_kwargs``), pickled and
compressed (zlib, level 6): :func:`decode` restores the defaults. A wayback page
request with the default filters: 2,058 bytes pickled whole, 1,827 without its
defaults (its URL, the filters' query, is 1,600 of them), 687 compressed.
Redis is trusted as the task queue is: a pickled request runs code when read.
"""

from __future__ import annotations

import pickle
import zlib
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import request_from_dict

from trawl.distributed.queue import heartbeat_key
from trawl.errors import TrawlError

if TYPE_CHECKING:
    import redis
    from scrapy import Request, Spider

PREFIX = "trawl:spread:"
#: How long a run's keys live after its last push: a run abandoned by every worker is forgotten.
RUN_TTL = 7 * 24 * 3600

# KEYS: seen, requests; ARGV: fingerprint ('' to skip the dedup), request, ttl ms.
_PUSH = """
if ARGV[1] ~= '' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"""

# KEYS: held, heartbeat, requests, holders; ARGV: worker. A live worker (a heartbeat) is left alone.
_REAP = """
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
local back = 0
while redis.call('LMOVE', KEYS[1], KEYS[3], 'RIGHT', 'LEFT') do back = back + 1 end
redis.call('SREM', KEYS[4], ARGV[1])
return back
"""


# KEYS: requests, holders; ARGV: the prefix of held lists. Atomic: no request moves between the reads.
_FINISHED = """
if redis.call('LLEN', KEYS[1]) > 0 then return 0 end
for _, worker in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if redis.call('LLEN', ARGV[1] .. worker) > 0 then return 0 end
end
return 1
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


class RunRequests:
    """One run's requests as seen by one worker."""

    def __init__(self, client: redis.Redis, run: str, worker: str, ttl: float = RUN_TTL) -> None:
        self.client = client
        self.run = run
        self.worker = worker
        self.ttl_ms = max(int(ttl * 1000), 1)
        base = f"{PREFIX}{run}:"
        self.requests = base + "requests"
        self.seen = base + "seen"
        self.holders = base + "holders"
        self.owner = base + "owner"
        self.done_key = base + "done"
        self._push = client.register_script(_PUSH)
        self._reap = client.register_script(_REAP)
        self._finished = client.register_script(_FINISHED)

    def held_key(self, worker: str | None = None) -> str:
        return f"{PREFIX}{self.run}:held:{worker or self.worker}"

    def push(self, request: Request, spider: Spider, fingerprint: str) -> bool:
        """Queue ``request`` unless the run saw its fingerprint (not for ``dont_filter``); True if queued."""
        raw = encode(request, spider)  # raises before anything is queued
        seen = "" if request.dont_filter else fingerprint
        return bool(self._push(keys=[self.seen, self.requests], args=[seen, raw, self.ttl_ms]))

    def pop(self) -> bytes | None:
        """The next request, moved into this worker's held list; ``None`` when none is queued."""
        pipe = self.client.pipeline(transaction=True)
        pipe.lmove(self.requests, self.held_key(), "LEFT", "RIGHT")
        pipe.sadd(self.holders, self.worker)
        pipe.pexpire(self.holders, self.ttl_ms)
        pipe.pexpire(self.held_key(), self.ttl_ms)
        raw = pipe.execute()[0]
        return bytes(raw) if raw is not None else None

    def ack(self, raw: bytes) -> None:
        """The request's page is stored, or it finally failed: off this worker's held list."""
        self.client.lrem(self.held_key(), 1, raw)

    def hand_back(self) -> int:
        """Everything this worker holds back to the front of the run's queue (a worker stopping)."""
        moved = 0
        while self.client.lmove(self.held_key(), self.requests, "RIGHT", "LEFT") is not None:
            moved += 1
        self.client.srem(self.holders, self.worker)
        return moved

    def reap(self) -> dict[str, int]:
        """The requests of every holder whose heartbeat expired, back in the queue: worker -> how many."""
        reaped = {}
        for member in self.client.smembers(self.holders):
            worker = member.decode() if isinstance(member, bytes) else str(member)
            keys = [self.held_key(worker), heartbeat_key(worker), self.requests, self.holders]
            back = int(self._reap(keys=keys, args=[worker]))
            if back >= 0:
                reaped[worker] = back
        return reaped

    def finished(self) -> bool:
        """Nothing queued, nothing held by any worker: the run's pages are all done."""
        prefix = f"{PREFIX}{self.run}:held:"
        return bool(self._finished(keys=[self.requests, self.holders], args=[prefix]))

    def open(self) -> None:
        """This worker owns the run (a rerun of a dead owner's task takes it over)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.owner, self.worker, px=self.ttl_ms)
        pipe.delete(self.done_key)
        pipe.execute()

    def close(self) -> None:
        """The owner saw the run finished: joiners stop."""
        self.client.set(self.done_key, b"1", px=self.ttl_ms)

    def over(self) -> bool:
        """What a joiner waits for: the owner said so, or the run is finished and its owner is dead
        (a dead owner's task is run again, and its rerun owns the run; one dead-lettered never is)."""
        if self.client.exists(self.done_key):
            return True
        owner = self.client.get(self.owner)
        alive = owner is not None and self.client.exists(heartbeat_key(owner.decode()))
        return not alive and self.finished()

    def queued_bytes(self) -> int:
        """Redis's ``MEMORY USAGE`` of the run's queue (the bench divides it by the requests in it)."""
        return int(self.client.memory_usage(self.requests, samples=0) or 0)

    def decode(self, raw: bytes, spider: Any) -> Request:
        return decode(raw, spider)

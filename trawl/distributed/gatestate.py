"""The Redis side of the shared gate: what every process on every machine reads and writes.

One :class:`GateState` per Redis URL and process. Per source it keeps, under
``trawl:gate:<source>:``:

* ``window``: the budget ``N/Ts``, a sorted set of one token per request, scored
  by the end of its lease while the request is out and by the moment its
  answer came back once it is in (Redis's own clock, ``TIME``). A request may
  go while fewer than ``N`` tokens score above ``now - T``;
* ``inflight``: the concurrency cap across processes, a sorted set of one
  token per request in flight scored with its lease's end: a process killed
  with requests in flight frees their slots when the leases run out, without
  anyone cleaning up (its window tokens age out ``T`` later);
* ``pause``: a Retry-After, 429 or ban pause, a key whose TTL is the pause
  (durations, not clock times: machines' clocks need not agree);
* ``budget``: the AIMD cut a process made (a 429 without a hint), with a TTL,
  so that every process sends at the cut budget until it recovers;
* ``alive``: a marker; missing after an outage means Redis restarted and the
  window was lost, and the first process back pauses the source for one
  window rather than let every process start from an empty one.

Pause, cut, concurrency and window are read and taken in one script (one
round trip, atomic); the answer's release is a second.

Why the window counts a request until ``T`` after its *answer*, not from its
send (and why it is not the PyPI ``limits`` moving window any more): the
upstream counts arrivals, and under load (two processes on a 2-core machine
busy with three crawls) a request was seen to arrive 170 ms after its slot was
taken, while the next one arrived at once; with ``limits`` the entry was also
stamped with the client's clock read *before* its round trip, pushed in
arrival order rather than stamp order, and its window in whole seconds, so the
atomic check held ``T`` only between the moments slots were taken, and the
gate's 0.15 s margin was a look outside the atomic step. The server then
counted 6 requests in a 2 s window of ``5/2s`` (tests/test_shared_gate.py).
No margin bounds such a delay. An answer, though, always comes after its
request arrived: if the ``N+1``-th request may only be taken once some earlier
one's answer is ``T`` old, any ``N+1`` arrivals span at least ``T``, whatever
the load, the network or the clocks of the processes (one Redis clock decides).
The price: a request counts ``T`` plus its answer time, so a source that takes
``L`` seconds to answer gets at most ``N`` per ``T + L`` when the budget binds
(nothing for answers in milliseconds; 2 % on ``15/60s`` with 1 s answers).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from redis import asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from trawl.common.secrets import redact

logger = logging.getLogger("trawl.distributed.gate")

#: What a lost or refused Redis raises: the gate then waits (fails closed).
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)
#: Seconds a Redis call may take before it counts as an outage.
SOCKET_TIMEOUT = 5.0
PREFIX = "trawl:gate"

#: KEYS: pause, inflight, budget, alive, window.
#: ARGV: token, cap, lease_ms, lost_ms, cut_requests, cut_period, cut_concurrency, cut_ttl_ms,
#:       requests (-1: no budget), period_ms, default_period_ms.
#: Returns {status, ms, pause_reason, cut_requests, cut_period, cut_concurrency}; status
#: 0: a slot and a window entry were taken for ``token``; 1: paused for ms; 2: every slot is in
#: flight; 3: the window is full until ms from now (-1: until an answer comes back).
_CLAIM = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
if redis.call('EXISTS', KEYS[4]) == 0 then
  local lost = tonumber(ARGV[4])
  if lost > 0 and redis.call('PTTL', KEYS[1]) < lost then
    redis.call('SET', KEYS[1], 'the shared window was lost (Redis restarted)', 'PX', lost)
  end
end
redis.call('SET', KEYS[4], '1', 'PX', 86400000)  -- a day past the last claim
if tonumber(ARGV[8]) > 0 then
  redis.call('HSET', KEYS[3], 'requests', ARGV[5], 'period', ARGV[6], 'concurrency', ARGV[7])
  redis.call('PEXPIRE', KEYS[3], ARGV[8])
end
local cut = redis.call('HMGET', KEYS[3], 'requests', 'period', 'concurrency')
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  return {1, pttl, redis.call('GET', KEYS[1]), cut[1], cut[2], cut[3]}
end
local cap = tonumber(ARGV[2])
if cut[3] then cap = math.min(cap, tonumber(cut[3])) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= cap then
  return {2, 0, '', cut[1], cut[2], cut[3]}
end
local lease = tonumber(ARGV[3])
local requests, period = tonumber(ARGV[9]), tonumber(ARGV[10])
if cut[1] and (requests < 0 or tonumber(cut[1]) < requests) then
  requests = tonumber(cut[1])
  local cut_period = tonumber(cut[2] or 0) * 1000
  if cut_period > 0 then period = cut_period end
  if period <= 0 then period = tonumber(ARGV[11]) end
end
if requests >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now - period)
  local count = redis.call('ZCARD', KEYS[5])
  if count >= requests then
    local wait = -1
    if requests > 0 then
      local edge = redis.call('ZRANGE', KEYS[5], count - requests, count - requests, 'WITHSCORES')
      local score = tonumber(edge[2])
      if score <= now then wait = score + period - now end
    end
    return {3, tostring(wait), '', cut[1], cut[2], cut[3]}
  end
  redis.call('ZADD', KEYS[5], now + lease, ARGV[1])
  if redis.call('PTTL', KEYS[5]) < lease + period then
    redis.call('PEXPIRE', KEYS[5], math.ceil(lease + period))
  end
end
redis.call('ZADD', KEYS[2], now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {0, 0, '', cut[1], cut[2], cut[3]}
"""

#: KEYS: inflight, window. ARGV: token, window_ttl_ms. The slot is free; the window entry now
#: counts from this moment, the answer's (see the module's docstring).
_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('ZADD', KEYS[2], 'XX', 'CH', now, ARGV[1]) > 0 then
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
  end
end
return 1
"""

#: KEYS: pause. ARGV: ms, reason. A pause only ever grows.
_PAUSE = """
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
  return 1
end
return 0
"""

#: KEYS: inflight, window. ARGV: lease_ms, window_ttl_ms, token... Leases of requests still in
#: flight, renewed in both sets (a window entry of a request still out must keep counting).
_HEARTBEAT = """
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000 + tonumber(ARGV[1])
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', until_ms, ARGV[i])
  redis.call('ZADD', KEYS[2], 'XX', until_ms, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
"""

FREE, PAUSED, BUSY, FULL = 0, 1, 2, 3


@dataclass(frozen=True)
class Claim:
    """What the claim script answered."""

    status: int
    pause: float  # seconds left of a pause
    reason: str
    cut: tuple[int, float, int] | None  # the shared AIMD budget: requests, period, concurrency
    #: FULL: seconds until the window lets one more go; None while that waits on an answer.
    wait: float | None = None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


class GateState:
    """The shared state of every source's gate, in one Redis (one client per process)."""

    def __init__(self, url: str) -> None:
        self.url = url
        # One retry on a fresh connection: after Redis restarts, the pool's idle connections
        # are dead sockets, and without it (``from_url`` gives its connections no retry) the
        # first call on each failed as a second outage, logged as one, right after "back".
        # A claim retried after its script ran takes the same token again: at worst it holds
        # a slot until its lease runs out.
        self.client = aioredis.Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            retry=Retry(NoBackoff(), 1),
        )
        self._claim = self.client.register_script(_CLAIM)
        self._release = self.client.register_script(_RELEASE)
        self._pause = self.client.register_script(_PAUSE)
        self._heartbeat = self.client.register_script(_HEARTBEAT)
        self.ident = f"{socket.gethostname()}:{os.getpid()}"
        self.down_since = 0.0

    @staticmethod
    def key(source: str, what: str) -> str:
        return f"{PREFIX}:{source}:{what}"

    # --- the outage, said once ----------------------------------------------------------------

    def lost(self, error: BaseException) -> None:
        """Redis did not answer: say so once per outage, whichever gate noticed."""
        if self.down_since:
            return
        self.down_since = time.time()
        logger.warning(
            "shared gate: Redis %s unreachable (%s): no request is sent until it is back; reconnecting",
            redact(self.url),
            redact(str(error) or type(error).__name__),
        )

    def back(self) -> None:
        if self.down_since:
            logger.warning("shared gate: Redis back after %.1f s", time.time() - self.down_since)
            self.down_since = 0.0

    # --- the calls ----------------------------------------------------------------------------

    async def claim(
        self,
        source: str,
        token: str,
        cap: int,
        lease: float,
        budget: tuple[int | None, float, float],
        lost: float = 0.0,
        cut: tuple[int, float, int, float] | None = None,
    ) -> Claim:
        """Check the pause, read the shared cut, take a concurrency slot and a window entry,
        atomically, in one round trip.

        ``budget``: this process's (requests or None, period, the period a cut without one
        falls back to); the shared cut lowers it. ``lost``: seconds to pause the source if
        Redis lost its state (this process saw an outage); ``cut``: this process's AIMD
        budget to share (requests, period, concurrency, TTL).
        """
        keys = [self.key(source, part) for part in ("pause", "inflight", "budget", "alive", "window")]
        requests, period, concurrency, ttl = cut or (0, 0.0, 0, 0.0)
        allowed, window, fallback = budget
        answer = await self._claim(
            keys,
            [
                token,
                cap,
                int(lease * 1000),
                int(lost * 1000),
                requests,
                period,
                concurrency,
                int(ttl * 1000),
                -1 if allowed is None else allowed,
                int(window * 1000),
                int(fallback * 1000),
            ],
        )
        status, ms, reason, cut_requests, cut_period, cut_concurrency = answer
        shared = None
        if cut_requests is not None and cut_concurrency is not None:
            shared = (int(cut_requests), float(cut_period or 0.0), int(cut_concurrency))
        status = int(status)
        if status == FULL:
            wait = float(ms)
            return Claim(status, 0.0, "", shared, None if wait < 0 else wait / 1000)
        return Claim(status, int(ms) / 1000, _text(reason), shared)

    async def release(self, source: str, token: str, window_ttl: float) -> None:
        """The request's answer is in: its slot is free, its window entry counts from now
        for ``window_ttl`` more seconds at most (the key's expiry)."""
        keys = [self.key(source, "inflight"), self.key(source, "window")]
        await self._release(keys, [token, max(int(window_ttl * 1000), 1)])

    async def pause(self, source: str, seconds: float, reason: str) -> None:
        if seconds > 0:
            await self._pause([self.key(source, "pause")], [max(int(seconds * 1000), 1), reason])

    async def heartbeat(self, source: str, tokens: list[str], lease: float, window_ttl: float) -> None:
        if tokens:
            keys = [self.key(source, "inflight"), self.key(source, "window")]
            await self._heartbeat(keys, [int(lease * 1000), int(window_ttl * 1000), *tokens])


_states: dict[str, GateState] = {}


def gate_state(url: str) -> GateState:
    """The process's client of the shared gate at ``url`` (made on first use)."""
    state = _states.get(url)
    if state is None:
        state = _states[url] = GateState(url)
    return state

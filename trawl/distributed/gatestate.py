"""The Redis side of the shared gate: what every process on every machine reads and writes.

One :class:`GateState` per Redis URL and process. Per source it keeps, under
``trawl:gate:<source>:``:

* ``window``: the budget ``N/Ts`` as a moving window, kept by the PyPI
  ``limits`` library's Redis storage (its asyncio API on redis-py's asyncio
  client, so the reactor never blocks on a round trip);
* ``inflight``: the concurrency cap across processes, a sorted set of one
  token per request in flight scored with its lease's end (Redis's own clock):
  a process killed with requests in flight frees their slots when the leases
  run out, without anyone cleaning up;
* ``pause``: a Retry-After, 429 or ban pause, a key whose TTL is the pause
  (durations, not clock times: machines' clocks need not agree);
* ``budget``: the AIMD cut a process made (a 429 without a hint), with a TTL,
  so that every process sends at the cut budget until it recovers;
* ``alive``: a marker; missing after an outage means Redis restarted and the
  window was lost, and the first process back pauses the source for one
  window rather than let every process start from an empty one.

Pause, concurrency and the cut are read and taken in one script (one round
trip); the window is two calls of ``limits`` (a look, then the hit).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from limits.aio.storage import RedisStorage
from redis import asyncio as aioredis
from redis.exceptions import RedisError

from trawl.run.secrets import redact

logger = logging.getLogger("trawl.distributed.gate")

#: What a lost or refused Redis raises: the gate then waits (fails closed).
REDIS_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)
#: Seconds a Redis call may take before it counts as an outage.
SOCKET_TIMEOUT = 5.0
PREFIX = "trawl:gate"

#: KEYS: pause, inflight, budget, alive.
#: ARGV: token, cap, lease_ms, lost_ms, cut_requests, cut_period, cut_concurrency, cut_ttl_ms.
#: Returns {status, pause_ms, pause_reason, cut_requests, cut_period, cut_concurrency};
#: status 0: a slot was taken for ``token``; 1: paused; 2: every slot is in flight.
_CLAIM = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {0, 0, '', cut[1], cut[2], cut[3]}
"""

#: KEYS: pause. ARGV: ms, reason. A pause only ever grows.
_PAUSE = """
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
  return 1
end
return 0
"""

#: KEYS: inflight. ARGV: lease_ms, token... Leases of requests still in flight, renewed.
_HEARTBEAT = """
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', until_ms, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""

FREE, PAUSED, BUSY = 0, 1, 2


@dataclass(frozen=True)
class Claim:
    """What the claim script answered."""

    status: int
    pause: float  # seconds left of a pause
    reason: str
    cut: tuple[int, float, int] | None  # the shared AIMD budget: requests, period, concurrency


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


class GateState:
    """The shared state of every source's gate, in one Redis (one client per process)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = aioredis.Redis.from_url(
            url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT
        )
        # One connection pool for trawl's scripts and limits' window.
        self.window = RedisStorage(
            "async+" + url,
            implementation="redispy",
            key_prefix=PREFIX,
            connection_pool=self.client.connection_pool,
        )
        self._claim = self.client.register_script(_CLAIM)
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
        lost: float = 0.0,
        cut: tuple[int, float, int, float] | None = None,
    ) -> Claim:
        """Check the pause, read the shared cut and take a concurrency slot, in one round trip.

        ``lost``: seconds to pause the source if Redis lost its state (this process saw an
        outage); ``cut``: this process's AIMD budget to share (requests, period, concurrency, TTL).
        """
        keys = [self.key(source, part) for part in ("pause", "inflight", "budget", "alive")]
        requests, period, concurrency, ttl = cut or (0, 0.0, 0, 0.0)
        answer = await self._claim(
            keys,
            [token, cap, int(lease * 1000), int(lost * 1000), requests, period, concurrency, int(ttl * 1000)],
        )
        status, pause_ms, reason, cut_requests, cut_period, cut_concurrency = answer
        shared = None
        if cut_requests is not None and cut_concurrency is not None:
            shared = (int(cut_requests), float(cut_period or 0.0), int(cut_concurrency))
        return Claim(int(status), int(pause_ms) / 1000, _text(reason), shared)

    async def window_free_at(self, source: str, requests: int, span: float) -> float:
        """When the window lets one more request go (0: now), counting ``span`` seconds back:
        the period plus the margin for the jitter between a send and its arrival."""
        oldest, count = await self.window.get_moving_window(f"{source}:window", requests, span)  # type: ignore[arg-type]
        return oldest + span if count >= requests else 0.0

    async def hit(self, source: str, requests: int, period: float) -> bool:
        """Take one request of the window, atomically; False if another process took the last one.

        ``limits`` keeps whole seconds: a fractional period is rounded up (stricter, never looser).
        """
        return await self.window.acquire_entry(f"{source}:window", requests, math.ceil(period))

    async def release(self, source: str, token: str) -> None:
        await self.client.zrem(self.key(source, "inflight"), token)

    async def pause(self, source: str, seconds: float, reason: str) -> None:
        if seconds > 0:
            await self._pause([self.key(source, "pause")], [max(int(seconds * 1000), 1), reason])

    async def heartbeat(self, source: str, tokens: list[str], lease: float) -> None:
        if tokens:
            await self._heartbeat([self.key(source, "inflight")], [int(lease * 1000), *tokens])


_states: dict[str, GateState] = {}


def gate_state(url: str) -> GateState:
    """The process's client of the shared gate at ``url`` (made on first use)."""
    state = _states.get(url)
    if state is None:
        state = _states[url] = GateState(url)
    return state

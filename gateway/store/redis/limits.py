"""Per-key limit counters in Redis, shared by every replica: one script call per run start
(check all three limits and count the start, atomically), one transaction per run end.
The `Counters` of `store/counters.py`, for `access/limits.py`'s gate.

Keys, under `redis_key_prefix` + `limit:`:

    {name}:starts         sorted set of the run starts of the last minute, scored by their
                          time (a sliding window, as in counters.py); expires a minute after
                          the last start
    {name}:running        sorted set of the runs in progress, scored by their lease's end
    {name}:tokens:{day}   tokens charged on that UTC day; kept two days

A replica that dies cannot release its runs' slots; their leases (`LEASE_S`) free them.
If Redis does not answer, starts are let through (Kong's `fault_tolerant` default): a
counter store outage should not take the API down with it; each such start is logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import redis.asyncio as redis

from gateway.store.counters import WINDOW_S, Limits, Refusal, Window, seconds_to_midnight, utc_day
from gateway.store.redis.wire import REDIS_ERRORS

log = logging.getLogger(__name__)

LEASE_S = 6 * 3600  # longer than any run: only a dead replica's slots live this long
TOKENS_TTL_S = 2 * 86_400
OP_TIMEOUT_S = 2.0

# KEYS: starts, running, tokens. ARGV: per-minute, concurrent, daily tokens, ticket, lease
# ms, window ms, and the time in ms or '' for Redis's own (then replicas with skewed clocks
# agree; tests pass theirs). Returns {limit, retry ms}, or {'', starts in the window, ms
# until its oldest start leaves it} when admitted. The window's starts are at most the
# limit, so trimming and counting them stays cheap.
_TAKE = """
local now = tonumber(ARGV[7])
if not now then
  local t = redis.call('time')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local budget = tonumber(ARGV[3])
if budget > 0 and tonumber(redis.call('get', KEYS[3]) or '0') >= budget then
  return {'daily_tokens', -1}
end
local concurrent = tonumber(ARGV[2])
if concurrent > 0 then
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  if redis.call('zcard', KEYS[2]) >= concurrent then return {'concurrent', 1000} end
end
local per_minute, window = tonumber(ARGV[1]), tonumber(ARGV[6])
local used, reset = 0, window
if per_minute > 0 then
  redis.call('zremrangebyscore', KEYS[1], '-inf', now - window)
  used = redis.call('zcard', KEYS[1])
  if used >= per_minute then
    local oldest = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
    return {'per_minute', tonumber(oldest[2]) + window - now}
  end
  redis.call('zadd', KEYS[1], now, ARGV[4])
  redis.call('pexpire', KEYS[1], window)
  used = used + 1
  reset = tonumber(redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')[2]) + window - now
end
if concurrent > 0 then
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[5]), ARGV[4])
  redis.call('pexpire', KEYS[2], ARGV[5])
end
return {'', used, reset}
"""


class RedisCounters:
    """`Counters` in Redis, for every replica of one deployment."""

    def __init__(self, url: str, prefix: str, clock: Callable[[], float] | None = None) -> None:
        """`clock` (seconds, as `time.time`) replaces Redis's clock, for tests."""
        self.prefix = f"{prefix}limit:"
        self._clock = clock
        self.client = redis.Redis.from_url(url, socket_connect_timeout=OP_TIMEOUT_S)
        self._take = self.client.register_script(_TAKE)

    def _keys(self, name: str, day: str) -> list[str]:
        base = f"{self.prefix}{name}"
        return [f"{base}:starts", f"{base}:running", f"{base}:tokens:{day}"]

    async def take(self, name: str, ticket: str, limits: Limits) -> Refusal | Window | None:
        now = self._clock() if self._clock else time.time()
        args: list[str | int] = [limits.per_minute, limits.concurrent, limits.daily_tokens]
        args += [ticket, LEASE_S * 1000, int(WINDOW_S * 1000)]
        args.append(round(now * 1000) if self._clock else "")
        try:
            async with asyncio.timeout(OP_TIMEOUT_S):
                reply: Any = await self._take(keys=self._keys(name, utc_day(now)), args=args)
        except REDIS_ERRORS as exc:
            log.warning("limits: Redis does not answer (%s); a start of %s let through", exc, name)
            return None
        limit, retry_ms = reply[0].decode(), int(reply[1])
        if not limit:
            return Window(used=int(reply[1]), reset_s=int(reply[2]) / 1000)
        retry_s = seconds_to_midnight(now) if retry_ms < 0 else retry_ms / 1000
        return Refusal(limit, retry_s)

    async def settle(self, name: str, ticket: str, tokens: int) -> None:
        now = self._clock() if self._clock else time.time()
        _, running, day_tokens = self._keys(name, utc_day(now))
        async with asyncio.timeout(OP_TIMEOUT_S), self.client.pipeline() as pipe:
            pipe.zrem(running, ticket)
            if tokens:
                pipe.incrby(day_tokens, tokens)
                pipe.expire(day_tokens, TOKENS_TTL_S)
            await pipe.execute()

    async def close(self) -> None:
        await self.client.aclose()

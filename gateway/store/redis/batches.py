"""Batches' journals in Redis, one script call per write, each fenced by the batch's token.

Keys, under `redis_key_prefix`:

    batch:{id}          hash: meta (the record, JSON), head (what its progress needs of it:
                        batch id, owner, created_at, run ids), key (the owning key's
                        name), worker (the worker driving it), token, status (running |
                        ended), orphan, summary (once ended)
    batch:{id}:q        hash: per question i, c{i} its checkpoint, e{i} its events (SSE
                        frames): what a takeover and a results download read
    batch:{id}:p        hash: per question i, p{i} its progress, d{i} its outcome once
                        done: the summary progress and events read (small records)
    batch:{id}:r        hash: per round n, its record (JSON)
    batch:{id}:lease    the worker driving the batch, expiring unless renewed
    batches:running     set: running batches, where takeovers look

Every write of a batch's worker carries its token: a write with another token (the batch
was taken over) is refused, and the worker stops. Each write and renewal sets the keys'
TTL again (the caller's: a batch nobody drives stays takeable that long). Keys are built
in the scripts: one Redis, not a cluster.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from gateway.store.redis.scripts import CLAIM, takeover
from gateway.store.redis.wire import OP_TIMEOUT_S, REDIS_FAULTS

if TYPE_CHECKING:
    from gateway.store.redis.runs import RedisStore

# KEYS[1] the record, [2...] the parts written; ARGV: token, TTL, then per part the number
# of its fields and their field, value pairs. 1 written, 0 refused (another token holds
# the batch, or its record is gone).
WRITE = """
if redis.call('hget', KEYS[1], 'token') ~= ARGV[1] then return 0 end
local a = 3
for k = 2, #KEYS do
  local n = tonumber(ARGV[a])
  redis.call('hset', KEYS[k], unpack(ARGV, a + 1, a + 2 * n))
  redis.call('expire', KEYS[k], ARGV[2])
  a = a + 1 + 2 * n
end
redis.call('expire', KEYS[1], ARGV[2])
return 1
"""

# KEYS[1] the running set, [2] the record; ARGV: token, TTL, summary, batch id. As WRITE.
FINISH = """
if redis.call('hget', KEYS[2], 'token') ~= ARGV[1] then return 0 end
redis.call('hset', KEYS[2], 'status', 'ended', 'summary', ARGV[3])
redis.call('hdel', KEYS[2], 'orphan')
redis.call('del', KEYS[2] .. ':lease')
redis.call('srem', KEYS[1], ARGV[4])
for _, part in ipairs({'', ':q', ':p', ':r'}) do redis.call('expire', KEYS[2] .. part, ARGV[2]) end
return 1
"""

# KEYS: records; ARGV: worker, lease ms, TTL, then each batch's token. Per batch 1 renewed,
# 0 lost (another token), 2 ended or gone.
RENEW = """
local out = {}
for i, record in ipairs(KEYS) do
  local info = redis.call('hmget', record, 'token', 'status')
  if not info[1] or info[2] ~= 'running' then
    out[i] = 2
  elseif info[1] ~= ARGV[i + 3] then
    out[i] = 0
  else
    redis.call('set', record .. ':lease', ARGV[1], 'PX', ARGV[2])
    redis.call('hdel', record, 'orphan')
    for _, part in ipairs({'', ':q', ':p', ':r'}) do
      redis.call('expire', record .. part, ARGV[3])
    end
    out[i] = 1
  end
end
return out
"""

# KEYS[1] the record; ARGV: worker, token. Drop the lease if this worker holds it still.
RELEASE = """
if redis.call('hget', KEYS[1], 'token') == ARGV[2] and
   redis.call('get', KEYS[1] .. ':lease') == ARGV[1] then
  redis.call('del', KEYS[1] .. ':lease')
end
return 1
"""

# As the durable runs' takeover (`scripts.takeover`); `worker` is the batch's driver.
TAKEOVER = takeover("batch", "worker")


HEAD_FIELDS = ("head", "key", "status", "summary")
"""What readers of a batch's progress read of its record (not its questions' requests)."""


def _text(name: str | bytes) -> str:
    return name if isinstance(name, str) else name.decode()


class RedisBatches:
    """The `SharedBatches` of one process's store: its client and worker id."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        self._client = client = store.client
        self.errors = store.errors
        self.faults = REDIS_FAULTS
        self.lease_ms = 3_000
        self._claim = client.register_script(CLAIM)
        self._write = client.register_script(WRITE)
        self._finish = client.register_script(FINISH)
        self._renew = client.register_script(RENEW)
        self._release = client.register_script(RELEASE)
        self._takeover = client.register_script(TAKEOVER)

    def key(self, batch_id: str) -> str:
        return f"{self._store.prefix}batch:{batch_id}"

    @property
    def running_key(self) -> str:
        return f"{self._store.prefix}batches:running"

    async def claim(
        self, batch_id: str, owner: str, meta: bytes, ttl_s: int, head: bytes = b"{}"
    ) -> int:
        record = self.key(batch_id)
        keys = [self.running_key, record, record + ":lease"]
        worker = self._store.worker_id
        args: list[Any] = [worker, self.lease_ms, batch_id, ttl_s, "worker", worker]
        args += ("meta", meta, "key", owner, "head", head)
        async with asyncio.timeout(OP_TIMEOUT_S):
            return int(await self._claim(keys=keys, args=args))

    async def write(
        self, batch_id: str, token: int, parts: dict[str, dict[str, bytes]], ttl_s: int
    ) -> bool:
        record = self.key(batch_id)
        keys: list[str] = [record]
        args: list[Any] = [token, ttl_s]
        for part, fields in parts.items():
            keys.append(f"{record}:{part}")
            args.append(len(fields))
            for name, value in fields.items():
                args += (name, value)
        async with asyncio.timeout(OP_TIMEOUT_S):
            return bool(await self._write(keys=keys, args=args))

    async def finish(self, batch_id: str, token: int, summary: bytes, ttl_s: int) -> bool:
        keys = [self.running_key, self.key(batch_id)]
        async with asyncio.timeout(OP_TIMEOUT_S):
            return bool(await self._finish(keys=keys, args=[token, ttl_s, summary, batch_id]))

    async def renew(self, owned: list[tuple[str, int]], ttl_s: int) -> list[int]:
        keys = [self.key(batch_id) for batch_id, _ in owned]
        args: list[Any] = [self._store.worker_id, self.lease_ms, ttl_s]
        args += (token for _, token in owned)
        async with asyncio.timeout(OP_TIMEOUT_S):
            answers: Any = await self._renew(keys=keys, args=args)
        return [int(answer) for answer in answers]

    async def release(self, batch_id: str, token: int) -> None:
        async with asyncio.timeout(OP_TIMEOUT_S):
            await self._release(keys=[self.key(batch_id)], args=[self._store.worker_id, token])

    async def take_over(self, limit: int, grace_ms: int) -> list[tuple[str, int]]:
        store = self._store
        args: list[Any] = [store.worker_id, self.lease_ms, store.prefix, limit, grace_ms]
        async with asyncio.timeout(OP_TIMEOUT_S):
            reply: Any = await self._takeover(keys=[self.running_key], args=args)
        return [(reply[i].decode(), int(reply[i + 1])) for i in range(0, len(reply), 2)]

    async def load(self, batch_id: str) -> dict[str, dict[str, bytes]] | None:
        return await self._parts(batch_id, ("q", "p", "r"))

    async def summary(self, batch_id: str) -> dict[str, dict[str, bytes]] | None:
        return await self._parts(batch_id, ("p", "r"), HEAD_FIELDS)

    async def events(self, batch_id: str, indexes: range) -> list[bytes]:
        fields = [f"e{i}" for i in indexes]
        async with asyncio.timeout(OP_TIMEOUT_S):
            found: Any = await self._client.hmget(self.key(batch_id) + ":q", fields)
        return [value or b"" for value in found]

    async def _parts(
        self, batch_id: str, parts: tuple[str, ...], fields: tuple[str, ...] = ()
    ) -> dict[str, dict[str, bytes]] | None:
        record = self.key(batch_id)
        async with asyncio.timeout(OP_TIMEOUT_S):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hmget(record, fields) if fields else pipe.hgetall(record)
                for part in parts:
                    pipe.hgetall(f"{record}:{part}")
                replies: Any = await pipe.execute()
        head = dict(zip(fields, replies[0], strict=True)) if fields else replies[0]
        if not head or head.get("status", head.get(b"status")) is None:
            return None
        found = {"batch": {_text(k): v for k, v in head.items() if v is not None}}
        for part, reply in zip(parts, replies[1:], strict=True):
            found[part] = {k.decode(): v for k, v in reply.items()}
        return found

    async def cancel(self, batch_id: str) -> bool | None:
        async with asyncio.timeout(OP_TIMEOUT_S):
            reply: Any = await self._client.hmget(self.key(batch_id), ["status", "worker"])
            status, worker = reply
            if status is None:
                return None
            if status != b"running" or worker is None:
                return False
            channel = f"{self._store.prefix}ctl:{worker.decode()}"
            return int(await self._client.publish(channel, f"cancel {batch_id}")) > 0

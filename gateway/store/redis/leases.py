"""Durable runs' leases in Redis: claim, renew and take over, each one script call.

`run:{id}:lease` (SET NX PX) is held by the driving worker; a fencing token (INCR on the
run's record) goes with every write of its frames and checkpoints, so a worker that lost
the run has its writes refused (see `scripts`). The policy (how often, how long) is the
caller's: `runs.durable`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from gateway.store.redis.scripts import CLAIM, RENEW, TAKEOVER
from gateway.store.redis.wire import OP_TIMEOUT_S, RUNNING_TTL_S

if TYPE_CHECKING:
    from gateway.store.redis.runs import RedisStore


class RedisLeases:
    """The `Leases` of one process's store. Every call raises what a failing Redis raises
    (`wire.REDIS_ERRORS`), or TimeoutError past `OP_TIMEOUT_S`."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store
        client = store.client
        self._claim = client.register_script(CLAIM)
        self._renew = client.register_script(RENEW)
        self._takeover = client.register_script(TAKEOVER)

    @property
    def lease_ms(self) -> int:
        return self._store.lease_ms

    @lease_ms.setter
    def lease_ms(self, value: int) -> None:
        self._store.lease_ms = value  # the flusher renews the lease with each write

    async def claim(self, run_id: str, checkpoint: bytes) -> int:
        store = self._store
        keys = [store.durable_key, store.run_key(run_id), store.run_key(run_id) + ":lease"]
        args: list[str | int | bytes] = [store.worker_id, self.lease_ms, run_id, RUNNING_TTL_S]
        args += ("owner", store.worker_id, "ckpt", checkpoint)
        async with asyncio.timeout(OP_TIMEOUT_S):
            token = int(await self._claim(keys=keys, args=args))
        if token:
            store.fence(run_id, token)
        return token

    async def renew(self, owned: list[tuple[str, int]]) -> list[int]:
        keys = [self._store.run_key(run_id) for run_id, _ in owned]
        args: list[str | int] = [self._store.worker_id, self.lease_ms]
        args += (token for _, token in owned)
        async with asyncio.timeout(OP_TIMEOUT_S):
            answers: Any = await self._renew(keys=keys, args=args)
        return [int(answer) for answer in answers]

    async def take_over(self, limit: int, grace_ms: int) -> list[tuple[str, int, bytes, int]]:
        store = self._store
        args: list[str | int] = [store.worker_id, self.lease_ms, store.prefix, limit, grace_ms]
        async with asyncio.timeout(OP_TIMEOUT_S):
            reply: Any = await self._takeover(keys=[store.durable_key], args=args)
        return [
            (reply[i].decode(), int(reply[i + 1]), reply[i + 2], int(reply[i + 3]))
            for i in range(0, len(reply), 4)
        ]

    def checkpoint(self, run_id: str, seq: int, data: bytes) -> None:
        self._store.checkpoint(run_id, seq, data)

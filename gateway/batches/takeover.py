"""Batches outlive the worker that drives them (with the shared store): this worker renews
its batches' leases, and looks for running batches nobody drives, takes one over (a new
lease and fencing token) and continues it from its journal (`BatchManager.resume`).

The timing is the durable runs' (`runs.durable`), for a takeover within
`GATEWAY_TAKEOVER_S` (T): leases last T/3, renewed every T/6; each worker looks every T/5
(± 20 %) and takes a batch whose lease has been missing for T/10. A batch that lost its
lease (its worker paused past it) and was taken has its next journal write refused, and
stops where it was (`SharedJournal.lost`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.batches.journal import SharedJournal
from gateway.batches.manager import BatchManager
from gateway.errors import GatewayError
from gateway.runs.loop import LoopConfig
from gateway.runs.run import RunRequest

log = logging.getLogger(__name__)

MAX_CLAIMS = 8  # batches one worker takes over per look: a dead worker's batches spread out

Configure = Callable[[RunRequest], Awaitable[LoopConfig]]


class Takeover:
    """This worker's leases on its batches, and its look for batches without one."""

    def __init__(
        self, journal: SharedJournal, manager: BatchManager, configure: Configure,
        takeover_s: float,
    ) -> None:  # fmt: skip
        self._journal = journal
        self._store = journal.store
        self._manager = manager
        self._configure = configure
        self._errors = journal.errors
        self._failed: tuple[type[BaseException], ...] = (GatewayError, *journal.errors)
        self._store.lease_ms = max(100, int(takeover_s * 1000 / 3))
        self._renew_s = takeover_s / 6
        self._look_s = takeover_s / 5
        self._grace_ms = int(takeover_s * 1000 / 10)
        self._tasks = [asyncio.create_task(self._renewing()), asyncio.create_task(self._looking())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _renewing(self) -> None:
        while True:
            await asyncio.sleep(self._renew_s)
            if self._journal.tokens:
                await self._guarded(self._renew_all)

    async def _renew_all(self) -> None:
        owned = list(self._journal.tokens.items())
        answers = await self._store.renew(owned, self._journal.ttl_s)
        for (batch_id, _), answer in zip(owned, answers, strict=True):
            if answer == 0:
                self._journal.lost(batch_id)

    async def _looking(self) -> None:
        while True:  # jittered, so the workers do not all look at the same moment
            await asyncio.sleep(self._look_s * random.uniform(0.8, 1.2))
            await self._guarded(self._take_over)

    async def _take_over(self) -> None:
        for batch_id, token in await self._store.take_over(MAX_CLAIMS, self._grace_ms):
            self._journal.adopt(batch_id, token)
            try:
                record = await self._journal.load(batch_id)
                if record is None:
                    raise GatewayError("NOT_FOUND", f"batch {batch_id} has no record")
                configs = [await self._configure(r) for r in record.run_requests()]
            except self._failed as exc:
                log.error("batches: cannot take %s over (%s); leaving it", batch_id, exc)
                await self._journal.release(batch_id)
                continue
            done = len(record.done)
            log.info("batches: taking %s over (%d of %d questions done, %d rounds)",
                     batch_id, done, len(record.requests), len(record.round_records))  # fmt: skip
            self._manager.resume(record, configs)

    async def _guarded(self, operation: Callable[[], Awaitable[Any]]) -> None:
        try:
            await operation()
        except self._errors as exc:  # the store failed: try again next time
            log.debug("batches: the store failed (%s)", exc)

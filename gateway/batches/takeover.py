"""Batches outlive the worker that drives them (with the shared store): this worker renews
its batches' leases, and looks for running batches nobody drives, takes one over (a new
lease and fencing token) and continues it from its journal (`BatchManager.resume`).

The timing and the loops are the durable runs' (`runs.durable.LeaseLoop`), for a takeover
within `GATEWAY_TAKEOVER_S` (T): leases last T/3, renewed every T/6; each worker looks
every T/5 (± 20 %) and takes a batch whose lease has been missing for T/10. A batch that lost its
lease (its worker paused past it) and was taken has its next journal write refused, and
stops where it was (`SharedJournal.lost`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from gateway.batches.journal import SharedJournal
from gateway.batches.manager import BatchManager
from gateway.errors import GatewayError
from gateway.runs.durable import LeaseLoop
from gateway.runs.loop import LoopConfig
from gateway.runs.run import RunRequest

log = logging.getLogger(__name__)

MAX_CLAIMS = 8  # batches one worker takes over per look: a dead worker's batches spread out

Configure = Callable[[RunRequest], Awaitable[LoopConfig]]


class Takeover(LeaseLoop):
    """This worker's leases on its batches, and its look for batches without one."""

    name = "batches"

    def __init__(
        self,
        journal: SharedJournal,
        manager: BatchManager,
        configure: Configure,
        takeover_s: float,
    ) -> None:
        self._journal = journal
        self._store = journal.store
        self._manager = manager
        self._configure = configure
        self._failed: tuple[type[BaseException], ...] = (GatewayError, *journal.errors)
        super().__init__(journal.store, takeover_s, journal.errors)

    def holding(self) -> bool:
        return bool(self._journal.tokens)

    async def renew(self) -> None:
        owned = list(self._journal.tokens.items())
        answers = await self._store.renew(owned, self._journal.ttl_s)
        for (batch_id, _), answer in zip(owned, answers, strict=True):
            if answer == 0:
                self._journal.lost(batch_id)

    async def take_over(self) -> None:
        for batch_id, token in await self._store.take_over(MAX_CLAIMS, self.grace_ms):
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
            done, count = len(record.done), len(record.requests)
            rounds = len(record.round_records)
            log.info(
                "batches: taking %s over (%d of %d questions done, %d rounds)",
                batch_id,
                done,
                count,
                rounds,
            )
            self._manager.resume(record, configs)

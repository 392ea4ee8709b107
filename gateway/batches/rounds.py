"""The rounds of one batch: every unfinished question posts its next model call, and when
all have (questions that finished have left), the calls go out as ONE Message Batch; when
it ends, each question gets its own result and goes on with its tools.

Nothing is submitted twice: each round is written to the batch's journal as `submitting`
(with its custom_ids) before `create`, and with the API batch's id after. A question whose
call (`custom_id` `q{index}-t{turn}`, the same on every worker) is in a recorded round
waits for that round's results instead of posting it again (a worker that took the batch
over, or a round whose results came while the worker stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from gateway.batches.api import BatchesAPI, Result
from gateway.errors import UpstreamFailure

log = logging.getLogger(__name__)

CREATE_TRIES = 3
"""`create` answered with a retryable status (429, 529, 5xx): nothing was created."""

RoundState = Literal["submitting", "submitted", "ended", "failed"]


@dataclass
class RoundRecord:
    """One round as the journal keeps it."""

    number: int
    custom_ids: list[str]
    api_batch_id: str | None = None
    state: RoundState = "submitting"
    submitted_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    results: dict[str, int] = field(default_factory=dict)
    """Result types (succeeded, errored, expired, canceled) counted, once ended."""


Journal = Callable[[RoundRecord], Awaitable[None]]


def custom_id(index: int, turn: int) -> str:
    """The API's request id of question `index`'s model call `turn` (^[a-zA-Z0-9_-]{1,64}$)."""
    return f"q{index}-t{turn}"


class Rounds:
    """The barrier and the API batches of one batch's questions."""

    def __init__(
        self, api: BatchesAPI, members: int, journal: Journal,
        recorded: Iterable[RoundRecord] = (),
    ) -> None:  # fmt: skip
        self._api = api
        self._members = members
        self._journal = journal
        self.rounds: list[RoundRecord] = list(recorded)
        self._known = {cid: r for r in self.rounds if r.api_batch_id for cid in r.custom_ids}
        self._pending: dict[str, tuple[dict[str, Any], tuple[str, ...], asyncio.Future[Result]]]
        self._pending = {}
        self._fetches: dict[str, asyncio.Task[dict[str, Result]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> list[RoundRecord]:
        return [r for r in self.rounds if r.state in ("submitting", "submitted")]

    async def call(self, cid: str, params: dict[str, Any], betas: tuple[str, ...]) -> Result:
        """The result of one model call, once its round has ended."""
        known = self._known.get(cid)
        if known is not None:
            return (await asyncio.shield(self._ended(known))).get(cid) or _missing(cid)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[cid] = (params, betas, future)
        self._check()
        try:
            return await future
        finally:
            self._pending.pop(cid, None)

    def leave(self) -> None:
        """A question finished: the rounds no longer wait for it."""
        self._members -= 1
        self._check()

    async def cancel(self) -> None:
        """Cancel the API batches in flight (their unfinished requests end `canceled`)."""
        for record in self.in_flight:
            if record.api_batch_id is not None:
                with contextlib.suppress(UpstreamFailure):
                    await self._api.cancel(record.api_batch_id)

    async def close(self) -> None:
        tasks = [*self._tasks, *self._fetches.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _check(self) -> None:
        if not self._pending or len(self._pending) < self._members:
            return
        entries = dict(self._pending)
        self._pending.clear()
        record = RoundRecord(len(self.rounds) + 1, list(entries))
        self.rounds.append(record)
        task = asyncio.create_task(self._round(record, entries))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _round(
        self, record: RoundRecord,
        entries: dict[str, tuple[dict[str, Any], tuple[str, ...], asyncio.Future[Result]]],
    ) -> None:  # fmt: skip
        futures = {cid: entry[2] for cid, entry in entries.items()}
        try:
            await self._journal(record)  # before `create`: a takeover knows to look for it
            requests = [{"custom_id": cid, "params": e[0]} for cid, e in entries.items()]
            betas = {beta for e in entries.values() for beta in e[1]}
            record.api_batch_id = await self._create(requests, betas)
            record.state = "submitted"
            await self._journal(record)
            results = await asyncio.shield(self._ended(record))
        except UpstreamFailure as failure:
            record.state = "failed"
            await self._journal(record)
            for future in futures.values():
                if not future.done():
                    future.set_exception(failure)
            return
        for cid, future in futures.items():
            if not future.done():
                future.set_result(results.get(cid) or _missing(cid))

    async def _create(self, requests: list[dict[str, Any]], betas: set[str]) -> str:
        for attempt in range(CREATE_TRIES):
            try:
                return await self._api.create(requests, betas)
            except UpstreamFailure as failure:
                answered = "upstream_status" in failure.details  # so nothing was created
                if not (failure.retryable and answered) or attempt == CREATE_TRIES - 1:
                    raise
                await asyncio.sleep(failure.retry_after_s or 2.0 * (attempt + 1))
        raise AssertionError("unreachable")

    def _ended(self, record: RoundRecord) -> asyncio.Task[dict[str, Result]]:
        """The round's results (one fetch per API batch, however many wait for it)."""
        assert record.api_batch_id is not None
        task = self._fetches.get(record.api_batch_id)
        if task is None:
            task = asyncio.create_task(self._fetch(record))
            self._fetches[record.api_batch_id] = task
        return task

    async def _fetch(self, record: RoundRecord) -> dict[str, Result]:
        assert record.api_batch_id is not None
        await self._api.wait(record.api_batch_id)
        results = await self._api.results(record.api_batch_id)
        counts: dict[str, int] = {}
        for result in results.values():
            kind = str(result.get("result", {}).get("type"))
            counts[kind] = counts.get(kind, 0) + 1
        record.state, record.results = "ended", counts
        await self._journal(record)
        return results


def _missing(cid: str) -> Result:
    """A request the ended batch has no result for: as an errored one."""
    error = {"type": "api_error", "message": f"The Message Batch has no result for {cid}"}
    return {
        "custom_id": cid,
        "result": {"type": "errored", "error": {"type": "error", "error": error}},
    }

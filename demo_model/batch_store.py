"""Message Batches bookkeeping: batches in memory, each processed by a background task.

A batch waits `processing_s` (standing for the queue time of the real service), then its
requests are answered concurrently (at most `concurrency` at once across all batches) by a
`Processor`: a coroutine taking a `BatchRequest` (`custom_id`, `params`, and the betas the
create named) and returning the result object of the results file (`succeeded` with a
message, `errored` with an error response, `expired`). A cancel turns every request not yet
answered into `canceled`.

As the API reports them, `request_counts` are all `processing` until the batch ends, then
the tallies of the results. At most `keep` batches are held: past that the oldest ended
ones are dropped, and a create with `keep` batches still in progress is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import secrets
import string
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Batch", "BatchRequest", "BatchStore", "Processor", "errored", "rfc3339"]
RESULT_KINDS = ("succeeded", "errored", "canceled", "expired")
EXPIRY = dt.timedelta(hours=24)
_ALPHABET = string.ascii_letters + string.digits


def rfc3339(moment: dt.datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def errored(kind: str, message: str) -> dict[str, Any]:
    """An `errored` result: the request's error response, as a `/v1/messages` call gives."""
    error = {"type": "error", "error": {"type": kind, "message": message}, "request_id": None}
    return {"type": "errored", "error": error}


def _batch_id() -> str:
    return "msgbatch_01" + "".join(secrets.choice(_ALPHABET) for _ in range(22))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch, as submitted."""

    custom_id: str
    params: dict[str, Any]
    betas: frozenset[str] = frozenset()
    """The betas of the create's `anthropic-beta` header: they apply to every request."""


Processor = Callable[[BatchRequest], Awaitable[dict[str, Any]]]


@dataclass
class Batch:
    """One batch: its requests in order, and their results once answered."""

    id: str
    requests: list[BatchRequest]
    created_at: dt.datetime = field(default_factory=_now)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    cancel_initiated_at: dt.datetime | None = None
    ended_at: dt.datetime | None = None
    task: asyncio.Task[None] | None = None

    @property
    def status(self) -> str:
        if self.ended_at is not None:
            return "ended"
        return "in_progress" if self.cancel_initiated_at is None else "canceling"

    def counts(self) -> dict[str, int]:
        tally = dict.fromkeys(("processing", *RESULT_KINDS), 0)
        if self.ended_at is None:
            tally["processing"] = len(self.requests)
            return tally
        for result in self.results.values():
            tally[result["type"]] += 1
        return tally

    def view(self, results_url: str) -> dict[str, Any]:
        """The `MessageBatch` object."""
        ended = self.ended_at
        cancel = self.cancel_initiated_at
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status,
            "request_counts": self.counts(),
            "ended_at": rfc3339(ended) if ended else None,
            "created_at": rfc3339(self.created_at),
            "expires_at": rfc3339(self.created_at + EXPIRY),
            "cancel_initiated_at": rfc3339(cancel) if cancel else None,
            "archived_at": None,
            "results_url": results_url if ended else None,
        }

    def lines(self) -> list[dict[str, Any]]:
        """The results file's lines (`MessageBatchIndividualResponse`), in request order."""
        return [
            {"custom_id": r.custom_id, "result": self.results[r.custom_id]} for r in self.requests
        ]


class BatchStore:
    """Batches by id, newest last; `processing_s` and the processor may change at any time."""

    def __init__(
        self,
        process: Processor,
        *,
        processing_s: float = 0.0,
        concurrency: int = 8,
        keep: int = 1_000,
    ) -> None:
        self.process = process
        self.processing_s = processing_s
        self.keep = keep
        self._slots = asyncio.Semaphore(concurrency)
        self._concurrency = concurrency
        self._batches: dict[str, Batch] = {}

    def full(self) -> bool:
        return sum(1 for b in self._batches.values() if b.ended_at is None) >= self.keep

    def create(self, requests: list[BatchRequest]) -> Batch:
        batch = Batch(_batch_id(), requests)
        self._batches[batch.id] = batch
        self._trim()
        batch.task = asyncio.get_running_loop().create_task(self._run(batch))
        return batch

    def get(self, batch_id: str) -> Batch | None:
        return self._batches.get(batch_id)

    def cancel(self, batch: Batch) -> None:
        if batch.ended_at is None and batch.cancel_initiated_at is None:
            batch.cancel_initiated_at = _now()

    def delete(self, batch: Batch) -> None:
        self._batches.pop(batch.id, None)

    def page(
        self, *, before_id: str | None, after_id: str | None, limit: int
    ) -> tuple[list[Batch], bool]:
        """Newest first, as the API lists: the page after `after_id` (older batches) or the
        one right before `before_id` (newer), and whether there are more that way."""
        newest_first = list(reversed(self._batches.values()))
        ids = [b.id for b in newest_first]
        if before_id is not None:
            end = ids.index(before_id) if before_id in ids else 0
            start = max(0, end - limit)
            return newest_first[start:end], start > 0
        start = 0
        if after_id is not None:  # past the end when the cursor is unknown: an empty page
            start = ids.index(after_id) + 1 if after_id in ids else len(ids)
        return newest_first[start : start + limit], start + limit < len(ids)

    async def close(self) -> None:
        """Stop every batch still processing (the server is going away)."""
        tasks = [b.task for b in self._batches.values() if b.task and not b.task.done()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _trim(self) -> None:
        ended = [b.id for b in self._batches.values() if b.ended_at is not None]
        for batch_id in ended[: max(0, len(self._batches) - self.keep)]:
            del self._batches[batch_id]

    async def _run(self, batch: Batch) -> None:
        if self.processing_s > 0:
            await self._queued(batch)
        pending = iter(batch.requests)
        workers = min(self._concurrency, len(batch.requests))
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(self._work(batch, pending))
        batch.ended_at = _now()

    async def _queued(self, batch: Batch) -> None:
        """Wait the queue time, ending the wait early on a cancel."""
        deadline = asyncio.get_running_loop().time() + self.processing_s
        while batch.cancel_initiated_at is None:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            await asyncio.sleep(min(left, 0.05))

    async def _work(self, batch: Batch, pending: Any) -> None:
        for request in pending:
            if batch.cancel_initiated_at is not None:
                batch.results[request.custom_id] = {"type": "canceled"}
                continue
            async with self._slots:
                batch.results[request.custom_id] = await self._answer(request)
            await asyncio.sleep(0)  # a processor that never waits must not hold the loop

    async def _answer(self, request: BatchRequest) -> dict[str, Any]:
        try:
            return await self.process(request)
        except Exception as exc:  # one request's failure is its own result, not the batch's
            return errored("api_error", f"The request could not be processed: {exc}")

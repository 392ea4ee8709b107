"""The Message Batches API as the rounds need it, through the official SDK client: create a
batch, wait for it to end, read its results by `custom_id`, cancel it, and find a batch
whose id was never recorded (a worker stopped between `create` and writing its answer).

Failures become `UpstreamFailure`s with the codes the streaming calls use. Reading a
batch (its state, its results) is tried again on a retryable failure, up to `READ_TRIES`
times in a row: the API batch goes on (and is billed) whatever one poll answers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from datetime import datetime
from typing import Any

import anthropic

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.provider import status_failure

READ_TRIES = 5
"""Reads of a batch in a row that may fail (429, 5xx, 529, timeouts) before a round fails."""

Result = dict[str, Any]
"""One `MessageBatchIndividualResponse` as JSON: {custom_id, result: {type, ...}}."""


class BatchesAPI:
    """`client.messages.batches`, polled every `poll_s` while a batch is in progress."""

    def __init__(self, client: anthropic.AsyncAnthropic, poll_s: float) -> None:
        self._batches = client.messages.batches
        self.poll_s = poll_s

    async def create(self, requests: list[dict[str, Any]], betas: Collection[str]) -> str:
        """Submit one batch of {custom_id, params}: its id."""
        headers = {"anthropic-beta": ",".join(sorted(betas))} if betas else None
        async with _answered("creating a Message Batch"):
            batch = await self._batches.create(
                requests=requests,  # type: ignore[arg-type]
                extra_headers=headers,
            )
        return batch.id

    async def wait(self, batch_id: str) -> None:
        """Until the batch's processing has ended (every request has a result)."""
        failed = 0
        while True:
            try:
                async with _answered("reading a Message Batch"):
                    batch = await self._batches.retrieve(batch_id)
            except UpstreamFailure as failure:
                failed += 1
                await self._again(failure, failed)
                continue
            failed = 0
            if batch.processing_status == "ended":
                return
            await asyncio.sleep(self.poll_s)

    async def results(self, batch_id: str) -> dict[str, Result]:
        """An ended batch's results, by custom_id."""
        for attempt in range(1, READ_TRIES + 1):
            found: dict[str, Result] = {}
            try:
                async with _answered("reading a Message Batch's results"):
                    async for item in await self._batches.results(batch_id):
                        found[item.custom_id] = item.to_dict(mode="json")
            except UpstreamFailure as failure:
                await self._again(failure, attempt)
                continue
            return found
        raise AssertionError("unreachable")

    async def _again(self, failure: UpstreamFailure, failed: int) -> None:
        """Wait before reading again, or give up: a failure no retry helps, or too many."""
        if not failure.retryable or failed >= READ_TRIES:
            raise failure
        await asyncio.sleep(failure.retry_after_s or self.poll_s * failed)

    async def cancel(self, batch_id: str) -> None:
        async with _answered("cancelling a Message Batch"):
            await self._batches.cancel(batch_id)

    async def find(self, custom_ids: Collection[str], since: datetime) -> str | None:
        """The batch created at `since` or later whose requests are exactly `custom_ids`
        (waiting for candidates to end: only results name their requests); None if none."""
        wanted = set(custom_ids)
        candidates: list[str] = []
        async with _answered("listing Message Batches"):
            async for batch in self._batches.list(limit=100):
                if batch.created_at < since:
                    break  # newest first: the rest are older
                counts = batch.request_counts
                total = (
                    counts.processing + counts.succeeded + counts.errored
                    + counts.canceled + counts.expired
                )  # fmt: skip
                if total == len(wanted):
                    candidates.append(batch.id)
        for candidate in candidates:
            await self.wait(candidate)
            if set(await self.results(candidate)) == wanted:
                return candidate
        return None


class _answered:
    """Map the SDK's exceptions to the gateway's failures."""

    def __init__(self, doing: str) -> None:
        self._doing = doing

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: object) -> bool:  # fmt: skip
        if isinstance(exc, anthropic.APIStatusError):
            failure = status_failure(exc)
            failure.message = f"Upstream failed {self._doing}: {failure.message}"
            raise failure from exc
        if isinstance(exc, anthropic.APITimeoutError):
            message = f"Upstream timed out {self._doing}"
            raise UpstreamFailure("TIMEOUT_ERROR", message, retryable=True) from exc
        if isinstance(exc, anthropic.APIConnectionError):
            message = f"Upstream connection failed {self._doing}: {exc}"
            raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
        return False

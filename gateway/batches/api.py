"""The Message Batches API as the rounds need it, through the official SDK client: create a
batch, wait for it to end, read its results by `custom_id`, cancel it, and list the
batches created in a window of time (to find one whose id was never recorded).

Failures become `UpstreamFailure`s with the codes the streaming calls use. A batch that
was created is billed whatever one poll answers: reading its state or its results is
tried again after every retryable failure (429, 5xx, 529, timeouts), with a backoff up to
`BACKOFF_MAX_S`, until it answers; results are given up only when the API refuses them
for good or its results retention (`RESULTS_KEPT`) is over.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anthropic

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.provider import status_failure

log = logging.getLogger(__name__)

BACKOFF_MAX_S = 60.0
"""The longest wait between two reads of a batch that keep failing."""
RESULTS_KEPT = timedelta(days=29)
"""How long the API keeps an ended batch's results."""
CREATE_TIMEOUT_S = 120.0
"""A `create` unanswered this long in all is abandoned: the API has created its batch by
then (give or take the clocks' skew) or never will."""
LIST_PAGE = 100
LIST_PAGES = 50
"""Pages of `list` one look reads at most (5,000 batches in its window of time)."""

Result = dict[str, Any]
"""One `MessageBatchIndividualResponse` as JSON: {custom_id, result: {type, ...}}."""


@dataclass(frozen=True)
class Listed:
    """A batch as `list` shows it: its requests are not listed, only counted."""

    id: str
    created_at: datetime
    requests: int


class BatchesAPI:
    """`client.messages.batches`, polled every `poll_s` while a batch is in progress."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        poll_s: float,
        create_timeout_s: float = CREATE_TIMEOUT_S,
    ) -> None:
        self._batches = client.messages.batches
        self.poll_s = poll_s
        self.create_timeout_s = create_timeout_s
        self.page_size, self.pages = LIST_PAGE, LIST_PAGES
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        """How every wait between two calls is waited (a test records them)."""

    async def create(self, requests: list[dict[str, Any]], betas: Collection[str]) -> str:
        """Submit one batch of {custom_id, params}: its id. A failure without
        `upstream_status` in its details was not answered: the batch may exist."""
        headers = {"anthropic-beta": ",".join(sorted(betas))} if betas else None
        async with _answered("creating a Message Batch"):
            async with asyncio.timeout(self.create_timeout_s):  # in all, not per read
                batch = await self._batches.create(
                    requests=requests,  # type: ignore[arg-type]
                    extra_headers=headers,
                    timeout=self.create_timeout_s,
                )
        return batch.id

    async def wait(self, batch_id: str) -> datetime:
        """Until the batch's processing has ended (every request has a result): when."""
        failed = 0
        while True:
            try:
                async with _answered("reading a Message Batch"):
                    batch = await self._batches.retrieve(batch_id)
            except UpstreamFailure as failure:
                failed += 1
                await self.backoff(failure, failed)
                continue
            failed = 0
            if batch.processing_status == "ended":
                return batch.ended_at or datetime.now(UTC)
            await self.sleep(self.poll_s)

    async def results(self, batch_id: str, ended_at: datetime) -> dict[str, Result]:
        """An ended batch's results, by custom_id, read until read (or no longer kept)."""
        failed = 0
        while True:
            try:
                return {item["custom_id"]: item async for item in self.stream(batch_id)}
            except UpstreamFailure as failure:
                if datetime.now(UTC) > ended_at + RESULTS_KEPT:
                    raise
                failed += 1
                await self.backoff(failure, failed)

    async def stream(self, batch_id: str) -> AsyncGenerator[Result, None]:
        """The results one by one, as the API sends them (one try)."""
        async with _answered("reading a Message Batch's results"):
            async for item in await self._batches.results(batch_id):
                yield item.to_dict(mode="json")

    async def backoff(self, failure: UpstreamFailure, failed: int) -> None:
        """Wait before trying a read again, or raise a failure no retry helps."""
        if not failure.retryable:
            raise failure
        delay = failure.retry_after_s or min(BACKOFF_MAX_S, self.poll_s * 2 ** (failed - 1))
        log.warning("batches: %s; trying again in %.1f s", failure.message, delay)
        await self.sleep(delay)

    async def cancel(self, batch_id: str) -> None:
        async with _answered("cancelling a Message Batch"):
            await self._batches.cancel(batch_id)

    async def listed(self, since: datetime, until: datetime) -> list[Listed]:
        """The batches created from `since` to `until` (newest first, one try, at most
        `LIST_PAGES` pages: more is a failure, the look is not complete)."""
        found: list[Listed] = []
        async with _answered("listing Message Batches"):
            page = await self._batches.list(limit=self.page_size)
            for pages in itertools.count(1):
                if _window(page.data, since, until, found) or not page.has_next_page():
                    break
                if pages >= self.pages:
                    message = f"more than {self.pages} pages of Message Batches in one window"
                    raise UpstreamFailure("UNKNOWN_ERROR", message, retryable=True)
                page = await page.get_next_page()
        return found


def _window(batches: list[Any], since: datetime, until: datetime, found: list[Listed]) -> bool:
    """Add a page's batches created from `since` to `until`: whether it reached older ones
    (newest first: the rest are older still)."""
    for batch in batches:
        if batch.created_at < since:
            return True
        if batch.created_at <= until:
            found.append(Listed(batch.id, batch.created_at, _total(batch)))
    return False


def _total(batch: Any) -> int:
    counts = batch.request_counts
    return int(
        counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
    )


class _answered:
    """Map the SDK's exceptions to the gateway's failures."""

    def __init__(self, doing: str) -> None:
        self._doing = doing

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> bool:
        if isinstance(exc, anthropic.APIStatusError):
            failure = status_failure(exc)
            failure.message = f"Upstream failed {self._doing}: {failure.message}"
            raise failure from exc
        if isinstance(exc, (anthropic.APITimeoutError, TimeoutError)):
            message = f"Upstream timed out {self._doing}"
            raise UpstreamFailure("TIMEOUT_ERROR", message, retryable=True) from exc
        if isinstance(exc, anthropic.APIConnectionError):
            message = f"Upstream connection failed {self._doing}: {exc}"
            raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
        return False

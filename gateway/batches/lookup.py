"""Finding the API batch of a round whose `create` was sent but never answered (its worker
stopped between the journal write and the answer, or the answer was lost).

The round's identity is its custom_ids: each carries the gateway batch's own random id and
a digest of the round's requests (their params and betas), so no other batch (of another
key, of another gateway batch, or another round of this one) can have the same set, and a
batch that does was created from these very requests. `list` shows no custom_ids, only
when a batch was created and how many requests it holds: a look reads the batches
created in the create's window of time (from its journal entry, less the clocks' skew, to
the create's timeout after it, plus the skew; at most `LIST_PAGES` pages), takes those of
the round's size, and reads the results of each (once ended) only until a custom_id that
is not the round's: a stranger is dropped at its first line.

A look that finds none is complete only once the window has passed (a create still on the
wire may land until then): then the round was never created, and is submitted again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection
from datetime import UTC, datetime, timedelta

from gateway.batches.api import BatchesAPI, Listed

CLOCK_SKEW_S = 60.0
"""How far the API's clock (its `created_at`) may be from this worker's."""


async def find(
    api: BatchesAPI,
    custom_ids: Collection[str],
    journaled_at: datetime,
    skip: Collection[str] = (),
    skew_s: float = CLOCK_SKEW_S,
) -> str | None:
    """The id of the API batch of exactly `custom_ids`, created in the window of a create
    journaled at `journaled_at`; None once a complete look found none. `skip`: ids of
    batches known to be other rounds'. Raises the `UpstreamFailure` of a failing call."""
    since = journaled_at - timedelta(seconds=skew_s)
    until = journaled_at + timedelta(seconds=api.create_timeout_s + skew_s)
    wanted = frozenset(custom_ids)
    while True:
        complete = datetime.now(UTC) > until
        listed = await api.listed(since, until)
        candidates = [b.id for b in listed if _may_be(b, len(wanted), skip)]
        found = await _first_match(api, candidates, wanted)
        if found is not None or complete:
            return found
        wait_s = (until - datetime.now(UTC)).total_seconds()
        await api.sleep(max(api.poll_s, min(wait_s, 60.0)))


def _may_be(batch: Listed, size: int, skip: Collection[str]) -> bool:
    return batch.requests == size and batch.id not in skip


async def _first_match(
    api: BatchesAPI, candidates: list[str], wanted: frozenset[str]
) -> str | None:
    """The first candidate whose results are exactly `wanted` (all looked at together: a
    stranger still in progress holds up only a look that finds none)."""
    if not candidates:
        return None
    tasks = [asyncio.create_task(_holds(api, c, wanted)) for c in candidates]
    try:
        for done in asyncio.as_completed(tasks):
            found = await done
            if found is not None:
                return found
        return None
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


async def _holds(api: BatchesAPI, batch_id: str, wanted: frozenset[str]) -> str | None:
    """The batch's id if its requests are exactly `wanted`."""
    await api.wait(batch_id)
    seen: set[str] = set()
    async with contextlib.aclosing(api.stream(batch_id)) as results:
        async for item in results:
            cid = item["custom_id"]
            if cid not in wanted:
                return None  # not the round's: the rest of its results are not read
            seen.add(cid)
    return batch_id if seen == wanted else None

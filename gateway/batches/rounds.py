"""The rounds of one batch: every unfinished question posts its next model call, and when
all have (questions that finished have left), the calls go out as ONE Message Batch; when
it ends, each question gets its own result and goes on with its tools.

Nothing is paid twice, no paid result is dropped, no question gets another's answer:

- A call's custom_id is `q{index}-t{turn}-{batch key}{digest}`: the gateway batch's own
  random key and a digest of the round's requests (`lookup` says why).
- Each round is journaled as `submitting` (with its custom_ids) before `create`, and with
  the API batch's id after. A question whose call `q{index}-t{turn}` is in a recorded round
  waits for that round's results instead of posting it again (a takeover, a restart).
- A round recorded without an id, or whose `create` went unanswered, is looked up
  (`lookup.find`) before anything is sent again: found, its results are used; a complete
  look that finds none means it was never created, and it is sent (once). A look that
  fails is tried again with a backoff, never turned into a second `create`; meanwhile the
  round says so (`note`, in the progress and the batch's events).
- An ended round's results are read until read (`BatchesAPI.results`); a question fails
  only for its own `errored`, `expired` or `canceled` result.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from gateway.batches import lookup
from gateway.batches.api import BatchesAPI, Result
from gateway.batches.calls import RoundRecord, custom_ids, missing, stem_of
from gateway.errors import UpstreamFailure

log = logging.getLogger(__name__)

CREATE_TRIES = 3
"""`create`s of one round at most: a retryable answer (429, 529, 5xx) created nothing, and
an unanswered one is looked up first."""
CANCEL_TRIES = 3

Journal = Callable[[RoundRecord], Awaitable[None]]
OnNote = Callable[[RoundRecord], None]
Entry = tuple[dict[str, Any], tuple[str, ...], "asyncio.Future[Result]"]


class Rounds:
    """The barrier and the API batches of one batch's questions."""

    def __init__(
        self,
        api: BatchesAPI,
        members: int,
        journal: Journal,
        recorded: Iterable[RoundRecord] = (),
        *,
        key: str,
        on_note: OnNote = lambda record: None,
        skew_s: float = lookup.CLOCK_SKEW_S,
    ) -> None:
        self._api = api
        self._members = members
        self._journal = journal
        self._key = key
        self.on_note = on_note
        self._skew_s = skew_s
        self.rounds: list[RoundRecord] = list(recorded)
        self._known = {stem_of(c): r for r in self.in_flight + self.ended for c in r.custom_ids}
        self._pending: dict[str, Entry] = {}
        self._settled: dict[int, asyncio.Task[dict[str, Result] | None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._cancelled = False
        self._stopped = False

    @property
    def in_flight(self) -> list[RoundRecord]:
        return [r for r in self.rounds if r.state in ("submitting", "submitted")]

    @property
    def ended(self) -> list[RoundRecord]:
        return [r for r in self.rounds if r.state == "ended"]

    async def call(self, name: str, params: dict[str, Any], betas: tuple[str, ...]) -> Result:
        """The result of one model call (`name`: its `stem`), once its round has ended."""
        known = self._known.get(name)
        if known is not None:
            results = await asyncio.shield(self._settle(known))
            if results is not None:
                return _own(results, known, name)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[name] = (params, betas, future)
        self._check()
        try:
            return await future
        finally:
            self._pending.pop(name, None)

    def leave(self) -> None:
        """A question finished: the rounds no longer wait for it."""
        self._members -= 1
        self._check()

    async def cancel(self) -> None:
        """Cancel the API batches in flight (their unfinished requests end `canceled`), and
        any a `create` still on its way makes. One whose `create` went unanswered is
        cancelled only once a lookup finds it, which is once it has ended (its results name
        its requests): by then the API refuses the cancel and its results, paid for, are
        used."""
        self._cancelled = True
        for record in self.in_flight:
            if record.api_batch_id is not None:
                await self._cancel(record)

    def stop(self) -> None:
        """This worker stops driving the batch: no round is formed here any more (its
        questions, cancelled one by one, would otherwise leave a barrier that is met)."""
        self._stopped = True

    async def close(self) -> None:
        tasks = [*self._tasks, *self._settled.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _check(self) -> None:
        if self._stopped or self._cancelled or not self._pending:
            return
        if len(self._pending) < self._members:
            return
        entries = dict(self._pending)
        self._pending.clear()
        cids = custom_ids(self._key, {s: (e[0], e[1]) for s, e in entries.items()})
        record = RoundRecord(len(self.rounds) + 1, cids)
        self.rounds.append(record)
        task = asyncio.create_task(self._round(record, entries))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _round(self, record: RoundRecord, entries: dict[str, Entry]) -> None:
        futures = {name: entry[2] for name, entry in entries.items()}
        try:
            await self._journal(record)  # before `create`: a takeover knows to look for it
            record.api_batch_id = await self._create(record, entries)
            record.state = "submitted"
            await self._journal(record)
            if self._cancelled:  # cancelled while the create was on its way
                await self._cancel(record)
            results = await asyncio.shield(self._settle(record))
            assert results is not None
        except UpstreamFailure as failure:
            record.state = "failed"
            await self._journal(record)
            for future in futures.values():
                if not future.done():
                    future.set_exception(failure)
            return
        for name, future in futures.items():
            if not future.done():
                future.set_result(_own(results, record, name))

    async def _create(self, record: RoundRecord, entries: dict[str, Entry]) -> str:
        by_stem = {stem_of(cid): cid for cid in record.custom_ids}
        requests = [{"custom_id": by_stem[name], "params": e[0]} for name, e in entries.items()]
        betas = {beta for e in entries.values() for beta in e[1]}
        for attempt in itertools.count(1):
            await self._journaled_lately(record)
            try:
                return await self._api.create(requests, betas)
            except UpstreamFailure as failure:
                if "upstream_status" not in failure.details:  # unanswered: it may exist
                    found = await self._look_up(record)
                    if found is not None:
                        return found
                elif not failure.retryable:
                    raise  # refused (400, 401...): nothing was created
                if attempt == CREATE_TRIES:
                    raise
                await self._api.sleep(failure.retry_after_s or 2.0 * attempt)
        raise AssertionError("unreachable")

    async def _journaled_lately(self, record: RoundRecord) -> None:
        """A `create` goes out within half the clocks' skew of its journal entry (the
        window a lookup reads starts there): after a wait, the entry is written again."""
        journaled_at = datetime.fromisoformat(record.submitted_at)
        if (datetime.now(UTC) - journaled_at).total_seconds() > self._skew_s / 2:
            record.submitted_at = datetime.now(UTC).isoformat()
            await self._journal(record)

    def _settle(self, record: RoundRecord) -> asyncio.Task[dict[str, Result] | None]:
        """The round's results (one task per round, however many wait for it); None if a
        complete look found it was never created."""
        task = self._settled.get(record.number)
        if task is None:
            task = self._settled[record.number] = asyncio.create_task(self._results(record))
        return task

    async def _results(self, record: RoundRecord) -> dict[str, Result] | None:
        if record.api_batch_id is None:
            record.api_batch_id = await self._look_up(record)
            record.state = "not_created" if record.api_batch_id is None else "submitted"
            await self._journal(record)
            if record.api_batch_id is None:
                for cid in record.custom_ids:
                    self._known.pop(stem_of(cid), None)
                return None
        ended_at = await self._api.wait(record.api_batch_id)
        results = await self._api.results(record.api_batch_id, ended_at)
        counts: dict[str, int] = {}
        for result in results.values():
            kind = str(result.get("result", {}).get("type"))
            counts[kind] = counts.get(kind, 0) + 1
        record.state, record.results = "ended", counts
        await self._journal(record)
        return results

    async def _look_up(self, record: RoundRecord) -> str | None:
        """`lookup.find`, tried until it answers (a failure no retry helps ends the round)."""
        journaled_at = datetime.fromisoformat(record.submitted_at)
        skip = [r.api_batch_id for r in self.rounds if r.api_batch_id and r is not record]
        failed = 0
        while True:
            try:
                found = await lookup.find(
                    self._api, record.custom_ids, journaled_at, skip, self._skew_s
                )
            except UpstreamFailure as failure:
                failed += 1
                note = f"looking for its Message Batch failed ({failure.message}); trying again"
                await self._noted(record, note)
                await self._api.backoff(failure, failed)
                continue
            if record.note is not None:
                await self._noted(record, None)
            return found

    async def _cancel(self, record: RoundRecord) -> None:
        assert record.api_batch_id is not None
        for attempt in itertools.count(1):
            try:
                await self._api.cancel(record.api_batch_id)
                return
            except UpstreamFailure as failure:
                if not failure.retryable or attempt == CANCEL_TRIES:
                    log.error(
                        "batches: cannot cancel %s (%s)", record.api_batch_id, failure.message
                    )
                    await self._noted(record, f"cancelling it failed ({failure.message})")
                    return
                await self._api.sleep(failure.retry_after_s or self._api.poll_s * attempt)

    async def _noted(self, record: RoundRecord, note: str | None) -> None:
        record.note = note
        self.on_note(record)
        await self._journal(record)


def _own(results: dict[str, Result], record: RoundRecord, name: str) -> Result:
    """Call `name`'s own result in its round's results (as errored if it has none)."""
    cid = f"{name}-{record.custom_ids[0].rsplit('-', 1)[1]}"  # one suffix for the round
    return results.get(cid) or missing(cid)

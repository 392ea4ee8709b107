"""What outlives the worker that drives a batch: its record (owner, the questions'
requests and run ids), each question's checkpoint after every turn (the state and the
events so far), each round as it is submitted and answered, and its end.

`MemoryJournal` keeps nothing (a batch is lost with its process); `KeptJournal` keeps it
in memory, as a shared store would for another worker (`BatchManager.resume`);
`SharedJournal` writes it to the shared store (Redis: `store.redis.batches`), fenced by
the batch's token, where any worker reads it and a takeover continues it (`takeover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import orjson

from gateway import sse
from gateway.batches.calls import RoundRecord
from gateway.batches.record import Record, Stored, record_of, round_from_json, round_json
from gateway.batches.writer import JournalLost, Write, Writer
from gateway.runs import durable
from gateway.store.base import SharedBatches

if TYPE_CHECKING:
    from gateway.batches.batch import Batch, Question

log = logging.getLogger(__name__)

__all__ = ["JournalLost", "Record", "Stored", "record_of"]
EVENTS_READ = 100
"""Questions' events read from the store at once by a results download."""
OnRound = Callable[[RoundRecord], None]
Parts = dict[str, dict[str, bytes]]


class MemoryJournal:
    """No journal: a batch lives and dies with its process."""

    durable = False

    async def begin(self, record: Record) -> None:
        return None

    def round_writer(
        self, batch_id: str, on_round: OnRound
    ) -> Callable[[RoundRecord], Awaitable[None]]:
        async def write(record: RoundRecord) -> None:
            on_round(record)

        return write

    def checkpoint(self, batch_id: str, question: Question) -> None:
        return None

    async def question_done(self, batch_id: str, question: Question) -> None:
        return None

    async def end(self, batch: Batch) -> None:
        return None

    async def release(self, batch_id: str) -> None:
        """The worker stops driving the batch (shutting down): another may take it."""
        return None


Journal = MemoryJournal
"""What the manager writes to (the Redis journal subclasses it)."""


class KeptJournal(MemoryJournal):
    """A journal kept in this process's memory: what a shared store holds for another
    worker, and the reference its Redis form follows. `stop()` stands for the process
    dying: nothing more is written."""

    durable = True

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        self.ended: set[str] = set()
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True

    async def begin(self, record: Record) -> None:
        if not self.stopped:
            self.records.setdefault(record.batch_id, record)

    def round_writer(
        self, batch_id: str, on_round: OnRound
    ) -> Callable[[RoundRecord], Awaitable[None]]:
        async def write(record: RoundRecord) -> None:
            on_round(record)
            kept = self.records.get(batch_id)
            if kept is None or self.stopped:
                return
            copy = round_from_json(round_json(record))
            rounds = [r for r in kept.round_records if r.number != record.number]
            kept.round_records = sorted([*rounds, copy], key=lambda r: r.number)

        return write

    def checkpoint(self, batch_id: str, question: Question) -> None:
        kept = self.records.get(batch_id)
        if kept is None or self.stopped:
            return
        log_ = question.run.log
        seq = log_.last_seq
        data = durable.encode(question.request, "batch", question.state, seq)
        kept.checkpoints[question.index] = data
        kept.events[question.index] = sse.parse_frames(log_.read(0))

    async def question_done(self, batch_id: str, question: Question) -> None:
        kept = self.records.get(batch_id)
        if kept is None or self.stopped:
            return
        kept.events[question.index] = sse.parse_frames(question.run.log.read(0))
        kept.done[question.index] = question.outcome or "completed"

    async def end(self, batch: Batch) -> None:
        if not self.stopped:
            self.ended.add(batch.id)


class SharedJournal(MemoryJournal):
    """The journal in the shared store, one fenced write at a time per batch, in order.

    A checkpoint is taken when its turn ends (encoded there and then) and written behind
    the batch's earlier writes; a round is awaited, so `create` goes out only once its
    `submitting` record is in the store. A write the store fails is tried again until it
    answers; one it refuses (the token is stale: the batch was taken over) stops the batch
    here (`on_lost`)."""

    durable = True

    def __init__(self, store: SharedBatches, ttl_s: float) -> None:
        self.store = store
        self.ttl_s = max(1, round(ttl_s))
        """How long a batch's keys live after its last write or renewal (or its end)."""
        self.tokens: dict[str, int] = {}
        """The batches this worker drives: their fencing tokens."""
        self.errors: tuple[type[BaseException], ...] = (*store.errors, TimeoutError)
        """What a failing store raises."""
        self.faults = store.faults
        """Of those, what no retry mends (a value the store cannot take: a bug)."""
        self.on_lost: Callable[[str], None] = lambda batch_id: None
        self._writers: dict[str, Writer] = {}

    def adopt(self, batch_id: str, token: int) -> None:
        """A batch this worker took over: its writes carry `token`."""
        self.tokens[batch_id] = token

    def lost(self, batch_id: str) -> None:
        """The batch was taken over elsewhere: nothing more of it is written from here (the
        writes waiting fail with `JournalLost`), and its drive stops (`on_lost`)."""
        if self.tokens.pop(batch_id, None) is not None:
            log.warning("batches: %s was taken over elsewhere; stopping it here", batch_id)
            writer = self._writers.pop(batch_id, None)
            if writer is not None:
                writer.abandon()
            self.on_lost(batch_id)

    async def begin(self, record: Record) -> None:
        if record.batch_id in self.tokens:
            return  # taken over: claimed already
        try:
            token = await self.store.claim(
                record.batch_id, record.owner, record.meta(), self.ttl_s, record.head()
            )
        except self.errors as exc:
            log.warning("batches: cannot record %s (%s); it is not durable", record.batch_id, exc)
            return
        if token:
            self.tokens[record.batch_id] = token

    def round_writer(
        self, batch_id: str, on_round: OnRound
    ) -> Callable[[RoundRecord], Awaitable[None]]:
        token = self.tokens.get(batch_id)  # None: the batch is not durable (claim failed)

        async def write(record: RoundRecord) -> None:
            on_round(record)
            if token is None:
                return
            if self.tokens.get(batch_id) != token:  # lost, maybe taken back since: not ours
                raise JournalLost(batch_id)
            await self._write(batch_id, {"r": {str(record.number): round_json(record)}})

        return write

    def checkpoint(self, batch_id: str, question: Question) -> None:
        if batch_id not in self.tokens:
            return
        run_log, i = question.run.log, question.index
        data = durable.encode(question.request, "batch", question.state, run_log.last_seq)
        parts = {
            "q": {f"c{i}": data, f"e{i}": run_log.read(0)},
            "p": {f"p{i}": orjson.dumps(question.progress())},
        }
        self._writer(batch_id).put(self._writing(batch_id, parts))

    async def question_done(self, batch_id: str, question: Question) -> None:
        i, outcome = question.index, (question.outcome or "completed").encode()
        progress = orjson.dumps(question.progress())
        parts = {
            "q": {f"e{i}": question.run.log.read(0)},
            "p": {f"p{i}": progress, f"d{i}": outcome},
        }
        await self._write(batch_id, parts)

    async def end(self, batch: Batch) -> None:
        token = self.tokens.get(batch.id)
        if token is None:
            return
        summary = orjson.dumps({"state": batch.state, "outcome": batch.outcome, **batch.totals()})
        await self._write(
            batch.id, {}, lambda: self.store.finish(batch.id, token, summary, self.ttl_s)
        )
        self.tokens.pop(batch.id, None)
        await self._close_writer(batch.id)

    async def release(self, batch_id: str) -> None:
        token = self.tokens.pop(batch_id, None)
        writer = self._writers.get(batch_id)
        if writer is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5.0):
                    await writer.drained()
            await self._close_writer(batch_id)
        if token is not None:
            with contextlib.suppress(*self.errors):
                await self.store.release(batch_id, token)

    async def load(self, batch_id: str) -> Record | None:
        """The batch as a worker taking it over rebuilds it (None: unknown)."""
        parts = await self.store.load(batch_id)
        return None if parts is None else record_of(parts)

    async def stored(self, batch_id: str) -> Stored | None:
        """The batch's progress as the store has it, for readers on any worker: its
        summary, not its questions' events (None: unknown)."""
        parts = await self.store.summary(batch_id)
        return None if parts is None else Stored.of(parts)

    async def events(self, batch_id: str, count: int) -> AsyncIterator[bytes]:
        """The `count` questions' events as journaled, in order, `EVENTS_READ` at a time."""
        for start in range(0, count, EVENTS_READ):
            indexes = range(start, min(count, start + EVENTS_READ))
            for data in await self.store.events(batch_id, indexes):
                yield data

    async def _write(self, batch_id: str, parts: Parts, operation: Write | None = None) -> None:
        if batch_id not in self.tokens:
            return
        write = operation or self._writing(batch_id, parts)
        done = self._writer(batch_id).put(write, wait=True)
        assert done is not None
        await done

    def _writing(self, batch_id: str, parts: Parts) -> Write:
        token = self.tokens[batch_id]
        return lambda: self.store.write(batch_id, token, parts, self.ttl_s)

    def _writer(self, batch_id: str) -> Writer:
        writer = self._writers.get(batch_id)
        if writer is None:
            writer = self._writers[batch_id] = Writer(
                batch_id, self.errors, self.lost, faults=self.faults
            )
        return writer

    async def _close_writer(self, batch_id: str) -> None:
        writer = self._writers.pop(batch_id, None)
        if writer is not None:
            await writer.close()

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
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from gateway import events, sse
from gateway.batches.batch import round_view, totals_of
from gateway.batches.rounds import RoundRecord
from gateway.runs import durable
from gateway.runs.loop import LoopConfig, RunState
from gateway.runs.run import RunRequest
from gateway.store.base import SharedBatches

if TYPE_CHECKING:
    from gateway.batches.batch import Batch, Question

log = logging.getLogger(__name__)

RETRY_S = (0.1, 5.0)
"""A write the store failed is tried again, after 0.1 s, doubling up to 5 s, until it is
answered (or refused)."""

OnRound = Callable[[RoundRecord], None]


@dataclass
class Record:
    """A batch as a new worker rebuilds it."""

    batch_id: str
    owner: str
    request_id: str
    created_at: str
    requests: list[dict[str, Any]]
    run_ids: list[str]
    session_ids: list[str]
    checkpoints: dict[int, bytes] = field(default_factory=dict)
    """Question index -> `runs.durable` checkpoint after its last turn."""
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Question index -> its events up to that checkpoint (or all of them, once done)."""
    done: dict[int, str] = field(default_factory=dict)
    """Question index -> outcome, for the questions that ended."""
    round_records: list[RoundRecord] = field(default_factory=list)

    @classmethod
    def new(cls, batch: Batch, configs: list[LoopConfig]) -> Record:
        return cls(
            batch.id, batch.owner, batch.request_id, batch.created_at,
            [dataclasses.asdict(q.request) for q in batch.questions],
            [q.run.id for q in batch.questions], [q.run.session_id for q in batch.questions],
        )  # fmt: skip

    def meta(self) -> bytes:
        return orjson.dumps({
            "batch_id": self.batch_id, "owner": self.owner, "request_id": self.request_id,
            "created_at": self.created_at, "requests": self.requests, "run_ids": self.run_ids,
            "session_ids": self.session_ids,
        }, default=_sets_as_lists)  # fmt: skip

    @classmethod
    def from_meta(cls, data: bytes) -> Record:
        body = orjson.loads(data)
        return cls(**{k: body[k] for k in (
            "batch_id", "owner", "request_id", "created_at", "requests", "run_ids", "session_ids"
        )})  # fmt: skip

    def run_requests(self) -> list[RunRequest]:
        return [RunRequest(**durable._fields_of(RunRequest, r)) for r in self.requests]

    def questions(self) -> list[tuple[RunRequest, RunState]]:
        """Each question's request and its state after its last checkpointed turn."""
        found = []
        for index, request in enumerate(self.run_requests()):
            data = self.checkpoints.get(index)
            if data is None:
                state = RunState(self.run_ids[index], self.session_ids[index], [])
            else:
                state = durable.decode(data).state
            found.append((request, state))
        return found

    def kept_events(self, index: int) -> list[dict[str, Any]]:
        """The question's events up to its last checkpoint (all of them once it ended)."""
        return [dict(event) for event in self.events.get(index, ())]

    def rounds(self) -> list[RoundRecord]:
        return list(self.round_records)


def _sets_as_lists(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot record a {type(value).__name__}")


def round_json(record: RoundRecord) -> bytes:
    return orjson.dumps(dataclasses.asdict(record))


def round_from_json(data: bytes) -> RoundRecord:
    return RoundRecord(**orjson.loads(data))


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


class JournalLost(Exception):
    """The store refused a write of the batch: another worker drives it now."""


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
        self.on_lost: Callable[[str], None] = lambda batch_id: None
        self._writers: dict[str, _Writer] = {}

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
            token = await self.store.claim(record.batch_id, record.owner, record.meta(), self.ttl_s)
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
            await self._write(batch_id, "r", {str(record.number): round_json(record)})

        return write

    def checkpoint(self, batch_id: str, question: Question) -> None:
        if batch_id not in self.tokens:
            return
        run_log, i = question.run.log, question.index
        data = durable.encode(question.request, "batch", question.state, run_log.last_seq)
        fields = {
            f"c{i}": data,
            f"e{i}": run_log.read(0),
            f"p{i}": orjson.dumps(question.progress()),
        }
        self._writer(batch_id).put(self._writing(batch_id, "q", fields))

    async def question_done(self, batch_id: str, question: Question) -> None:
        i = question.index
        fields = {f"e{i}": question.run.log.read(0), f"p{i}": orjson.dumps(question.progress()),
                  f"d{i}": (question.outcome or "completed").encode()}  # fmt: skip
        await self._write(batch_id, "q", fields)

    async def end(self, batch: Batch) -> None:
        token = self.tokens.get(batch.id)
        if token is None:
            return
        summary = orjson.dumps({"state": batch.state, "outcome": batch.outcome, **batch.totals()})
        await self._write(batch.id, "", {}, lambda: self.store.finish(
            batch.id, token, summary, self.ttl_s
        ))  # fmt: skip
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
        """The batch as the store has it, for readers on any worker (None: unknown)."""
        parts = await self.store.load(batch_id)
        return None if parts is None else Stored.of(parts)

    async def _write(
        self, batch_id: str, part: str, fields: dict[str, bytes],
        operation: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:  # fmt: skip
        if batch_id not in self.tokens:
            return
        write = operation or self._writing(batch_id, part, fields)
        done = self._writer(batch_id).put(write, wait=True)
        assert done is not None
        await done

    def _writing(self, batch_id: str, part: str, fields: dict[str, bytes]) -> Write:
        token = self.tokens[batch_id]
        return lambda: self.store.write(batch_id, token, part, fields, self.ttl_s)

    def _writer(self, batch_id: str) -> _Writer:
        writer = self._writers.get(batch_id)
        if writer is None:
            writer = self._writers[batch_id] = _Writer(self, batch_id)
        return writer

    async def _close_writer(self, batch_id: str) -> None:
        writer = self._writers.pop(batch_id, None)
        if writer is not None:
            await writer.close()


Write = Callable[[], Awaitable[bool]]


class _Writer:
    """One batch's writes, in order, each tried until the store answers."""

    def __init__(self, journal: SharedJournal, batch_id: str) -> None:
        self._journal = journal
        self._batch_id = batch_id
        self._queue: asyncio.Queue[tuple[Write, asyncio.Future[None] | None]] = asyncio.Queue()
        self._task = asyncio.create_task(self._run())
        self._lost = False

    def abandon(self) -> None:
        """The batch is lost: no write more; those waiting fail with `JournalLost`."""
        self._lost = True
        self._task.cancel()
        while not self._queue.empty():
            _, done = self._queue.get_nowait()
            self._queue.task_done()
            self._fail(done)

    def put(self, write: Write, *, wait: bool = False) -> asyncio.Future[None] | None:
        done = asyncio.get_running_loop().create_future() if wait else None
        if self._lost:
            self._fail(done)
            return done
        self._queue.put_nowait((write, done))
        return done

    async def drained(self) -> None:
        await self._queue.join()

    async def close(self) -> None:
        self.abandon()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _run(self) -> None:
        while True:
            write, done = await self._queue.get()
            try:
                written = not self._lost and await self._answered(write)
            except asyncio.CancelledError:
                self._fail(done)
                raise
            finally:
                self._queue.task_done()
            if not written:
                self._fail(done)
                self._lost = True
                self._journal.lost(self._batch_id)
            elif done is not None and not done.done():
                done.set_result(None)

    def _fail(self, done: asyncio.Future[None] | None) -> None:
        if done is not None and not done.done():
            done.set_exception(JournalLost(self._batch_id))

    async def _answered(self, write: Write) -> bool:
        delay, most = RETRY_S
        errors = self._journal.errors
        while True:
            try:
                return await write()
            except errors as exc:
                log.warning("batches: cannot write %s (%s); trying again", self._batch_id, exc)
                await asyncio.sleep(delay)
                delay = min(most, delay * 2)


def record_of(parts: dict[str, dict[str, bytes]]) -> Record:
    """A Record from the store's parts of a batch."""
    record = Record.from_meta(parts["batch"]["meta"])
    for name, value in parts["q"].items():
        kind, index = name[0], int(name[1:])
        if kind == "c":
            record.checkpoints[index] = value
        elif kind == "e":
            record.events[index] = sse.parse_frames(value)
        elif kind == "d":
            record.done[index] = value.decode()
    record.round_records = _rounds(parts)
    return record


def _rounds(parts: dict[str, dict[str, bytes]]) -> list[RoundRecord]:
    return sorted((round_from_json(v) for v in parts["r"].values()), key=lambda r: r.number)


@dataclass
class Stored:
    """A batch as any worker reads it from the store: its progress, and its questions'
    events (all of them once a question is done)."""

    batch_id: str
    owner: str
    state: str
    created_at: str
    questions: list[dict[str, Any]]
    rounds: list[RoundRecord]
    events: dict[int, bytes]
    summary: dict[str, Any] | None

    @property
    def done(self) -> bool:
        return self.state == "ended"

    @classmethod
    def of(cls, parts: dict[str, dict[str, bytes]]) -> Stored:
        head = parts["batch"]
        meta = orjson.loads(head["meta"])
        run_ids: list[str] = meta["run_ids"]
        questions = [_queued(i, run_id) for i, run_id in enumerate(run_ids)]
        found: dict[int, bytes] = {}
        for name, value in parts["q"].items():
            if name[0] == "p":
                questions[int(name[1:])] = orjson.loads(value)
            elif name[0] == "e":
                found[int(name[1:])] = value
        summary = orjson.loads(head["summary"]) if "summary" in head else None
        state = (summary or {}).get("state") or head.get("status", b"running").decode()
        return cls(meta["batch_id"], meta["owner"], state, meta["created_at"], questions,
                   _rounds(parts), found, summary)  # fmt: skip

    def progress(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "state": self.state,
            "created_at": self.created_at,
            **totals_of(self.questions),
            "rounds": [round_view(r) for r in self.rounds],
            "questions": self.questions,
        }


def _queued(index: int, run_id: str) -> dict[str, Any]:
    return {"index": index, "run_id": run_id, "round": 0, "state": "queued", "outcome": None,
            "batch_result": None, "tool_calls": 0, "usage": events.empty_usage(),
            "cost_usd": 0.0, "saved_usd": 0.0}  # fmt: skip

"""What outlives the worker that drives a batch: its record (owner, the questions'
requests and run ids), each question's checkpoint after every turn (the state and the
events so far), each round as it is submitted and answered, and its end.

`MemoryJournal` keeps nothing (a batch is lost with its process); `KeptJournal` keeps it
in memory, as a shared store would for another worker (`BatchManager.resume`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from gateway import sse
from gateway.batches.rounds import RoundRecord
from gateway.runs import durable
from gateway.runs.loop import LoopConfig, RunState
from gateway.runs.run import RunRequest

if TYPE_CHECKING:
    from gateway.batches.batch import Batch, Question

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

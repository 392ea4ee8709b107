"""A batch's journal as data: the `Record` a worker taking the batch over rebuilds it
from, and the `Stored` progress any worker reads (`journal` writes them)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from gateway import events, sse
from gateway.batches.batch import round_view, totals_of
from gateway.batches.calls import RoundRecord
from gateway.runs import durable
from gateway.runs.loop import LoopConfig, RunState
from gateway.runs.run import RunRequest

if TYPE_CHECKING:
    from gateway.batches.batch import Batch


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
            batch.id,
            batch.owner,
            batch.request_id,
            batch.created_at,
            [dataclasses.asdict(q.request) for q in batch.questions],
            [q.run.id for q in batch.questions],
            [q.run.session_id for q in batch.questions],
        )

    def head(self) -> bytes:
        """What the batch's progress needs of its record (not the questions' requests)."""
        return orjson.dumps(
            {
                "batch_id": self.batch_id,
                "owner": self.owner,
                "created_at": self.created_at,
                "run_ids": self.run_ids,
            }
        )

    def meta(self) -> bytes:
        return orjson.dumps(
            {
                "batch_id": self.batch_id,
                "owner": self.owner,
                "request_id": self.request_id,
                "created_at": self.created_at,
                "requests": self.requests,
                "run_ids": self.run_ids,
                "session_ids": self.session_ids,
            },
            default=_sets_as_lists,
        )

    @classmethod
    def from_meta(cls, data: bytes) -> Record:
        body = orjson.loads(data)
        return cls(
            **{
                k: body[k]
                for k in (
                    "batch_id",
                    "owner",
                    "request_id",
                    "created_at",
                    "requests",
                    "run_ids",
                    "session_ids",
                )
            }
        )

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


def record_of(parts: dict[str, dict[str, bytes]]) -> Record:
    """A Record from the store's parts of a batch (all of them: a takeover's read)."""
    record = Record.from_meta(parts["batch"]["meta"])
    for name, value in [*parts["q"].items(), *parts["p"].items()]:
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
    """A batch's progress as any worker reads it from the store: its summary, the small
    records beside the journal (never its questions' requests, checkpoints or events)."""

    batch_id: str
    owner: str
    state: str
    created_at: str
    questions: list[dict[str, Any]]
    rounds: list[RoundRecord]
    summary: dict[str, Any] | None

    @property
    def done(self) -> bool:
        return self.state == "ended"

    @classmethod
    def of(cls, parts: dict[str, dict[str, bytes]]) -> Stored:
        record = parts["batch"]
        head = orjson.loads(record["head"])
        run_ids: list[str] = head["run_ids"]
        questions = [_queued(i, run_id) for i, run_id in enumerate(run_ids)]
        for name, value in parts["p"].items():
            if name[0] == "p":
                questions[int(name[1:])] = orjson.loads(value)
        summary = orjson.loads(record["summary"]) if "summary" in record else None
        state = (summary or {}).get("state") or record.get("status", b"running").decode()
        rounds = _rounds(parts)
        return cls(
            head["batch_id"], head["owner"], state, head["created_at"], questions, rounds, summary
        )

    def progress(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "state": self.state,
            "outcome": (self.summary or {}).get("outcome"),
            "created_at": self.created_at,
            **totals_of(self.questions),
            "rounds": [round_view(r) for r in self.rounds],
            "questions": self.questions,
        }


QUEUED = {
    "round": 0,
    "state": "queued",
    "outcome": None,
    "batch_result": None,
    "tool_calls": 0,
    "cost_usd": 0.0,
    "saved_usd": 0.0,
}
"""A question's progress before its first turn."""


def _queued(index: int, run_id: str) -> dict[str, Any]:
    return {"index": index, "run_id": run_id, **QUEUED, "usage": events.empty_usage()}

"""A batch as its readers see it: its questions' progress, its own event log (the batch's
SSE stream: `batch_status`, `question`, terminal `batch_complete`), and its totals."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

from gateway import events
from gateway.batches.calls import RoundRecord
from gateway.batches.provider import BatchProvider
from gateway.batches.rounds import Rounds
from gateway.events import Event
from gateway.runs.loop import RunState
from gateway.runs.run import Run, RunRequest
from gateway.store.eventlog import EventLog

BatchState = Literal["running", "cancelling", "ended"]
QuestionState = Literal["queued", "waiting_model", "running_tools", "done"]
BATCH_EVENT_TYPES = ("batch_status", "question", "batch_complete")


@dataclass
class Question:
    """One question of a batch: an ordinary run whose model calls go through the rounds."""

    index: int
    request: RunRequest
    run: Run
    state: RunState
    provider: BatchProvider | None = None
    phase: QuestionState = "queued"
    outcome: str | None = None
    """The run's outcome, or its error code; `expired`/`errored`/`canceled` when its batch
    request ended so."""
    saved_usd: float = 0.0

    def progress(self) -> dict[str, Any]:
        state = self.state
        return {
            "index": self.index,
            "run_id": self.run.id,
            "round": state.turns,
            "state": self.phase,
            "outcome": self.outcome,
            "batch_result": None if self.provider is None else self.provider.last_result,
            "tool_calls": state.tool_calls,
            "usage": dict(state.usage),
            "cost_usd": state.cost_usd,
            "saved_usd": self.saved_usd,
        }


@dataclass
class Batch:
    id: str
    owner: str
    questions: list[Question]
    log: EventLog
    request_id: str = ""
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    state: BatchState = "running"
    rounds: Rounds | None = None
    task: asyncio.Task[None] | None = None
    finished_at: float | None = None
    outcome: str | None = None
    """`completed` or `cancelled`, once ended."""
    stopping: bool = False
    """Stopped here (shutdown, or taken over elsewhere): what its questions end with now
    is not their outcome, and nothing more is journaled."""
    begun: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the journal has the batch (or failed to take it): from then on every
    worker can read it."""

    @property
    def done(self) -> bool:
        return self.state == "ended"

    def stop(self) -> None:
        """Stop driving the batch here (shutdown, or it was taken over elsewhere): no new
        round goes out, and what its questions end with now is not their outcome."""
        self.stopping = True
        if self.rounds is not None:
            self.rounds.stop()
        if self.task is not None:
            self.task.cancel()

    def totals(self) -> dict[str, Any]:
        return totals_of([q.progress() for q in self.questions])

    def progress(self) -> dict[str, Any]:
        records = [] if self.rounds is None else self.rounds.rounds
        return {
            "batch_id": self.id,
            "state": self.state,
            "outcome": self.outcome,
            "created_at": self.created_at,
            **self.totals(),
            "rounds": [round_view(r) for r in records],
            "questions": [q.progress() for q in self.questions],
        }

    def emit(self, kind: str, **fields: Any) -> None:
        if not self.log.closed:
            self.log.append(cast(Event, {"type": kind, **fields}))


def totals_of(questions: list[dict[str, Any]]) -> dict[str, Any]:
    """A batch's totals from its questions' progress."""
    usage = events.empty_usage()
    cost: float | None = 0.0
    outcomes: dict[str, int] = {}
    for question in questions:
        for key, value in question["usage"].items():
            usage[key] = usage.get(key, 0) + value
        q_cost = question["cost_usd"]
        cost = None if cost is None or q_cost is None else cost + q_cost
        name = question["outcome"] or question["state"]
        outcomes[name] = outcomes.get(name, 0) + 1
    saved = round(sum(q["saved_usd"] for q in questions), 6)
    return {
        "question_count": len(questions),
        "counts": outcomes,
        "usage": usage,
        "total_cost_usd": cost,
        "saved_usd": saved,
    }


def round_view(record: RoundRecord) -> dict[str, Any]:
    return {
        "round": record.number,
        "api_batch_id": record.api_batch_id,
        "requests": len(record.custom_ids),
        "state": record.state,
        "results": record.results,
        "note": record.note,
    }

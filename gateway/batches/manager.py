"""Starts batches, finds them by id, cancels them, expires finished ones, ends them all at
shutdown. A batch is a task that starts one question run per question, all advancing
through the same rounds, and writes the batch's own events as they go."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from secrets import token_hex
from typing import Any, cast

from gateway.batches import lookup
from gateway.batches.api import BatchesAPI
from gateway.batches.batch import Batch, Question
from gateway.batches.calls import RoundRecord
from gateway.batches.journal import Journal, Record
from gateway.batches.provider import BatchProvider
from gateway.batches.question import drive
from gateway.batches.rounds import Rounds
from gateway.errors import GatewayError
from gateway.events import Event
from gateway.ops.audit import AuditLog
from gateway.ops.metrics import Metrics
from gateway.providers.seam import RetryPolicy
from gateway.runs.loop import LoopConfig, RunState
from gateway.runs.manager import RunFactory
from gateway.runs.run import Run, RunRequest
from gateway.store.eventlog import EventLog

log = logging.getLogger(__name__)

BATCH_CALL_DEADLINE_S = 25 * 3600.0
"""A batch round may take up to the API's 24 hours: a question's model call waits that long."""
NO_RETRY = RetryPolicy(max_retries=0, call_deadline_s=BATCH_CALL_DEADLINE_S)
ENDPOINT = "batch"

OnQuestionEnd = Callable[[Run, dict[str, int], float | None], None]


@dataclasses.dataclass(frozen=True)
class BatchOptions:
    poll_s: float
    ttl_s: float
    max_events: int
    upstream: str
    """The primary upstream's name (`anthropic` or `demo`): the questions' `upstream`."""
    model: str
    clock_skew_s: float = lookup.CLOCK_SKEW_S
    """How far the API's clock may be from this worker's (`lookup`)."""


class BatchManager:
    def __init__(
        self,
        factory: RunFactory,
        api: BatchesAPI,
        options: BatchOptions,
        metrics: Metrics,
        journal: Journal,
        *,
        audit: AuditLog | None = None,
        on_question_end: OnQuestionEnd | None = None,
        on_batch_end: Callable[[Batch], None] | None = None,
    ) -> None:
        self.factory = factory
        self.api = api
        self.options = options
        self.journal = journal
        self._metrics = metrics
        self._audit = audit
        self._on_question_end = on_question_end
        self._on_batch_end = on_batch_end
        self._batches: dict[str, Batch] = {}
        self._controls: set[asyncio.Task[Any]] = set()
        self._errors: dict[str, GatewayError] = {}  # batch id: what its questions end with

    def get(self, batch_id: str) -> Batch | None:
        self._expire()
        return self._batches.get(batch_id)

    def start(
        self, owner: str, requests: list[RunRequest], configs: list[LoopConfig], request_id: str
    ) -> Batch:
        batch_id = f"batch_{token_hex(16)}"
        questions = [
            self._question(index, request, RunState(f"run_{token_hex(16)}", "", []))
            for index, request in enumerate(requests)
        ]
        batch = Batch(batch_id, owner, questions, EventLog(batch_id), request_id)
        record = Record.new(batch, configs)
        self._launch(batch, configs, record, [])
        self._write_audit("batch_start", batch, questions=len(questions))
        return batch

    def resume(self, record: Record, configs: list[LoopConfig]) -> Batch:
        """Continue a batch another worker started, from its journal."""
        questions = [self._question(i, r, s) for i, (r, s) in enumerate(record.questions())]
        batch = Batch(
            record.batch_id,
            record.owner,
            questions,
            EventLog(record.batch_id),
            record.request_id,
            record.created_at,
        )
        for question in questions:
            question.run.log.extend(cast(list[Event], record.kept_events(question.index)))
            if question.index in record.done:
                question.phase, question.outcome = "done", record.done[question.index]
                question.run.log.close()
        self._launch(batch, configs, record, record.rounds())
        return batch

    def _question(self, index: int, request: RunRequest, state: RunState) -> Question:
        session_id = request.session_id or state.session_id or f"sess_{token_hex(16)}"
        state.session_id = session_id
        run = Run(state.run_id, session_id, EventLog(state.run_id, self.options.max_events), 0.0)
        run.owner = request.caller
        if not state.messages:
            state.messages = list(request.messages)
        return Question(index, request, run, state)

    def _launch(
        self, batch: Batch, configs: list[LoopConfig], record: Record, rounds: list[RoundRecord]
    ) -> None:
        self._batches[batch.id] = batch
        batch.task = asyncio.create_task(self._drive(batch, configs, record, rounds))

    def running_of(self, owner: str) -> list[Batch]:
        """The batches of key `owner` that this worker drives and that still run."""
        return [b for b in self._batches.values() if b.owner == owner and b.state == "running"]

    def end_key(self, owner: str, error: GatewayError) -> None:
        """Key `owner` was revoked: its batches running here are cancelled as `cancel`
        cancels them, each unfinished question ending with `error` (`KEY_REVOKED`)."""
        for batch in self.running_of(owner):
            self._spawn(self.cancel(batch.id, error))

    async def cancel(self, batch_id: str, error: GatewayError | None = None) -> bool | None:
        """Cancel the batch's API batches in flight and its questions: whether it was
        running, None if unknown. With `error`, each unfinished question ends with that
        `error` event instead of `cancelled`."""
        batch = self.get(batch_id)
        if batch is None:
            return None
        if batch.state != "running":
            return False
        batch.state = "cancelling"
        reason = {} if error is None else {"error": error.code}
        batch.emit("batch_status", state="cancelling", **reason)
        self._write_audit("batch_cancel", batch, **reason)
        if error is not None:
            self._errors[batch.id] = error
            _fail(batch, error)
        if batch.rounds is not None:
            await batch.rounds.cancel()
        for question in batch.questions:
            question.run.cancel("cancelled")
        return True

    async def shutdown(self) -> None:
        """Stop every batch here; with a journal that outlives the process (Redis) another
        worker or a restart continues them."""
        running = [b for b in self._batches.values() if b.task is not None and not b.done]
        for batch in running:
            batch.stop()
        await asyncio.gather(*(b.task for b in running if b.task), return_exceptions=True)
        await asyncio.gather(*(self.journal.release(b.id) for b in running))

    def lost(self, batch_id: str) -> None:
        """Another worker drives this batch now (the store refused a write of it): stop
        it here without a word more to the journal; readers here read the store."""
        batch = self._batches.pop(batch_id, None)
        if batch is not None and batch.task is not None and not batch.done:
            batch.stop()

    def on_control(self, kind: str, batch_id: str) -> None:
        """A control message from another worker: `cancel {batch_id}`."""
        if kind == "cancel" and batch_id in self._batches:
            self._spawn(self.cancel(batch_id))

    def _spawn(self, cancel: Coroutine[Any, Any, bool | None]) -> None:
        task = asyncio.create_task(cancel)
        self._controls.add(task)
        task.add_done_callback(self._controls.discard)

    async def _drive(
        self, batch: Batch, configs: list[LoopConfig], record: Record, rounds: list[RoundRecord]
    ) -> None:
        open_ = [q for q in batch.questions if q.phase != "done"]
        try:
            try:
                await self.journal.begin(record)  # claimed (or taken over): writes are fenced
            finally:
                batch.begun.set()
            batch.rounds = self._rounds(batch, len(open_), rounds)
            batch.emit("batch_status", state=batch.state, questions=len(batch.questions))
            async with asyncio.TaskGroup() as group:
                for question in open_:
                    task = group.create_task(self._run_question(batch, question, configs))
                    question.run.task = task
                if batch.state == "cancelling":  # cancelled before its questions started
                    self._cancel_started(batch)
        except asyncio.CancelledError:  # shutdown: the journal keeps the batch for later
            self._errors.pop(batch.id, None)
            if batch.rounds is not None:
                await batch.rounds.close()
            batch.log.close()
            raise
        await batch.rounds.close()
        self._errors.pop(batch.id, None)
        self._finish(batch)
        await self.journal.end(batch)

    def _cancel_started(self, batch: Batch) -> None:
        """End the questions of a batch cancelled while it began: no round goes out."""
        error = self._errors.pop(batch.id, None)
        if error is not None:
            _fail(batch, error)
            return
        assert batch.rounds is not None
        batch.rounds.stop()
        for question in batch.questions:
            question.run.cancel("cancelled")

    def _rounds(self, batch: Batch, members: int, recorded: list[RoundRecord]) -> Rounds:
        write = self.journal.round_writer(batch.id, self._count_round)
        key, skew_s = batch.id.removeprefix("batch_"), self.options.clock_skew_s
        rounds = Rounds(self.api, members, write, recorded, key=key, skew_s=skew_s)
        rounds.on_note = functools.partial(_noted, batch)
        if batch.stopping:
            rounds.stop()
        return rounds

    async def _run_question(
        self, batch: Batch, question: Question, configs: list[LoopConfig]
    ) -> None:
        assert batch.rounds is not None
        config = dataclasses.replace(configs[question.index], retry=NO_RETRY)
        deps = self.factory.deps(question.run, question.request, ENDPOINT, None)
        question.provider = BatchProvider(
            batch.rounds, question.index, self.options.upstream, self.options.model
        )
        deps = dataclasses.replace(deps, upstreams=[question.provider])
        try:
            await drive(question, config, deps, lambda q: self._turned(batch, q))
        finally:
            batch.rounds.leave()
            if self._on_question_end is not None and not batch.stopping:
                self._on_question_end(question.run, question.state.usage, question.state.cost_usd)
        batch.emit("question", **question.progress())
        if not batch.stopping:
            await self.journal.question_done(batch.id, question)

    def _turned(self, batch: Batch, question: Question) -> None:
        batch.emit("question", **question.progress())
        if not batch.stopping:
            self.journal.checkpoint(batch.id, question)

    def _count_round(self, record: RoundRecord) -> None:
        if record.state == "submitted":
            self._metrics.batch_rounds.inc()

    def _finish(self, batch: Batch) -> None:
        outcome = "cancelled" if batch.state == "cancelling" else "completed"
        batch.state, batch.outcome = "ended", outcome
        batch.finished_at = time.monotonic()
        totals = batch.totals()
        self._metrics.batches.labels(outcome).inc()
        if totals["saved_usd"]:
            self._metrics.batch_saved_usd.labels(self.options.model, batch.owner).inc(
                totals["saved_usd"]
            )
        batch.emit("batch_complete", batch_id=batch.id, state="ended", outcome=outcome, **totals)
        batch.log.close()
        self._write_audit("batch_end", batch, outcome=outcome, **_audited(totals))
        if self._on_batch_end is not None:
            self._on_batch_end(batch)

    def _write_audit(self, event: str, batch: Batch, **fields: Any) -> None:
        if self._audit is not None:
            self._audit.write(event, {"key": batch.owner, "batch_id": batch.id, **fields})

    def _expire(self) -> None:
        horizon = time.monotonic() - self.options.ttl_s
        for batch_id in [
            b.id
            for b in self._batches.values()
            if b.finished_at is not None and b.finished_at < horizon
        ]:
            del self._batches[batch_id]


def _fail(batch: Batch, error: GatewayError) -> None:
    """End the batch's unfinished questions with `error`, before its API batch is
    cancelled: no round forms of the ones still waiting, and none ends `cancelled` by the
    API's `canceled` result first."""
    if batch.rounds is not None:
        batch.rounds.stop()
    for question in batch.questions:
        question.run.fail(error)


def _noted(batch: Batch, record: RoundRecord) -> None:
    """A round waits (its lookup failing) or stops waiting: the batch's events say so."""
    batch.emit("batch_status", state=batch.state, round=record.number, note=record.note)


def _audited(totals: dict[str, Any]) -> dict[str, Any]:
    usage = totals["usage"]
    return {
        "questions": totals["question_count"],
        "counts": totals["counts"],
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "cost_usd": totals["total_cost_usd"],
        "saved_usd": totals["saved_usd"],
    }

"""A batch as its readers see it (`batches.batch`): each question's progress, the batch's
totals (tokens summed, a cost unknown once one question's is, outcomes counted), its
rounds, its own events, and stopping it."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any, cast

from gateway import events
from gateway.batches.batch import Batch, Question, round_view, totals_of
from gateway.batches.calls import RoundRecord
from gateway.batches.provider import BatchProvider
from gateway.batches.rounds import Rounds
from gateway.runs.loop import RunState
from gateway.runs.run import Run, RunRequest
from gateway.sse import parse_frames
from gateway.store.eventlog import EventLog


def question(index: int, **state: Any) -> Question:
    run_id = f"run_{index}"
    run = Run(run_id, f"sess_{index}", EventLog(run_id, 100), 0.0)
    request = RunRequest([{"role": "user", "content": f"Question {index}"}])
    return Question(index, request, run, RunState(run_id, f"sess_{index}", [], **state))


def batch_of(*questions: Question) -> Batch:
    return Batch("batch_1", "alice", list(questions), EventLog("batch_1"))


def logged(log: EventLog) -> list[dict[str, Any]]:
    return parse_frames(log.read(0))


class Provider:
    last_result = "expired"


def test_a_questions_progress_names_its_run_turns_state_and_spend() -> None:
    usage = {**events.empty_usage(), "input_tokens": 7}
    q = question(3, turns=2, tool_calls=4, usage=usage, cost_usd=0.25)
    q.phase, q.outcome, q.saved_usd = "done", "completed", 0.125
    assert q.progress() == {
        "index": 3,
        "run_id": "run_3",
        "round": 2,
        "state": "done",
        "outcome": "completed",
        "batch_result": None,  # no call went through a round
        "tool_calls": 4,
        "usage": usage,
        "cost_usd": 0.25,
        "saved_usd": 0.125,
    }
    q.progress()["usage"]["input_tokens"] = 99  # a reader's copy, not the question's own
    assert q.state.usage["input_tokens"] == 7
    q.provider = cast(BatchProvider, Provider())
    assert q.progress()["batch_result"] == "expired"


def test_a_new_question_is_queued_without_outcome() -> None:
    progress = question(0).progress()
    assert (progress["state"], progress["outcome"], progress["saved_usd"]) == ("queued", None, 0)


def test_totals_sum_the_questions_tokens_and_count_their_outcomes() -> None:
    first = {"usage": {"input_tokens": 10, "output_tokens": 2}, "cost_usd": 0.5,
             "outcome": "completed", "state": "done", "saved_usd": 0.1234564}  # fmt: skip
    second = {"usage": {"input_tokens": 5, "batch_requests": 1}, "cost_usd": 0.25,
              "outcome": "completed", "state": "done", "saved_usd": 0.0000002}  # fmt: skip
    waiting = {"usage": {}, "cost_usd": 0.0, "outcome": None, "state": "waiting_model",
               "saved_usd": 0.0}  # fmt: skip
    totals = totals_of([first, second, waiting])
    assert totals["question_count"] == 3
    assert totals["counts"] == {"completed": 2, "waiting_model": 1}
    assert totals["usage"] == {
        **events.empty_usage(), "input_tokens": 15, "output_tokens": 2, "batch_requests": 1
    }  # fmt: skip
    assert totals["total_cost_usd"] == 0.75
    assert totals["saved_usd"] == 0.123457  # rounded to six places
    assert list(totals) == ["question_count", "counts", "usage", "total_cost_usd", "saved_usd"]


def test_one_unpriced_question_leaves_the_batchs_cost_unknown() -> None:
    priced = {"usage": {}, "cost_usd": 0.5, "outcome": "completed", "state": "done",
              "saved_usd": 0.0}  # fmt: skip
    unpriced = {**priced, "cost_usd": None}
    assert totals_of([priced, unpriced])["total_cost_usd"] is None
    assert totals_of([unpriced, priced])["total_cost_usd"] is None
    assert totals_of([])["total_cost_usd"] == 0.0
    assert totals_of([])["counts"] == {} and totals_of([])["saved_usd"] == 0


def test_a_rounds_view_counts_its_requests() -> None:
    record = RoundRecord(2, ["q0-t2-x", "q1-t2-x"], "msgbatch_1", "ended",
                         results={"succeeded": 2}, note="waiting")  # fmt: skip
    assert round_view(record) == {
        "round": 2,
        "api_batch_id": "msgbatch_1",
        "requests": 2,
        "state": "ended",
        "results": {"succeeded": 2},
        "note": "waiting",
    }


def test_a_new_batch_runs_with_a_utc_creation_time() -> None:
    batch = batch_of(question(0))
    assert (batch.state, batch.outcome, batch.request_id) == ("running", None, "")
    assert not batch.done and not batch.stopping and not batch.begun.is_set()
    assert batch.rounds is None and batch.task is None and batch.finished_at is None
    created = datetime.fromisoformat(batch.created_at)
    assert created.utcoffset() is not None and created.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    batch.state = "cancelling"
    assert not batch.done
    batch.state = "ended"
    assert batch.done


def test_a_batchs_progress_holds_its_totals_rounds_and_questions() -> None:
    first, second = question(0, turns=1), question(1)
    first.phase, first.outcome = "done", "completed"
    batch = batch_of(first, second)
    progress = batch.progress()
    assert progress["rounds"] == []  # no rounds yet
    assert progress == {
        "batch_id": "batch_1",
        "state": "running",
        "outcome": None,
        "created_at": batch.created_at,
        **totals_of([first.progress(), second.progress()]),
        "rounds": [],
        "questions": [first.progress(), second.progress()],
    }

    class Two:
        def __init__(self) -> None:
            self.rounds = [RoundRecord(1, ["q0-t1-x", "q1-t1-x"]), RoundRecord(2, ["q1-t2-x"])]

    two = Two()
    batch.rounds = cast(Rounds, two)
    assert batch.progress()["rounds"] == [round_view(r) for r in two.rounds]
    assert batch.totals() == totals_of([first.progress(), second.progress()])


def test_events_go_to_the_batchs_log_until_it_closes() -> None:
    batch = batch_of(question(0))
    batch.emit("batch_status", state="running", questions=1)
    batch.log.close()
    batch.emit("question", index=0)  # nothing: the log is closed
    assert logged(batch.log) == [
        {"type": "batch_status", "state": "running", "questions": 1, "run_id": "batch_1", "seq": 1}
    ]


async def test_stopping_a_batch_stops_its_rounds_and_cancels_its_task() -> None:
    batch = batch_of(question(0))
    batch.stop()  # nothing to stop yet: no rounds, no task
    assert batch.stopping

    class Stoppable:
        stopped = 0

        def stop(self) -> None:
            self.stopped += 1

    rounds = Stoppable()
    task = asyncio.create_task(asyncio.sleep(10))
    batch = batch_of(question(0))
    batch.rounds, batch.task = cast(Rounds, rounds), task
    batch.stop()
    assert batch.stopping and rounds.stopped == 1
    await asyncio.sleep(0)
    assert task.cancelled()

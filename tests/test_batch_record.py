"""A batch's journal as data (`batches.record`): the `Record` a worker taking a batch over
rebuilds it from, and the `Stored` progress any worker reads, from the store's parts."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from gateway import events, sse
from gateway.batches.batch import Batch, Question, round_view, totals_of
from gateway.batches.calls import RoundRecord
from gateway.batches.record import (
    QUEUED,
    Record,
    Stored,
    record_of,
    round_from_json,
    round_json,
)
from gateway.runs import durable
from gateway.runs.loop import RunState
from gateway.runs.run import Run, RunRequest
from gateway.store.eventlog import EventLog

CREATED = "2026-01-02T03:04:05+00:00"
Parts = dict[str, dict[str, bytes]]


def a_question(index: int) -> Question:
    """Question `index`: its request (with a set JSON has no word for) and its run."""
    request = RunRequest(
        [{"role": "user", "content": f"question {index}"}],
        tools=frozenset({"sec_search", "calculator"}),
        max_turns=3 + index,
        request_id=f"req_q{index}",
        caller="alice",
    )
    run = Run(f"run_{index}", f"sess_{index}", EventLog(f"run_{index}"), grace_s=1.0)
    state = RunState(run.id, run.session_id, list(request.messages))
    return Question(index, request, run, state)


def a_batch(count: int = 2, batch_id: str = "batch_1") -> Batch:
    questions = [a_question(i) for i in range(count)]
    return Batch(
        batch_id, "alice", questions, EventLog(batch_id), request_id="req_b", created_at=CREATED
    )


def a_round(number: int, state: str = "ended") -> RoundRecord:
    return RoundRecord(
        number,
        [f"q0-t{number}-k", f"q1-t{number}-k"],
        api_batch_id=f"msgbatch_{number}",
        state=state,  # type: ignore[arg-type]
        submitted_at=f"2026-01-02T03:0{number % 10}:00+00:00",
        results={"succeeded": 1, "errored": 1},
        note=f"note {number}",
    )


def frames(*texts: str) -> bytes:
    return b"".join(
        sse.frame(seq, events.warning("w", text, 1)) for seq, text in enumerate(texts, 1)
    )


def test_a_new_record_holds_each_questions_request_run_and_session() -> None:
    batch = a_batch(3)
    record = Record.new(batch, [])
    assert (record.batch_id, record.owner, record.request_id) == ("batch_1", "alice", "req_b")
    assert record.created_at == CREATED
    assert record.requests == [dataclasses.asdict(q.request) for q in batch.questions]
    assert record.run_ids == ["run_0", "run_1", "run_2"]
    assert record.session_ids == ["sess_0", "sess_1", "sess_2"]
    assert record.checkpoints == {} and record.events == {} and record.done == {}
    assert record.round_records == [] and record.rounds() == []


def test_the_records_head_is_what_progress_needs_and_no_request() -> None:
    record = Record.new(a_batch(), [])
    assert orjson.loads(record.head()) == {
        "batch_id": "batch_1",
        "owner": "alice",
        "created_at": CREATED,
        "run_ids": ["run_0", "run_1"],
    }


def test_the_meta_round_trips_the_requests_with_their_sets() -> None:
    batch = a_batch()
    record = Record.new(batch, [])
    body = orjson.loads(record.meta())
    assert set(body) == {
        "batch_id",
        "owner",
        "request_id",
        "created_at",
        "requests",
        "run_ids",
        "session_ids",
    }
    assert body["requests"][0]["tools"] == ["calculator", "sec_search"]  # sorted
    back = Record.from_meta(record.meta())
    assert back == dataclasses.replace(record, requests=body["requests"])
    assert back.run_requests() == [q.request for q in batch.questions]
    assert back.run_requests()[1].tools == frozenset({"sec_search", "calculator"})


def test_a_meta_with_fields_a_newer_worker_added_is_read() -> None:
    body = orjson.loads(Record.new(a_batch(1), []).meta())
    back = Record.from_meta(orjson.dumps({**body, "added_later": 1}))
    assert back.batch_id == "batch_1" and back.session_ids == ["sess_0"]


def test_a_value_json_cannot_hold_is_named() -> None:
    record = Record.new(a_batch(1), [])
    record.requests[0]["messages"] = [object()]
    with pytest.raises(TypeError) as caught:
        record.meta()
    assert str(caught.value.__cause__) == "cannot record a object"


def test_questions_are_rebuilt_from_their_checkpoints_or_from_nothing() -> None:
    batch = a_batch(2)
    record = Record.new(batch, [])
    state = batch.questions[1].state
    state.turns, state.tool_calls = 2, 5
    state.messages.append({"role": "assistant", "content": [{"type": "text", "text": "a"}]})
    record.checkpoints[1] = durable.encode(batch.questions[1].request, "batch", state, 9)
    [(first_request, first), (second_request, second)] = record.questions()
    assert first_request == batch.questions[0].request
    assert second_request == batch.questions[1].request
    assert (first.run_id, first.session_id, first.messages) == ("run_0", "sess_0", [])
    assert not first.resumed and first.turns == 0
    assert (second.run_id, second.session_id) == ("run_1", "sess_1")
    assert second.resumed and (second.turns, second.tool_calls) == (2, 5)
    assert second.messages == state.messages


def test_kept_events_are_copies_and_none_for_a_question_without() -> None:
    record = Record.new(a_batch(2), [])
    record.events[1] = sse.parse_frames(frames("one", "two"))
    kept = record.kept_events(1)
    assert [e["message"] for e in kept] == ["one", "two"]
    kept[0]["message"] = "changed"
    kept.append({"type": "x"})
    assert [e["message"] for e in record.kept_events(1)] == ["one", "two"]
    assert record.kept_events(0) == []


def test_rounds_are_a_copy() -> None:
    record = Record.new(a_batch(1), [])
    record.round_records = [a_round(1)]
    rounds = record.rounds()
    rounds.append(a_round(2))
    assert record.rounds() == [a_round(1)]


def test_a_round_round_trips_through_json() -> None:
    record = a_round(3, "submitted")
    assert orjson.loads(round_json(record)) == dataclasses.asdict(record)
    assert round_from_json(round_json(record)) == record
    fresh = RoundRecord(1, ["q0-t1-k"])
    assert round_from_json(round_json(fresh)) == fresh


def stored_parts(batch: Batch) -> Parts:
    """A batch's parts as a takeover reads them: questions 0 and 12 checkpointed, 1 done."""
    record = Record.new(batch, [])
    request, state = batch.questions[0].request, batch.questions[0].state
    request12, state12 = batch.questions[12].request, batch.questions[12].state
    return {
        "batch": {"meta": record.meta(), "head": record.head(), "status": b"running"},
        "q": {
            "c0": durable.encode(request, "batch", state, 4),
            "e0": frames("a", "b"),
            "e1": frames("done"),
            "c12": durable.encode(request12, "batch", state12, 7),
        },
        "p": {
            "p0": orjson.dumps({"index": 0}),
            "p1": orjson.dumps({"index": 1}),
            "d1": b"max_turns",
        },
        "r": {str(n): round_json(a_round(n)) for n in (2, 10, 1)},
    }


def test_a_record_is_rebuilt_from_the_stores_parts() -> None:
    batch = a_batch(13)
    record = record_of(stored_parts(batch))
    assert record.batch_id == "batch_1" and record.run_ids[12] == "run_12"
    assert sorted(record.checkpoints) == [0, 12]
    assert durable.decode(record.checkpoints[12]).seq == 7
    assert record.events == {
        0: sse.parse_frames(frames("a", "b")),
        1: sse.parse_frames(frames("done")),
    }
    assert record.done == {1: "max_turns"}
    assert [r.number for r in record.rounds()] == [1, 2, 10]  # by number, not as text
    assert record.rounds()[2] == a_round(10)


def summary_parts(batch: Batch, **record: bytes) -> Parts:
    head = Record.new(batch, []).head()
    progress = {**batch.questions[1].progress(), "state": "done", "outcome": "completed"}
    return {
        "batch": {"head": head, **record},
        "p": {"p1": orjson.dumps(progress), "d1": b"completed"},
        "r": {"3": round_json(a_round(3)), "1": round_json(a_round(1, "submitted"))},
    }


def test_stored_progress_reads_the_summary_parts() -> None:
    batch = a_batch(3)
    stored = Stored.of(summary_parts(batch, status=b"running"))
    assert (stored.batch_id, stored.owner, stored.created_at) == ("batch_1", "alice", CREATED)
    assert stored.state == "running" and not stored.done and stored.summary is None
    assert [r.number for r in stored.rounds] == [1, 3]
    assert stored.questions[1]["outcome"] == "completed"
    for index in (0, 2):
        assert stored.questions[index] == {
            "index": index,
            "run_id": f"run_{index}",
            **QUEUED,
            "usage": events.empty_usage(),
        }
    assert stored.questions[0] == {
        **batch.questions[0].progress(),
        "usage": stored.questions[0]["usage"],
    }
    assert stored.progress() == {
        "batch_id": "batch_1",
        "state": "running",
        "outcome": None,
        "created_at": CREATED,
        **totals_of(stored.questions),
        "rounds": [round_view(r) for r in stored.rounds],
        "questions": stored.questions,
    }
    assert stored.progress()["counts"] == {"queued": 2, "completed": 1}


def test_a_queued_question_reads_as_a_fresh_questions_progress() -> None:
    assert QUEUED == {
        "round": 0,
        "state": "queued",
        "outcome": None,
        "batch_result": None,
        "tool_calls": 0,
        "cost_usd": 0.0,
        "saved_usd": 0.0,
    }


def test_an_ended_batchs_state_and_outcome_are_its_summarys() -> None:
    batch = a_batch(2)
    summary = {"state": "ended", "outcome": "cancelled", "question_count": 2}
    stored = Stored.of(summary_parts(batch, status=b"ended", summary=orjson.dumps(summary)))
    assert stored.summary == summary and stored.state == "ended" and stored.done
    assert stored.progress()["outcome"] == "cancelled"


@pytest.mark.parametrize(
    ("record", "state"),
    [
        ({"status": b"ended"}, "ended"),
        ({}, "running"),
        ({"summary": orjson.dumps({"outcome": "completed"}), "status": b"ended"}, "ended"),
        ({"summary": orjson.dumps({"state": None})}, "running"),
    ],
    ids=["status", "nothing", "summary-without-state", "summary-state-null"],
)
def test_without_a_summarys_state_the_records_status_says(
    record: dict[str, bytes], state: str
) -> None:
    stored = Stored.of(summary_parts(a_batch(2), **record))
    assert stored.state == state and stored.done is (state == "ended")


def test_summary_rounds_sort_by_number() -> None:
    parts = summary_parts(a_batch(2), status=b"running")
    parts["r"] = {str(n): round_json(a_round(n)) for n in (10, 9)}
    assert [r.number for r in Stored.of(parts).rounds] == [9, 10]

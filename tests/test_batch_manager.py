"""The batch manager in this process, against the strict fake Message Batches API over
HTTP: a batch's questions run to their answers through shared rounds, its events, audit,
metrics and end hooks say so; a key sees only its own running batches; a cancel (before
the questions start or mid-round, with or without an error) ends every question once;
finished batches expire; shutdown and a lost lease stop a batch without ending it."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from gateway.batches.batch import Batch
from gateway.batches.calls import RoundRecord
from gateway.batches.journal import KeptJournal
from gateway.batches.manager import BATCH_CALL_DEADLINE_S, NO_RETRY
from gateway.errors import GatewayError
from gateway.http import keys
from tests.batch_manager_support import (
    MODEL,
    MakeHarness,
    ended,
    logged,
    make_harness,
    request,
    run_events,
)

__all__ = ["make_harness"]  # the fixture this module uses

HEX32 = r"[0-9a-f]{32}"
CANCEL_S = 5.0
"""A cancelled batch ends within this, its API batch (30 s of work) or not: a cancel that
does not reach it fails its test rather than hang it."""


async def test_a_batch_answers_each_question_and_says_so(make_harness: MakeHarness) -> None:
    h = await make_harness()
    batch = await h.start(3)
    assert re.fullmatch(f"batch_{HEX32}", batch.id)
    assert (batch.owner, batch.request_id, batch.state) == ("alice", "req_1", "running")
    assert h.manager.get(batch.id) is batch
    await ended(batch)
    assert (batch.state, batch.outcome, batch.done) == ("ended", "completed", True)
    assert batch.finished_at is not None and batch.begun.is_set() and batch.log.closed
    runs = [q.run for q in batch.questions]
    assert all(re.fullmatch(f"run_{HEX32}", run.id) for run in runs)
    assert all(re.fullmatch(f"sess_{HEX32}", run.session_id) for run in runs)
    assert len({run.id for run in runs}) == 3 == len({run.session_id for run in runs})
    assert [run.owner for run in runs] == ["alice"] * 3
    assert [q.state.session_id for q in batch.questions] == [run.session_id for run in runs]
    assert [(q.phase, q.outcome) for q in batch.questions] == [("done", "completed")] * 3
    for index, question in enumerate(batch.questions):
        assert question.state.messages[0] == {"role": "user", "content": f"Question {index}"}
        assert question.provider is not None and question.provider.last_result == "succeeded"
        assert (question.provider.name, question.provider.model) == ("anthropic", MODEL)
        assert run_events(question.run)[-1]["type"] == "final"

    events = logged(batch)
    assert events[0] | {"seq": 0} == {
        "type": "batch_status", "state": "running", "questions": 3, "run_id": batch.id, "seq": 0
    }  # fmt: skip
    questions = [e for e in events if e["type"] == "question"]
    assert len(questions) == 9  # each of its two turns, and its end
    # a turn that called a tool leaves it running tools; the answer's turn waits on the model
    assert [e["state"] for e in questions if e["index"] == 0] == [
        "running_tools", "waiting_model", "done"
    ]  # fmt: skip
    last = events[-1]
    totals = batch.totals()
    assert {k: v for k, v in last.items() if k not in ("run_id", "seq")} == {
        "type": "batch_complete", "batch_id": batch.id, "state": "ended",
        "outcome": "completed", **totals,
    }  # fmt: skip
    assert totals["counts"] == {"completed": 3} and totals["usage"]["input_tokens"] > 0

    # Two rounds of three requests each, named by the batch's key.
    assert len(h.fake.submitted) == 2 and set(h.fake.received.values()) == {1}
    key = batch.id.removeprefix("batch_")
    assert all(re.fullmatch(rf"q\d-t\d-{key}[0-9a-f]{{12}}", cid) for cid in h.fake.received)
    assert h.metric("sdk_batch_rounds_total") == 2
    app_metrics = h.client.app[keys.METRICS].registry  # the questions' runs, as batch runs
    assert app_metrics.get_sample_value("sdk_runs_started_total", {"endpoint": "batch"}) == 3
    assert h.metric("sdk_batches_total", outcome="completed") == 1
    assert h.metric("sdk_batches_total", outcome="cancelled") == 0

    assert h.audit.of("batch_start") == [{"key": "alice", "batch_id": batch.id, "questions": 3}]
    usage = totals["usage"]
    assert h.audit.of("batch_end") == [
        {"key": "alice", "batch_id": batch.id, "outcome": "completed", "questions": 3,
         "counts": {"completed": 3}, "input_tokens": usage["input_tokens"],
         "output_tokens": usage["output_tokens"], "cost_usd": totals["total_cost_usd"],
         "saved_usd": totals["saved_usd"]}
    ]  # fmt: skip
    assert [run for run, _, _ in h.questions_ended] and h.batches_ended == [batch]
    assert sorted(run.id for run, _, _ in h.questions_ended) == sorted(run.id for run in runs)
    for run, used, cost in h.questions_ended:
        [question] = [q for q in batch.questions if q.run is run]
        assert used == question.state.usage and used["output_tokens"] > 0
        assert cost == question.state.cost_usd


async def test_a_priced_batch_counts_what_it_saved(make_harness: MakeHarness) -> None:
    h = await make_harness(model="claude-haiku-4-5", settings={"sdk_model": "claude-haiku-4-5"})
    batch = await ended(await h.start(2, owner="bob"))
    saved = batch.totals()["saved_usd"]
    assert saved > 0 and all(q.saved_usd > 0 for q in batch.questions)
    cost = batch.totals()["total_cost_usd"]
    assert saved == round(cost, 6)  # a batch's calls cost half the live price
    assert h.metric("claude_batch_saved_usd_total", model="claude-haiku-4-5", key="bob") == (saved)
    assert h.audit.of("batch_end")[0]["saved_usd"] == saved
    assert h.audit.of("batch_end")[0]["cost_usd"] == cost > 0
    costs = sorted(cost for _, _, cost in h.questions_ended if cost is not None)
    assert costs == sorted(q.state.cost_usd for q in batch.questions if q.state.cost_usd)
    assert len(costs) == 2


async def test_a_round_may_take_longer_than_a_live_calls_deadline(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(settings={"gateway_upstream_deadline_s": 0.2}, processing_s=0.5)
    batch = await ended(await h.start(1))
    assert [q.outcome for q in batch.questions] == ["completed"]


async def test_a_question_keeps_the_session_its_request_names(make_harness: MakeHarness) -> None:
    h = await make_harness()
    asked = [request("Question 0", session_id="sess_mine"), request("Question 1")]
    batch = h.manager.start("alice", asked, await h.configs(asked), "req_2")
    assert batch.questions[0].run.session_id == "sess_mine"
    assert batch.questions[0].state.session_id == "sess_mine"
    assert batch.questions[1].run.session_id != "sess_mine"
    await ended(batch)


async def test_a_key_sees_only_its_own_running_batches(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    alice, bob = await h.start(1, owner="alice"), await h.start(2, owner="bob")
    assert h.manager.running_of("alice") == [alice]
    assert h.manager.running_of("bob") == [bob]
    assert h.manager.running_of("carol") == []
    assert await h.manager.cancel(alice.id) is True
    assert h.manager.running_of("alice") == []  # cancelling: no longer running
    await ended(alice, CANCEL_S)
    assert h.manager.running_of("alice") == [] and h.manager.running_of("bob") == [bob]


async def test_an_unknown_batch_is_none_and_an_ended_one_is_not_cancelled(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness()
    assert h.manager.get("batch_nope") is None
    assert await h.manager.cancel("batch_nope") is None
    batch = await ended(await h.start(1))
    assert await h.manager.cancel(batch.id) is False
    assert batch.outcome == "completed" and h.audit.of("batch_cancel") == []


async def test_a_cancel_mid_round_cancels_the_api_batch_and_every_question(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness(processing_s=30)
    batch = await h.start(3)
    await h.fake.created.wait()
    [api_batch] = h.fake.submitted
    assert await h.manager.cancel(batch.id) is True
    assert batch.state == "cancelling"
    assert await h.manager.cancel(batch.id) is False  # once
    await ended(batch, CANCEL_S)
    assert h.fake.cancels == [api_batch]
    assert (batch.state, batch.outcome) == ("ended", "cancelled")
    assert [q.outcome for q in batch.questions] == ["cancelled"] * 3
    assert len(h.fake.submitted) == 1
    statuses = [e for e in logged(batch) if e["type"] == "batch_status"]
    assert [(e["state"], e.get("error")) for e in statuses] == [
        ("running", None), ("cancelling", None)
    ]  # fmt: skip
    assert "error" not in statuses[1]
    assert h.audit.of("batch_cancel") == [{"key": "alice", "batch_id": batch.id}]
    assert logged(batch)[-1]["outcome"] == "cancelled"
    assert h.metric("sdk_batches_total", outcome="cancelled") == 1
    assert h.metric("sdk_batches_total", outcome="completed") == 0
    assert h.audit.of("batch_end")[0]["outcome"] == "cancelled"
    assert len(h.questions_ended) == 3 and h.batches_ended == [batch]


async def test_a_revoked_keys_batches_end_with_its_error(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    revoked, other = await h.start(2, owner="alice"), await h.start(1, owner="bob")
    await h.fake.created.wait()
    h.manager.end_key("alice", GatewayError("KEY_REVOKED", "the key was revoked"))
    await ended(revoked, CANCEL_S)
    assert revoked.outcome == "cancelled"
    assert [q.outcome for q in revoked.questions] == ["KEY_REVOKED"] * 2
    for question in revoked.questions:
        last = run_events(question.run)[-1]
        assert (last["type"], last["error"]["code"]) == ("error", "KEY_REVOKED")
    statuses = [e for e in logged(revoked) if e["type"] == "batch_status"]
    assert statuses[-1]["state"] == "cancelling" and statuses[-1]["error"] == "KEY_REVOKED"
    assert h.audit.of("batch_cancel") == [
        {"key": "alice", "batch_id": revoked.id, "error": "KEY_REVOKED"}
    ]
    assert other.state == "running" and h.manager.running_of("bob") == [other]
    assert h.manager._errors == {}  # nothing kept of an ended batch


async def test_a_batch_cancelled_before_it_began_sends_no_round(make_harness: MakeHarness) -> None:
    h = await make_harness()
    batch = await h.start(2)
    assert await h.manager.cancel(batch.id) is True  # before its task's first step
    await ended(batch)
    assert h.fake.submitted == {} and not h.fake.received
    assert batch.outcome == "cancelled"
    assert [q.outcome for q in batch.questions] == ["cancelled"] * 2
    assert [run_events(q.run)[-1]["type"] for q in batch.questions] == ["final"] * 2


async def test_a_batch_revoked_before_it_began_ends_with_the_error(
    make_harness: MakeHarness,
) -> None:
    h = await make_harness()
    batch = await h.start(2)
    revoked = GatewayError("KEY_REVOKED", "the key was revoked")
    assert await h.manager.cancel(batch.id, revoked) is True  # before its task's first step
    await ended(batch)
    assert h.fake.submitted == {} and not h.fake.received
    assert [q.outcome for q in batch.questions] == ["KEY_REVOKED"] * 2
    assert h.manager._errors == {}


async def test_a_control_message_cancels_a_batch_driven_here(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    batch = await h.start(1)
    await h.fake.created.wait()
    h.manager.on_control("renew", batch.id)  # not a cancel
    h.manager.on_control("cancel", "batch_elsewhere")  # not driven here
    await asyncio.sleep(0.05)
    assert batch.state == "running"
    assert h.manager._controls == set()
    h.manager.on_control("cancel", batch.id)
    [control] = h.manager._controls  # the cancel's task is held while it runs
    await ended(batch, CANCEL_S)
    await control
    await asyncio.sleep(0)
    assert h.manager._controls == set()  # and let go once done
    assert batch.outcome == "cancelled" and len(h.fake.cancels) == 1


async def test_a_finished_batch_expires_after_its_ttl(make_harness: MakeHarness) -> None:
    h = await make_harness(ttl_s=0.3, processing_s=0.6)
    slow = await h.start(1)
    done = await h.start(1)
    done.stop()  # fake a batch that finished long ago, and one that just did
    await asyncio.sleep(0)
    with_time = await h.start(1)
    await h.fake.created.wait()
    with_time.finished_at = 0.0
    done.finished_at = asyncio.get_running_loop().time() + 3600  # just now, by any clock
    assert h.manager.get(with_time.id) is None  # finished long ago: gone
    assert h.manager.get(done.id) is done  # finished now: kept for its ttl
    assert h.manager.get(slow.id) is slow  # running: kept whatever its age
    await ended(slow)
    assert h.manager.get(slow.id) is slow
    await asyncio.sleep(0.4)
    assert h.manager.get(slow.id) is None


async def test_shutdown_stops_a_batch_without_ending_it(make_harness: MakeHarness) -> None:
    released: list[str] = []

    class Releasing(KeptJournal):
        async def release(self, batch_id: str) -> None:
            released.append(batch_id)

    journal = Releasing()
    h = await make_harness(journal=journal, processing_s=30)
    gone = await h.start(1)
    await h.manager.cancel(gone.id)  # ended before the shutdown: nothing to release
    await ended(gone)
    h.batches_ended.clear()
    h.questions_ended.clear()
    batch = await h.start(2)
    await h.fake.created.wait()
    await h.manager.shutdown()
    assert released == [batch.id]
    assert batch.stopping and batch.state == "running" and batch.outcome is None
    assert batch.task is not None and batch.task.cancelled()
    assert batch.log.closed and logged(batch)[-1]["type"] != "batch_complete"
    assert h.questions_ended == [] and h.batches_ended == []  # not their outcome
    assert journal.records[batch.id].done == {} and batch.id not in journal.ended
    assert h.fake.cancels == []  # the API batch goes on, for whoever takes the batch
    asked = sum(h.fake.calls.values())
    await asyncio.sleep(0.1)  # five polls' time
    assert sum(h.fake.calls.values()) == asked  # its round no longer polls from here
    assert h.metric("sdk_batches_total", outcome="completed") == 0


async def test_a_lost_batch_is_stopped_and_forgotten_here(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    batch, other = await h.start(1), await h.start(1)
    await h.fake.created.wait()
    h.manager.lost(batch.id)
    h.manager.lost("batch_unknown")
    assert h.manager.get(batch.id) is None and batch.stopping
    assert batch.task is not None
    with_error: Any = await asyncio.gather(batch.task, return_exceptions=True)
    assert isinstance(with_error[0], asyncio.CancelledError)
    assert h.batches_ended == [] and h.questions_ended == []
    assert other.state == "running" and not other.stopping


async def test_a_round_note_is_a_batch_status(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    batch = await h.start(1)
    await h.fake.created.wait()
    assert batch.rounds is not None and batch.rounds._skew_s == 7.0
    assert batch.rounds._key == batch.id.removeprefix("batch_")
    batch.rounds.on_note(RoundRecord(1, ["q0-t1-x"], note="the lookup failed"))
    status = logged(batch)[-1]
    assert (status["type"], status["state"], status["round"], status["note"]) == (
        "batch_status", "running", 1, "the lookup failed"
    )  # fmt: skip


def test_a_questions_call_is_never_retried_and_waits_out_the_api() -> None:
    assert NO_RETRY.max_retries == 0
    assert NO_RETRY.call_deadline_s == BATCH_CALL_DEADLINE_S == 25 * 3600  # over the API's 24 h


async def until_round(batch: Batch, number: int) -> None:
    async with asyncio.timeout(20):
        while True:
            rounds = [] if batch.rounds is None else batch.rounds.rounds
            if len(rounds) >= number and rounds[number - 1].state == "submitted":
                return
            await asyncio.sleep(0.01)


async def test_a_batch_stopped_mid_round_goes_on_from_its_journal(
    make_harness: MakeHarness,
) -> None:
    journal = KeptJournal()
    h = await make_harness(journal=journal, processing_s=0.3)
    first = await h.start(2)
    await until_round(first, 2)
    journal.stop()  # the worker dies: nothing more is written
    await h.manager.shutdown()
    record = journal.records[first.id]
    assert set(record.checkpoints) == {0, 1} and not record.done
    assert [r.state for r in record.rounds()] == ["ended", "submitted"]

    successor = h.successor(KeptJournal())
    batch = successor.resume(record, await h.configs(record.run_requests()))
    assert successor.get(first.id) is batch and batch is not first
    assert (batch.id, batch.owner, batch.request_id, batch.created_at) == (
        first.id, "alice", "req_1", first.created_at
    )  # fmt: skip
    assert [q.run.id for q in batch.questions] == [q.run.id for q in first.questions]
    assert [q.run.session_id for q in batch.questions] == record.session_ids
    assert batch.log.run_id == first.id
    for question in batch.questions:  # the events up to its checkpoint, before any new one
        assert run_events(question.run) == record.kept_events(question.index)
    await ended(batch)
    assert batch.outcome == "completed"
    assert [q.outcome for q in batch.questions] == ["completed"] * 2
    assert set(h.fake.received.values()) == {1}  # the round in flight was not sent again
    assert len(h.fake.submitted) == 2
    assert [r.number for r in batch.rounds.rounds] == [1, 2]  # type: ignore[union-attr]
    assert h.batches_ended == [batch]
    for question in batch.questions:
        kinds = [e["type"] for e in run_events(question.run)]
        assert kinds.count("system_info") == 1 and kinds[-1] == "final"


async def test_a_resumed_batch_drives_only_its_unfinished_questions(
    make_harness: MakeHarness,
) -> None:
    journal = KeptJournal()
    h = await make_harness(journal=journal, processing_s=0.5)
    first = await h.start(2)
    await until_round(first, 1)
    journal.stop()
    await h.manager.shutdown()
    record = journal.records[first.id]
    record.done[0] = "expired"  # as if question 0 had ended before the worker stopped
    record.events[0] = [{"type": "system_info", "seq": 1}]
    kept = KeptJournal()
    successor = h.successor(kept)
    batch = successor.resume(record, await h.configs(record.run_requests()))
    done, going = batch.questions
    assert (done.phase, done.outcome, done.run.log.closed) == ("done", "expired", True)
    assert going.phase == "queued" and not going.run.log.closed
    await ended(batch)
    assert done.outcome == "expired" and going.outcome == "completed"
    assert run_events(done.run) == [{"type": "system_info", "seq": 1, "run_id": done.run.id}]
    assert [e["index"] for e in logged(batch) if e["type"] == "question"] == [1, 1, 1]
    assert logged(batch)[0]["questions"] == 2
    assert batch.totals()["counts"] == {"expired": 1, "completed": 1}
    assert kept.records[batch.id].done == {0: "expired", 1: "completed"}
    assert batch.id in kept.ended
    assert len(h.questions_ended) == 1


async def test_a_journal_holds_each_questions_turns_and_end(make_harness: MakeHarness) -> None:
    journal = KeptJournal()
    h = await make_harness(journal=journal)
    batch = await ended(await h.start(2))
    record = journal.records[batch.id]
    assert record.done == {0: "completed", 1: "completed"} and batch.id in journal.ended
    assert [r.state for r in record.rounds()] == ["ended", "ended"]
    for question in batch.questions:
        assert record.kept_events(question.index) == run_events(question.run)


async def test_a_batch_revoked_then_shut_down_keeps_no_error(make_harness: MakeHarness) -> None:
    h = await make_harness(processing_s=30)
    batch = await h.start(2)
    await h.fake.created.wait()
    await h.manager.cancel(batch.id, GatewayError("KEY_REVOKED", "the key was revoked"))
    await h.manager.shutdown()  # before the questions' ends are in
    assert batch.task is not None and batch.task.cancelled()
    assert h.manager._errors == {}


async def test_a_questions_log_keeps_the_last_events_it_may(make_harness: MakeHarness) -> None:
    h = await make_harness(max_events=5)
    batch = await ended(await h.start(1))
    [q] = batch.questions
    assert q.run.log.max_events == 5
    events = run_events(q.run)
    assert events[-1]["type"] == "final" and events[0]["seq"] > 1  # the first ones dropped

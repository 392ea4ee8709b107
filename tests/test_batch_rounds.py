"""The rounds of a batch against the strict fake Message Batches API, through the real SDK
client and `BatchesAPI`: a round whose create was never answered is found (only) by its
own custom_ids, a failing lookup or read is tried again and never paid twice, a refused
create is not retried, a failing cancel says so, and the per-type counts are journaled."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import anthropic
import pytest
from pytest_aiohttp import AiohttpServer

from gateway.batches.api import BACKOFF_MAX_S, RESULTS_KEPT, BatchesAPI
from gateway.batches.calls import RoundRecord, custom_ids, missing, stem
from gateway.batches.lookup import find
from gateway.batches.rounds import CANCEL_TRIES, CREATE_TRIES, Rounds
from gateway.errors import UpstreamFailure
from tests.fakes.anthropic import Reply, Text
from tests.fakes.batches import BatchRequest, FakeBatches

MODEL = "claude-test-model"
ALICE, BOB = "a" * 32, "b" * 32
SKEW_S = 1.0  # the fake validates a create's body in up to a second the first time
Serve = Callable[[FakeBatches], Awaitable[BatchesAPI]]


def params(text: str) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 100, "messages": [{"role": "user", "content": text}]}


def script(request: BatchRequest) -> Reply:
    return Reply([Text(f"Answer to: {request.params['messages'][0]['content']}")])


def text(result: dict[str, Any]) -> str:
    assert result["result"]["type"] == "succeeded", result
    return str(result["result"]["message"]["content"][0]["text"])


class Journal:
    """What the rounds journal, each write as it was then."""

    def __init__(self) -> None:
        self.written: list[RoundRecord] = []
        self.notes: list[str | None] = []

    async def __call__(self, record: RoundRecord) -> None:
        self.written.append(dataclasses.replace(record, results=dict(record.results)))

    def note(self, record: RoundRecord) -> None:
        self.notes.append(record.note)

    @property
    def states(self) -> list[str]:
        return [r.state for r in self.written]


class Waits(list[float]):
    """The waits `BatchesAPI` and the rounds ask for, recorded (and kept short)."""

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        await asyncio.sleep(min(seconds, 0.01))


@pytest.fixture
async def serve(aiohttp_server: AiohttpServer) -> AsyncIterator[Serve]:
    clients: list[anthropic.AsyncAnthropic] = []

    async def start(fake: FakeBatches) -> BatchesAPI:
        server = await aiohttp_server(fake.app())
        url = str(server.make_url("")).rstrip("/")
        clients.append(anthropic.AsyncAnthropic(api_key="test", base_url=url, max_retries=0))
        return BatchesAPI(clients[-1], poll_s=0.01, create_timeout_s=1.0)

    yield start
    for client in clients:
        await client.close()


def rounds_of(
    api: BatchesAPI,
    journal: Journal,
    key: str,
    recorded: list[RoundRecord] | None = None,
    members: int = 1,
) -> Rounds:
    return Rounds(
        api, members, journal, recorded or [], key=key, on_note=journal.note, skew_s=SKEW_S
    )


def journaled(key: str, question: str) -> RoundRecord:
    """Round 1 of a one-question batch, journaled `submitting` by a worker that stopped."""
    return RoundRecord(1, custom_ids(key, {stem(0, 1): (params(question), ())}))


def test_custom_ids_carry_the_batch_and_the_requests_within_the_api_pattern() -> None:
    last = stem(99_999, 100)  # the most questions and turns a batch may have
    [cid] = custom_ids(ALICE, {last: (params("x"), ())})
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid) and cid.startswith(f"{last}-{ALICE}")
    other = [
        custom_ids(BOB, {last: (params("x"), ())}),
        custom_ids(ALICE, {last: (params("y"), ())}),
        custom_ids(ALICE, {last: (params("x"), ("beta-1",))}),
    ]
    assert len({cid, *(ids[0] for ids in other)}) == 4
    assert custom_ids(ALICE, {last: (params("x"), ())}) == [cid]  # the same on every worker


async def test_a_taken_over_round_never_takes_another_keys_answer(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    alices = journaled(ALICE, "alice's question")  # her worker died before `create`
    bob = rounds_of(api, Journal(), BOB)  # bob's batch of the same shape goes out after
    assert text(await bob.call(stem(0, 1), params("bob's private question"), ())) == (
        "Answer to: bob's private question"
    )
    two = [{"custom_id": f"two-{i}", "params": params("x")} for i in range(2)]
    other_size = await api.create(two, ())
    journal = Journal()
    taken = rounds_of(api, journal, ALICE, [alices])
    answer = await taken.call(stem(0, 1), params("alice's question"), ())
    assert text(answer) == "Answer to: alice's question"
    assert fake.received[alices.custom_ids[0]] == 1  # her call, sent once it was not found
    assert journal.states == ["not_created", "submitting", "submitted", "ended"]
    assert len(fake.submitted) == 3
    bobs = next(iter(fake.submitted))
    assert fake.reads[bobs] >= 2 and fake.reads[other_size] == 0  # bob's: his, then a look


async def test_a_failing_lookup_waits_and_says_so_never_paying_twice(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    record = journaled(ALICE, "q")
    made = await api.create([{"custom_id": record.custom_ids[0], "params": params("q")}], ())
    fake.fail("list", 529, times=3)
    journal = Journal()
    api.sleep = waits = Waits()
    answer = await rounds_of(api, journal, ALICE, [record]).call(stem(0, 1), params("q"), ())
    assert waits[:3] == [0.01, 0.02, 0.04]  # backing off, never a second create
    assert text(answer) == "Answer to: q"
    assert list(fake.submitted) == [made] and fake.calls["create"] == 1
    assert fake.calls["list"] == 4
    assert len(journal.notes) == 4 and journal.notes[-1] is None
    assert all("looking for its Message Batch failed" in str(n) for n in journal.notes[:3])
    assert journal.written[0].note == journal.notes[0]  # the progress says so too
    assert journal.written[-1].state == "ended" and journal.written[-1].api_batch_id == made


async def test_paid_results_are_read_until_read(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.fail("retrieve", 503, times=6)
    fake.fail("results", 529, times=7)
    journal = Journal()
    answer = await rounds_of(api, journal, ALICE).call(stem(0, 1), params("q"), ())
    assert text(answer) == "Answer to: q"
    assert fake.calls["results"] == 8 and fake.calls["create"] == 1
    assert journal.written[-1].results == {"succeeded": 1}


async def test_a_lookup_does_not_wait_for_a_stranger_in_progress(serve: Serve) -> None:
    fake = FakeBatches(script, processing_s=30)
    api = await serve(fake)
    stranger = await api.create([{"custom_id": "other-0", "params": params("x")}], ())
    fake.processing_s = 0
    two = [{"custom_id": f"two-{i}", "params": params("x")} for i in range(2)]
    other_size = await api.create(two, ())
    await api.wait(other_size)
    record = journaled(ALICE, "q")
    made = await api.create([{"custom_id": record.custom_ids[0], "params": params("q")}], ())
    answer = await rounds_of(api, Journal(), ALICE, [record]).call(stem(0, 1), params("q"), ())
    assert text(answer) == "Answer to: q"
    batch = fake.batch(stranger)
    assert batch is not None and batch.ended_at is None  # still in progress: not waited on
    assert list(fake.submitted) == [stranger, other_size, made]
    assert fake.calls["results"] == 2  # ours, looked up then read: not the other size's


async def test_a_refused_create_is_not_tried_again(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.fail("create", 400)
    journal = Journal()
    with pytest.raises(UpstreamFailure) as caught:
        await rounds_of(api, journal, ALICE).call(stem(0, 1), params("q"), ())
    assert "creating a Message Batch" in caught.value.message
    assert fake.calls["create"] == 1 and not fake.submitted
    assert journal.states == ["submitting", "failed"]


async def test_an_overloaded_create_is_tried_again(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    api.sleep = waits = Waits()
    fake.fail("create", 529)
    answer = await rounds_of(api, Journal(), ALICE).call(stem(0, 1), params("q"), ())
    assert text(answer) == "Answer to: q"
    assert fake.calls["create"] == 2 and len(fake.submitted) == 1
    assert fake.calls["list"] == 0  # an answered 529 created nothing: no lookup
    assert waits[0] == 2.0


async def test_a_create_overloaded_three_times_fails_its_round(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    api.sleep = waits = Waits()
    fake.fail("create", 529, times=3)
    journal = Journal()
    with pytest.raises(UpstreamFailure) as caught:
        await rounds_of(api, journal, ALICE).call(stem(0, 1), params("q"), ())
    assert caught.value.code == "OVERLOADED_ERROR" and fake.calls["create"] == CREATE_TRIES
    assert waits == [2.0, 4.0] and journal.states == ["submitting", "failed"]


async def test_reads_back_off_doubling_up_to_a_minute(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    api = await serve(FakeBatches(script))
    api.sleep = waits = Waits()
    busy = UpstreamFailure("OVERLOADED_ERROR", "busy", retryable=True)
    for failed in (1, 2, 3, 13, 14):
        await api.backoff(busy, failed)
    await api.backoff(
        UpstreamFailure("RATE_LIMIT_ERROR", "later", retryable=True, retry_after_s=7.0), 1
    )
    assert waits == [0.01, 0.02, 0.04, 40.96, BACKOFF_MAX_S, 7.0]
    assert "batches: busy; trying again in 41.0 s" in [r.getMessage() for r in caplog.records]
    refused = UpstreamFailure("VALIDATION_ERROR", "no")
    with pytest.raises(UpstreamFailure):
        await api.backoff(refused, 1)
    assert len(waits) == 6


async def test_results_are_given_up_only_past_the_apis_retention(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    made = await api.create([{"custom_id": "a-0", "params": params("q")}], ())
    ended_at = await api.wait(made)
    api.sleep = waits = Waits()
    fake.fail("results", 529, times=3)
    assert list(await api.results(made, ended_at)) == ["a-0"]
    assert waits == [0.01, 0.02, 0.04]  # backing off, doubling
    fake.fail("results", 529)
    with pytest.raises(UpstreamFailure) as failed:
        await api.results(made, ended_at - RESULTS_KEPT - timedelta(seconds=1))
    assert failed.value.message.startswith("Upstream failed reading a Message Batch's results")
    assert fake.calls["results"] == 5


async def test_a_round_waits_for_every_question_that_has_not_left(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    rounds = rounds_of(api, Journal(), ALICE, members=4)
    calls = [asyncio.create_task(rounds.call(stem(i, 1), params(f"q{i}"), ())) for i in (0, 1)]
    rounds.leave()  # question 3 finished: questions 0 and 1 still wait for question 2
    await asyncio.sleep(0.05)
    assert rounds.rounds == [] and not fake.submitted
    rounds.leave()  # question 2 finished too
    answers = await asyncio.gather(*calls)
    assert [text(a) for a in answers] == ["Answer to: q0", "Answer to: q1"]
    assert len(rounds.rounds) == 1 and len(rounds.rounds[0].custom_ids) == 2


async def test_a_cancelled_batch_forms_no_round(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    rounds = rounds_of(api, Journal(), ALICE, members=2)
    first = asyncio.create_task(rounds.call(stem(0, 1), params("q0"), ()))
    await asyncio.sleep(0.01)
    await rounds.cancel()
    second = asyncio.create_task(rounds.call(stem(1, 1), params("q1"), ()))
    await asyncio.sleep(0.05)
    assert rounds.rounds == [] and not fake.submitted
    for task in (first, second):
        task.cancel()
    await asyncio.gather(first, second, return_exceptions=True)
    await rounds.close()


async def test_a_closed_rounds_stops_reading(serve: Serve) -> None:
    fake = FakeBatches(script, processing_s=30)
    api = await serve(fake)
    rounds = rounds_of(api, Journal(), ALICE)
    call = asyncio.create_task(rounds.call(stem(0, 1), params("q"), ()))
    async with asyncio.timeout(10):
        while fake.calls["retrieve"] < 2:  # polling the round
            await asyncio.sleep(0.01)
    await rounds.close()
    polled = fake.calls["retrieve"]
    await asyncio.sleep(0.1)
    assert fake.calls["retrieve"] == polled  # no poll after close
    assert not call.done()
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)


@pytest.mark.parametrize("created", [True, False], ids=["created", "never-created"])
async def test_an_unanswered_create_is_looked_up_before_any_other(
    serve: Serve, created: bool
) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.stall("create", 3.0, created=created)  # longer than the client's 1 s
    journal = Journal()
    answer = await rounds_of(api, journal, ALICE).call(stem(0, 1), params("q"), ())
    assert text(answer) == "Answer to: q"
    assert len(fake.submitted) == 1 and set(fake.received.values()) == {1}
    assert fake.calls["create"] == (1 if created else 2)
    assert fake.calls["list"] >= 1
    # A create goes out near its journal entry: the second one after a fresh entry.
    stamps = [r.submitted_at for r in journal.written if r.state == "submitting"]
    assert len(stamps) == (1 if created else 2) and stamps == sorted(set(stamps))


async def test_a_failing_cancel_is_tried_again_then_said(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeBatches(script, processing_s=30)
    api = await serve(fake)
    api.sleep = waits = Waits()
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE)
    call = asyncio.create_task(rounds.call(stem(0, 1), params("q"), ()))
    async with asyncio.timeout(10):
        while not rounds.in_flight or rounds.in_flight[0].api_batch_id is None:
            await asyncio.sleep(0.01)
    fake.fail("cancel", 500, times=CANCEL_TRIES)
    waits.clear()
    await rounds.cancel()
    assert fake.calls["cancel"] == CANCEL_TRIES and not fake.cancels
    assert "cancelling it failed" in str(journal.notes[-1])
    assert "Upstream failed cancelling a Message Batch" in str(journal.written[-1].note)
    made = rounds.rounds[0].api_batch_id
    said = f"batches: cannot cancel {made} (Upstream failed cancelling a Message Batch: "
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        said + "fake: cancel failed)"
    ]
    assert 0.02 in waits  # the second wait between the three tries (the round polls too)
    fake.fail("cancel", 529)
    waits.clear()
    await rounds.cancel()
    assert fake.cancels == [rounds.rounds[0].api_batch_id]
    assert (await call)["result"]["type"] == "canceled"  # the API's side of the cancel
    await rounds.close()


async def test_each_result_type_is_counted_in_the_journal(serve: Serve) -> None:
    fake = FakeBatches(script, expire={"q1-t1"}, error={"q2-t1"})
    api = await serve(fake)
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE, members=4)
    answers = await asyncio.gather(
        *(rounds.call(stem(i, 1), params(f"q{i}"), ()) for i in range(4))
    )
    kinds = [a["result"]["type"] for a in answers]
    assert kinds == ["succeeded", "expired", "errored", "succeeded"]
    assert journal.written[-1].results == {"succeeded": 2, "expired": 1, "errored": 1}
    assert text(answers[0]) == "Answer to: q0"


async def test_a_result_the_batch_lacks_is_an_errored_one(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    other = await api.create([{"custom_id": "other-0", "params": params("x")}], ())
    record = journaled(ALICE, "q")
    record.api_batch_id, record.state = other, "submitted"
    answer = await rounds_of(api, Journal(), ALICE, [record]).call(stem(0, 1), params("q"), ())
    cid = record.custom_ids[0]
    error = {"type": "api_error", "message": f"The Message Batch has no result for {cid}"}
    expected = {
        "custom_id": cid,
        "result": {"type": "errored", "error": {"type": "error", "error": error}},
    }
    assert answer == expected == missing(cid)


@pytest.mark.parametrize("stopped", [True, False])
async def test_a_stopped_batch_forms_no_round_as_its_questions_leave(
    serve: Serve, stopped: bool
) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE, members=3)
    waiting = [asyncio.create_task(rounds.call(stem(i, 1), params("q"), ())) for i in (1, 2)]
    await asyncio.sleep(0.01)  # questions 1 and 2 wait at the barrier, 0 runs its tools
    if stopped:
        rounds.stop()  # the worker lost the batch: its questions are cancelled one by one
    rounds.leave()  # question 0, cancelled in its tools, leaves before the others
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    await asyncio.sleep(0.05)
    await rounds.close()
    assert len(rounds.rounds) == (0 if stopped else 1)  # unstopped, the barrier was met
    assert fake.calls["create"] == 0 or not stopped


async def test_a_look_lists_the_window_only_and_a_bounded_number_of_pages(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    api.create_timeout_s = 10.0  # five creates in a row on a loaded machine
    before = datetime.now(UTC)
    made = [
        await api.create([{"custom_id": f"b-{i}", "params": params("x")}], ()) for i in range(5)
    ]
    after = datetime.now(UTC)
    api.page_size, api.pages = 2, 3
    assert [b.id for b in await api.listed(before, after)] == made[::-1]  # newest first
    assert {b.requests for b in await api.listed(before, after)} == {1}
    assert await api.listed(after, after + timedelta(seconds=1)) == []  # created before
    assert await api.listed(before - timedelta(seconds=1), before) == []  # created after
    api.pages = 2  # five batches in the window: a third page is needed
    with pytest.raises(UpstreamFailure) as caught:
        await api.listed(before, after)
    assert caught.value.retryable and "more than 2 pages" in caught.value.message
    api.page_size = 5
    assert len(await api.listed(before, after)) == 5
    assert all(before <= b.created_at <= after for b in await api.listed(before, after))
    api.page_size, api.pages = 1, 2  # a page of an older batch ends the look at once
    assert await api.listed(after, after + timedelta(seconds=1)) == []
    fake.fail("list", 500)
    with pytest.raises(UpstreamFailure) as failed:
        await api.listed(before, after)
    assert failed.value.message.startswith("Upstream failed listing Message Batches: ")


async def test_a_look_reads_no_batch_of_the_batchs_other_rounds(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    first = journaled(ALICE, "q")
    first.api_batch_id = await api.create(
        [{"custom_id": first.custom_ids[0], "params": params("q")}], ()
    )
    first.state = "ended"
    second = RoundRecord(2, custom_ids(ALICE, {stem(0, 2): (params("again"), ())}))
    rounds = rounds_of(api, Journal(), ALICE, [first, second])
    answer = await rounds.call(stem(0, 2), params("again"), ())
    assert text(answer) == "Answer to: again"  # sent once a look found it never was
    assert fake.reads[first.api_batch_id] == 0  # round 1's batch: not looked into


async def test_a_look_waits_for_its_window_at_most_a_minute_at_a_time(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    api.sleep = waits = Waits()
    look = asyncio.create_task(find(api, ["x-1"], datetime.now(UTC), skew_s=300))
    async with asyncio.timeout(10):
        while not waits:
            await asyncio.sleep(0.01)
    look.cancel()
    await asyncio.gather(look, return_exceptions=True)
    assert waits[0] == 60.0 and fake.calls["list"] >= 1


async def test_a_listed_batch_counts_every_request_whatever_its_result(serve: Serve) -> None:
    fake = FakeBatches(script, expire={"m-1"}, error={"m-2"})
    api = await serve(fake)
    api.create_timeout_s = 10.0
    before = datetime.now(UTC)
    mixed = [{"custom_id": f"m-{i}", "params": params("x")} for i in range(4)]
    made = await api.create(mixed, ())
    await api.wait(made)
    fake.processing_s = 30
    cancelled = await api.create(mixed[:3], ())
    batch = fake.batch(cancelled)
    assert batch is not None and batch.task is not None
    fake.store.cancel(batch)
    await batch.task
    listed = await api.listed(before, datetime.now(UTC))
    assert {b.id: b.requests for b in listed} == {made: 4, cancelled: 3}

"""More rounds against the strict fake Message Batches API (the real SDK client and
`BatchesAPI`, as in `test_batch_rounds.py`): what mutation testing found unpinned there."""

from __future__ import annotations

import asyncio
import re
import socket
from datetime import datetime, timedelta

import anthropic
import pytest
from pytest_aiohttp import AiohttpServer

from gateway.batches.api import BatchesAPI
from gateway.batches.calls import RoundRecord, custom_ids, stem
from gateway.batches.rounds import Rounds
from gateway.errors import UpstreamFailure
from tests.fakes.batches import FakeBatches
from tests.fakes.current_models import BINDING_BETA, DISPLAY_BETA
from tests.test_batch_rounds import (
    ALICE,
    Journal,
    Serve,
    Waits,
    params,
    rounds_of,
    script,
    text,
)
from tests.test_batch_rounds import serve as serve  # the fixture


async def test_a_batch_cancelled_while_its_create_is_unanswered_is_cancelled_once_found(
    serve: Serve,
) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.stall("create", 3.0, created=True)  # created, but the client gives up after 1 s
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE)
    call = asyncio.create_task(rounds.call(stem(0, 1), params("q"), ()))
    async with asyncio.timeout(10):
        await fake.created.wait()
    assert rounds.in_flight[0].api_batch_id is None  # nothing to cancel yet
    await rounds.cancel()
    assert fake.calls["cancel"] == 0
    async with asyncio.timeout(10):
        answer = await call
    # Found (a look confirms a batch once it has ended), then cancelled: too late here,
    # and the API refuses; the round says so and its paid result is still used.
    made = rounds.rounds[0].api_batch_id
    assert made is not None and fake.calls["create"] == 1 and fake.calls["cancel"] == 1
    assert fake.cancels == [] and text(answer) == "Answer to: q"
    assert journal.notes == [
        f"cancelling it failed (Upstream failed cancelling a Message "
        f"Batch: Message Batch {made} has already ended and cannot be canceled.)"
    ]
    assert journal.written[-1].state == "ended"
    await rounds.close()


async def test_a_rounds_create_carries_every_beta_its_calls_need(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    rounds = rounds_of(api, Journal(), ALICE, members=3)
    answers = await asyncio.gather(
        rounds.call(stem(0, 1), params("q0"), (DISPLAY_BETA,)),
        rounds.call(stem(1, 1), params("q1"), (BINDING_BETA, DISPLAY_BETA)),
        rounds.call(stem(2, 1), params("q2"), ()),
    )
    assert [text(a) for a in answers] == ["Answer to: q0", "Answer to: q1", "Answer to: q2"]
    [requests] = fake.submitted.values()  # one create: its header applies to every request
    assert {r.betas for r in requests} == {frozenset({DISPLAY_BETA, BINDING_BETA})}
    await rounds.close()


@pytest.mark.parametrize(("skew_s", "entries"), [(3.0, 2), (5.0, 1)], ids=["past", "within"])
async def test_a_create_tried_again_is_journaled_again_past_half_the_skew(
    serve: Serve, skew_s: float, entries: int
) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.fail("create", 529)  # answered: nothing created, tried again after 2 s
    journal = Journal()
    rounds = Rounds(api, 1, journal, key=ALICE, skew_s=skew_s)

    async def aging(seconds: float) -> None:
        """The wait, as the round's journal entry sees it: that much older."""
        for record in rounds.rounds:
            if record.state == "submitting":
                then = datetime.fromisoformat(record.submitted_at) - timedelta(seconds=seconds)
                record.submitted_at = then.isoformat()
        await asyncio.sleep(0)

    api.sleep = aging
    assert text(await rounds.call(stem(0, 1), params("q"), ())) == "Answer to: q"
    assert fake.calls["create"] == 2 and len(fake.submitted) == 1
    stamps = [r.submitted_at for r in journal.written if r.state == "submitting"]
    assert len(stamps) == entries and stamps == sorted(stamps)  # 2 s: over 1.5, under 2.5
    assert all(datetime.fromisoformat(s).utcoffset() == timedelta(0) for s in stamps)
    await rounds.close()


async def test_a_taken_over_round_is_looked_up_and_read_once_for_all_its_questions(
    serve: Serve,
) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    no_betas: tuple[str, ...] = ()
    calls = {stem(i, 1): (params(f"q{i}"), no_betas) for i in range(2)}
    record = RoundRecord(1, custom_ids(ALICE, calls))  # journaled, its create unanswered
    made = await api.create(
        [{"custom_id": c, "params": params(f"q{i}")} for i, c in enumerate(record.custom_ids)],
        (),
    )
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE, [record], members=2)
    answers = await asyncio.gather(
        *(rounds.call(name, params_, ()) for name, (params_, _) in calls.items())
    )
    assert [text(a) for a in answers] == ["Answer to: q0", "Answer to: q1"]
    assert fake.calls["list"] == 1 and fake.reads[made] == 2  # the look's read, the round's
    assert journal.states == ["submitted", "ended"] and fake.calls["create"] == 1
    assert journal.written[0].api_batch_id == made
    await rounds.close()


class PollWaits(list[float]):
    """The waits asked for, recorded; the read after the third wait (a poll, after two
    failed reads) fails once."""

    def __init__(self, fake: FakeBatches) -> None:
        super().__init__()
        self.fake = fake

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        if len(self) == 3:
            self.fake.fail("retrieve", 529)
        await asyncio.sleep(min(seconds, 0.01))


async def test_an_ended_batch_is_waited_for_through_failed_reads(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """Failed reads back off (doubling from the poll interval), a read that answers
    starts the count again, and the batch's own end time comes back."""
    fake = FakeBatches(script, processing_s=0.3)
    api = await serve(fake)
    made = await api.create([{"custom_id": "a-0", "params": params("q")}], ())
    api.poll_s = 0.2
    api.sleep = waits = PollWaits(fake)
    fake.fail("retrieve", 529, times=2)
    ended_at = await api.wait(made)
    assert waits[:4] == [0.2, 0.4, 0.2, 0.2]  # two failures; a poll; one failure again
    assert fake.calls["retrieve"] >= 5
    said = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
    assert len(said) == 3 and all(
        s.startswith("batches: Upstream failed reading a Message Batch: ") for s in said
    )
    kept = await api._batches.retrieve(made)
    assert kept.ended_at is not None and ended_at == kept.ended_at


async def test_rounds_are_numbered_and_leave_no_task_behind(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    journal = Journal()
    rounds = rounds_of(api, journal, ALICE)
    assert text(await rounds.call(stem(0, 1), params("q"), ())) == "Answer to: q"
    assert text(await rounds.call(stem(0, 2), params("q2"), ())) == "Answer to: q2"
    assert [r.number for r in rounds.rounds] == [1, 2]
    assert sorted({r.number for r in journal.written}) == [1, 2]
    await asyncio.sleep(0)
    assert not rounds._tasks  # each round's task let go when it finished
    await rounds.close()


def test_a_custom_id_is_its_stem_the_batch_key_and_twelve_hex_digits() -> None:
    (one,) = custom_ids(ALICE, {stem(3, 2): (params("q"), ())})
    assert re.fullmatch(r"q3-t2-a{32}[0-9a-f]{12}", one), one


async def test_a_call_cancelled_before_its_round_is_not_sent(serve: Serve) -> None:
    """Its question left (cancelled while the round waited for the others): the round
    goes out with the others' calls only, nothing paid for an answer nobody reads."""
    fake = FakeBatches(script)
    api = await serve(fake)
    rounds = rounds_of(api, Journal(), ALICE, members=2)
    first = asyncio.create_task(rounds.call(stem(0, 1), params("q0"), ()))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    rounds.leave()
    assert text(await rounds.call(stem(1, 1), params("q1"), ())) == "Answer to: q1"
    (made,) = fake.submitted
    sent = [r.custom_id for r in fake.batch(made).requests]  # type: ignore[union-attr]
    assert len(sent) == 1 and sent[0].startswith("q1-t1-")
    await rounds.close()


async def test_a_refused_create_says_what_was_refused(serve: Serve) -> None:
    fake = FakeBatches(script)
    api = await serve(fake)
    fake.fail("create", 400)
    with pytest.raises(UpstreamFailure) as refused:
        await api.create([{"custom_id": "a-0", "params": params("q")}], ())
    assert refused.value.message.startswith("Upstream failed creating a Message Batch: ")


async def test_a_read_that_times_out_is_tried_again(
    aiohttp_server: AiohttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeBatches(script)
    server = await aiohttp_server(fake.app())
    url = str(server.make_url("")).rstrip("/")
    client = anthropic.AsyncAnthropic(api_key="t", base_url=url, max_retries=0, timeout=0.3)
    try:
        api = BatchesAPI(client, poll_s=0.01, create_timeout_s=1.0)
        made = await api.create([{"custom_id": "a-0", "params": params("q")}], ())
        api.sleep = waits = Waits()
        fake.stall("retrieve", 1.0)
        await api.wait(made)
    finally:
        await client.close()
    assert waits[0] == 0.01  # backed off, then read again
    said = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
    assert said[0] == "batches: Upstream timed out reading a Message Batch; trying again in 0.0 s"


async def test_an_api_that_cannot_be_reached_is_a_network_error_to_try_again() -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    client = anthropic.AsyncAnthropic(
        api_key="t", base_url=f"http://127.0.0.1:{port}", max_retries=0
    )
    try:
        with pytest.raises(UpstreamFailure) as failed:
            await BatchesAPI(client, poll_s=0.01, create_timeout_s=1.0).cancel("msgbatch_x")
    finally:
        await client.close()
    assert failed.value.code == "NETWORK_ERROR" and failed.value.retryable is True
    assert failed.value.message.startswith(
        "Upstream connection failed cancelling a Message Batch: "
    )

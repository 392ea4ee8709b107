"""The journal in the shared store (`batches.journal.SharedJournal`) against the project's
Redis store, a key prefix of the test's own: what each write puts where, fencing by the
batch's token, a store that fails or refuses, and the reads of any worker."""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError

from gateway import events, sse
from gateway.batches import journal as journal_module
from gateway.batches.batch import Batch
from gateway.batches.calls import RoundRecord
from gateway.batches.journal import EVENTS_READ, JournalLost, Record, SharedJournal
from gateway.batches.record import Stored, record_of, round_json
from gateway.runs import durable
from gateway.store.redis.batches import RedisBatches
from gateway.store.redis.runs import RedisStore
from tests.access_support import REDIS_URL
from tests.access_support import redis_prefix as redis_prefix  # the fixture
from tests.test_batch_record import a_batch, a_round

pytestmark = pytest.mark.redis


@pytest.fixture
async def store(redis_prefix: str) -> AsyncIterator[RedisStore]:
    opened = RedisStore(REDIS_URL, prefix=redis_prefix, run_ttl_s=60, max_events=1000)
    await opened.open(lambda kind, run_id: None)
    yield opened
    await opened.close()


@pytest.fixture
def batches(store: RedisStore) -> RedisBatches:
    return store.batches()


async def fields(store: RedisStore, key: str) -> dict[str, bytes]:
    found: Any = await store.client.hgetall(key)
    return {name.decode(): value for name, value in found.items()}


async def begun(batches: RedisBatches, batch: Batch, ttl_s: float = 60) -> SharedJournal:
    journal = SharedJournal(batches, ttl_s)
    await journal.begin(Record.new(batch, []))
    return journal


async def drained(journal: SharedJournal, batch_id: str) -> None:
    async with asyncio.timeout(5):
        await journal._writer(batch_id).drained()


def logged(question: Any, *texts: str) -> None:
    for text in texts:
        question.run.log.append(events.warning("w", text, 1))


async def test_begin_claims_the_batch_with_its_record(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(2)
    record = Record.new(batch, [])
    journal = SharedJournal(batches, 30.4)
    assert journal.ttl_s == 30 and journal.durable
    await journal.begin(record)
    assert journal.tokens == {"batch_1": 1}
    kept = await fields(store, batches.key("batch_1"))
    assert kept["meta"] == record.meta() and kept["head"] == record.head()
    assert kept["key"] == b"alice" and kept["status"] == b"running" and kept["token"] == b"1"
    assert 25 < await store.client.ttl(batches.key("batch_1")) <= 30


@pytest.mark.parametrize(("asked", "kept"), [(0.2, 1), (30.6, 31)])
def test_a_ttl_is_whole_seconds_at_least_one(
    batches: RedisBatches, asked: float, kept: int
) -> None:
    assert SharedJournal(batches, asked).ttl_s == kept


async def test_a_batch_taken_over_is_not_claimed_again(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(1)
    journal = SharedJournal(batches, 60)
    journal.adopt(batch.id, 7)
    await journal.begin(Record.new(batch, []))
    assert journal.tokens == {"batch_1": 7}
    assert await store.client.exists(batches.key("batch_1")) == 0


async def test_a_batch_another_worker_claimed_is_not_durable_here(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(1)
    first = await begun(batches, batch)
    second = await begun(batches, batch)
    assert first.tokens == {"batch_1": 1} and second.tokens == {}
    second.checkpoint(batch.id, batch.questions[0])
    await second.question_done(batch.id, batch.questions[0])
    assert second._writers == {}
    assert await store.client.exists(batches.key("batch_1") + ":q") == 0


async def test_a_store_that_fails_the_claim_leaves_the_batch_not_durable(
    batches: RedisBatches, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def down(*args: Any, **kwargs: Any) -> int:
        raise TimeoutError("slow")

    monkeypatch.setattr(batches, "errors", (RedisConnectionError,))
    monkeypatch.setattr(batches, "claim", down)
    journal = SharedJournal(batches, 60)
    assert journal.errors == (RedisConnectionError, TimeoutError)
    with caplog.at_level(logging.WARNING, logger=journal_module.__name__):
        await journal.begin(Record.new(a_batch(1), []))
    assert journal.tokens == {}
    assert [r.getMessage() for r in caplog.records] == [
        "batches: cannot record batch_1 (slow); it is not durable"
    ]
    heard: list[RoundRecord] = []
    await journal.round_writer("batch_1", heard.append)(a_round(1))
    assert heard == [a_round(1)] and journal._writers == {}


async def test_a_write_redis_cannot_encode_reaches_its_waiter_and_is_not_retried(
    store: RedisStore, batches: RedisBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    assert journal.faults == (DataError,)
    real_write, tries = batches.write, []
    unencodable: Any = None

    async def write(batch_id: str, token: int, parts: Any, ttl_s: int) -> bool:
        tries.append(parts)
        if "r" in parts:  # a bug: redis-py refuses None before anything is sent
            return await real_write(batch_id, token, {"r": {"1": unencodable}}, ttl_s)
        return await real_write(batch_id, token, parts, ttl_s)

    monkeypatch.setattr(batches, "write", write)
    with pytest.raises(DataError):
        async with asyncio.timeout(2):
            await journal.round_writer(batch.id, lambda _: None)(a_round(1))
    assert len(tries) == 1
    await journal.question_done(batch.id, batch.questions[0])
    await drained(journal, batch.id)
    assert journal.tokens == {batch.id: 1}  # the batch is not lost over a bug
    assert await fields(store, batches.key(batch.id) + ":r") == {}


async def test_a_round_is_written_before_its_writer_returns(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    heard: list[RoundRecord] = []
    write = journal.round_writer(batch.id, heard.append)
    await write(a_round(3, "submitting"))
    await write(a_round(1))
    rounds = await fields(store, batches.key("batch_1") + ":r")
    assert rounds == {"3": round_json(a_round(3, "submitting")), "1": round_json(a_round(1))}
    assert heard == [a_round(3, "submitting"), a_round(1)]


async def test_a_round_writer_of_a_batch_lost_since_refuses(batches: RedisBatches) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    write = journal.round_writer(batch.id, lambda record: None)
    journal.adopt(batch.id, 2)  # lost, then taken back with another token
    with pytest.raises(JournalLost) as caught:
        await write(a_round(1))
    assert caught.value.args == ("batch_1",)


async def test_a_checkpoint_writes_the_state_events_and_progress(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    question = batch.questions[1]
    question.state.turns, question.state.tool_calls = 1, 4
    logged(question, "a", "b")
    journal.checkpoint(batch.id, question)
    await drained(journal, batch.id)
    q = await fields(store, batches.key("batch_1") + ":q")
    p = await fields(store, batches.key("batch_1") + ":p")
    assert set(q) == {"c1", "e1"} and set(p) == {"p1"}
    checkpoint = durable.decode(q["c1"])
    assert checkpoint.endpoint == "batch" and checkpoint.seq == 2
    assert checkpoint.request == question.request and checkpoint.state.tool_calls == 4
    assert q["e1"] == question.run.log.read(0)
    assert orjson.loads(p["p1"]) == question.progress()


async def test_a_question_done_writes_all_its_events_its_progress_and_outcome(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    first, second = batch.questions
    logged(first, "x")
    second.outcome = "max_turns"
    await journal.question_done(batch.id, first)
    await journal.question_done(batch.id, second)
    q = await fields(store, batches.key("batch_1") + ":q")
    p = await fields(store, batches.key("batch_1") + ":p")
    assert q == {"e0": first.run.log.read(0), "e1": b""}
    assert p["d0"] == b"completed" and p["d1"] == b"max_turns"
    assert orjson.loads(p["p0"]) == first.progress()
    assert orjson.loads(p["p1"]) == second.progress()


async def test_the_end_writes_the_summary_after_the_writes_before_it(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch, ttl_s=40)
    batch.questions[0].outcome = "completed"
    journal.checkpoint(batch.id, batch.questions[0])
    writer = journal._writers[batch.id]
    batch.state, batch.outcome = "ended", "completed"
    await journal.end(batch)
    kept = await fields(store, batches.key("batch_1"))
    summary = {"state": "ended", "outcome": "completed", **batch.totals()}
    assert kept["status"] == b"ended" and orjson.loads(kept["summary"]) == summary
    assert "c0" in await fields(store, batches.key("batch_1") + ":q")
    assert journal.tokens == {} and journal._writers == {} and writer._task.done()
    assert 35 < await store.client.ttl(batches.key("batch_1")) <= 40
    stored = await journal.stored(batch.id)
    assert stored is not None and stored.done and stored.summary == summary


async def test_the_end_of_a_batch_not_durable_writes_nothing(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(1)
    journal = SharedJournal(batches, 60)
    await journal.end(batch)
    assert journal._writers == {}
    assert await store.client.exists(batches.key("batch_1")) == 0


async def test_release_lets_the_writes_in_then_gives_the_lease_up(
    store: RedisStore, batches: RedisBatches
) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    lease = batches.key("batch_1") + ":lease"
    assert await store.client.exists(lease) == 1
    journal.checkpoint(batch.id, batch.questions[0])
    writer = journal._writers[batch.id]
    await journal.release(batch.id)
    assert "c0" in await fields(store, batches.key("batch_1") + ":q")
    assert await store.client.exists(lease) == 0
    assert journal.tokens == {} and journal._writers == {} and writer._task.done()
    await journal.release(batch.id)  # again, or never begun: nothing to do


async def test_release_waits_five_seconds_at_most_for_the_writes(
    store: RedisStore, batches: RedisBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    asked: list[float | None] = []
    real_timeout = asyncio.timeout

    def timeout(delay: float | None) -> asyncio.Timeout:
        asked.append(delay)
        return real_timeout(0.05)  # the bound as asked, made short

    names = {name: getattr(asyncio, name) for name in dir(asyncio) if not name.startswith("_")}
    clock = types.SimpleNamespace(**{**names, "timeout": timeout})
    monkeypatch.setattr(journal_module, "asyncio", clock)
    never = asyncio.Event()
    writer = journal._writer(batch.id)
    writer.put(never.wait)  # the store never answers this write
    async with real_timeout(5):
        await journal.release(batch.id)
    assert asked == [5.0]
    assert journal.tokens == {} and journal._writers == {} and writer._task.done()
    assert await store.client.exists(batches.key("batch_1") + ":lease") == 0


async def test_release_on_a_failing_store_still_lets_the_batch_go(
    batches: RedisBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)

    async def down(*args: Any) -> None:
        raise RedisConnectionError("down")

    monkeypatch.setattr(batches, "release", down)
    await journal.release(batch.id)
    assert journal.tokens == {}


async def test_a_stale_token_is_refused_and_stops_the_batch_here(
    store: RedisStore, batches: RedisBatches, caplog: pytest.LogCaptureFixture
) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    lost: list[str] = []
    journal.on_lost = lost.append
    await store.client.hset(batches.key("batch_1"), "token", 2)  # taken over elsewhere
    with caplog.at_level(logging.WARNING, logger=journal_module.__name__):
        journal.checkpoint(batch.id, batch.questions[0])
        refused = asyncio.create_task(journal.question_done(batch.id, batch.questions[1]))
        with pytest.raises(JournalLost):
            async with asyncio.timeout(5):
                await refused
    assert lost == ["batch_1"] and journal.tokens == {} and journal._writers == {}
    assert [r.getMessage() for r in caplog.records] == [
        "batches: batch_1 was taken over elsewhere; stopping it here"
    ]
    assert await store.client.exists(batches.key("batch_1") + ":q") == 0
    await journal.question_done(batch.id, batch.questions[1])  # no longer its: nothing
    journal.lost(batch.id)  # told again: nothing more
    assert lost == ["batch_1"]


async def test_a_batch_lost_before_any_write_needs_nobody_told(batches: RedisBatches) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    journal.lost(batch.id)  # no `on_lost` set, no writer made yet
    assert journal.tokens == {} and journal._writers == {}


async def test_a_lost_batch_refuses_its_waiting_writes(batches: RedisBatches) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    lost: list[str] = []
    journal.on_lost = lost.append
    gate = asyncio.Event()
    journal._writer(batch.id).put(gate.wait)
    write = asyncio.ensure_future(journal.round_writer(batch.id, lambda r: None)(a_round(1)))
    await asyncio.sleep(0.01)
    journal.lost(batch.id)
    with pytest.raises(JournalLost):
        async with asyncio.timeout(5):
            await write
    assert lost == ["batch_1"] and journal.tokens == {} and journal._writers == {}
    gate.set()


async def test_a_write_the_store_fails_is_tried_again(
    store: RedisStore, batches: RedisBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = a_batch(1)
    journal = await begun(batches, batch)
    real_write = batches.write
    tries: list[int] = []

    async def flaky(*args: Any) -> bool:
        tries.append(1)
        if len(tries) == 1:
            raise TimeoutError("slow")
        return await real_write(*args)

    monkeypatch.setattr(batches, "write", flaky)
    async with asyncio.timeout(5):
        await journal.question_done(batch.id, batch.questions[0])
    assert len(tries) == 2
    assert (await fields(store, batches.key("batch_1") + ":p"))["d0"] == b"completed"


async def test_a_takeover_loads_the_record_the_journal_wrote(batches: RedisBatches) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    question = batch.questions[0]
    logged(question, "a")
    journal.checkpoint(batch.id, question)
    await journal.question_done(batch.id, batch.questions[1])
    await journal.round_writer(batch.id, lambda r: None)(a_round(1))
    record = await SharedJournal(batches, 60).load(batch.id)
    assert record == record_of(await batches.load(batch.id) or {})
    assert record is not None and record.run_requests() == [q.request for q in batch.questions]
    assert sorted(record.checkpoints) == [0] and record.done == {1: "completed"}
    assert record.kept_events(0) == sse.parse_frames(question.run.log.read(0))
    assert record.rounds() == [a_round(1)]
    assert await journal.load("batch_9") is None


async def test_any_worker_reads_the_progress_from_the_summary(batches: RedisBatches) -> None:
    batch = a_batch(2)
    journal = await begun(batches, batch)
    await journal.question_done(batch.id, batch.questions[1])
    await journal.round_writer(batch.id, lambda r: None)(a_round(1))
    stored = await SharedJournal(batches, 60).stored(batch.id)
    assert stored == Stored.of(await batches.summary(batch.id) or {})
    assert stored is not None and stored.state == "running" and not stored.done
    assert stored.questions[1] == batch.questions[1].progress()
    assert stored.questions[0]["state"] == "queued" and stored.rounds == [a_round(1)]
    assert await journal.stored("batch_9") is None


async def test_a_results_download_streams_the_events_a_hundred_questions_at_a_time(
    batches: RedisBatches, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 2 * EVENTS_READ + 10
    batch = a_batch(count)
    journal = await begun(batches, batch)
    for question in batch.questions:
        if question.index % 7:  # every seventh question has none yet
            logged(question, f"q{question.index}")
    for question in batch.questions:
        if question.index % 7:
            await journal.question_done(batch.id, question)
    real_events = batches.events
    asked: list[range] = []

    async def events_of(batch_id: str, indexes: range) -> list[bytes]:
        asked.append(indexes)
        return await real_events(batch_id, indexes)

    monkeypatch.setattr(batches, "events", events_of)
    read = [data async for data in journal.events(batch.id, count)]
    assert EVENTS_READ == 100
    assert asked == [range(0, 100), range(100, 200), range(200, 210)]
    assert read == [q.run.log.read(0) if q.index % 7 else b"" for q in batch.questions]
    assert [data async for data in journal.events(batch.id, 0)] == []

"""A worker that is slow, not dead, loses its batch's lease: the other worker takes the
batch over, and the slow one hands it over whole. It ends none of its questions, writes
nothing more of the batch, and submits no round; the batch ends on the other worker with
every question answered and each call submitted once."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiohttp import web

from gateway.batches.calls import RoundRecord
from gateway.batches.journal import JournalLost, SharedJournal, record_of
from gateway.http import keys
from gateway.store.redis.runs import RedisStore
from tests.demo.test_batch_http import QUESTIONS, start
from tests.demo.test_batch_http import store as demo_store
from tests.demo.test_batch_redis import (
    Submitted,
    demo_app,
    make_client,
    redis_url,
    shared,
    submitted,
)
from tests.demo.test_batch_research import MakeClient, finished, results
from tests.test_batches_faults import call

__all__ = ["demo_app", "make_client", "redis_url", "submitted"]  # the fixtures this module uses
pytestmark = pytest.mark.redis


@pytest.mark.parametrize("at_round", [1, 2])
async def test_a_slow_worker_hands_its_batch_over_whole(
    redis_url: str, make_client: MakeClient, demo_app: tuple[web.Application, str],
    submitted: Submitted, at_round: int,
) -> None:  # fmt: skip
    demo_store(demo_app).processing_s = 1.5  # a round in flight past the takeover
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    a = await make_client(**shared(redis_url, prefix))
    b = await make_client(**shared(redis_url, prefix))
    journal = a.app[keys.BATCHES].journal
    assert isinstance(journal, SharedJournal)
    slow = asyncio.Event()
    renew = journal.store.renew

    async def stalled(owned: list[tuple[str, int]], ttl_s: int) -> list[int]:
        await slow.wait()  # the worker is too slow to renew in time
        return await renew(owned, ttl_s)

    batch_id = await start(a, questions=QUESTIONS)
    async with asyncio.timeout(20):
        while True:
            rounds = (await (await a.get(f"/api/batches/{batch_id}")).json())["rounds"]
            if len(rounds) >= at_round and rounds[at_round - 1]["state"] == "submitted":
                break
            await asyncio.sleep(0.01)
    journal.store.renew = stalled  # type: ignore[method-assign]
    async with asyncio.timeout(20):
        while b.app[keys.BATCHES].get(batch_id) is None:  # B takes it over
            await asyncio.sleep(0.02)
    slow.set()  # A wakes up: its renewal or its next write is refused
    progress = await finished(b, batch_id, timeout_s=60)
    async with asyncio.timeout(10):
        while a.app[keys.BATCHES].get(batch_id) is not None:
            await asyncio.sleep(0.02)

    assert progress["counts"] == {"completed": len(QUESTIONS)}
    lines = await results(b, batch_id)
    assert [line["outcome"] for line in lines] == ["completed"] * len(QUESTIONS)
    assert len(submitted) == len(set(submitted))  # no call submitted twice
    expected = {f"q{i}-t{t}" for i, line in enumerate(lines) for t in range(1, line["turns"] + 1)}
    assert {call(cid) for cid in submitted} == expected
    parts = await journal.store.load(batch_id)
    assert parts is not None
    record = record_of(parts)
    assert record.done == dict.fromkeys(range(len(QUESTIONS)), "completed")
    ended: Any = [r.state for r in record.rounds()]
    assert set(ended) == {"ended"}


async def test_a_lost_batchs_rounds_are_never_written_again(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    store = RedisStore(redis_url, prefix=prefix, run_ttl_s=60, max_events=1000)
    await store.open(lambda kind, run_id: None)
    try:
        batches = store.batches()
        journal = SharedJournal(batches, 60)
        lost: list[str] = []
        journal.on_lost = lost.append
        token = await batches.claim("batch_x", "alice", b'{"meta": 1}', 60)
        journal.adopt("batch_x", token)
        before = journal.round_writer("batch_x", lambda record: None)
        await before(RoundRecord(1, ["q0-t1-x"]))
        journal.lost("batch_x")
        assert lost == ["batch_x"]
        with pytest.raises(JournalLost):
            await before(RoundRecord(2, ["q0-t2-x"]))
        journal.adopt("batch_x", token + 1)  # taken back here later, by a new drive
        with pytest.raises(JournalLost):  # the old drive still writes nothing
            await before(RoundRecord(2, ["q0-t2-x"]))
        parts = await batches.load("batch_x")
        assert parts is not None and set(parts["r"]) == {"1"}
    finally:
        await store.close()

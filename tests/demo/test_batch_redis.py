"""Batches in Redis (a redis-server of the test's own), two gateway apps sharing it and one
demo Batches API: what the journal holds, another worker's reads, a batch left by a worker
that stops taken over by the other, and a worker that lost its batch refused."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer
from redis.asyncio import Redis

from demo_model import create_demo_app
from gateway.batches.calls import RoundRecord
from gateway.batches.journal import JournalLost, SharedJournal, record_of
from gateway.http import keys
from gateway.runs import durable
from gateway.store.redis.batches import RedisBatches
from gateway.store.redis.runs import RedisStore
from tests.conftest import read_events
from tests.demo.test_batch_http import ALICE, BOB, KEYS, QUESTIONS, Client, make_client, start
from tests.demo.test_batch_http import store as demo_store
from tests.demo.test_batch_research import MakeClient, comparable, finished, results
from tests.procs.redis import redis_server
from tests.test_batches_faults import call

__all__ = ["make_client"]  # the fixtures this module uses
pytestmark = pytest.mark.redis

Submitted = list[str]
SUBMITTED = web.AppKey("submitted_custom_ids", list)


def count_submitted(app: web.Application) -> Submitted:
    """The custom_ids of every Message Batch the demo app is asked to create, in order
    (an aiohttp middleware on the app: it sees the requests as the API would)."""
    seen: Submitted = []

    @web.middleware
    async def counting(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if request.method == "POST" and request.path == "/v1/messages/batches":
            body = orjson.loads(await request.read())
            seen.extend(r.get("custom_id") for r in body.get("requests") or ())
        return await handler(request)

    app.middlewares.append(counting)
    return seen


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    async with redis_server(tmp_path) as server:
        yield server.url


@pytest.fixture
async def demo_app(aiohttp_server: AiohttpServer) -> tuple[web.Application, str]:
    """The demo model's server, counting the custom_ids submitted to it."""
    app = create_demo_app(delay_s=0)
    app[SUBMITTED] = count_submitted(app)
    server = await aiohttp_server(app)
    return app, str(server.make_url("")).rstrip("/")


@pytest.fixture
def submitted(demo_app: tuple[web.Application, str]) -> Submitted:
    found: Submitted = demo_app[0][SUBMITTED]
    return found


async def _results(client: Client, batch_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/batches/{batch_id}/results", headers=ALICE)
    assert response.status == 200 and response.content_type == "application/x-ndjson"
    return [orjson.loads(line) for line in (await response.read()).splitlines()]


def shared(redis_url: str, prefix: str, **more: Any) -> dict[str, Any]:
    return {"redis_url": redis_url, "redis_key_prefix": prefix, "gateway_takeover_s": 1.0,
            **more}  # fmt: skip


async def test_another_worker_reads_a_batch_from_its_journal(
    redis_url: str, make_client: MakeClient, submitted: Submitted
) -> None:
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    a = await make_client(**shared(redis_url, prefix, gateway_api_keys=KEYS))
    b = await make_client(**shared(redis_url, prefix, gateway_api_keys=KEYS))
    batch_id = await start(a, ALICE, questions=QUESTIONS)
    remote_events = asyncio.create_task(
        read_events(await b.get(f"/api/batches/{batch_id}/events", headers=ALICE))
    )
    async with asyncio.timeout(60):
        while (here := await (await a.get(f"/api/batches/{batch_id}", headers=ALICE)).json())[
            "state"
        ] != "ended":
            await asyncio.sleep(0.05)
    assert b.app[keys.BATCHES].get(batch_id) is None  # B reads the store, it drives nothing

    there = await (await b.get(f"/api/batches/{batch_id}", headers=ALICE)).json()
    assert there == {**here, "questions": there["questions"]}
    for mine, theirs in zip(here["questions"], there["questions"], strict=True):
        assert theirs == {**mine, "batch_result": theirs["batch_result"]}
    local, remote = [await _results(c, batch_id) for c in (a, b)]
    assert [comparable(x) for x in remote] == [comparable(x) for x in local]

    events = await asyncio.wait_for(remote_events, 30)
    assert events[0]["type"] == "batch_status" and events[-1]["type"] == "batch_complete"
    assert events[-1]["counts"] == {"completed": len(QUESTIONS)}
    assert events[-1]["usage"] == here["usage"] and events[-1]["outcome"] == "completed"
    done = {e["index"] for e in events if e["type"] == "question" and e["state"] == "done"}
    assert done == set(range(len(QUESTIONS)))

    for path in ("", "/events", "/results"):  # another key: 404 on the worker that reads
        assert (await b.get(f"/api/batches/{batch_id}{path}", headers=BOB)).status == 404
    assert (await b.post(f"/api/batches/{batch_id}/cancel", headers=BOB)).status == 404
    assert (await b.get("/api/batches/batch_nope", headers=ALICE)).status == 404
    again = await b.post(f"/api/batches/{batch_id}/cancel", headers=ALICE)
    assert (await again.json())["cancelled"] is False

    journal = a.app[keys.BATCHES].journal
    assert isinstance(journal, SharedJournal) and journal.tokens == {}  # it let the batch go
    parts = await journal.store.load(batch_id)
    assert parts is not None and parts["batch"]["status"] == b"ended"
    record = record_of(parts)
    assert record.done == dict.fromkeys(range(len(QUESTIONS)), "completed")
    assert [r.state for r in record.rounds()] == ["ended"] * len(here["rounds"])
    assert [r.api_batch_id for r in record.rounds()] == [r["api_batch_id"] for r in here["rounds"]]
    assert sorted(submitted) == sorted(cid for r in record.rounds() for cid in r.custom_ids)
    for index, data in record.checkpoints.items():
        state = durable.decode(data).state
        assert state.run_id == record.run_ids[index] and state.turns >= 1


async def test_a_batch_cancelled_on_another_worker(
    redis_url: str, make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    demo_store(demo_app).processing_s = 30.0
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    a = await make_client(**shared(redis_url, prefix))
    b = await make_client(**shared(redis_url, prefix))
    batch_id = await start(a, questions=QUESTIONS)
    async with asyncio.timeout(10):
        while not (await (await b.get(f"/api/batches/{batch_id}")).json())["rounds"]:
            await asyncio.sleep(0.02)
    response = await b.post(f"/api/batches/{batch_id}/cancel")
    assert (await response.json())["cancelled"] is True  # sent to A, which drives it
    progress = await finished(b, batch_id, timeout_s=10)
    assert progress["counts"] == {"cancelled": len(QUESTIONS)}
    assert (await finished(a, batch_id))["counts"] == {"cancelled": len(QUESTIONS)}


async def test_a_batch_left_by_a_stopping_worker_finishes_on_another(
    redis_url: str, make_client: MakeClient, demo_app: tuple[web.Application, str],
    submitted: Submitted,
) -> None:  # fmt: skip
    demo_store(demo_app).processing_s = 0.3  # a round in flight when the first one stops
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    a = await make_client(**shared(redis_url, prefix))
    b = await make_client(**shared(redis_url, prefix))
    batch_id = await start(a, questions=QUESTIONS)
    async with asyncio.timeout(20):
        while True:
            rounds = (await (await a.get(f"/api/batches/{batch_id}")).json())["rounds"]
            if len(rounds) >= 2 and rounds[1]["state"] == "submitted":
                break
            await asyncio.sleep(0.01)
    await a.app[keys.BATCHES].shutdown()  # A stops: its lease goes, its journal stays
    progress = await finished(b, batch_id, timeout_s=30)
    assert b.app[keys.BATCHES].get(batch_id) is not None  # B drives it now
    assert progress["counts"] == {"completed": len(QUESTIONS)}
    lines = await results(b, batch_id)
    for question, line in zip(QUESTIONS, lines, strict=True):
        live = await b.post("/api/research", json={"query": question})
        assert comparable(line) == comparable(await live.json()), question
    assert len(submitted) == len(set(submitted))  # no request submitted twice
    expected = {f"q{i}-t{t}" for i, line in enumerate(lines) for t in range(1, line["turns"] + 1)}
    assert {call(cid) for cid in submitted} == expected  # and none lost


async def test_a_worker_that_lost_its_batch_is_refused(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    first = RedisStore(redis_url, prefix=prefix, run_ttl_s=60, max_events=1000)
    second = RedisStore(redis_url, prefix=prefix, run_ttl_s=60, max_events=1000)
    for store in (first, second):
        await store.open(lambda kind, run_id: None)
    try:
        mine, theirs = first.batches(), second.batches()
        mine.lease_ms = theirs.lease_ms = 200
        journal = SharedJournal(mine, 60)
        lost: list[str] = []
        journal.on_lost = lost.append
        token = await mine.claim("batch_x", "alice", b'{"meta": 1}', 60)
        assert token == 1
        journal.adopt("batch_x", token)
        assert await theirs.take_over(8, 0) == []  # the lease is held
        await asyncio.sleep(0.3)  # the first worker pauses past its lease
        assert await theirs.take_over(8, 0) == []  # marked orphan at the first look
        assert await theirs.take_over(8, 0) == [("batch_x", 2)]
        with pytest.raises(JournalLost):
            await journal.round_writer("batch_x", lambda record: None)(RoundRecord(1, ["x"]))
        assert lost == ["batch_x"] and journal.tokens == {}
        assert await mine.renew([("batch_x", 1)], 60) == [0]
        assert await theirs.renew([("batch_x", 2)], 60) == [1]
        assert await theirs.write("batch_x", 2, {"r": {"1": b"{}"}, "p": {"p0": b"1"}}, 60)
        assert await theirs.finish("batch_x", 2, b"{}", 60) is True
        assert await theirs.renew([("batch_x", 2)], 60) == [2]  # ended
        parts = await theirs.load("batch_x")
        assert parts is not None and parts["r"] == {"1": b"{}"} and parts["p"] == {"p0": b"1"}
        assert parts["batch"]["status"] == b"ended" and parts["batch"]["key"] == b"alice"
        assert await theirs.load("batch_y") is None and await theirs.cancel("batch_y") is None
    finally:
        for store in (first, second):
            await store.close()


async def test_progress_and_events_read_the_summary_never_the_event_logs(
    redis_url: str, make_client: MakeClient
) -> None:
    prefix = f"t{uuid.uuid4().hex[:6]}:"
    a = await make_client(**shared(redis_url, prefix))
    b = await make_client(**shared(redis_url, prefix))
    batch_id = await start(a, questions=QUESTIONS)
    here = await finished(a, batch_id)
    journal = b.app[keys.BATCHES].journal
    assert isinstance(journal, SharedJournal)
    summary = await journal.store.summary(batch_id)
    assert summary is not None and set(summary) == {"batch", "p", "r"}
    assert set(summary["batch"]) == {"head", "key", "status", "summary"}  # not the requests
    assert isinstance(journal.store, RedisBatches)
    record = journal.store.key(batch_id)
    client = Redis.from_url(redis_url)
    try:  # without the questions' requests, checkpoints and events, progress reads the same
        await client.delete(record + ":q")
        await client.hdel(record, "meta")
    finally:
        await client.aclose()
    there = await (await b.get(f"/api/batches/{batch_id}")).json()
    assert there == {**here, "questions": there["questions"]}
    assert there["outcome"] == "completed"
    for mine, theirs in zip(here["questions"], there["questions"], strict=True):
        assert theirs == {**mine, "batch_result": theirs["batch_result"]}
    events = await read_events(await b.get(f"/api/batches/{batch_id}/events"))
    assert events[-1]["type"] == "batch_complete" and events[-1]["outcome"] == "completed"
    assert events[-1]["counts"] == {"completed": len(QUESTIONS)}

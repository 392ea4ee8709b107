"""A batch outlives its worker (`batches.takeover`), on the Redis at REDIS_URL through the
project's own store, a key prefix per test: a worker renews the leases of the batches it
drives and stops one taken over elsewhere; it takes over batches whose lease has been
missing (at most eight a look), continues each from its journal, and leaves one it cannot
rebuild for another worker."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import redis.asyncio as redis

from gateway.batches.calls import RoundRecord
from gateway.batches.journal import Record, SharedJournal
from gateway.batches.manager import BatchManager
from gateway.batches.record import round_json
from gateway.batches.takeover import MAX_CLAIMS, Takeover
from gateway.errors import GatewayError
from gateway.runs.loop import LoopConfig
from gateway.runs.run import RunRequest
from gateway.store.redis.runs import RedisStore
from tests.access_support import REDIS_URL, redis_prefix
from tests.batch_manager_support import MakeHarness, ended, make_harness, request

__all__ = ["make_harness", "redis_prefix"]  # the fixtures this module uses
pytestmark = pytest.mark.redis

Worker = Callable[..., Awaitable[tuple[SharedJournal, "Resumed"]]]


class Resumed:
    """The manager's `resume`, kept: each batch taken over and the configs it was given."""

    def __init__(self) -> None:
        self.batches: list[tuple[Record, list[LoopConfig]]] = []

    def resume(self, record: Record, configs: list[LoopConfig]) -> None:
        self.batches.append((record, configs))

    @property
    def ids(self) -> list[str]:
        return [record.batch_id for record, _ in self.batches]


async def configure(request: RunRequest) -> LoopConfig:
    """A stand-in config naming the question it was made for."""
    return cast(LoopConfig, ("config", request.messages[0]["content"]))


@pytest.fixture
async def worker(redis_prefix: str) -> AsyncIterator[Worker]:
    """A worker's store and journal on the test's prefix (its own worker id)."""
    stores: list[RedisStore] = []

    async def make(ttl_s: float = 60) -> tuple[SharedJournal, Resumed]:
        store = RedisStore(REDIS_URL, prefix=redis_prefix, run_ttl_s=60, max_events=1000)
        await store.open(lambda kind, run_id: None)
        stores.append(store)
        return SharedJournal(store.batches(), ttl_s), Resumed()

    yield make
    for store in stores:
        await store.close()


def takeover(
    journal: SharedJournal, manager: Resumed, takeover_s: float = 600.0,
    configured: Callable[[RunRequest], Awaitable[LoopConfig]] = configure,
) -> Takeover:  # fmt: skip
    return Takeover(journal, cast(BatchManager, manager), configured, takeover_s)


def record(batch_id: str, *queries: str) -> Record:
    requests = [dataclasses.asdict(request(q)) for q in queries]
    run_ids = [f"run_{batch_id}_{i}" for i in range(len(queries))]
    sessions = [f"sess_{batch_id}_{i}" for i in range(len(queries))]
    now = datetime.now(UTC).isoformat()
    return Record(batch_id, "alice", "req_1", now, requests, run_ids, sessions)


async def orphaned(journal: SharedJournal, *records: Record) -> None:
    """Batches a worker began and then died with: their leases gone."""
    for each in records:
        await journal.begin(each)
        await journal.release(each.batch_id)
        assert each.batch_id not in journal.tokens


async def taken(looker: Takeover) -> None:
    """Two looks: the first marks the batches without a lease, the second takes them."""
    looker.grace_ms = 0
    await looker.take_over()
    await looker.take_over()


async def test_a_dead_workers_batch_is_taken_over_from_its_journal(worker: Worker) -> None:
    dead, _ = await worker()
    alive, manager = await worker()
    await orphaned(dead, record("batch_a", "Question 0", "Question 1"))
    looker = takeover(alive, manager)
    try:
        assert not looker.holding()
        await taken(looker)
        [(found, configs)] = manager.batches
        began = record("batch_a", "Question 0", "Question 1")
        assert (found.batch_id, found.owner, found.run_ids, found.session_ids) == (
            "batch_a", "alice", began.run_ids, began.session_ids
        )  # fmt: skip
        assert found.run_requests() == began.run_requests()
        assert cast(Any, configs) == [("config", "Question 0"), ("config", "Question 1")]
        assert alive.tokens == {"batch_a": 2}  # a new fencing token: writes of the dead fail
        assert looker.holding()
        await looker.take_over()
        assert manager.ids == ["batch_a"]  # once
    finally:
        await looker.close()


async def test_a_look_takes_at_most_eight_batches(worker: Worker) -> None:
    dead, _ = await worker()
    alive, manager = await worker()
    ids = [f"batch_{i}" for i in range(MAX_CLAIMS + 1)]
    await orphaned(dead, *(record(batch_id, "Question") for batch_id in ids))
    looker = takeover(alive, manager)
    try:
        await taken(looker)
        assert MAX_CLAIMS == 8 and len(manager.ids) == 8
        await looker.take_over()
        assert sorted(manager.ids) == sorted(ids)  # the ninth at the next look
    finally:
        await looker.close()


async def test_a_batch_that_cannot_be_rebuilt_is_left_for_another(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    dead, _ = await worker()
    alive, manager = await worker()
    other, later = await worker()
    await orphaned(dead, *(record(f"batch_{i}", "Question") for i in range(3)))
    refused: list[RunRequest] = []

    async def refusing(asked: RunRequest) -> LoopConfig:
        if not refused:  # the first batch looked at, whichever it is: its tool is unknown here
            refused.append(asked)
            raise GatewayError("VALIDATION_ERROR", "no such tool")
        return await configure(asked)

    looker = takeover(alive, manager, configured=refusing)
    caplog.set_level(logging.INFO, logger="gateway.batches.takeover")
    try:
        await taken(looker)
        [bad] = {f"batch_{i}" for i in range(3)} - set(manager.ids)
        assert len(manager.ids) == 2  # the ones after it are still taken
        assert set(alive.tokens) == set(manager.ids)  # the refused one is not held here
    finally:
        await looker.close()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.getMessage() == f"batches: cannot take {bad} over (no such tool); leaving it"
    # Its lease was given up: another worker (with the tool) takes it at once.
    second = takeover(other, later)
    try:
        await taken(second)
        assert later.ids == [bad]
    finally:
        await second.close()


class Failing(SharedJournal):
    """A journal whose first load fails as `failure` says (None: the record is gone)."""

    def __init__(self, journal: SharedJournal, failure: BaseException | None) -> None:
        super().__init__(journal.store, journal.ttl_s)
        self.failure = failure
        self.failed: list[str] = []

    async def load(self, batch_id: str) -> Record | None:
        if not self.failed:
            self.failed.append(batch_id)
            if self.failure is None:
                return None
            raise self.failure
        return await super().load(batch_id)


@pytest.mark.parametrize(
    ("failure", "said"),
    [(None, "has no record"), (TimeoutError("the store did not answer"), "did not answer")],
)
async def test_a_batch_whose_record_cannot_be_read_is_left(
    worker: Worker, caplog: pytest.LogCaptureFixture, failure: BaseException | None, said: str
) -> None:
    dead, _ = await worker()
    alive, manager = await worker()
    failing = Failing(alive, failure)
    await orphaned(dead, record("batch_0", "Question"), record("batch_1", "Question"))
    looker = takeover(failing, manager)
    try:
        await taken(looker)
        [gone] = failing.failed
        [ok] = {"batch_0", "batch_1"} - {gone}
        assert manager.ids == [ok] and set(failing.tokens) == {ok}
    finally:
        await looker.close()
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = error.getMessage()
    assert message.startswith(f"batches: cannot take {gone} over (") and said in message
    if failure is None:
        assert f"batch {gone} has no record" in message


async def test_a_takeover_says_how_far_the_batch_had_gone(
    worker: Worker, caplog: pytest.LogCaptureFixture
) -> None:
    dead, _ = await worker()
    alive, manager = await worker()
    began = record("batch_far", "Question 0", "Question 1", "Question 2")
    await dead.begin(began)
    token = dead.tokens["batch_far"]
    rounds = {str(n): round_json(RoundRecord(n, [f"q0-t{n}-x"], state="ended")) for n in (1, 2)}
    parts = {"p": {"d1": b"completed"}, "r": rounds}
    assert await dead.store.write("batch_far", token, parts, 60)
    await dead.release("batch_far")
    looker = takeover(alive, manager)
    caplog.set_level(logging.INFO, logger="gateway.batches.takeover")
    try:
        await taken(looker)
    finally:
        await looker.close()
    [(found, _)] = manager.batches
    assert found.done == {1: "completed"} and [r.number for r in found.rounds()] == [1, 2]
    [info] = [r for r in caplog.records if r.name == "gateway.batches.takeover"]
    assert info.getMessage() == "batches: taking batch_far over (1 of 3 questions done, 2 rounds)"


async def test_renewing_keeps_the_leases_and_stops_a_batch_taken_elsewhere(
    worker: Worker, redis_prefix: str
) -> None:
    mine, _ = await worker(ttl_s=77)
    other, manager = await worker()
    await mine.begin(record("batch_kept", "Question"))
    await mine.begin(record("batch_taken", "Question"))
    lost: list[str] = []
    mine.on_lost = lost.append
    renewer = takeover(mine, Resumed())
    looker = takeover(other, manager)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        await client.delete(f"{redis_prefix}batch:batch_taken:lease")  # a pause past it
        await taken(looker)
        assert manager.ids == ["batch_taken"]
        await client.expire(f"{redis_prefix}batch:batch_kept", 5)
        await renewer.renew()
        assert lost == ["batch_taken"] and set(mine.tokens) == {"batch_kept"}
        assert 70 < await client.ttl(f"{redis_prefix}batch:batch_kept") <= 77
        assert await client.exists(f"{redis_prefix}batch:batch_kept:lease")
        await renewer.renew()
        assert lost == ["batch_taken"]  # once
    finally:
        await renewer.close()
        await looker.close()
        await client.aclose()


async def test_the_loop_takes_a_dead_workers_batch_within_its_time(
    worker: Worker, make_harness: MakeHarness
) -> None:
    """The whole path: a batch begun by a worker that died is taken over by the look loop
    within `GATEWAY_TAKEOVER_S` and ends on the worker that took it."""
    h = await make_harness()
    dead, _ = await worker()
    alive, _ = await worker()
    await orphaned(dead, record("batch_live", "Question 0", "Question 1"))
    manager = h.successor(alive)
    alive.on_lost = manager.lost

    async def configured(asked: RunRequest) -> LoopConfig:
        return (await h.configs([asked]))[0]

    looker = Takeover(alive, manager, configured, 1.0)
    try:
        async with asyncio.timeout(10):
            while manager.get("batch_live") is None:
                await asyncio.sleep(0.02)
        batch = manager.get("batch_live")
        assert batch is not None
        await ended(batch)
        assert [q.outcome for q in batch.questions] == ["completed"] * 2
        assert not looker.holding()  # ended: its lease is no longer renewed
        parts: Any = await alive.store.load("batch_live")
        assert parts["batch"]["status"] == b"ended"
    finally:
        await looker.close()

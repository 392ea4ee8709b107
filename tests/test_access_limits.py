"""Per-key limits: run starts per minute, runs in progress, tokens per UTC day. Each test
runs on the in-memory counters and on the Redis ones; the last tests share Redis counters
between two gateway apps, as replicas do."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson
import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from gateway.access.limits import (
    Counters,
    Gate,
    Limits,
    MemoryCounters,
    RateLimited,
    Refusal,
    Window,
    seconds_to_midnight,
)
from gateway.http import keys
from gateway.ops.metrics import Metrics
from gateway.runs.run import RunRequest
from gateway.store.redis.limits import RedisCounters
from tests.access_support import REDIS_URL, redis_prefix, settled
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

__all__ = ["redis_prefix"]  # a fixture

Client = TestClient[Any, Any]
Factory = Callable[..., Awaitable[Client]]
ALICE = {"Authorization": "Bearer a-key"}
BOB = {"Authorization": "Bearer b-key"}
KEYS = "alice:a-key,bob:b-key"
SLOW = "word " * 200


@pytest.fixture(params=["memory", "redis"])
def make_limited(request: pytest.FixtureRequest, make_gateway: GatewayFactory) -> Factory:
    """A gateway with two keys and the given limits, counting in memory or in Redis."""
    shared: dict[str, Any] = {}
    if request.param == "redis":
        prefix = request.getfixturevalue("redis_prefix")
        shared = {"redis_url": REDIS_URL, "redis_key_prefix": prefix}

    async def make(**limits: Any) -> Client:
        return await make_gateway(gateway_api_keys=KEYS, **shared, **limits)

    return make


async def start(client: Client, headers: dict[str, str], **body: Any) -> ClientResponse:
    return await client.post("/api/stream", json={"query": "x", **body}, headers=headers)


async def refused(response: ClientResponse, limit: str) -> int:
    """Check a 429 for `limit`; its Retry-After in seconds."""
    assert response.status == 429, await response.text()
    assert response.content_type == "application/json"  # no SSE header was sent
    error = (await response.json())["error"]
    assert error["code"] == "RATE_LIMIT_ERROR" and error["details"]["limit"] == limit
    retry = int(response.headers["Retry-After"])
    assert retry == error["details"]["retry_after_s"] >= 1
    return retry


def refusals(metrics: Metrics, key: str, limit: str) -> float:
    labels = {"key": key, "limit": limit}
    return metrics.registry.get_sample_value("gateway_rate_limited_total", labels) or 0.0


async def finish(client: Client, response: ClientResponse) -> dict[str, Any]:
    final = (await read_events(response))[-1]
    await settled(client, final["run_id"])
    return final


async def test_run_starts_per_minute(
    make_limited: Factory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_limited(gateway_rate_limit_per_min=2)
    fake.add(*[Reply([Text("ok")]) for _ in range(3)])
    bad = await client.post("/api/stream", json={"query": ""}, headers=ALICE)
    assert bad.status == 400  # validation comes first: a bad request spends nothing
    for remaining in ("1", "0"):
        response = await start(client, ALICE)
        assert response.headers["RateLimit-Limit"] == "2"
        assert response.headers["RateLimit-Remaining"] == remaining
        assert 1 <= int(response.headers["RateLimit-Reset"]) <= 60
        await finish(client, response)
    over = await start(client, ALICE)
    assert 1 <= await refused(over, "per_minute") <= 60
    assert over.headers["RateLimit-Remaining"] == "0"
    assert over.headers["RateLimit-Reset"] == over.headers["Retry-After"]
    assert refusals(metrics, "alice", "per_minute") == 1
    await finish(client, await start(client, BOB))  # another key has its own count


async def test_runs_in_progress(make_limited: Factory, fake: FakeAnthropic) -> None:
    client = await make_limited(gateway_max_concurrent_runs=1, gateway_resume_grace_s=5.0)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01), Reply([Text("ok")]))
    running = await start(client, ALICE)
    assert "RateLimit-Limit" not in running.headers  # only the per-minute limit has a window
    run_id = (await anext(iter_events(running)))["run_id"]
    assert await refused(await start(client, ALICE), "concurrent") == 1
    await client.post(f"/api/runs/{run_id}/cancel", headers=ALICE)
    assert (await read_events(running))[-1]["outcome"] == "cancelled"
    await settled(client, run_id)  # the cancelled run gave its slot back
    assert (await finish(client, await start(client, ALICE)))["outcome"] == "completed"


async def test_a_failed_run_frees_its_slot(make_limited: Factory, fake: FakeAnthropic) -> None:
    client = await make_limited(gateway_max_concurrent_runs=1)
    fake.add(Reply(status=400, error_type="invalid_request_error"), Reply([Text("ok")]))
    failed = await read_events(await start(client, ALICE))
    assert failed[-1]["type"] == "error"
    await settled(client, failed[0]["run_id"])
    assert (await finish(client, await start(client, ALICE)))["outcome"] == "completed"


async def test_tokens_per_day(make_limited: Factory, fake: FakeAnthropic, metrics: Metrics) -> None:
    client = await make_limited(gateway_daily_token_budget=1_000)
    fake.add(Reply([Text("ok")], input_tokens=600, output_tokens=450), Reply([Text("ok")]))
    final = await finish(client, await start(client, ALICE))
    assert final["usage"]["input_tokens"] + final["usage"]["output_tokens"] == 1_050
    retry = await refused(await start(client, ALICE), "daily_tokens")
    assert abs(retry - seconds_to_midnight(time.time())) < 5  # the budget renews at 00:00 UTC
    assert refusals(metrics, "alice", "daily_tokens") == 1
    await finish(client, await start(client, BOB))


async def test_starts_go_through_when_the_counters_store_is_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counters = RedisCounters("redis://127.0.0.1:1/0", "rgtest:down:")  # nothing listens
    try:
        verdict = await counters.take("alice", "t1", Limits(per_minute=1, concurrent=1))
    finally:
        await counters.close()
    assert verdict is None  # let through, as Kong's fault_tolerant default
    assert "a start of alice let through" in caplog.text


async def test_runs_per_process(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    """Past GATEWAY_MAX_RUNS_PER_PROCESS a start is refused at once, whatever the key, with
    503 and Retry-After before any SSE header; re-attaching goes on; an ended run frees its
    place."""
    client = await make_gateway(gateway_max_runs_per_process=2, gateway_resume_grace_s=5.0)
    fake.add(*[Reply([Text(SLOW, chunk=5)], delay_s=0.01) for _ in range(2)], Reply([Text("ok")]))
    running = [await start(client, {}) for _ in range(2)]
    run_ids = [(await anext(iter_events(response)))["run_id"] for response in running]
    over = await client.post("/api/research", json={"query": "x"})
    assert over.status == 503, await over.text()
    assert over.content_type == "application/json"
    error = (await over.json())["error"]
    assert error["code"] == "OVERLOADED_ERROR"
    assert error["details"] == {"limit": "runs_per_process", "value": 2, "retry_after_s": 1}
    assert over.headers["Retry-After"] == "1"
    health = await client.get("/health")
    assert health.status == 200  # full is not unhealthy
    assert (await health.json())["max_runs_per_process"] == 2
    again = await client.get(f"/api/stream/{run_ids[0]}", headers={"Last-Event-ID": "0"})
    assert again.status == 200  # a reader of a run that exists is no new run
    await client.post(f"/api/runs/{run_ids[0]}/cancel")
    assert (await read_events(again))[-1]["outcome"] == "cancelled"
    await settled(client, run_ids[0])
    assert client.app[keys.RUNS].live == 1
    assert (await finish(client, await start(client, {})))["outcome"] == "completed"
    await client.post(f"/api/runs/{run_ids[1]}/cancel")
    await settled(client, run_ids[1])
    assert client.app[keys.RUNS].live == 0


async def test_a_run_cancelled_before_its_task_ran_ends_and_frees_its_place(
    make_gateway: GatewayFactory,
) -> None:
    """Cancelled in the same loop iteration it started in (its task has not run a step): it
    still ends with its terminal event, and gives its place back."""
    client = await make_gateway(gateway_max_runs_per_process=1)
    runs = client.app[keys.RUNS]
    request = RunRequest([{"role": "user", "content": "x"}])
    config = await client.app[keys.PLANNER].config(request)
    run = runs.start(request, config, "stream")
    assert runs.live == 1
    assert run.cancel("client_disconnected")
    assert run.task is not None
    await settled(client, run.id)
    assert run.log.closed
    final = orjson.loads(run.log.since(0)[-1].split(b"data: ", 1)[1])
    assert (final["type"], final["outcome"]) == ("final", "client_disconnected")
    assert runs.live == 0


class Clock:
    """A wall clock that moves only when a test moves it."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


T0 = 1_800_000_000.0  # a minute's first second, for readable offsets


@pytest.fixture(params=["memory", "redis"])
def clocked(request: pytest.FixtureRequest) -> Iterator[tuple[Counters, Clock]]:
    """Counters in memory or in the real Redis, reading time from a clock the test moves."""
    clock = Clock(T0)
    if request.param == "memory":
        yield MemoryCounters(clock, monotonic=clock), clock
        return
    prefix = request.getfixturevalue("redis_prefix")
    yield RedisCounters(REDIS_URL, prefix, clock=clock), clock


async def test_no_minute_holds_more_than_the_limit_around_its_edge(
    clocked: tuple[Counters, Clock], metrics: Metrics
) -> None:
    """A fixed window lets 3 starts through at second 59 and 3 more at 61; a sliding one
    refuses the second burst, and says when the first one's oldest start leaves."""
    counters, clock = clocked
    gate = Gate(Limits(per_minute=3), counters, metrics)
    try:
        clock.now = T0 + 59
        admitted = [await gate.admit("alice") for _ in range(3)]
        assert [a.headers["RateLimit-Remaining"] for a in admitted] == ["2", "1", "0"]
        assert {a.headers["RateLimit-Reset"] for a in admitted} == {"60"}
        clock.now = T0 + 61
        with pytest.raises(RateLimited) as refused:
            await gate.admit("alice")
        assert refused.value.headers["Retry-After"] == "58"  # 59 + 60 - 61
        assert refused.value.headers["RateLimit-Reset"] == "58"
        clock.now = T0 + 118.999
        verdict = await counters.take("alice", "t-late", gate.limits)
        assert isinstance(verdict, Refusal) and abs(verdict.retry_after_s - 0.001) < 1e-6
        clock.now = T0 + 119  # the burst at 59 has left the window
        assert [(await gate.admit("alice")).headers["RateLimit-Remaining"] for _ in range(3)] == [
            "2", "1", "0"
        ]  # fmt: skip
        with pytest.raises(RateLimited):
            await gate.admit("alice")
        assert (await gate.admit("bob")).headers["RateLimit-Remaining"] == "2"
    finally:
        await counters.close()


async def test_the_window_slides_exactly(clocked: tuple[Counters, Clock]) -> None:
    """Bursts at random times over five minutes: each start is let through exactly when
    fewer than the limit started in the 60 s before it (a log of every admitted start is
    the oracle), a refusal's wait is when the oldest of them leaves, and no 60 s span of
    admitted starts holds more than the limit."""
    counters, clock = clocked
    limit, window_ms, rng = 5, 60_000, random.Random(7)
    bursts = sorted(rng.randrange(300_000) for _ in range(60))
    times = sorted(b + rng.randrange(2_000) for b in bursts for _ in range(rng.randint(1, 6)))
    admitted: list[int] = []
    try:
        for n, at in enumerate(times):
            clock.now = T0 + at / 1000
            verdict = await counters.take("alice", f"t{n}", Limits(per_minute=limit))
            recent = [t for t in admitted if t > at - window_ms]
            leaves_s = (min(recent, default=at) + window_ms - at) / 1000
            if len(recent) < limit:
                assert isinstance(verdict, Window), (at, recent)
                assert verdict.used == len(recent) + 1
                assert abs(verdict.reset_s - leaves_s) < 1e-6
                admitted.append(at)
            else:
                assert isinstance(verdict, Refusal) and verdict.limit == "per_minute"
                assert abs(verdict.retry_after_s - leaves_s) < 1e-6
    finally:
        await counters.close()
    assert len(admitted) < len(times)  # the schedule did press on the limit
    assert max(sum(t <= u < t + window_ms for u in admitted) for t in admitted) == limit


async def test_a_wall_clock_set_back_holds_no_start_in_the_window() -> None:
    """In memory the window is timed by the monotonic clock: a wall clock stepped back an
    hour (NTP at boot) does not keep a key's starts in its window for that hour."""
    wall, monotonic = Clock(T0), Clock(0.0)
    counters = MemoryCounters(wall, monotonic=monotonic)
    limits = Limits(per_minute=1)
    assert isinstance(await counters.take("alice", "t1", limits), Window)
    wall.now -= 3600
    monotonic.now += 60
    assert isinstance(await counters.take("alice", "t2", limits), Window)


async def test_a_run_admitted_elsewhere_is_charged_to_its_owner(metrics: Metrics) -> None:
    """A batch taken over from a worker that died holds no ticket on its new worker: its
    tokens are charged to its owner all the same, once, and it frees no one's slot."""
    slots = Gate(Limits(concurrent=1), MemoryCounters(), metrics)
    held = await slots.admit("alice")
    slots.hold("run-here", "alice", held.ticket)
    slots.finished("batch-from-elsewhere", {"input_tokens": 10}, owner="alice")
    await slots.settled()
    with pytest.raises(RateLimited) as refused:  # alice's run here still holds her slot
        await slots.admit("alice")
    assert refused.value.details["limit"] == "concurrent"

    budget = Gate(Limits(daily_tokens=100), MemoryCounters(), metrics)
    budget.finished(
        "batch-from-elsewhere", {"input_tokens": 30, "output_tokens": 20}, owner="alice"
    )
    budget.finished("unknown-without-owner", {"input_tokens": 500})  # charged to no one
    await budget.settled()
    await budget.admit("alice")  # 50 of 100: charged once
    budget.finished("another-from-elsewhere", {"output_tokens": 50}, owner="alice")
    await budget.settled()
    with pytest.raises(RateLimited) as refused:
        await budget.admit("alice")
    assert refused.value.details["limit"] == "daily_tokens"
    assert (await budget.admit("bob")).ticket

"""Per-key limits: run starts per minute, runs in progress, tokens per UTC day. Each test
runs on the in-memory counters and on the Redis ones; the last tests share Redis counters
between two gateway apps, as replicas do."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from gateway.limits import Limits, seconds_to_midnight
from gateway.limits_redis import RedisCounters
from gateway.metrics import Metrics
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
    assert "letting a start of alice through" in caplog.text

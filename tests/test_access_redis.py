"""Two gateway apps (replicas) sharing one Redis, with a key prefix of their own per test:
a run belongs to its key on both, and the per-key counters are the same counters."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from gateway.http import keys
from tests.access_support import REDIS_URL, redis_prefix, settled
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

__all__ = ["redis_prefix"]  # a fixture

pytestmark = pytest.mark.redis

Client = TestClient[Any, Any]
ALICE = {"Authorization": "Bearer a-key"}
BOB = {"Authorization": "Bearer b-key"}
SLOW = "word " * 200


async def replicas(make_gateway: GatewayFactory, prefix: str, **settings: Any) -> list[Client]:
    shared: dict[str, Any] = {"redis_url": REDIS_URL, "redis_key_prefix": prefix}
    shared |= {"gateway_api_keys": "alice:a-key,bob:b-key", "gateway_resume_grace_s": 5.0}
    return [await make_gateway(**shared, **settings) for _ in range(2)]


async def test_another_key_cannot_see_or_cancel_a_run_on_another_replica(
    make_gateway: GatewayFactory, redis_prefix: str, fake: FakeAnthropic
) -> None:
    a, b = await replicas(make_gateway, redis_prefix)
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01))
    response = await a.post("/api/stream", json={"query": "x"}, headers=ALICE)
    run_id = (await anext(iter_events(response)))["run_id"]
    assert b.app[keys.RUNS].get(run_id) is None  # B knows the run from Redis only
    for denied in (
        await b.get(f"/api/stream/{run_id}", headers=BOB),
        await b.post(f"/api/runs/{run_id}/cancel", headers=BOB),
    ):
        assert denied.status == 404
        assert (await denied.json())["error"]["code"] == "NOT_FOUND"
    follower = await b.get(f"/api/stream/{run_id}", headers=ALICE)
    assert follower.status == 200
    cancel = await b.post(f"/api/runs/{run_id}/cancel", headers=ALICE)
    assert (await cancel.json())["cancelled"] is True
    assert (await read_events(follower))[-1]["outcome"] == "cancelled"
    response.close()


async def test_replicas_share_the_counters(
    make_gateway: GatewayFactory, redis_prefix: str, fake: FakeAnthropic
) -> None:
    a, b = await replicas(
        make_gateway, redis_prefix, gateway_rate_limit_per_min=3, gateway_max_concurrent_runs=1
    )
    fake.add(Reply([Text(SLOW, chunk=5)], delay_s=0.01), Reply([Text("ok")]), Reply([Text("ok")]))
    running = await a.post("/api/stream", json={"query": "x"}, headers=ALICE)
    run_id = (await anext(iter_events(running)))["run_id"]
    busy = await b.post("/api/stream", json={"query": "x"}, headers=ALICE)
    assert busy.status == 429 and (await busy.json())["error"]["details"]["limit"] == "concurrent"
    await b.post(f"/api/runs/{run_id}/cancel", headers=ALICE)
    await read_events(running)
    await settled(a, run_id)
    second = await read_events(await b.post("/api/stream", json={"query": "x"}, headers=ALICE))
    await settled(b, second[0]["run_id"])
    third = await read_events(await a.post("/api/stream", json={"query": "x"}, headers=ALICE))
    await settled(a, third[0]["run_id"])
    over = await b.post("/api/stream", json={"query": "x"}, headers=ALICE)
    assert over.status == 429 and (await over.json())["error"]["details"]["limit"] == "per_minute"

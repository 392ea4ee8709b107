"""A run taken over from a worker that died is charged by the worker that finishes it:
its whole usage, once, to its key, under the model it runs (the dead worker never charged
it), and its tokens count against the key's daily token limit."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import iter_events
from tests.procs.gateway import gateway_process
from tests.procs.redis import redis_server
from tests.test_access_tenants_procs import ADMIN, ADMIN_KEY, bearer, call, make_key
from tests.test_durable import QUESTION

pytestmark = pytest.mark.redis


async def follow_through_a_kill(a: Any, b: Any, secret: str) -> list[dict[str, Any]]:
    """Start a run on A, read it on B, kill A mid-turn 2: every event B shows."""
    async with aiohttp.ClientSession() as session:
        response = await session.post(
            a.url + "/api/stream", json={"query": QUESTION}, headers=bearer(secret)
        )
        first = await anext(aiter(iter_events(response)))
        follower = await session.get(
            f"{b.url}/api/stream/{first['run_id']}",
            headers={**bearer(secret), "Last-Event-ID": "1"},
        )
        seen, turn = [first], 0
        async for event in iter_events(follower):
            seen.append(event)
            turn = event.get("turn", turn) if event["type"] == "turn_start" else turn
            if event["type"] == "delta" and turn == 2 and a.process.returncode is None:
                a.process.kill()  # turn 1 is checkpointed; A never ends the run
        response.close()
    return seen


@pytest.mark.timeout(180)
async def test_a_run_taken_over_is_charged_once_under_its_model(tmp_path: Path) -> None:
    async with redis_server(tmp_path) as redis:
        env = {
            "REDIS_URL": redis.url,
            "REDIS_KEY_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
            "GATEWAY_UPSTREAM": "demo",
            "GATEWAY_DEMO_PACING_MS": "30",
            "GATEWAY_TAKEOVER_S": "2.0",
            "GATEWAY_ADMIN_KEY": ADMIN_KEY,
        }
        async with gateway_process(tmp_path, **env) as a, gateway_process(tmp_path, **env) as b:
            made = await make_key(a, name="survivor", limits={"daily_tokens": 1})
            seen = await follow_through_a_kill(a, b, made["secret"])
            final = seen[-1]
            assert final["type"] == "final" and final["outcome"] == "completed"
            assert any(e["type"] == "warning" and e["code"] == "run_resumed" for e in seen)
            spend = await charged(b, made["key_id"])
            assert spend["runs"] == 1 and list(spend["by_model"]) == [final["model"]]
            for field in ("input_tokens", "output_tokens"):
                assert spend[field] == final["usage"][field] > 0
            status, refused = await call(
                b, "POST", "/api/research", bearer(made["secret"]), {"query": QUESTION}
            )
            assert status == 429 and refused["error"]["details"]["limit"] == "daily_tokens"


async def charged(gateway: Any, key_id: str) -> dict[str, Any]:
    """The key's spend today, once a run has been charged (or after 5 s)."""
    deadline = time.monotonic() + 5
    while True:
        _, shown = await call(gateway, "GET", f"/api/admin/keys/{key_id}", ADMIN)
        today: dict[str, Any] = shown["spend"]["today"]
        if today["runs"] or time.monotonic() > deadline:
            return today
        await asyncio.sleep(0.1)

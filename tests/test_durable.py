"""Durable runs, for real: two gateway processes on one redis-server of the test's own.
The worker driving a run is killed (SIGKILL) after its first turn; the other takes the run
over and finishes it, and readers see one whole log. Redis stopped mid-run: the gateway
says so on /health, the run ends in memory, and Redis gets all of it once it is back."""

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
from tests.procs.redis import RedisServer, redis_server

pytestmark = pytest.mark.redis

QUESTION = "What was Apple revenue in fiscal 2023 and how did it compare to Microsoft?"
TAKEOVER_S = 2.0


def settings(redis: RedisServer, **more: str) -> dict[str, str]:
    return {
        "REDIS_URL": redis.url,
        "REDIS_KEY_PREFIX": f"t{uuid.uuid4().hex[:6]}:",
        "GATEWAY_UPSTREAM": "demo",
        "GATEWAY_DEMO_PACING_MS": "30",
        "GATEWAY_TAKEOVER_S": str(TAKEOVER_S),
        **more,
    }


async def read_all(session: aiohttp.ClientSession, url: str, after: int) -> list[dict[str, Any]]:
    async with session.get(url, headers={"Last-Event-ID": str(after)}) as response:
        assert response.status == 200, await response.text()
        return [event async for event in iter_events(response)]


def assert_one_whole_log(events: list[dict[str, Any]], first: int = 1) -> None:
    assert [e["seq"] for e in events] == list(range(first, first + len(events)))
    assert [e["type"] for e in events].count("final") == 1 and events[-1]["type"] == "final"


async def test_a_killed_workers_run_finishes_on_another(tmp_path: Path) -> None:
    async with redis_server(tmp_path) as redis:
        env = settings(redis)
        async with (
            gateway_process(tmp_path, **env) as a,
            gateway_process(tmp_path, **env) as b,
            aiohttp.ClientSession() as session,
        ):
            response = await session.post(a.url + "/api/stream", json={"query": QUESTION})
            system_info = await anext(aiter(iter_events(response)))
            run_url = f"{b.url}/api/stream/{system_info['run_id']}"
            follower = await session.get(run_url, headers={"Last-Event-ID": "1"})
            seen = [system_info]
            killed_at = takeover_s = 0.0
            turn = 0
            async for event in iter_events(follower):  # B reads the run from Redis
                seen.append(event)
                turn = event.get("turn", turn) if event["type"] == "turn_start" else turn
                if event["type"] == "delta" and turn == 2 and not killed_at:
                    assert a.process is not None
                    a.process.kill()  # mid-turn 2: turn 1 is checkpointed
                    killed_at = time.monotonic()
                if event["type"] == "warning" and event["code"] == "run_resumed":
                    takeover_s = time.monotonic() - killed_at
            response.close()
            assert_one_whole_log(seen)
            types = [e["type"] for e in seen]
            assert types.count("system_info") == 1
            resumed = types.index("warning")
            assert seen[resumed]["code"] == "run_resumed" and seen[resumed]["turns"] == 1
            assert seen[resumed + 1]["type"] == "turn_start" and seen[resumed + 1]["turn"] == 2
            final = seen[-1]
            assert final["outcome"] == "completed" and final["turns"] == 2
            assert final["tool_calls"] > 0 and "Apple" in final["result"]
            assert 0 < takeover_s < TAKEOVER_S + 1.0
            # A reader re-attaching from the start gets the same log, from Redis or B.
            assert await read_all(session, run_url, 0) == seen
            assert await read_all(session, run_url, seen[resumed]["seq"]) == seen[resumed + 1 :]


async def test_redis_down_degrades_and_recovers_without_losing_the_run(tmp_path: Path) -> None:
    async with redis_server(tmp_path) as redis:
        env = settings(redis, GATEWAY_TAKEOVER_S="30")  # no takeover while Redis is away
        async with (
            gateway_process(tmp_path, **env) as a,
            gateway_process(tmp_path, **env) as b,
            aiohttp.ClientSession() as session,
        ):
            assert (await a.health())["redis"] == {
                "status": "ok", "last_error": None, "pending_runs": 0
            }  # fmt: skip
            response = await session.post(a.url + "/api/stream", json={"query": QUESTION})
            seen: list[dict[str, Any]] = []
            async for event in iter_events(response):
                seen.append(event)
                if len(seen) == 5:
                    await redis.stop()
                    health = await a.health()
                    assert health["status"] == "degraded" and health["redis"]["status"] == "down"
                    assert health["redis"]["last_error"]
            assert_one_whole_log(seen)  # the run went on in memory
            assert seen[-1]["outcome"] == "completed"
            await redis.start()
            async with asyncio.timeout(10):
                while (await a.health())["status"] != "healthy":
                    await asyncio.sleep(0.1)
                run_url = f"{b.url}/api/stream/{seen[0]['run_id']}"
                while (status := await b_status(session, run_url)) != 200:
                    assert status in (404, 502)  # not yet written; B not yet reconnected
                    await asyncio.sleep(0.1)
            assert await read_all(session, run_url, 0) == seen  # Redis caught up


async def b_status(session: aiohttp.ClientSession, url: str) -> int:
    async with session.get(url) as response:
        return response.status

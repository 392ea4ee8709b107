"""Keys as tenants with real processes: `python -m gateway` on SQLite (one worker, killed
and started again: keys, limits and spend survive) and on Redis with two workers (a key
made on one works on both, a revocation reaches both within a second and ends the key's
runs with KEY_REVOKED, a key's concurrent runs over both never pass its limit)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import iter_events
from tests.procs.gateway import GatewayProcess, gateway_process
from tests.procs.redis import redis_server
from tests.test_workers import two_workers

pytestmark = pytest.mark.redis

ADMIN_KEY = "admin-secret-0123456789"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
SLOW = {"GATEWAY_UPSTREAM": "demo", "GATEWAY_DEMO_PACING_MS": "150"}
FAST = {"GATEWAY_UPSTREAM": "demo", "GATEWAY_DEMO_PACING_MS": "0"}
QUESTION = "What was Apple revenue in fiscal 2023?"


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


async def call(
    gateway: GatewayProcess, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    """One request on a new connection (so the kernel may pick either worker)."""
    connector = aiohttp.TCPConnector(force_close=True)
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.request(method, gateway.url + path, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def make_key(gateway: GatewayProcess, **body: Any) -> dict[str, Any]:
    status, made = await call(gateway, "POST", "/api/admin/keys", ADMIN, body)
    assert status == 201, made
    return dict(made)


async def statuses(gateway: GatewayProcess, secret: str, n: int = 12) -> set[int]:
    found = set()
    for _ in range(n):
        found.add((await call(gateway, "GET", "/api/keys/self", bearer(secret)))[0])
    return found


async def revoked_stream(session: aiohttp.ClientSession, url: str, secret: str) -> dict[str, Any]:
    """Start a slow run; its last event once it ends."""
    response = await session.post(
        url + "/api/stream", json={"query": QUESTION}, headers=bearer(secret)
    )
    assert response.status == 200
    last: dict[str, Any] = {}
    async for event in iter_events(response):
        last = event
    return last


@pytest.mark.timeout(180)
async def test_sqlite_keeps_keys_limits_and_spend_across_a_kill(tmp_path: Path) -> None:
    env = {**FAST, "GATEWAY_ADMIN_KEY": ADMIN_KEY, "GATEWAY_KEYS_DB": str(tmp_path / "k.db")}
    async with gateway_process(tmp_path, **env) as gateway:
        made = await make_key(gateway, name="persisted", limits={"daily_usd": 50})
        status, answer = await call(
            gateway, "POST", "/api/research", bearer(made["secret"]), {"query": QUESTION}
        )
        assert status == 200, answer
        await asyncio.sleep(0.5)  # the charge is written when the run's task ends
        _, before = await call(gateway, "GET", f"/api/admin/keys/{made['key_id']}", ADMIN)
        assert before["spend"]["today"]["runs"] == 1
        await gateway.stop(signal.SIGKILL)
    async with gateway_process(tmp_path, **{**env, **SLOW}) as gateway:
        _, after = await call(gateway, "GET", f"/api/admin/keys/{made['key_id']}", ADMIN)
        assert after["limits"] == {"daily_usd": 50} and after["spend"] == before["spend"]
        assert await statuses(gateway, made["secret"], 2) == {200}
        async with aiohttp.ClientSession() as session:
            running = asyncio.create_task(revoked_stream(session, gateway.url, made["secret"]))
            await asyncio.sleep(0.5)
            await call(gateway, "DELETE", f"/api/admin/keys/{made['key_id']}", ADMIN)
            last = await asyncio.wait_for(running, 5)
        assert last["type"] == "error" and last["error"]["code"] == "KEY_REVOKED"
        assert await statuses(gateway, made["secret"], 2) == {401}
        _, listing = await call(gateway, "GET", "/api/admin/keys", ADMIN)
        assert made["secret"] not in str(listing)


@pytest.mark.timeout(300)
async def test_two_workers_on_redis_share_keys_and_revocations(tmp_path: Path) -> None:
    env = {**SLOW, "GATEWAY_ADMIN_KEY": ADMIN_KEY}
    async with redis_server(tmp_path) as redis, two_workers(tmp_path, redis.url, **env) as gw:
        made = await make_key(gw, name="fleet")
        assert await statuses(gw, made["secret"]) == {200}  # at once, on either worker
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
            runs = [
                asyncio.create_task(revoked_stream(s, gw.url, made["secret"])) for _ in range(4)
            ]
            await asyncio.sleep(1.5)
            revoked_at = time.monotonic()
            status, _ = await call(gw, "DELETE", f"/api/admin/keys/{made['key_id']}", ADMIN)
            assert status == 200
            lasts = await asyncio.wait_for(asyncio.gather(*runs), 10)
            took_s = time.monotonic() - revoked_at
        assert [last["error"]["code"] for last in lasts] == ["KEY_REVOKED"] * 4
        assert took_s < 1.5  # within a second of the revocation, plus the streams' writes
        # The contract is 401 on every worker within a second: the worker that did not
        # take the DELETE learns of it at its next poll of the store (every 0.25 s). When
        # all four runs were on the worker that took it, they end before that poll.
        await asyncio.sleep(max(0.0, revoked_at + 1.0 - time.monotonic()))
        assert await statuses(gw, made["secret"]) == {401}


@pytest.mark.timeout(300)
async def test_a_keys_concurrent_runs_over_two_workers_keep_to_its_limit(tmp_path: Path) -> None:
    """The Redis counters take a start atomically: over both workers, never more than the
    key's limit at once (0 over it: the documented bound)."""
    env = {**SLOW, "GATEWAY_ADMIN_KEY": ADMIN_KEY}
    async with redis_server(tmp_path) as redis, two_workers(tmp_path, redis.url, **env) as gw:
        made = await make_key(gw, name="pair", limits={"concurrent_runs": 2})
        other = await make_key(gw, name="roomy", limits={"concurrent_runs": 8})
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:

            async def start(secret: str) -> int:
                response = await s.post(
                    gw.url + "/api/stream", json={"query": QUESTION}, headers=bearer(secret)
                )
                started.append(response)
                return response.status

            started: list[aiohttp.ClientResponse] = []
            tight = await asyncio.gather(*(start(made["secret"]) for _ in range(8)))
            roomy = await asyncio.gather(*(start(other["secret"]) for _ in range(4)))
            for response in started:
                response.close()
        assert sorted(tight) == [200, 200, *([429] * 6)]
        assert roomy == [200] * 4

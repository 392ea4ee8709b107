"""`python -m gateway --workers N`, for real: worker processes on one port, a worker killed
and restarted, a clean stop on SIGTERM, and the refusal without Redis."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import iter_events
from tests.procs.gateway import GatewayProcess, gateway_process
from tests.procs.redis import redis_server

pytestmark = pytest.mark.redis

DEMO = {"GATEWAY_UPSTREAM": "demo", "GATEWAY_DEMO_PACING_MS": "40"}
QUESTION = "What was Apple revenue in fiscal 2023 and how did it compare to Microsoft?"


async def worker_pids(gateway: GatewayProcess, want: int, timeout_s: float = 20) -> set[int]:
    """Worker pids answering /health, asked on new connections until `want` are seen."""
    seen: set[int] = set()
    async with asyncio.timeout(timeout_s):
        while len(seen) < want:
            try:
                health = await gateway.health()
            except aiohttp.ClientError:
                await asyncio.sleep(0.05)
                continue
            assert health["redis"]["status"] == "ok"
            seen.add(health["worker"]["pid"])
    return seen


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_several_workers_need_redis(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path, "--workers", "2", **DEMO)
    await gateway.start(wait=False)
    assert await gateway.stop(signal.SIGCONT) != 0
    assert "GATEWAY_WORKERS=2 needs REDIS_URL" in gateway.output()


async def test_workers_share_a_port_come_back_and_stop_cleanly(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path) as redis,
        gateway_process(tmp_path, "--workers", "2", REDIS_URL=redis.url, **DEMO) as gateway,
    ):
        first = await worker_pids(gateway, 2)
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        again = await worker_pids(gateway, 2)  # the survivor and a new one
        assert victim not in again and len(again - first) >= 1
        async with aiohttp.ClientSession() as session:
            response = await session.post(gateway.url + "/api/stream", json={"query": QUESTION})
            seen: list[dict[str, Any]] = []
            async for event in iter_events(response):
                seen.append(event)
                if len(seen) == 3:
                    assert gateway.process is not None
                    gateway.process.send_signal(signal.SIGTERM)
        assert [e["type"] for e in seen][-2:] == ["warning", "final"]
        assert seen[-1]["outcome"] == "cancelled"
        assert await gateway.stop() == 0
        assert not any(alive(pid) for pid in again)


async def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path) as redis,
        gateway_process(tmp_path, "--workers", "2", REDIS_URL=redis.url, **DEMO) as gateway,
    ):
        pids = await worker_pids(gateway, 2)
        await gateway.stop(signal.SIGKILL)  # no SIGTERM from it: the kernel tells them
        async with asyncio.timeout(20):
            while any(alive(pid) for pid in pids):
                await asyncio.sleep(0.1)

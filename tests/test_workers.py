"""`python -m gateway --workers N`, for real: worker processes on one port, a worker killed
and restarted, a clean stop on SIGTERM, the refusal without Redis, one /metrics for all the
workers, and a supervisor that gives up on workers that cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from gateway.ops import fleet
from tests.conftest import iter_events
from tests.procs.gateway import GatewayProcess
from tests.procs.load import Load, Sample, counted, scrape, total
from tests.procs.redis import redis_server

pytestmark = pytest.mark.redis

DEMO = {"GATEWAY_UPSTREAM": "demo", "GATEWAY_DEMO_PACING_MS": "40"}
BOOT_S = 60  # a worker's start on a busy machine (imports, the demo model, Redis)
QUESTION = "What was Apple revenue in fiscal 2023 and how did it compare to Microsoft?"


async def worker_pids(gateway: GatewayProcess, want: int, timeout_s: float = BOOT_S) -> set[int]:
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


@contextlib.asynccontextmanager
async def two_workers(tmp_path: Path, redis_url: str, **env: str) -> AsyncIterator[GatewayProcess]:
    """`python -m gateway --workers 2`, once both workers answer; stopped at the end."""
    gateway = GatewayProcess(tmp_path, "--workers", "2", REDIS_URL=redis_url, **env)
    try:
        await gateway.start(wait=False)
        await worker_pids(gateway, 2)
        yield gateway
    finally:
        await gateway.stop()


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


@pytest.mark.timeout(300)
async def test_workers_share_a_port_come_back_and_stop_cleanly(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path) as redis,
        two_workers(tmp_path, redis.url, **DEMO) as gateway,
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


@pytest.mark.timeout(300)
async def test_workers_stop_when_their_supervisor_is_killed(tmp_path: Path) -> None:
    async with (
        redis_server(tmp_path) as redis,
        two_workers(tmp_path, redis.url, **DEMO) as gateway,
    ):
        pids = await worker_pids(gateway, 2)
        await gateway.stop(signal.SIGKILL)  # no SIGTERM from it: the kernel tells them
        async with asyncio.timeout(BOOT_S):
            while any(alive(pid) for pid in pids):
                await asyncio.sleep(0.1)


def assert_never_down(scrapes: list[dict[Sample, float]]) -> None:
    """No counter or histogram sample is ever lower than in an earlier scrape, nor gone."""
    for before, after in itertools.pairwise(scrapes):
        for key, value in counted(before).items():
            assert key in after, f"{key} vanished"
            assert after[key] >= value, f"{key} went down: {value} -> {after[key]}"


@pytest.mark.timeout(300)
async def test_metrics_of_two_workers_add_up_and_never_go_down(tmp_path: Path) -> None:
    """20 scrapes of two workers under load: every scrape is the sum of both (whichever
    worker answers), a worker killed mid-way keeps its counts, a stopped one does not
    hang the scrape."""
    pacing = {**DEMO, "GATEWAY_DEMO_PACING_MS": "10"}
    async with (
        redis_server(tmp_path) as redis,
        two_workers(tmp_path, redis.url, **pacing) as gateway,
    ):
        await scrapes_under_load(gateway)


async def scrapes_under_load(gateway: GatewayProcess) -> None:
    """The checks of the test above, on a fleet of two healthy workers."""
    load, scrapes = Load(gateway.url), []
    async with load.running():  # 10 scrapes while runs start and end on both workers
        for _ in range(10):
            await asyncio.sleep(0.3)
            scrapes.append((await scrape(gateway.url))[1])
    assert load.completed >= 6 and load.broken == 0
    for _ in range(40):  # a run is counted just after its `final` is sent
        settled = (await scrape(gateway.url))[1]
        if total(settled, "sdk_runs_total") == load.completed:
            break
        await asyncio.sleep(0.25)
    assert total(settled, "sdk_runs_total", outcome="completed") == load.completed
    assert total(settled, "sdk_runs_started_total") == load.completed
    assert total(settled, "claude_request_duration_ms_count", route="/api/stream") == (
        load.completed
    )
    assert total(settled, "gateway_metrics_workers", state="answered") == 2
    assert total(settled, "sdk_active_streams") == 0
    assert total(settled, "gateway_build_info") == 1
    scrapes.append(settled)

    async with load.running():  # 10 more, a worker killed after the 4th
        for index in range(9):
            if index == 4:
                victim = (await gateway.health())["worker"]["pid"]
                os.kill(victim, signal.SIGKILL)
            await asyncio.sleep(0.3)
            scrapes.append((await scrape(gateway.url))[1])
    assert total(scrapes[-1], "gateway_metrics_workers", state="gone") == 1
    assert_never_down(scrapes)
    assert len(scrapes) == 20

    # A worker that does not answer (stopped) costs the scrape SCRAPE_TIMEOUT_S, and
    # its last numbers count. A scrape the kernel hands to it waits: try another.
    pids = await worker_pids(gateway, 2)
    stopped = min(pids)
    os.kill(stopped, signal.SIGSTOP)
    try:
        for _ in range(20):
            started = time.monotonic()
            with contextlib.suppress(TimeoutError):
                late = (await scrape(gateway.url, timeout_s=fleet.SCRAPE_TIMEOUT_S + 2))[1]
                break
        else:
            raise AssertionError("every scrape went to the stopped worker")
        assert time.monotonic() - started < fleet.SCRAPE_TIMEOUT_S + 2
        assert total(late, "gateway_metrics_workers", state="late") == 1
        assert_never_down([*scrapes, late])
    finally:
        os.kill(stopped, signal.SIGCONT)


@pytest.mark.timeout(300)
async def test_workers_that_cannot_start_stop_the_supervisor(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text("ops-key not-a-sha256\n")
    async with redis_server(tmp_path) as redis:
        gateway = GatewayProcess(
            tmp_path, "--workers", "2", REDIS_URL=redis.url, GATEWAY_API_KEYS_FILE=str(keys_file),
            GATEWAY_WORKER_BOOT_FAILURES="2", **DEMO,
        )  # fmt: skip
        await gateway.start(wait=False)
        assert gateway.process is not None
        async with asyncio.timeout(4 * BOOT_S):
            code = await gateway.process.wait()
    assert code == 1
    said = [
        line for line in gateway.output().splitlines() if "ERROR gateway.ops.supervisor" in line
    ]
    assert len(said) == 1, gateway.output()
    assert "failed to start 2 times in a row" in said[0]
    assert "GATEWAY_API_KEYS_FILE line 1: want `name sha256hex`" in said[0]

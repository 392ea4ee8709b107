"""One SEC budget and one SEC cache for every process on one Redis: two processes of their
own burst at a fake SEC, and SEC sees at most 8 requests in any second."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from tests.procs.redis import redis_server
from tests.tools.conftest import FakeSecHosts
from tools.config import ToolsConfig
from tools.toolset import SEC_REQUESTS_PER_SECOND, open_toolset

pytestmark = pytest.mark.redis

BURST = 12  # per process: 24 requests, three seconds' worth of budget


async def ready_to_burst(config: ToolsConfig, paths: list[str]) -> asyncio.subprocess.Process:
    """A process of its own, its toolset open, waiting for the word to burst."""
    payload = json.dumps(dataclasses.asdict(config))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.tools.sec_burst", payload, *paths,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    assert await process.stdout.readline() == b"ready\n"
    return process


async def burst(process: asyncio.subprocess.Process) -> list[str]:
    """Start the burst; its answers, one line per path."""
    out, _ = await process.communicate(b"go\n")
    assert process.returncode == 0
    return out.decode().splitlines()


def busiest_second(times: list[float]) -> int:
    """The most requests that arrived inside any one-second window."""
    times = sorted(times)
    return max(sum(1 for t in times[i:] if t < start + 1.0) for i, start in enumerate(times))


async def two_bursts(fake_sec: FakeSecHosts, config: ToolsConfig) -> list[float]:
    fake_sec.fake.requests.clear()
    paths = [[f"/submissions/CIK{p}{n:09d}.json" for n in range(BURST)] for p in (1, 2)]
    processes = await asyncio.gather(*(ready_to_burst(config, p) for p in paths))
    answers = await asyncio.gather(*(burst(process) for process in processes))
    assert all(len(lines) == BURST for lines in answers)
    assert len(fake_sec.fake.requests) == 2 * BURST  # nothing was skipped
    return [r.at for r in fake_sec.fake.requests]


async def test_two_processes_stay_under_one_budget(fake_sec: FakeSecHosts, tmp_path: Path) -> None:
    async with redis_server(tmp_path) as server:
        shared = fake_sec.config(redis_url=server.url, redis_key_prefix="t:")
        assert busiest_second(await two_bursts(fake_sec, shared)) <= SEC_REQUESTS_PER_SECOND
    # The same burst without Redis: each process keeps its own 8/s, SEC sees twice that.
    alone = await two_bursts(fake_sec, fake_sec.config())
    assert busiest_second(alone) > SEC_REQUESTS_PER_SECOND


async def test_one_process_answers_another_from_the_shared_cache(
    fake_sec: FakeSecHosts, tmp_path: Path
) -> None:
    path = "/submissions/CIK0000320193.json"
    async with redis_server(tmp_path) as server:
        config = fake_sec.config(redis_url=server.url, redis_key_prefix="t:")
        bodies = []
        for _ in range(2):  # two toolsets: two processes' worth of in-memory caches
            async with open_toolset(config) as toolset:
                bodies.append(await toolset.services["sec"].source.get_text("data", path))
        assert bodies[0] == bodies[1] and '"cik"' in bodies[0]
        assert fake_sec.fake.paths("data") == [path]
        await server.stop()  # Redis gone: a miss, SEC answers, nothing fails
        async with open_toolset(config) as toolset:
            assert await toolset.services["sec"].source.get_text("data", path) == bodies[0]
        assert fake_sec.fake.paths("data") == [path, path]

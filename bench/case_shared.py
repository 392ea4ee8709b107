"""Case 7: shared run state, the way past one core. Two gateway workers share one Redis
(`REDIS_URL`), as several processes on several cores would: what the owner's mirror costs
per relayed event, and how fast another worker replays a run it does not own.

Skipped when no `redis-server` is installed. Redis runs with persistence off, pinned with
the upstream and the load client, so its CPU is not charged to the gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from collections.abc import AsyncIterator

import redis.asyncio as redis

from bench.common import median
from bench.procs import pin
from bench.run import Bench, Row
from bench.script import Scenario


@contextlib.asynccontextmanager
async def redis_server(bench: Bench) -> AsyncIterator[str | None]:
    server = shutil.which("redis-server")
    if server is None:
        yield None
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = await asyncio.create_subprocess_exec(
        server, *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    pin(process.pid, bench.cores.load)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(100):
            with contextlib.suppress(OSError, redis.ConnectionError):
                if await client.ping():
                    break
            await asyncio.sleep(0.1)
        await client.aclose()
        yield url
    finally:
        process.terminate()
        await process.wait()


async def shared_state(bench: Bench) -> None:
    async with redis_server(bench) as url:
        if url is None:
            bench.details["shared"] = {"skipped": "no redis-server on this machine"}
            return
        await _measure(bench, url)


async def _measure(bench: Bench, url: str) -> None:
    paced = Scenario(n=int(50 * bench.pick(3.0, 8.0)), rate=50.0)
    per_event: dict[str, list[float]] = {"gateway": [], "gateway+redis": []}
    owner_replay: list[float] = []
    other_replay: list[float] = []
    async with contextlib.AsyncExitStack() as stack:
        plain = await stack.enter_async_context(bench.system("gateway"))
        owner = await stack.enter_async_context(bench.system("gateway", redis=url))
        other = await stack.enter_async_context(bench.system("gateway", redis=url))
        for _ in range(bench.pick(1, 3)):
            for name, proc in (("gateway", plain), ("gateway+redis", owner)):
                cpu, result = await bench.cpu_of(proc, paced, streams=50, ramp_s=1.0)
                per_event[name].append(cpu / max(1, result["deltas"]) * 1e6)
            first = await bench.load(owner, Scenario(n=10_000), detail=True)
            run_id = first["detail"][0]["run_id"]
            for proc, rates in ((owner, owner_replay), (other, other_replay)):
                again = await bench.load(
                    proc,
                    None,
                    method="GET",
                    path=f"/api/stream/{run_id}",
                    headers={"Last-Event-ID": "0"},
                )
                if again["errors"] or again["deltas"] != 10_000:
                    raise RuntimeError(f"re-attach failed: {again['error_samples']}")
                rates.append(again["frames"] / again["wall_s"])
    bench.details["shared"] = {
        "per_event_us": per_event,
        "owner_replay": owner_replay,
        "other_replay": other_replay,
    }
    ratio = median(
        [r / p for r, p in zip(per_event["gateway+redis"], per_event["gateway"], strict=True)]
    )
    bench.add(
        Row(
            "7",
            "CPU per paced event on the run's owner, with REDIS_URL (mirror on)",
            median(per_event["gateway+redis"]),
            "us",
            "gateway without Redis",
            median(per_event["gateway"]),
            ratio=ratio,
        )
    )
    bench.add(
        Row(
            "7",
            "Re-attach on another worker: replay a 10,000-event run from Redis",
            median(other_replay),
            "events/s",
            "replay on the owner",
            median(owner_replay),
        )
    )

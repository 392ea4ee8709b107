"""Soak: thousands of runs of mixed kinds against one gateway, its RSS sampled as they go.

Kinds, in turn: a text answer read to the end; a run of two parallel tool calls; an
upstream that fails mid-stream (the run ends with its `error`); a slow stream the client
drops after its first bytes; a hostile request refused before any run (a history the API
would refuse). After a warm-up, memory should stay flat: reported as the growth per 1,000
runs; open fds (counted after the first batch, once the keep-alive pools are full) and
active runs should be back where they were once the gateway is idle again.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import aiohttp

from bench.procs import Proc
from bench.run import SYSTEMS, Bench, Row
from bench.script import Scenario

CONCURRENCY = 16
TTL_S = 5
"""Finished runs stay re-attachable, and sessions kept, this long (600 s and 3,600 s by
default): short, so that thousands of runs in a minute reach the steady state where as
much expires as is added, which is what a plateau means."""
BATCH = 250
BAD_HISTORY = [{"role": "user", "content": [{"type": "text", "text": ""}]}]


async def soak(bench: Bench) -> None:
    runs = bench.pick(500, 10_000)  # --quick runs it too, small
    warmup = bench.pick(250, 2_000)
    args = [*SYSTEMS["gateway"], "--upstream", bench.upstream.url, "--retention-s", str(TTL_S)]
    proc = await Proc.start("gateway-soak", args, bench.cores.server)
    try:
        samples: list[tuple[int, int, int]] = []  # (runs done, RSS kB, fds)
        done = 0
        while done < runs:
            await _batch(bench.session, proc, done, BATCH)
            done += BATCH
            samples.append((done, proc.rss_kb(), _fds(proc)))
        idle = await _idle(bench.session, proc)
    finally:
        await proc.stop()
    fds_start, fds_end = samples[0][2], idle["fds"]
    after = [s for s in samples if s[0] > warmup]
    first, last = after[0], after[-1]
    per_1000 = (last[1] - first[1]) / ((last[0] - first[0]) / 1000) if last != first else 0.0
    growth = per_1000 / first[1] * 100
    plateau = max(s[1] for s in after) / 1024
    bench.details["soak"] = {"samples": samples, "fds": [fds_start, fds_end], "idle": idle}
    bench.add(Row("soak", f"{runs} mixed runs: RSS after warm-up (max)", plateau, "MB"))
    bench.add(
        Row("soak", "RSS growth per 1,000 runs after warm-up", growth, "%",
            target="<= 5 %", passed=growth <= 5)
    )  # fmt: skip
    bench.add(
        Row("soak", "open fds: end minus start (idle)", fds_end - fds_start, "fds",
            target="<= 2", passed=fds_end - fds_start <= 2)
    )  # fmt: skip
    bench.add(
        Row("soak", "active runs once idle", idle["active_runs"], "runs",
            target="0", passed=idle["active_runs"] == 0)
    )  # fmt: skip


async def _batch(session: aiohttp.ClientSession, proc: Proc, start: int, count: int) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(n: int) -> None:
        async with gate:
            await KINDS[n % len(KINDS)](session, proc.url)

    await asyncio.gather(*(one(n) for n in range(start, start + count)))


async def _text(session: aiohttp.ClientSession, url: str) -> None:
    async with session.post(f"{url}/api/stream", json={"query": Scenario(n=50).query()}) as r:
        body = await r.read()
        assert b'"type":"final"' in body, body[-400:]


async def _tools(session: aiohttp.ClientSession, url: str) -> None:
    scenario = Scenario(kind="tools", tools=2, seconds=0.05)
    async with session.post(f"{url}/api/stream", json={"query": scenario.query()}) as r:
        body = await r.read()
        assert b'"tool_calls":2' in body, body[-400:]


async def _fault(session: aiohttp.ClientSession, url: str) -> None:
    async with session.post(
        f"{url}/api/stream", json={"query": Scenario(kind="fault").query()}
    ) as r:
        await r.read()


async def _drop(session: aiohttp.ClientSession, url: str) -> None:
    scenario = Scenario(n=400, rate=200)
    async with session.post(f"{url}/api/stream", json={"query": scenario.query()}) as r:
        await r.content.readany()
        r.close()  # the client leaves mid-stream


async def _hostile(session: aiohttp.ClientSession, url: str) -> None:
    async with session.post(f"{url}/api/stream", json={"messages": BAD_HISTORY}) as r:
        assert r.status == 400, r.status


KINDS = (_text, _tools, _fault, _drop, _hostile)


async def _idle(session: aiohttp.ClientSession, proc: Proc) -> dict[str, Any]:
    """/health once the dropped runs have ended (their grace period passed), and RSS and
    fds once the retention period has passed too (one more run lets the expired go)."""
    for _ in range(120):
        async with session.get(f"{proc.url}/health") as r:
            health: dict[str, Any] = await r.json()
        if health["active_runs"] == 0:
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(TTL_S + 1)
    await _text(session, proc.url)
    return {"active_runs": health["active_runs"], "rss_kb": proc.rss_kb(), "fds": _fds(proc)}


def _fds(proc: Proc) -> int:
    return len(os.listdir(f"/proc/{proc.pid}/fd"))

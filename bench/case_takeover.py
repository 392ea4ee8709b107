"""Case 8: durable runs. Two gateway workers share a local `redis-server`; a run on one
is in the middle of a tool call when that worker is killed (SIGKILL). A reader attached
on the other worker times the gap until the `run_resumed` warning (the takeover), and
checks the run still ends with one terminal event and no gap in `seq`.

Skipped when no `redis-server` is installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from bench.case_shared import redis_server
from bench.common import median
from bench.procs import Proc
from bench.run import Bench, Row
from bench.script import Scenario

TAKEOVER_S = 10.0  # the default of GATEWAY_TAKEOVER_S
RUN = Scenario(kind="tools", tools=1, seconds=4.0)  # the worker dies during the tool call


async def takeover(bench: Bench) -> None:
    async with redis_server(bench) as url:
        if url is None:
            bench.details["takeover"] = {"skipped": "no redis-server on this machine"}
            return
        times = [await _one(bench, url) for _ in range(bench.pick(2, 3))]
    bench.details["takeover"] = {"seconds": times, "takeover_s": TAKEOVER_S}
    bench.add(
        Row(
            "8",
            "Takeover: a killed worker's run resumes on another (run_resumed seen)",
            median(times),
            "s",
            "GATEWAY_TAKEOVER_S",
            TAKEOVER_S,
            target=f"<= {TAKEOVER_S:g} s",
            passed=max(times) <= TAKEOVER_S,
        )
    )


async def _one(bench: Bench, url: str) -> float:
    args = ["bench.serve", "--upstream", bench.upstream.url, "--redis", url]
    args += ["--takeover-s", str(TAKEOVER_S)]
    owner = await Proc.start("gateway-takeover-a", args, bench.cores.server)
    other = await Proc.start("gateway-takeover-b", args, bench.cores.server)
    try:
        return await _killed_mid_run(bench, owner, other)
    finally:
        await other.stop()
        await owner.stop()


async def _killed_mid_run(bench: Bench, owner: Proc, other: Proc) -> float:
    session = bench.session
    async with session.post(owner.url + "/api/stream", json={"query": RUN.query()}) as first:
        run_id = json.loads((await first.content.readuntil(b"\n\n")).split(b"data: ")[1])["run_id"]
        follow = f"{other.url}/api/stream/{run_id}"
        async with session.get(follow, headers={"Last-Event-ID": "1"}) as response:
            seqs = [1]
            killed_at = resumed_at = 0.0
            async for event in _events(response):
                seqs.append(event["seq"])
                if (
                    event["type"] == "tool_call"
                    and event["phase"] == "tool_executing"
                    and not killed_at
                ):
                    owner.process.kill()
                    killed_at = time.monotonic()
                elif event["type"] == "warning" and event["code"] == "run_resumed":
                    resumed_at = time.monotonic()
                elif event["type"] == "final":
                    break
    if not killed_at or not resumed_at or seqs != list(range(1, len(seqs) + 1)):
        raise RuntimeError(f"the run was not taken over whole: {seqs}")
    return resumed_at - killed_at


async def _events(response: Any) -> AsyncIterator[dict[str, Any]]:
    async for block in _blocks(response):
        for line in block.split(b"\n"):
            if line.startswith(b"data: "):
                yield json.loads(line[6:])


async def _blocks(response: Any) -> AsyncIterator[bytes]:
    with contextlib.suppress(asyncio.IncompleteReadError):
        while True:
            yield await response.content.readuntil(b"\n\n")

"""What a server under test reports about itself at `GET /_bench/stats`: CPU time (the
process clock, all threads, nanoseconds), RSS, garbage-collection pauses by generation and
event-loop lag. Every system under test (gateway and reference relays) carries the same
probe, so its small cost is the same everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from bench.common import percentile, rss_kb, schedstat

LAG_TICK_S = 0.02


class Probe:
    def __init__(self) -> None:
        self.gc_started = 0.0
        self.reset()
        gc.callbacks.append(self._on_gc)

    def reset(self) -> None:
        self.gc_pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.lags: list[float] = []

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.gc_started = time.perf_counter()
        else:
            pauses = self.gc_pauses[int(info["generation"])]
            if len(pauses) < 100_000:
                pauses.append((time.perf_counter() - self.gc_started) * 1000)

    async def watch_loop(self) -> None:
        """Ticks every 20 ms and records how late each tick ran (event-loop lag)."""
        while True:
            due = time.perf_counter() + LAG_TICK_S
            await asyncio.sleep(LAG_TICK_S)
            if len(self.lags) < 100_000:
                self.lags.append(max(0.0, (time.perf_counter() - due) * 1000))

    def stats(self) -> dict[str, Any]:
        gc_stats = {
            str(gen): {"count": len(p), "max_ms": max(p, default=0.0), "total_ms": sum(p)}
            for gen, p in self.gc_pauses.items()
        }
        run_ns, wait_ns = schedstat()
        return {
            "cpu_ns": time.process_time_ns(),
            "run_ns": run_ns,
            "wait_ns": wait_ns,
            "rss_kb": rss_kb(),
            "gc": gc_stats,
            "lag_p99_ms": percentile(self.lags, 99) if self.lags else 0.0,
            "lag_max_ms": max(self.lags, default=0.0),
        }


_PROBE = web.AppKey("bench_probe", Probe)


async def _stats(request: web.Request) -> web.Response:
    probe = request.app[_PROBE]
    body = probe.stats()
    if request.query.get("reset") == "1":
        probe.reset()
    return web.json_response(body)


def install(app: web.Application) -> None:
    """Add the probe's route and its loop watcher to an app before it starts."""
    app[_PROBE] = Probe()
    app.router.add_get("/_bench/stats", _stats)
    app.cleanup_ctx.append(_watcher)


async def _watcher(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[_PROBE].watch_loop())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

"""The shared state of one bench run: the mode, the cores, the upstream, and the results.

A `Row` is one line of the BENCH.md table: a figure, the reference it was measured
against in the same run, their ratio, the target and whether it was met.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import Interval, cpu_pressure_us
from bench.procs import ROOT, Cores, Proc, run_load
from bench.script import Scenario

CAPPED_RUNS = 1_000
"""`gateway-capped` refuses runs past this many (GATEWAY_MAX_RUNS_PER_PROCESS): case 2
runs it at the levels above, to show what the cap keeps for the streams it admits."""

SYSTEMS: dict[str, list[str]] = {
    "relay-raw": ["bench.relays", "raw"],
    "relay-sdk-events": ["bench.relays", "sdk-events"],
    "relay-sdk-helper": ["bench.relays", "sdk-helper"],
    "gateway": ["bench.serve", "--read-path", "raw"],
    "gateway-sdk-helper": ["bench.serve", "--read-path", "helper"],
    "gateway-openai": ["bench.serve", "--upstream-kind", "openai"],
    # The event loop lever, A/B in the same run: the gateway on asyncio's own loop.
    "gateway-asyncio": ["bench.serve", "--read-path", "raw", "--event-loop", "asyncio"],
    "gateway-capped": ["bench.serve", "--read-path", "raw", "--max-runs", str(CAPPED_RUNS)],
    # The compile's lever, A/B in the same run: every compiled module run from its source.
    "gateway-source": ["bench.serve", "--read-path", "raw"],
}
SYSTEM_ENV: dict[str, dict[str, str]] = {"gateway-source": {"GATEWAY_PURE_PYTHON": "1"}}
"""Variables a system runs with: the children's environment drops every `GATEWAY_*`."""


def env_wrapper(name: str) -> tuple[str, ...]:
    """`env K=V ...` before a system's command when it has variables of its own (`env`
    execs the command: the pid stays the system's)."""
    extra = SYSTEM_ENV.get(name)
    return ("env", *(f"{k}={v}" for k, v in extra.items())) if extra else ()


FILED_REV = "4775bb4"
"""The commit issue 16 was filed against (its BENCH.md). "Half of today's" is measured
against this code, run from its own tree beside the current one in case 1, as it was then
(asyncio's loop): the machine's drift and the references' own changes cancel out."""
FILED_SYSTEM = "gateway-filed"
ROUND_REV = "6dddab1"
"""main a round ago: issue 46's reference for CPU per run (case 1e), from its own tree."""
ROUND_SYSTEM = f"gateway-{ROUND_REV}"
OTHER_TREES: dict[str, list[str]] = {
    FILED_SYSTEM: ["bench.serve", "--read-path", "raw"],
    ROUND_SYSTEM: ["bench.serve", "--read-path", "raw"],
}


@dataclass
class Row:
    case: str
    figure: str
    value: float
    unit: str
    ref_name: str = ""
    ref_value: float | None = None
    target: str = ""
    passed: bool | None = None
    note: str = ""
    ratio: float | None = None
    """Given when the ratio is a median of per-repetition ratios, else value / ref_value."""
    interval: Interval | None = None
    """With such a median: where the median ratio lies (`median_interval`), so that a line
    inside it reads as what this run cannot decide."""

    def ratio_value(self) -> float | None:
        if self.ratio is not None:
            return self.ratio
        if self.ref_value is None or self.ref_value == 0 or math.isnan(self.ref_value):
            return None
        return self.value / self.ref_value


@dataclass
class Bench:
    quick: bool
    cores: Cores
    session: aiohttp.ClientSession
    upstream: Proc
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def pick(self, quick: Any, full: Any) -> Any:
        return quick if self.quick else full

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    @contextlib.asynccontextmanager
    async def system(
        self, name: str, redis: str | None = None, root: Path = ROOT
    ) -> AsyncIterator[Proc]:
        """A fresh system under test, pinned, warmed up with a few short runs; a gateway
        given `redis` shares its run state there; `root`: the source tree it runs from."""
        args = [*(SYSTEMS.get(name) or OTHER_TREES[name]), "--upstream", self.upstream.url]
        wrapper = env_wrapper(name)
        if redis is not None:
            args += ["--redis", redis]
            name += "-redis"
        proc = await Proc.start(name, args, self.cores.server, root, wrapper=wrapper)
        try:
            await self.load(proc, Scenario(n=200), streams=10, ramp_s=0.2)
            yield proc
        finally:
            await proc.stop()

    async def load(
        self,
        proc: Proc,
        scenario: Scenario | None,
        *,
        streams: int = 1,
        ramp_s: float = 0.0,
        deadline_s: float = 120.0,
        **extra: Any,
    ) -> dict[str, Any]:
        """Streams against `proc`'s `POST /api/stream` (or a direct upstream call)."""
        spec: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": proc.port,
            "streams": streams,
            "ramp_s": ramp_s,
            "deadline_s": deadline_s,
            "path": "/api/stream",
        }
        if scenario is not None:
            spec["body"] = {"query": scenario.query()}
        spec.update(extra)
        return await run_load(spec, self.cores.load)

    async def direct(self, scenario: Scenario, **kwargs: Any) -> dict[str, Any]:
        """The same streams straight from the upstream: the floor for latency figures."""
        body = {
            "model": "claude-bench",
            "max_tokens": 1024,
            "stream": True,
            "messages": [{"role": "user", "content": scenario.query()}],
        }
        return await self.load(self.upstream, None, path="/v1/messages", body=body, **kwargs)

    async def cpu_of(
        self, proc: Proc, scenario: Scenario, **kwargs: Any
    ) -> tuple[float, dict[str, Any]]:
        """CPU seconds `proc` spent serving one load, and the load's result."""
        before = await proc.stats(self.session, reset=True)
        result = await self.load(proc, scenario, **kwargs)
        after = await proc.stats(self.session)
        return (after["cpu_ns"] - before["cpu_ns"]) / 1e9, result | {"probe": after}


async def settle(limit_s: float, busy: float = 0.25, window_s: float = 2.0) -> float:
    """Wait (at most `limit_s`) for a window in which tasks machine-wide waited for a CPU
    less than `busy` of the time (Linux PSI); the last window's share, 0 without PSI."""
    deadline = time.monotonic() + limit_s
    while True:
        before, started = cpu_pressure_us(), time.monotonic()
        await asyncio.sleep(window_s)
        share = (cpu_pressure_us() - before) / 1e6 / (time.monotonic() - started)
        if share < busy or time.monotonic() > deadline:
            return share


@contextlib.contextmanager
def timed(bench: Bench, name: str) -> Any:
    started = time.monotonic()
    try:
        yield
    finally:
        bench.timings[name] = time.monotonic() - started

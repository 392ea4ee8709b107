"""Case 12: what one call of an MCP server's tool costs the gateway, next to a local tool.

Both go through the registry as a run's calls do (validation, timeout, result cap). The
local tool answers at once, so its figure is the registry's own cost; the MCP tool is
`mcp-server-time`'s `get_current_time` over stdio, so its figure adds the SDK client's
JSON-RPC round trip (encode, pipe, decode, the SDK's result types). Calls go one after
another; CPU is this process's (`time.process_time`), the server's own is read from /proc.

    python -m bench.case_mcp [calls]     (alone; `python -m bench --cases mcp` in the report)
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from bench.run import Bench, Row
from tools.base import Tool, ToolContext, ToolInput
from tools.mcp.client import McpServers
from tools.mcp.config import parse_servers
from tools.registry import ToolRegistry

SERVER = [{"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"]}]
MCP_CALL = ("time__get_current_time", {"timezone": "UTC"})


class ClockInput(ToolInput):
    timezone: str
    """An IANA zone, as the MCP tool takes it."""


class LocalClock(Tool[ClockInput]):
    """The same answer's shape, computed in the process: the registry's cost alone."""

    name = "clock"
    input_model = ClockInput

    async def run(self, args: ClockInput, ctx: ToolContext) -> str:
        now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
        answer = {"timezone": args.timezone, "datetime": now, "is_dst": False}
        return orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode()


def _children_cpu_s() -> float:
    """CPU seconds of this process's children that are still running (the MCP server)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def _per_call(registry: ToolRegistry, name: str, args: Any, calls: int) -> dict[str, float]:
    ctx = ToolContext()
    for _ in range(min(50, calls)):  # warm: imports, caches, the server's first answers
        await registry.call(name, args, ctx)
    cpu, wall, server = time.process_time(), time.perf_counter(), _children_cpu_s()
    for _ in range(calls):
        outcome = await registry.call(name, args, ctx)
        assert not outcome.is_error, outcome.content
    return {
        "cpu_us": (time.process_time() - cpu) / calls * 1e6,
        "wall_us": (time.perf_counter() - wall) / calls * 1e6,
        "server_cpu_us": (_children_cpu_s() - server) / calls * 1e6,
    }


async def measure(calls: int) -> dict[str, dict[str, float]]:
    registry = ToolRegistry([LocalClock()])
    async with McpServers(parse_servers(orjson.dumps(SERVER).decode()), registry) as servers:
        await servers.settled(60)
        assert registry.source_of(MCP_CALL[0]) == "time", servers.report()
        local = await _per_call(registry, "clock", {"timezone": "UTC"}, calls)
        remote = await _per_call(registry, *MCP_CALL, calls)
    return {"local": local, "mcp": remote}


async def mcp_call_cost(bench: Bench) -> None:
    calls = bench.pick(300, 3000)
    found = await measure(calls)
    bench.details["mcp"] = {"calls": calls, **found}
    local, remote = found["local"], found["mcp"]
    note = f"{calls} calls in a row; the server's own CPU: {remote['server_cpu_us']:.0f} µs a call"
    bench.add(Row("12", "MCP tool call (stdio): gateway CPU per call", remote["cpu_us"], "µs",
                  "local tool", local["cpu_us"], target="report", note=note))  # fmt: skip
    bench.add(Row("12", "MCP tool call (stdio): wall time per call", remote["wall_us"], "µs",
                  "local tool", local["wall_us"], target="report"))  # fmt: skip


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    found = asyncio.run(measure(calls))
    for kind, figures in found.items():
        print(kind, " ".join(f"{key}={value:.1f}" for key, value in figures.items()))


if __name__ == "__main__":
    main()

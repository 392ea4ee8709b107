"""Cases 3 (tool input), 4 (parallel tools), 5 (re-attach) and the tool-input half of 6.

Case 3 is measured twice: end to end, by the client's arrival times of the `tool_call`
phases (first and last `tool_input_delta`, then `tool_use` carrying the parsed input), and
in-process by `bench.micro` (accumulation alone, no I/O), for the gateway and the SDK.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
from typing import Any

from bench.common import median
from bench.procs import ROOT, child_env, pin
from bench.run import Bench, Row
from bench.script import Scenario

SIZES = (10_240, 102_400, 1_048_576)
MB = 1_048_576


async def tool_input(bench: Bench) -> None:
    helper_sizes = bench.pick(SIZES[:2], SIZES)
    found: dict[str, dict[int, dict[str, float]]] = {}
    for name, sizes in (("gateway", SIZES), ("gateway-sdk-helper", helper_sizes)):
        found[name] = {}
        async with bench.system(name) as proc:
            for size in sizes:
                result = await bench.load(
                    proc, Scenario(kind="tool", size=size), detail=True, deadline_s=300
                )
                found[name][size] = _phases(result)
    micro = await _micro(bench, bench.pick(SIZES[1], MB))
    bench.details["tool_input"] = {"client": found, "micro": micro}
    gateway = found["gateway"]
    last = gateway[MB]["last_to_parsed_ms"]
    bench.add(
        Row(
            "3",
            "1 MB tool input: last fragment to parsed input (client side)",
            last,
            "ms",
            target="<= 500 ms",
            passed=last <= 500,
        )
    )
    per_kb = {size: gateway[size]["first_to_parsed_ms"] / (size / 1024) for size in SIZES}
    growth = per_kb[MB] / per_kb[SIZES[1]]
    bench.add(
        Row(
            "3",
            "1 MB tool input: first fragment to parsed input, per KB",
            per_kb[MB],
            "ms/KB",
            "same at 100 KB",
            per_kb[SIZES[1]],
            "linear (ratio <= 1.5)",
            growth <= 1.5,
            ratio=growth,
        )
    )
    size = max(s for s in micro if "sdk" in micro[s])
    label = "1 MB" if size == MB else "100 KB"
    bench.add(
        Row(
            "3",
            f"{label} tool input, in-process: gateway translator, all fragments",
            micro[size]["translator"]["total_s"] * 1000,
            "ms",
            "SDK accumulator",
            micro[size]["sdk"]["total_s"] * 1000,
        )
    )
    helper = found["gateway-sdk-helper"]
    biggest = max(helper)
    bench.add(
        Row(
            "6",
            f"{biggest // 1024} KB tool input, first fragment to parsed, SDK helper read path",
            helper[biggest]["first_to_parsed_ms"],
            "ms",
            "gateway",
            gateway[biggest]["first_to_parsed_ms"],
        )
    )


def _phases(result: dict[str, Any]) -> dict[str, float]:
    detail = result["detail"][0]
    phases = detail["phases"]
    if result["errors"] or "tool_use" not in phases or "tool_input_delta" not in phases:
        raise RuntimeError(f"tool input run failed: {result['error_samples']}")
    first, last, count = phases["tool_input_delta"]
    parsed = phases["tool_use"][0]
    return {
        "fragments": count,
        "first_to_parsed_ms": (parsed - first) / 1e6,
        "last_to_parsed_ms": (parsed - last) / 1e6,
    }


async def _micro(bench: Bench, sdk_max: int) -> dict[int, Any]:
    spec = json.dumps({"sizes": list(SIZES), "sdk_max": sdk_max}).encode()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.micro",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=child_env(),
        cwd=ROOT,
    )
    pin(process.pid, bench.cores.server)
    out, _ = await asyncio.wait_for(process.communicate(spec), 300)
    return {int(size): found for size, found in json.loads(out).items()}


async def parallel_tools(bench: Bench) -> None:
    """Case 4: 5 tools of 1 s in one turn; the upstream times turn end to next request."""
    gaps = []
    async with bench.system("gateway") as proc:
        for _ in range(bench.pick(1, 3)):
            scenario = Scenario(kind="tools", tools=5, seconds=1.0, tag=uuid.uuid4().hex)
            result = await bench.load(proc, scenario, detail=True, deadline_s=60)
            match = re.search(r"gap_ms=([0-9.]+)", result["detail"][0]["result"])
            if result["errors"] or match is None:
                raise RuntimeError(f"parallel tools run failed: {result['error_samples']}")
            gaps.append(float(match.group(1)) / 1000)
    bench.details["parallel_tools"] = {"gaps_s": gaps}
    gap = median(gaps)
    bench.add(
        Row(
            "4",
            "5 parallel 1 s tools: turn end to next model call",
            gap,
            "s",
            "one tool alone",
            1.0,
            "<= 1.3 s",
            gap <= 1.3,
        )
    )


async def reattach(bench: Bench) -> None:
    """Case 5: replay a finished 10,000-event run to a client that re-attaches at seq 0."""
    scenario = Scenario(n=10_000)
    replay, direct = [], []
    async with bench.system("gateway") as proc:
        for _ in range(bench.pick(1, 3)):
            first = await bench.load(proc, scenario, detail=True)
            run_id = first["detail"][0]["run_id"]
            again = await bench.load(
                proc,
                None,
                method="GET",
                path=f"/api/stream/{run_id}",
                headers={"Last-Event-ID": "0"},
            )
            if first["errors"] or again["errors"] or again["deltas"] != scenario.n:
                raise RuntimeError(f"re-attach failed: {again['error_samples']}")
            replay.append(again["frames"] / again["wall_s"])
            straight = await bench.direct(scenario)
            direct.append(straight["frames"] / straight["wall_s"])
    bench.details["reattach"] = {"replay_eps": replay, "direct_eps": direct}
    bench.add(
        Row(
            "5",
            "Re-attach: replay a 10,000-event log",
            median(replay),
            "events/s",
            "upstream read directly",
            median(direct),
        )
    )

"""`python -m bench [--quick] [--out BENCH.md] [--cases relay,streams,...]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp

from bench import report
from bench.case_relay import relay_cost
from bench.case_shared import shared_state
from bench.case_streams import many_streams
from bench.case_tools import parallel_tools, reattach, tool_input
from bench.common import raise_nofile
from bench.procs import LOGS, ROOT, Cores, Proc, pin
from bench.run import Bench, timed

CASES: dict[str, Callable[[Bench], Awaitable[None]]] = {
    "relay": relay_cost,
    "streams": many_streams,
    "tool_input": tool_input,
    "parallel_tools": parallel_tools,
    "reattach": reattach,
    "shared": shared_state,
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, about a minute")
    parser.add_argument("--out", type=Path, default=ROOT / "BENCH.md", help="report to write")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    return parser.parse_args()


async def run(args: argparse.Namespace) -> Bench:
    cores = Cores.plan()
    pin(os.getpid(), cores.load)
    raise_nofile()
    started = time.monotonic()
    upstream = await Proc.start("upstream", ["bench.upstream"], cores.load)
    failed: dict[str, str] = {}
    try:
        async with aiohttp.ClientSession() as session:
            bench = Bench(args.quick, cores, session, upstream)
            for name in args.cases.split(","):
                print(f"case {name} ...", file=sys.stderr, flush=True)
                with timed(bench, name):
                    try:
                        await CASES[name](bench)
                    except Exception as exc:  # one broken case still leaves a report
                        traceback.print_exc()
                        failed[name] = f"{type(exc).__name__}: {exc}"
    finally:
        await upstream.stop()
    if failed:
        bench.details["failed"] = failed
    bench.timings["total"] = time.monotonic() - started
    return bench


def main() -> None:
    args = parse_args()
    bench = asyncio.run(run(args))
    LOGS.mkdir(parents=True, exist_ok=True)
    raw = {
        "rows": [vars(r) for r in bench.rows],
        "details": bench.details,
        "timings": bench.timings,
        "quick": bench.quick,
    }
    name = "last-quick.json" if bench.quick else "last-full.json"
    (LOGS / name).write_text(json.dumps(raw, indent=1, default=str))
    report.write(bench, args.out)
    sys.exit(1 if bench.details.get("failed") else 0)


if __name__ == "__main__":
    main()

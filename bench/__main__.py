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
from typing import Any

import aiohttp

from bench import report
from bench.case_batches import batch_screen
from bench.case_cache import prompt_cache
from bench.case_context import compaction
from bench.case_figures import figure_check
from bench.case_instructions import instructions
from bench.case_mcp import mcp_call_cost
from bench.case_relay import relay_cost
from bench.case_runcost import run_cost
from bench.case_shared import shared_state
from bench.case_soak import soak
from bench.case_streams import many_streams
from bench.case_takeover import takeover
from bench.case_tools import parallel_tools, reattach, tool_input
from bench.case_workers import two_workers
from bench.common import raise_nofile
from bench.procs import LOGS, ROOT, Cores, Proc, pin
from bench.run import Bench, Row, timed

CASES: dict[str, Callable[[Bench], Awaitable[None]]] = {
    "relay": relay_cost,
    "instructions": instructions,
    "runcost": run_cost,
    "streams": many_streams,
    "tool_input": tool_input,
    "parallel_tools": parallel_tools,
    "reattach": reattach,
    "shared": shared_state,
    "prompt_cache": prompt_cache,
    "compaction": compaction,
    "takeover": takeover,
    "workers": two_workers,
    "soak": soak,
    "mcp": mcp_call_cost,
    "batches": batch_screen,
    "figures": figure_check,
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repetitions, no cases 1d and 7 to 9: a few minutes",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "BENCH.md", help="report to write")
    parser.add_argument("--cases", help="comma-separated subset (default: all)")
    parser.add_argument(
        "--report-from", type=Path, metavar="JSON", help="only write the report of a saved run"
    )
    return parser.parse_args()


def cases(args: argparse.Namespace) -> list[str]:
    if args.cases:
        return [name.strip() for name in args.cases.split(",")]
    slow = ("instructions", "shared", "takeover", "workers")
    return [name for name in CASES if not (args.quick and name in slow)]


def command_of(args: argparse.Namespace) -> str:
    """The command line as the report shows it: what changes the run, not where it wrote."""
    words = ["python -m bench"]
    if os.environ.get("BENCH_STREAMS"):
        words.insert(0, f"BENCH_STREAMS={os.environ['BENCH_STREAMS']}")
    if args.quick:
        words.append("--quick")
    if args.cases:
        words.append(f"--cases {args.cases}")
    return " ".join(words)


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
            bench.details["code"] = report.code_version()
            bench.details["command"] = command_of(args)
            bench.details["not_run"] = [name for name in CASES if name not in cases(args)]
            for name in cases(args):
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


def saved(path: Path) -> Bench:
    """A finished run from its JSON (JSON made the integer keys of case 3 strings)."""
    data = json.loads(path.read_text())
    tools = data["details"].get("tool_input")
    if tools:
        tools["micro"] = {int(k): v for k, v in tools["micro"].items()}
        tools["client"] = {
            name: {int(k): v for k, v in sizes.items()} for name, sizes in tools["client"].items()
        }
    cores = data.get("cores")
    plan = Cores.plan() if cores is None else Cores(*(c and frozenset(c) for c in cores))
    rows = [Row(**row) for row in data["rows"]]
    none: Any = None  # no processes: only the report is written
    return Bench(data["quick"], plan, none, none, rows, data["details"], data["timings"])


def main() -> None:
    args = parse_args()
    if args.report_from is not None:
        report.write(saved(args.report_from), args.out)
        return
    bench = asyncio.run(run(args))
    LOGS.mkdir(parents=True, exist_ok=True)
    cores = [bench.cores.server, bench.cores.load, bench.cores.allowed]
    raw = {
        "rows": [vars(r) for r in bench.rows],
        "details": bench.details,
        "timings": bench.timings,
        "quick": bench.quick,
        "cores": [None if c is None else sorted(c) for c in cores],
    }
    name = "last-quick.json" if bench.quick else "last-full.json"
    (LOGS / name).write_text(json.dumps(raw, indent=1, default=str))
    report.write(bench, args.out)
    sys.exit(1 if bench.details.get("failed") else 0)


if __name__ == "__main__":
    main()

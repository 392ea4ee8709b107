"""`python -m bench.perrun [--count opcodes|instructions] [--rounds N] [TREE ...]`: what one
short run (start, one model call of one delta, end) costs the gateway, tree beside tree.

Each TREE is `.` (this working tree) or a commit (run from its own files, as case 1e runs
`6dddab1`); the default is `. 6dddab1`. Each round measures every tree in turn, in a
fresh process, so trees compared come from one session and the load moves them alike.

- `instructions`: case 1d's count (callgrind, net of the idle rate), a run.
- `opcodes`: Python opcodes a run, per function (`bench/opcount_hook.py`: a `sys.settrace`
  counter switched on by a signal after the warm-up). The first tree is compared with
  each other one function by function: the largest differences a run are printed, then
  the totals by file. What the load cannot move, and what names the code that costs.

`--json PATH` keeps every count.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp

from bench.case_instructions import SPACING_S, count_instructions
from bench.common import raise_nofile
from bench.procs import ROOT, Cores, Proc, pin, source_tree
from bench.run import ROUND_REV, Bench
from bench.script import Scenario

HOOK = Path(__file__).resolve().parent / "opcount_hook.py"
ARGS = ["bench.serve", "--read-path", "raw"]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.perrun", description=__doc__)
    parser.add_argument("trees", nargs="*", default=[".", ROUND_REV])
    parser.add_argument("--count", choices=("opcodes", "instructions"), default="opcodes")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warm-up", type=int, default=30)
    parser.add_argument("--top", type=int, default=40, help="functions listed (opcodes)")
    parser.add_argument("--json", type=Path, help="write every count here")
    return parser.parse_args()


@contextlib.contextmanager
def _tree(name: str) -> Iterator[Path]:
    if name == ".":
        yield ROOT
        return
    with source_tree(name) as root:
        if root is None:
            raise SystemExit(f"{name}: not a commit of this clone")
        yield root


async def count_opcodes(
    bench: Bench, label: str, root: Path, runs: int, warm_up: int
) -> dict[str, float]:
    """Opcodes a run per function (`file:line name`, the file relative to its tree or to
    site-packages / the standard library)."""
    one = Scenario(n=1)
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "counts.json"
        os.environ["OPCOUNT_OUT"] = str(out)  # child_env passes it on
        try:
            proc = await Proc.start(
                f"{label}-opcodes", [*ARGS, "--upstream", bench.upstream.url],
                bench.cores.server, root, wrapper=(sys.executable, str(HOOK)),
            )  # fmt: skip
        finally:
            del os.environ["OPCOUNT_OUT"]
        try:
            await bench.load(proc, one, streams=warm_up, ramp_s=warm_up * SPACING_S)
            os.kill(proc.pid, signal.SIGUSR1)
            await asyncio.sleep(0.2)
            result = await bench.load(
                proc, one, streams=runs, ramp_s=runs * SPACING_S, deadline_s=300
            )
            await asyncio.sleep(0.5)  # the last run's end, its access line
            os.kill(proc.pid, signal.SIGUSR2)
            for _ in range(300):
                if out.exists():
                    break
                await asyncio.sleep(0.1)
            rows = json.loads(out.read_text())
        finally:
            await proc.stop()
    if result["errors"]:
        raise RuntimeError(f"{label}: {result['error_samples']}")
    counts: dict[str, float] = defaultdict(float)
    for row in rows:
        where = f"{_short(row['file'], root)}:{row['line']} {row['name']}"
        if "calls" in row:  # frames entered, by caller: `calls <- caller` keys
            caller = row["caller"] and _short(row["caller"], root)
            counts[f"calls {where} <- {caller}"] += row["calls"] / runs
        else:
            counts[where] += row["n"] / runs
    return dict(counts)


def _short(file: str, root: Path) -> str:
    for marker in (str(root) + "/", "site-packages/", "/lib/python3."):
        if marker in file:
            rest = file.split(marker, 1)[1]
            return rest.split("/", 1)[1] if marker == "/lib/python3." else rest
    return file


def _by_file(counts: dict[str, float]) -> dict[str, float]:
    files: dict[str, float] = defaultdict(float)
    for key, n in counts.items():
        files[key.split(":", 1)[0]] += n
    return files


def report(trees: list[str], counts: dict[str, list[dict[str, float]]], top: int) -> None:
    """The mean over rounds of each tree; then the first tree against each other one."""
    mean = {
        tree: {
            key: sum(r.get(key, 0.0) for r in rounds) / len(rounds)
            for key in {k for r in rounds for k in r}
        }
        for tree, rounds in counts.items()
    }
    calls = {
        tree: {k: n for k, n in c.items() if k.startswith("calls ")} for tree, c in mean.items()
    }
    mean = {tree: {k: n for k, n in c.items() if k not in calls[tree]} for tree, c in mean.items()}
    for tree in trees:
        rounds = [sum(n for k, n in r.items() if not k.startswith("calls ")) for r in counts[tree]]
        print(f"{tree}: {sum(mean[tree].values()):,.0f} opcodes a run (rounds: "
              + ", ".join(f"{n:,.0f}" for n in rounds) + ")")  # fmt: skip
    first = trees[0]
    for other in trees[1:]:
        for title, a, b in (
            ("function", mean[first], mean[other]),
            ("file", _by_file(mean[first]), _by_file(mean[other])),
        ):
            diff = {k: a.get(k, 0.0) - b.get(k, 0.0) for k in set(a) | set(b)}
            print(f"\n{first} - {other}, by {title} (opcodes a run: {first}, {other}, diff)")
            for key in sorted(diff, key=lambda k: -abs(diff[k]))[:top]:
                print(f"{a.get(key, 0):9.1f} {b.get(key, 0):9.1f} {diff[key]:+9.1f}  {key}")


async def main(args: argparse.Namespace) -> None:
    cores = Cores.plan()
    pin(os.getpid(), cores.load)
    raise_nofile()
    upstream = await Proc.start("upstream", ["bench.upstream"], cores.load)
    results: dict[str, list[Any]] = {tree: [] for tree in args.trees}
    try:
        async with contextlib.AsyncExitStack() as stack:
            session = await stack.enter_async_context(aiohttp.ClientSession())
            bench = Bench(True, cores, session, upstream)
            roots = {tree: stack.enter_context(_tree(tree)) for tree in args.trees}
            for number in range(args.rounds):
                for tree in args.trees:
                    label = "tree" if tree == "." else tree
                    if args.count == "opcodes":
                        got: Any = await count_opcodes(
                            bench, label, roots[tree], args.runs, args.warm_up
                        )
                        total = sum(n for k, n in got.items() if not k.startswith("calls "))
                        shown = f"{total:,.0f} opcodes"
                    else:
                        with tempfile.TemporaryDirectory() as folder:
                            got = await count_instructions(
                                bench, "gateway", roots[tree], Path(folder) / "gateway"
                            )
                        shown = f"{got:,.0f} instructions"
                    results[tree].append(got)
                    print(f"round {number + 1}, {tree}: {shown} a run", flush=True)
    finally:
        await upstream.stop()
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    if args.count == "opcodes":
        report(args.trees, results, args.top)
        return
    first = args.trees[0]
    for other in args.trees[1:]:
        ratios = [a / b for a, b in zip(results[first], results[other], strict=True)]
        print(f"{first} / {other}: " + ", ".join(f"{r:.3f}" for r in ratios))


if __name__ == "__main__":
    asyncio.run(main(parse_args()))

"""Case 1d: instructions per run start, counted by valgrind's callgrind.

CPU time on a shared machine moves ±10-20 % between runs, more than most single changes
to the run start are worth; an instruction count does not: the same code and load give
the same count within ~1 %, whatever else the machine is doing. It counts user space
only: the kernel's share of a run (its sockets), the same for every system, is in CPU time
(1c), not here. Each system runs under callgrind with counting off; after a warm-up it is
switched on (`callgrind_control -i on`) for `RUNS` one-delta runs, then dumped; then
counted again for `IDLE_S` with no work, and that rate times the runs' wall time taken
off: what a process executes by the clock (the probe's 20 ms ticker, the same in every
system) would otherwise count more the longer a loaded machine makes the window.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from bench.procs import ROOT, Proc, source_tree
from bench.run import FILED_REV, FILED_SYSTEM, OTHER_TREES, SYSTEMS, Bench, Row, env_wrapper
from bench.script import Scenario

RUNS = 100
WARM_UP = 30
IDLE_S = 3.0
"""Counted idle after the runs: the process's own instructions a second without work."""
T = TypeVar("T")
SPACING_S = 0.05
"""Between run starts: under callgrind a run takes ~20-40 ms, so runs barely overlap."""
TITLE = f"Instructions per run (callgrind, {RUNS} one-delta runs; user space only)"


async def instructions(bench: Bench) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        bench.details["instructions"] = {"skipped": "valgrind is not installed"}
        bench.add(Row("1d", TITLE, float("nan"), "", note="not measured: no valgrind"))
        return
    counts: dict[str, float] = {}
    with source_tree(FILED_REV) as filed, tempfile.TemporaryDirectory() as folder:
        systems = {"gateway": ROOT, "relay-raw": ROOT}
        if filed is not None:
            systems[FILED_SYSTEM] = filed
        for name, root in systems.items():
            try:
                counts[name] = await count_instructions(bench, name, root, Path(folder) / name)
            except RuntimeError:
                if name != FILED_SYSTEM:
                    raise  # old code on today's packages may no longer start: left out
    bench.details["instructions"] = {"per_run": counts, "runs": RUNS, "filed_rev": FILED_REV}
    gateway = counts["gateway"]
    bench.add(Row("1d", TITLE, gateway, "", "relay-raw", counts["relay-raw"]))
    if FILED_SYSTEM in counts:
        bench.add(Row("1d", TITLE, gateway, "", FILED_SYSTEM, counts[FILED_SYSTEM]))


async def count_instructions(bench: Bench, name: str, root: Path, out: Path) -> float:
    """Instructions per run of `name` (from the tree at `root`), net of what the process
    executes idle over the same wall time (the probe's ticker: ~0.9 M a second under
    callgrind, so a window a second longer on a loaded machine added ~1 % a run)."""
    wrapper = (*env_wrapper(name), "valgrind", "--tool=callgrind", "--instr-atstart=no",
               f"--callgrind-out-file={out}")  # fmt: skip
    args = [*(SYSTEMS.get(name) or OTHER_TREES[name]),
            "--upstream", bench.upstream.url]  # fmt: skip
    proc = await Proc.start(
        f"{name}-callgrind", args, bench.cores.server, root, wrapper=wrapper, ready_s=300
    )
    one = Scenario(n=1)
    try:
        await bench.load(proc, one, streams=WARM_UP, ramp_s=WARM_UP * SPACING_S, deadline_s=300)
        window, result = await _counted(
            proc.pid, bench.load(proc, one, streams=RUNS, ramp_s=RUNS * SPACING_S, deadline_s=300)
        )
        idle_s, _ = await _counted(proc.pid, asyncio.sleep(IDLE_S))
    finally:
        await proc.stop()
    if result["errors"]:
        raise RuntimeError(f"{name} under callgrind: {result['error_samples']}")
    load, idle = _dumps(out)[:2]
    return (load - idle / idle_s * window) / RUNS


async def _counted(pid: int, work: Awaitable[T]) -> tuple[float, T]:
    """Count `pid`'s instructions while `work` runs, then dump them; the seconds counted."""
    await _control("-i", "on", pid)
    started = time.monotonic()
    done = await work
    elapsed = time.monotonic() - started
    await _control("-i", "off", pid)
    await _control("-d", pid)
    return elapsed, done


async def _control(*args: str | int) -> None:
    process = await asyncio.create_subprocess_exec(
        "callgrind_control", *map(str, args),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await process.wait() != 0:
        raise RuntimeError(f"callgrind_control {' '.join(map(str, args))} failed")


def _dumps(out: Path) -> list[int]:
    """The `totals:` of each dump asked for, in order (`out.1`, `out.2`, ...; the dump at
    exit, `out` itself, counts nothing, counting being off by then)."""
    totals: dict[int, int] = {}
    for path in out.parent.glob(out.name + ".*"):
        with contextlib.suppress(OSError, ValueError), path.open() as lines:
            number = int(path.name.rsplit(".", 1)[1])
            totals[number] = sum(
                int(line.split()[1]) for line in lines if line.startswith("totals:")
            )
    if len(totals) < 2:
        raise RuntimeError(f"callgrind wrote {len(totals)} of 2 dumps to {out}.*")
    return [totals[number] for number in sorted(totals)]

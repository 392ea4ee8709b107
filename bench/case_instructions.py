"""Case 1d: instructions per run start, counted by valgrind's callgrind.

CPU time on a shared machine moves ±10-20 % between runs, more than most single changes
to the run start are worth; an instruction count does not: the same code and load give
the same count within ~1 %, whatever else the machine is doing. It counts user space
only: the kernel's share of a run (its sockets), the same for every system, is in CPU time
(1c), not here. Each system runs under callgrind with counting off; after a warm-up it is
switched on (`callgrind_control -i on`) for `RUNS` one-delta runs, then dumped.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from pathlib import Path

from bench.procs import ROOT, Proc, source_tree
from bench.run import FILED_REV, FILED_SYSTEM, OTHER_TREES, SYSTEMS, Bench, Row
from bench.script import Scenario

RUNS = 100
WARM_UP = 30
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
    """Instructions per run of `name` (from the tree at `root`)."""
    wrapper = ("valgrind", "--tool=callgrind", "--instr-atstart=no",
               f"--callgrind-out-file={out}")  # fmt: skip
    args = [*(SYSTEMS.get(name) or OTHER_TREES[name]),
            "--upstream", bench.upstream.url]  # fmt: skip
    proc = await Proc.start(
        f"{name}-callgrind", args, bench.cores.server, root, wrapper=wrapper, ready_s=300
    )
    one = Scenario(n=1)
    try:
        await bench.load(proc, one, streams=WARM_UP, ramp_s=WARM_UP * SPACING_S, deadline_s=300)
        await _control("-i", "on", proc.pid)
        result = await bench.load(proc, one, streams=RUNS, ramp_s=RUNS * SPACING_S, deadline_s=300)
        await _control("-i", "off", proc.pid)
        await _control("-d", proc.pid)
    finally:
        await proc.stop()
    if result["errors"]:
        raise RuntimeError(f"{name} under callgrind: {result['error_samples']}")
    return _dumped(out) / RUNS


async def _control(*args: str | int) -> None:
    process = await asyncio.create_subprocess_exec(
        "callgrind_control", *map(str, args),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    if await process.wait() != 0:
        raise RuntimeError(f"callgrind_control {' '.join(map(str, args))} failed")


def _dumped(out: Path) -> int:
    """The largest `totals:` of the dumps: the one asked for (the dump at exit counts
    nothing, counting being off by then)."""
    totals = []
    for path in out.parent.glob(out.name + "*"):
        with contextlib.suppress(OSError), path.open() as lines:
            totals += [int(line.split()[1]) for line in lines if line.startswith("totals:")]
    if not totals:
        raise RuntimeError(f"callgrind wrote no totals to {out}*")
    return max(totals)

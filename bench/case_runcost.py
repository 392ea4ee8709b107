"""Case 1e: a run's whole-process cost, user and kernel, beside its instructions.

Case 1c reads the process clock (user + kernel together) and case 1d counts user-space
instructions only; a change that moves work into the kernel (more writes, more wake-ups)
or out of Python's user space shows in neither as such. This case reads, for the same
one-delta runs, `utime` and `stime` of `/proc/<pid>/stat` separately for the gateway, the
floor (`relay-raw`) and the gateway as it was a round ago (`ROUND_REV`, from its own tree),
measured in turn (the order rotates each repetition; a ratio is the median of
per-repetition ratios), then each one's instructions a run under callgrind as case 1d
counts them. `gateway-source` is this tree with `GATEWAY_PURE_PYTHON=1`: what the compiled
modules save a run, as CPU and as instructions (the process's memory map says which of
the two ran compiled, and the row says so when that is not as meant). The total is the
scheduler's run time (`/proc/<pid>/schedstat`, nanoseconds); `utime` and `stime` (clock
ticks of 10 ms, too coarse for a run) give the kernel's share. Without valgrind the
instruction column says so; the CPU part still runs.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from bench.case_instructions import count_instructions
from bench.common import median, median_interval, schedstat
from bench.procs import ROOT, Proc, source_tree
from bench.run import ROUND_REV, ROUND_SYSTEM, Bench, Row, settle
from bench.script import Scenario
from gateway import native

RATE = 100.0
"""Run starts a second, as case 1c."""
SOURCE_SYSTEM = "gateway-source"
COMPILED_LIBRARY = f"{native.GROUP}__mypyc"
"""The shared library of the gateway's compiled modules (setup.py's mypyc group)."""
TITLE = "Whole-process CPU per run, user + kernel (/proc)"


async def run_cost(bench: Bench) -> None:
    # Many short repetitions rather than a few long ones: the machine's speed drifts over
    # seconds, so two systems measured close together compare better, and sixteen ratios
    # put their median between the 5th and the 12th of them (92 %), where six could only
    # say between the least and the greatest (97 %): a narrower interval, the same runs.
    reps, runs = bench.pick(4, 16), bench.pick(150, 300)
    with source_tree(ROUND_REV) as old:
        roots = {"gateway": ROOT, "relay-raw": ROOT, SOURCE_SYSTEM: ROOT}
        if old is not None:
            roots[ROUND_SYSTEM] = old
        ticks, compiled = await _cpu(bench, roots, reps, runs)
        counts = await _instructions(bench, roots)
    bench.details["run_cost"] = {
        "runs": runs,
        "reps": reps,
        "round_rev": ROUND_REV,
        "instructions": counts,
        "compiled": compiled,
        "user_us": {k: [u for u, _ in v] for k, v in ticks.items()},
        "kernel_us": {k: [s for _, s in v] for k, v in ticks.items()},
    }
    _rows(bench, ticks, counts)
    _compiled_row(bench, ticks, counts, compiled)


async def _cpu(
    bench: Bench, roots: dict[str, Path], reps: int, runs: int
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, bool]]:
    """(user, kernel) microseconds a run, per system and repetition; and whether each
    system had the gateway's compiled modules loaded."""
    one = Scenario(n=1)
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
    async with contextlib.AsyncExitStack() as stack:
        procs = {}
        for name, root in roots.items():
            procs[name] = await stack.enter_async_context(bench.system(name, root=root))
        compiled = {name: runs_compiled(proc.pid) for name, proc in procs.items()}
        await settle(bench.pick(5.0, 30.0), window_s=bench.pick(1.0, 2.0))
        names = list(procs)
        for rep in range(reps):
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                before = _stat(procs[name])
                await bench.load(procs[name], one, streams=runs, ramp_s=runs / RATE)
                out[name].append(_split(before, _stat(procs[name]), runs))
    return out, compiled


def runs_compiled(pid: int) -> bool:
    """Whether `pid` has mapped the gateway's compiled modules (setup.py's mypyc group)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            return any(COMPILED_LIBRARY in line for line in maps)
    except OSError:
        return False


def _stat(proc: Proc) -> tuple[int, int, int]:
    """`utime` and `stime` (clock ticks) and the nanoseconds run (`schedstat`) of `proc`,
    all its threads."""
    with open(f"/proc/{proc.pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12]), schedstat(proc.pid)[0]


def _split(
    before: tuple[int, int, int], after: tuple[int, int, int], runs: int
) -> tuple[float, float]:
    """(user, kernel) microseconds a run. The total is the scheduler's (nanoseconds); the
    kernel's share of it is `stime`'s of the ticks (10 ms each: a few dozen a load)."""
    user, kernel, ran = (a - b for a, b in zip(after, before, strict=True))
    total_us = ran / 1e3 / runs
    share = kernel / (user + kernel) if user + kernel else 0.0
    return total_us * (1 - share), total_us * share


async def _instructions(bench: Bench, roots: dict[str, Path]) -> dict[str, float]:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        return {}
    counts: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, root in roots.items():
            with contextlib.suppress(RuntimeError):  # an old tree may not start: left out
                counts[name] = await count_instructions(bench, name, root, Path(folder) / name)
    return counts


def _rows(
    bench: Bench, ticks: dict[str, list[tuple[float, float]]], counts: dict[str, float]
) -> None:
    total = {name: [u + s for u, s in values] for name, values in ticks.items()}
    gateway = median(total["gateway"])
    targets = {"relay-raw": (1.5, "<= 1.5x"), ROUND_SYSTEM: (1.0, "<= 1x")}
    for ref, (limit, label) in targets.items():
        if ref not in total:
            bench.add(
                Row(
                    "1e",
                    TITLE,
                    gateway,
                    "us",
                    ref,
                    float("nan"),
                    note=f"{ref} not measured: commit not in this clone",
                )
            )
            continue
        ratios = [g / r for g, r in zip(total["gateway"], total[ref], strict=True)]
        ratio = median(ratios)
        bench.add(
            Row(
                "1e",
                TITLE,
                gateway,
                "us",
                ref,
                median(total[ref]),
                f"{label} {ref}",
                ratio <= limit,
                ratio=ratio,
                interval=median_interval(ratios),
            )
        )
    kernel = median([s for _, s in ticks["gateway"]])
    bench.add(
        Row(
            "1e",
            "Kernel part of a run (stime)",
            kernel,
            "us",
            "relay-raw",
            median([s for _, s in ticks["relay-raw"]]),
        )
    )
    for ref in ("relay-raw", ROUND_SYSTEM):
        if "gateway" in counts and ref in counts:
            bench.add(
                Row(
                    "1e",
                    "Instructions per run (callgrind, user space)",
                    counts["gateway"],
                    "",
                    ref,
                    counts[ref],
                )
            )


def _compiled_row(
    bench: Bench,
    ticks: dict[str, list[tuple[float, float]]],
    counts: dict[str, float],
    compiled: dict[str, bool],
) -> None:
    """The gateway against itself run from source: what the compile saves a run."""
    if SOURCE_SYSTEM not in ticks:
        return
    total = {name: [u + s for u, s in ticks[name]] for name in ("gateway", SOURCE_SYSTEM)}
    ratio = median([c / s for c, s in zip(total["gateway"], total[SOURCE_SYSTEM], strict=True)])
    if compiled.get("gateway") and not compiled.get(SOURCE_SYSTEM):
        note = ""
    else:  # a build without a compiler, or a guard that did not hold
        loaded = {name: compiled.get(name) for name in ("gateway", SOURCE_SYSTEM)}
        note = f"not as meant: compiled modules loaded {loaded}"
    figure = f"{TITLE}, the run's modules compiled against their source"
    bench.add(
        Row("1e", figure, median(total["gateway"]), "us", SOURCE_SYSTEM,
            median(total[SOURCE_SYSTEM]), note=note, ratio=ratio)
    )  # fmt: skip
    if "gateway" in counts and SOURCE_SYSTEM in counts:
        bench.add(
            Row("1e", "Instructions per run (callgrind, user space), compiled against source",
                counts["gateway"], "", SOURCE_SYSTEM, counts[SOURCE_SYSTEM], note=note)
        )  # fmt: skip


def run_cost_table(bench: Bench) -> list[list[str]]:
    """Case 1e per system: user, kernel and instructions a run (medians)."""
    data = bench.details["run_cost"]
    rows = []
    for name, user in data["user_us"].items():
        kernel = data["kernel_us"][name]
        count = data["instructions"].get(name)
        rows.append(
            [
                name,
                f"{median(user):.0f}",
                f"{median(kernel):.0f}",
                f"{median(user) + median(kernel):.0f}",
                "–" if count is None else f"{count:,.0f}",
            ]
        )
    return rows

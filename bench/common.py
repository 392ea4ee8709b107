"""Small helpers every bench process uses: limits, /proc readings, statistics."""

from __future__ import annotations

import gc
import math
import os
import resource
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def event_loop() -> str:
    """The loop every bench process serves on (`BENCH_EVENT_LOOP`: auto, uvloop, asyncio);
    the gateway and the reference relays always share it, so their ratios stay fair."""
    return os.environ.get("BENCH_EVENT_LOOP", "auto")


def quiet_gc() -> None:
    """What the gateway does after startup (`gateway/http/app.py`), for the bench's own
    instruments: the startup heap frozen out of collections, young ones every 20,000
    allocations. Without it the upstream's first full collection walked every imported
    module's objects: 133 ms in which no stream of any system got its first event."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


@contextmanager
def gateway_gc() -> Iterator[None]:
    """`quiet_gc` for a while, in a process that otherwise keeps Python's defaults (the
    bench's own, where case 14 times the figure check): the collector as the gateway runs
    it, then as it was."""
    thresholds = gc.get_threshold()
    quiet_gc()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def raise_nofile(want: int = 65_536) -> int:
    """Lift the open-files soft limit as far as the hard limit allows; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def rss_kb(pid: int | str = "self") -> int:
    """Resident set size (VmRSS) in KiB, 0 if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pid: int | str = "self") -> float:
    """User + system CPU seconds of a process (all its threads), from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


Interval = tuple[float, float, float]
"""(low, high, coverage): see `median_interval`."""


def median_interval(values: Sequence[float], least: float = 0.9) -> Interval:
    """Where the median of what `values` sample lies, assuming nothing of their
    distribution: between the k-th smallest and the k-th largest of them with the chance
    `coverage` (each value falls below the median with a chance of one half, so the
    binomial gives it), k the largest whose coverage is at least `least`; with too few
    values for that, their whole range and its smaller coverage (two: one half)."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan, math.nan, 0.0

    def coverage(k: int) -> float:  # that the median lies within [k-th, (n-k+1)-th]
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / (1 << n)

    k = 1
    while k < n // 2 and coverage(k + 1) >= least:
        k += 1
    return ordered[k - 1], ordered[n - k], coverage(k)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def schedstat(pid: int | str = "self") -> tuple[int, int]:
    """Nanoseconds a process (all threads) spent running, and runnable but waiting for a
    CPU: the second is what a busy neighbour costs it. (0, 0) where the kernel has none."""
    run = wait = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                fields = stat.read().split()
        except OSError:
            continue
        run += int(fields[0])
        wait += int(fields[1])
    return run, wait


def cpu_pressure_us() -> int:
    """Total microseconds some task waited for a CPU, machine-wide (PSI); 0 if unavailable."""
    try:
        with open("/proc/pressure/cpu") as pressure:
            for line in pressure:
                if line.startswith("some"):
                    return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0

"""Case 2: many paced streams at once. For each level, the same load three ways: straight
from the upstream (the floor for latency), through the minimal relay, through the gateway;
each system freshly started. An event is on time when it reaches the client within
`ON_TIME_MS` of the upstream writing it (the text of each delta is its send time).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Coroutine
from typing import Any

from bench.common import cpu_pressure_us, percentile, schedstat
from bench.procs import Proc
from bench.run import CAPPED_RUNS, Bench, Row, settle
from bench.script import Scenario

RATE = 20.0
ON_TIME_MS = 100.0
BUSY_WAIT = 0.05


async def many_streams(bench: Bench) -> None:
    levels = bench.pick((500,), (250, 500, 1000))
    if os.environ.get("BENCH_STREAMS"):  # e.g. BENCH_STREAMS=1000,1500,2000: other levels
        levels = tuple(int(level) for level in os.environ["BENCH_STREAMS"].split(","))
    duration = bench.pick(6.0, 10.0)
    ramp = bench.pick(4.0, 5.0)
    scenario = Scenario(n=int(RATE * duration), rate=RATE)
    phases: list[dict[str, Any]] = []
    for streams in levels:
        kwargs = {
            "streams": streams,
            "ramp_s": ramp,
            "on_time_ms": ON_TIME_MS,
            "deadline_s": duration + 60,
        }
        direct = await _attempts(bench, None, scenario, kwargs)
        phases.append(direct | {"system": "direct", "level": streams})
        systems = bench.pick(["gateway"], ["relay-raw", "gateway"])
        if streams > CAPPED_RUNS:
            systems.append("gateway-capped")
        for name in systems:
            found = await _attempts(bench, name, scenario, kwargs)
            phases.append(found | {"system": name, "level": streams, "direct": direct})
    bench.details["streams"] = {
        "phases": phases,
        "duration_s": duration,
        "ramp_s": ramp,
        "rate": RATE,
        "on_time_ms": ON_TIME_MS,
    }
    _rows(bench, phases)


async def _attempts(
    bench: Bench, name: str | None, scenario: Scenario, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """A phase, again (a bounded number of times, each with a fresh system) while the
    machine's other tasks kept the server waiting for a CPU more than `BUSY_WAIT` of the
    time; the least disturbed attempt is kept, and the table says how disturbed it was."""
    best: dict[str, Any] | None = None
    for attempt in range(bench.pick(1, 3)):
        if name is None:
            found = await _phase(bench, None, bench.direct(scenario, **kwargs))
        else:
            # Every stream is open from the end of the ramp until the first one ends.
            window = (kwargs["ramp_s"], scenario.n / scenario.rate)
            async with bench.system(name) as proc:
                load = bench.load(proc, scenario, **kwargs)
                found = await _phase(bench, proc, load, window)
            if name == "gateway-capped":  # what it held, over the streams it admitted
                admitted = max(1, kwargs["streams"] - found["errors"])
                for figure in ("rss_per_stream_kb", "rss_per_run_kb"):
                    found[figure] *= kwargs["streams"] / admitted
        found["attempts"] = attempt + 1
        if best is None or _disturbed(found) < _disturbed(best):
            best = found
        if _disturbed(best) <= BUSY_WAIT:
            break
    assert best is not None
    return best


def _disturbed(phase: dict[str, Any]) -> float:
    # Only the server's core: on the other, the upstream and the load client wait for
    # each other by design. A direct phase has no server and is not repeated.
    return float(phase.get("wait_share", 0.0))


async def _phase(
    bench: Bench,
    proc: Proc | None,
    load: Coroutine[Any, Any, dict[str, Any]],
    open_window: tuple[float, float] = (0.0, math.inf),
) -> dict[str, Any]:
    """One load, with the server's RSS sampled every 0.2 s and its probe read around it.

    RSS per open stream is the most it reached while every stream was open (`open_window`,
    seconds from the start of the load); the most over the whole load is kept too: after
    the streams end, a gateway keeps each finished run (its whole log) for re-attaching,
    and memory once taken stays with the process.

    It starts once the machine is quiet enough (bounded wait), and records how much CPU
    the machine's other tasks left it: PSI pressure and each process's run-queue wait.
    """
    settled = await settle(bench.pick(10.0, 60.0), window_s=bench.pick(1.0, 2.0))
    before = await proc.stats(bench.session, reset=True) if proc is not None else None
    await bench.upstream.stats(bench.session, reset=True)
    up_cpu, up_wait = bench.upstream.cpu_s(), schedstat(bench.upstream.pid)[1]
    pressure = cpu_pressure_us()
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.create_task(load)
    peak = peak_open = 0
    while not task.done():
        if proc is not None:
            rss = proc.rss_kb()
            peak = max(peak, rss)
            if open_window[0] <= loop.time() - started <= open_window[1]:
                peak_open = max(peak_open, rss)
        await asyncio.wait({task}, timeout=0.2)
    result: dict[str, Any] = task.result()
    upstream = await bench.upstream.stats(bench.session)
    sent = max(1, upstream["sent"])
    ttfe = result.pop("ttfe_ms")
    latencies = result.pop("latency_ms")
    found = {
        "errors": result["errors"],
        "error_samples": result["error_samples"],
        "sent": upstream["sent"],
        "delivered": result["deltas"] / sent,
        "on_time": result["on_time"] / sent,
        "ttfe_p50": percentile(ttfe, 50),
        "ttfe_p99": percentile(ttfe, 99),
        "latency_p50": percentile(latencies, 50),
        "latency_p99": percentile(latencies, 99),
        "wall_s": result["wall_s"],
        "load_cpu_s": result["cpu_s"],
        "upstream_cpu_s": bench.upstream.cpu_s() - up_cpu,
        "core0_wait_s": result["wait_s"] + (schedstat(bench.upstream.pid)[1] - up_wait) / 1e9,
        "pressure": (cpu_pressure_us() - pressure) / 1e6 / result["wall_s"],
        "pressure_before": settled,
    }
    if proc is not None and before is not None:
        after = await proc.stats(bench.session)
        streams = result["streams"]
        found |= {
            "rss_base_kb": before["rss_kb"],
            "rss_peak_kb": peak,
            "rss_open_kb": peak_open,
            "rss_per_stream_kb": ((peak_open or peak) - before["rss_kb"]) / streams,
            "rss_per_run_kb": (peak - before["rss_kb"]) / streams,
            "cpu_share": (after["cpu_ns"] - before["cpu_ns"]) / 1e9 / result["wall_s"],
            "gc2": after["gc"]["2"],
            "lag_max_ms": after["lag_max_ms"],
            "lag_p99_ms": after["lag_p99_ms"],
            "wait_share": (after["wait_ns"] - before["wait_ns"]) / 1e9 / result["wall_s"],
        }
    return found


def first_event_added(p99_ms: float, direct: dict[str, Any]) -> float:
    """What a system adds to the first event at p99, taken against the upstream read
    directly at its median, not its p99: that is measured in a phase of its own, and
    where the load core is busy its own tail can be the larger, which would credit the
    system with the upstream's bad luck."""
    return float(p99_ms - direct["ttfe_p50"])


def _rows(bench: Bench, phases: list[dict[str, Any]]) -> None:
    duration = bench.details["streams"]["duration_s"]
    _capped_rows(bench, phases, duration)
    for phase in phases:
        if phase["system"] != "gateway" or phase["level"] not in (500, 1000):
            continue
        level, direct = phase["level"], phase["direct"]
        raw = next((p for p in phases if p["system"] == "relay-raw" and p["level"] == level), {})
        title = f"{level:,} paced runs (20/s, {duration:g} s)"
        on_time, errors = phase["on_time"], phase["errors"]
        added = first_event_added(phase["ttfe_p99"], direct)
        per_stream = phase["rss_per_stream_kb"]
        for figure, value, unit, ref, ref_value, target, passed, note in (
            (f"events on time (<= {ON_TIME_MS:g} ms)", on_time * 100, "%", "direct",
             direct["on_time"] * 100, ">= 95%", on_time >= 0.95, ""),
            ("errors", errors, "", "direct", direct["errors"], "0", errors == 0, ""),
            ("p99 time to first event", phase["ttfe_p99"], "ms", "direct", direct["ttfe_p99"],
             "added < 50 ms", added < 50, f"added {added:.1f} ms over direct's p50"),
            ("RSS per open stream", per_stream, "KB", "relay-raw" if raw else "",
             raw.get("rss_per_stream_kb"), "< 64 KB", per_stream < 64, ""),
            ("gateway CPU, share of one core", phase["cpu_share"] * 100, "%",
             "relay-raw" if raw else "", raw.get("cpu_share", math.nan) * 100, "", None, ""),
        ):  # fmt: skip
            bench.add(Row("2", f"{title}: {figure}", value, unit, ref, ref_value,
                          target, passed, note))  # fmt: skip


def _capped_rows(bench: Bench, phases: list[dict[str, Any]], duration: float) -> None:
    """Past the cap: what the streams it admitted got (the upstream only writes theirs, so
    on time is of theirs), and how many it refused, against the uncapped gateway."""
    for phase in phases:
        if phase["system"] != "gateway-capped":
            continue
        level, direct = phase["level"], phase["direct"]
        plain = next(p for p in phases if p["system"] == "gateway" and p["level"] == level)
        title = (
            f"{level:,} paced runs (20/s, {duration:g} s), GATEWAY_MAX_RUNS_PER_PROCESS="
            f"{CAPPED_RUNS:,}"
        )
        added, plain_added = (first_event_added(p["ttfe_p99"], direct) for p in (phase, plain))
        for figure, value, unit, ref_value in (
            ("admitted streams' events on time", phase["on_time"] * 100, "%",
             plain["on_time"] * 100),
            ("admitted streams' p99 time to first event, added", added, "ms", plain_added),
            ("streams refused with 503", phase["errors"], "", plain["errors"]),
        ):  # fmt: skip
            bench.add(Row("2", f"{title}: {figure}", value, unit, "no cap", ref_value))


def _pair(a: float, b: float, sign: str = "") -> str:
    return f"{a:{sign}.1f} / {b:{sign}.1f}"


def streams_table(bench: Bench) -> list[list[str]]:
    rows = []
    for p in bench.details["streams"]["phases"]:
        cells = [str(p["level"]), p["system"], f"{p['delivered'] * 100:.1f}",
                 f"{p['on_time'] * 100:.1f}", _pair(p["ttfe_p50"], p["ttfe_p99"])]  # fmt: skip
        direct = p.get("direct")
        if direct is None:
            cells.append("")
        else:
            # The p99 as the rows take it (`first_event_added`): over the upstream's median.
            added = (p["ttfe_p50"] - direct["ttfe_p50"], first_event_added(p["ttfe_p99"], direct))
            cells.append(_pair(*added, sign="+"))
        cells += [_pair(p["latency_p50"], p["latency_p99"]), str(p["errors"])]
        if p["system"] == "direct":
            cells += ["", "", "", "", ""]
        else:
            rss = f"{p['rss_per_stream_kb']:.0f} / {p.get('rss_per_run_kb', math.nan):.0f}"
            cells += [rss, f"{p['cpu_share'] * 100:.0f}",
                      f"{p['wait_share'] * 100:.0f}",
                      f"{p['gc2']['count']} / {p['gc2']['max_ms']:.0f}",
                      f"{p['lag_max_ms']:.0f}"]  # fmt: skip
        wall = p["wall_s"]
        core0 = (p["load_cpu_s"] + p["upstream_cpu_s"]) / wall * 100
        cells += [
            f"{core0:.0f} / {p['core0_wait_s'] / wall * 100:.0f}",
            f"{p['pressure'] * 100:.0f}",
        ]
        rows.append([*cells, str(p["attempts"])])
    return rows

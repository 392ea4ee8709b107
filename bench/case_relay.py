"""Case 1 (relay cost) and the read-path half of case 6: CPU per relayed event in the
process under test, for every system, measured in alternation in the same run.

(a) burst: one run, 20,000 text deltas, as fast as the upstream can send;
(b) paced: 50 concurrent runs at 50 deltas/s each, so every event arrives in its own read;
(c) run start: many one-delta runs, CPU per run (request, upstream call, setup, teardown).
"""

from __future__ import annotations

import contextlib
from typing import Any

from bench.common import median, median_interval
from bench.procs import source_tree
from bench.run import FILED_REV, FILED_SYSTEM, SYSTEMS, Bench, Row, settle
from bench.script import Scenario

BURST = 20_000
PACED_STREAMS = 50
PACED_RATE = 50.0
# The targets: a burst may cost 2.5x the floor (it translates every event, the floor only
# slices bytes); a paced event 1.5x the floor and half the SDK-object relay.
LIMITS: dict[str, tuple[tuple[str, float, str], ...]] = {
    "a": (("relay-raw", 2.5, "<= 2.5x"), ("relay-sdk-events", 1 / 3, "<= 1/3")),
    "b": (("relay-raw", 1.5, "<= 1.5x"), ("relay-sdk-events", 1 / 2, "<= 1/2")),
}


async def relay_cost(bench: Bench) -> None:
    # Ten short repetitions in a full run rather than five long ones: a paced event's ratio
    # to the floor is within a few per cent of 1, one repetition swings by a tenth, and the
    # machine's speed drifts over seconds; ten ratios put their median between the 2nd and
    # the 9th of them (98 %), five only between the least and the greatest (94 %).
    reps = bench.pick(1, 10)
    paced_s = bench.pick(3.0, 4.0)
    starts = bench.pick(100, 150)
    regimes: dict[str, tuple[Scenario, dict[str, Any]]] = {
        "a": (Scenario(n=BURST), {}),
        "b": (
            Scenario(n=int(PACED_RATE * paced_s), rate=PACED_RATE),
            {"streams": PACED_STREAMS, "ramp_s": 1.0},
        ),
        "c": (Scenario(n=1), {"streams": starts, "ramp_s": starts / 100}),
    }
    async with contextlib.AsyncExitStack() as stack:
        # The gateway as it was when issue 16 was filed, from its own tree, when this clone
        # has that commit: what "half of today's" is measured against.
        filed = stack.enter_context(source_tree(FILED_REV))
        procs = {name: await stack.enter_async_context(bench.system(name)) for name in SYSTEMS}
        if filed is not None:
            try:  # old code on today's packages: if it no longer starts, the row says so
                procs[FILED_SYSTEM] = await stack.enter_async_context(
                    bench.system(FILED_SYSTEM, root=filed)
                )
            except RuntimeError as exc:
                bench.details["filed_failed"] = str(exc)
        systems = list(procs)
        per_event: dict[str, dict[str, list[float]]] = {
            r: {s: [] for s in systems} for r in regimes
        }
        rates: dict[str, list[float]] = {s: [] for s in systems}
        errors: dict[str, int] = dict.fromkeys(systems, 0)
        for regime, (scenario, kwargs) in regimes.items():
            await settle(bench.pick(5.0, 30.0), window_s=bench.pick(1.0, 2.0))
            for rep in range(reps):
                order = systems[rep:] + systems[:rep]  # spread any drift
                for name in order:
                    cpu, result = await bench.cpu_of(procs[name], scenario, **kwargs)
                    errors[name] += result["errors"]
                    count = result["streams"] if regime == "c" else max(1, result["deltas"])
                    per_event[regime][name].append(cpu / count * 1e6)
                    if regime == "a":
                        rates[name].append(result["deltas"] / result["wall_s"])
    bench.details["relay"] = {
        "per_event_us": per_event,
        "burst_rate": rates,
        "errors": errors,
        "reps": reps,
        "paced_s": paced_s,
        "starts": starts,
        "filed_rev": FILED_REV if FILED_SYSTEM in per_event["a"] else None,
    }
    _rows(bench, per_event, paced_s)


def _ratios(values: dict[str, list[float]], name: str, ref: str) -> list[float]:
    return [v / r for v, r in zip(values[name], values[ref], strict=True)]


def _ratio(values: dict[str, list[float]], name: str, ref: str) -> float:
    return median(_ratios(values, name, ref))


def _rows(bench: Bench, per_event: dict[str, dict[str, list[float]]], paced_s: float) -> None:
    titles = {
        "a": f"CPU per relayed event, burst ({BURST:,} deltas, one run)",
        "b": f"CPU per relayed event, paced ({PACED_STREAMS} runs x {PACED_RATE:g}/s "
        f"x {paced_s:g} s, one event per read)",
    }
    for regime, title in titles.items():
        values = per_event[regime]
        gateway = median(values["gateway"])
        for ref, limit, label in LIMITS[regime]:
            ratios = _ratios(values, "gateway", ref)
            ratio = median(ratios)
            bench.add(
                Row(
                    f"1{regime}",
                    title,
                    gateway,
                    "us",
                    ref,
                    median(values[ref]),
                    f"{label} {ref}",
                    ratio <= limit,
                    ratio=ratio,
                    interval=median_interval(ratios),
                )
            )
        bench.add(
            Row(
                f"6{regime}",
                title + ", OpenAI Chat Completions read path",
                median(values["gateway-openai"]),
                "us",
                "gateway",
                gateway,
                ratio=_ratio(values, "gateway-openai", "gateway"),
            )
        )
        bench.add(
            Row(
                f"6{regime}",
                title + ", SDK helper read path",
                median(values["gateway-sdk-helper"]),
                "us",
                "gateway",
                gateway,
                ratio=_ratio(values, "gateway-sdk-helper", "gateway"),
            )
        )
    starts = per_event["c"]
    titles["c"] = "CPU per run (start, upstream call, end)"
    for ref in ("relay-raw", "relay-sdk-events"):
        ratio = _ratio(starts, "gateway", ref)
        bench.add(
            Row("1c", titles["c"], median(starts["gateway"]), "us", ref, median(starts[ref]),
                ratio=ratio)
        )  # fmt: skip
    _filed_rows(bench, per_event, titles)
    for regime, title in titles.items():  # the event loop lever: same gateway, asyncio's loop
        values = per_event[regime]
        bench.add(
            Row(f"1{regime}", title + ", on asyncio's own event loop",
                median(values["gateway-asyncio"]), "us", "gateway", median(values["gateway"]),
                ratio=_ratio(values, "gateway-asyncio", "gateway"))
        )  # fmt: skip


def _filed_rows(
    bench: Bench, per_event: dict[str, dict[str, list[float]]], titles: dict[str, str]
) -> None:
    """The gateway against its own code when issue 16 was filed: the run start's target
    (at most half), and the per-event figures beside it."""
    if FILED_SYSTEM not in per_event["c"]:
        why = ("it did not start on today's packages" if "filed_failed" in bench.details
               else f"commit {FILED_REV} is not in this clone")  # fmt: skip
        bench.add(Row("1c", titles["c"], median(per_event["c"]["gateway"]), "us",
                      FILED_SYSTEM, float("nan"), f"<= 1/2 {FILED_SYSTEM}",
                      note=f"{FILED_SYSTEM} not measured: {why}"))  # fmt: skip
        return
    for regime in "abc":
        ratio = _ratio(per_event[regime], "gateway", FILED_SYSTEM)
        target = regime == "c"
        bench.add(
            Row(f"1{regime}", titles[regime], median(per_event[regime]["gateway"]), "us",
                FILED_SYSTEM, median(per_event[regime][FILED_SYSTEM]),
                f"<= 1/2 {FILED_SYSTEM}" if target else "", ratio <= 0.5 if target else None,
                ratio=ratio)
        )  # fmt: skip


def relay_table(bench: Bench) -> list[list[str]]:
    """Case 1 per system: the medians behind the summary rows."""
    data = bench.details["relay"]
    rows = []
    for name in data["per_event_us"]["a"]:
        a, b, c = (median(data["per_event_us"][r][name]) for r in "abc")
        rate = median(data["burst_rate"][name])
        rows.append(
            [name, f"{a:.2f}", f"{b:.1f}", f"{c:.0f}", f"{rate:,.0f}", str(data["errors"][name])]
        )
    return rows

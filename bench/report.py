"""BENCH.md from one bench run: the summary table, per-case tables, the machine, the
commands, how processes were pinned, and the notes in `bench/notes.md`."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.case_relay import relay_table
from bench.case_runcost import run_cost_table
from bench.case_streams import first_event_added, streams_table
from bench.common import Interval, event_loop
from bench.procs import ROOT, Cores
from bench.run import CAPPED_RUNS, Bench, Row
from gateway.ops.eventloop import loop_factory

PACKAGES = (
    "aiohttp",
    "anthropic",
    "httpx2",
    "uvloop",
    "orjson",
    "pydantic",
    "opentelemetry-sdk",
    "prometheus-client",
)
NOTES = Path(__file__).resolve().parent / "notes.md"


def fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 100:
        return f"{value:.1f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if magnitude >= 0.1 or value == 0 else f"{value:.3f}"


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _number(value: float | None, unit: str) -> str:
    """Counts (no unit) as integers, everything else through `fmt`."""
    if not unit and value is not None and float(value).is_integer():
        return str(int(value))
    return fmt(value)


def _ratio_text(ratio: float | None) -> str:
    if ratio is None or math.isnan(ratio):
        return "–"
    if 0 < ratio < 0.1:
        return f"1/{1 / ratio:,.0f}"
    return f"{ratio:.2f}"


def ratio_cell(
    ratio: float | None, value: float, ref_value: float | None, interval: Interval | None = None
) -> str:
    """The ratio, and what it is of when the row's two columns do not give it: a median of
    per-repetition ratios (each repetition measures both systems side by side) is not the
    quotient of the two medians, and the cell says so with that quotient beside it; and
    where that median lies, given the repetitions' spread."""
    text = _ratio_text(ratio)
    if ratio is None or math.isnan(ratio):
        return text
    said = []
    if ref_value and not math.isnan(ref_value):
        quotient = value / ref_value
        if abs(quotient - ratio) > 0.01 * abs(ratio):
            said.append(f"value / reference {_ratio_text(quotient)}")
    if interval is not None and interval[2] > 0:
        low, high, coverage = interval
        said.insert(0, f"{coverage * 100:.0f} % interval {_ratio_text(low)}-{_ratio_text(high)}")
    if not said:
        return text
    return f"{text} (median of the repetitions' ratios; {'; '.join(said)})"


def summary_rows(rows: list[Row]) -> list[list[str]]:
    out = []
    for row in rows:
        unit = f" {row.unit}" if row.unit else ""
        ref = f"{row.ref_name}: {_number(row.ref_value, row.unit)}{unit}" if row.ref_name else "–"
        ratio = row.ratio_value()
        verdict = {True: "PASS", False: "**MISS**", None: "–"}[row.passed]
        value = _number(row.value, row.unit)
        figure = row.figure + (f" ({row.note})" if row.note else "")
        out.append(
            [
                row.case,
                figure,
                f"{value}{unit}",
                ref,
                ratio_cell(ratio, row.value, row.ref_value, row.interval),
                row.target or "–",
                verdict,
            ]
        )
    return out


def sustains(bench: Bench) -> str:
    """The README line: the largest level one process holds in case 2 by all of the issue's
    criteria (>= 95% of events on time, no errors, p99 time to first event < 50 ms over
    the upstream's, see `first_event_added`), what the next level measured misses, and the
    CPU ceiling from 1b."""
    phases = [
        p for p in bench.details.get("streams", {}).get("phases", []) if p["system"] == "gateway"
    ]

    def added(phase: dict[str, Any]) -> float:
        return first_event_added(phase["ttfe_p99"], phase["direct"])

    def versus(phase: dict[str, Any]) -> str:
        direct = phase["direct"]
        return (
            f"{phase['ttfe_p99']:,.0f} ms ({added(phase):+,.0f} ms over the upstream's median "
            f"first event read directly, {direct['ttfe_p50']:,.1f} ms; its p99 "
            f"{direct['ttfe_p99']:,.0f} ms)"
        )

    def holds(phase: dict[str, Any]) -> bool:
        return phase["on_time"] >= 0.95 and phase["errors"] == 0 and added(phase) < 50

    held = [p for p in phases if holds(p)]
    parts = []
    best = max((p["level"] for p in held), default=0)
    if held:
        phase = next(p for p in held if p["level"] == best)
        parts.append(
            f"one gateway process (one core) holds {best:,} streams at 20 events/s "
            f"({best * 20:,} events/s): {phase['on_time'] * 100:.0f}% of events on time, no "
            f"errors, p99 time to first event {versus(phase)}"
        )
    beyond = sorted((p for p in phases if p["level"] > best), key=lambda p: p["level"])
    if beyond:
        nxt = beyond[0]
        parts.append(
            f"at {nxt['level']:,} it misses ({nxt['on_time'] * 100:.1f}% on time, "
            f"{nxt['errors']} errors, p99 time to first event {versus(nxt)})"
        )
    capped = [
        p for p in bench.details.get("streams", {}).get("phases", [])
        if p["system"] == "gateway-capped"
    ]  # fmt: skip
    if capped:
        top = max(capped, key=lambda p: p["level"])
        parts.append(
            f"capped at {CAPPED_RUNS:,} runs (`GATEWAY_MAX_RUNS_PER_PROCESS`), at "
            f"{top['level']:,} streams it refused {top['errors']:,} with 503 and kept "
            f"{top['on_time'] * 100:.1f}% of the admitted ones' events on time, p99 time to "
            f"first event {versus(top)}"
        )
    paced = next((r for r in bench.rows if r.case == "1b"), None)
    if paced is not None and paced.value:
        parts.append(
            f"its CPU per paced event puts the ceiling near {1e6 / paced.value:,.0f} events/s"
        )
    return "; ".join(parts) or "not measured"


def two_workers(bench: Bench) -> str:
    """The README line's sequel: what two workers (`GATEWAY_WORKERS=2`) hold, from case 9."""
    found = bench.details.get("workers")
    if not isinstance(found, dict) or "skipped" in found or "2" not in found:
        why = found.get("skipped") if isinstance(found, dict) else None
        return (
            "two workers (`GATEWAY_WORKERS=2`, case 9): not measured in this run"
            + (f" ({why})" if why else "")
            + "; it needs a core per worker besides the ones the upstream and the load "
            "client use, which a 2-core machine does not have (bench/notes.md)"
        )
    held = {
        n: max((p["level"] for p in phases if p["on_time"] >= 0.95 and p["errors"] == 0),
               default=0)
        for n, phases in found.items()
    }  # fmt: skip
    return (
        f"two workers (`GATEWAY_WORKERS=2`, case 9) held {held.get('2', 0):,} streams, "
        f"one worker with Redis {held.get('1', 0):,}, on this machine"
    )


def code_version() -> str:
    """The commit measured, and whether the service's code differed from it."""
    text = f"commit {_git('rev-parse', '--short', 'HEAD')}"
    if _git("status", "--short", "gateway", "tools"):
        text += " with uncommitted changes in gateway/ or tools/"
    return text


def machine(cores: Cores, code: str) -> list[str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    return [
        f"- CPU: {os.cpu_count()} logical cores ({cpu}); the bench could use {len(cores.allowed)}",
        f"- OS: Linux {platform.release()}; Python {platform.python_version()} "
        f"({platform.python_implementation()})",
        f"- Packages: {versions}",
        f"- Event loop of every process: {loop_factory(event_loop()).__module__.split('.')[0]} "
        f"(BENCH_EVENT_LOOP={event_loop()})",
        f"- Code: {code}",
    ]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip()


def render(bench: Bench, command: str) -> str:
    t = bench.timings
    mode = "quick mode" if bench.quick else "full mode"
    if bench.details.get("not_run"):
        mode += f"; not run: {', '.join(bench.details['not_run'])} (see bench/notes.md)"
    parts = [
        "# Benchmark: the gateway against the floor\n",
        f"**What one process sustains:** {sustains(bench)}.\n",
        f"**Two workers:** {two_workers(bench)}.\n",
        f"Produced by `{command}` ({mode}) in {t.get('total', 0):.0f} s on the machine "
        "below; every figure comes from that one run, each measured next to its reference, "
        "so read the ratios first: the machine is shared and absolute numbers drift.\n",
        "## Results\n",
        table(
            ["case", "figure", "value", "reference (same run)", "ratio", "target", "result"],
            summary_rows(bench.rows),
        ),
    ]
    if bench.details.get("failed"):
        failed = "; ".join(f"{k}: {v}" for k, v in bench.details["failed"].items())
        parts.append(f"\nNot measured (the case failed): {failed}\n")
    if "relay" in bench.details:
        parts += [
            "\n### Case 1 and 6 by system (medians)\n",
            table(
                [
                    "system",
                    "burst us/event",
                    "paced us/event",
                    "us/run",
                    "burst events/s",
                    "errors",
                ],
                relay_table(bench),
            ),
        ]
    if "run_cost" in bench.details:
        parts += [
            "\n### Case 1e by system (medians, microseconds a run)\n",
            table(
                ["system", "user", "kernel", "user + kernel", "instructions"], run_cost_table(bench)
            ),
        ]
    if "streams" in bench.details:
        parts += [
            "\n### Case 2 by level and system\n",
            table(
                [
                    "streams",
                    "system",
                    "delivered %",
                    "on time %",
                    "TTFE p50 / p99 ms",
                    "added p50 / p99 ms",
                    "event latency p50 / p99 ms",
                    "errors",
                    "RSS KB/stream: open / at the end",
                    "CPU % of a core",
                    "waiting for a CPU %",
                    "full GCs / max ms",
                    "loop lag max ms",
                    "core 0 busy / waiting %",
                    "machine CPU pressure %",
                    "attempts",
                ],
                streams_table(bench),
            ),
        ]
    if "tool_input" in bench.details:
        parts += ["\n### Case 3 by size\n", _tool_table(bench)]
    parts += [
        "\n## Machine\n",
        *machine(bench.cores, bench.details.get("code") or code_version()),
        f"\n**Pinning:** {bench.cores.describe()}.\n",
        "## Commands\n",
        "```\npip install -e .[dev]\nmake bench        # python -m bench --out BENCH.md\n"
        "make bench-quick  # python -m bench --quick\n```\n",
        "`--quick` (one repetition, 500 streams only, shorter streams, no case 7) takes about "
        "75 s here and is a smoke test"
        + ("; these figures are from one.\n" if bench.quick else "; these figures are not.\n"),
        "Run time of this run by case (s): "
        + ", ".join(f"{k} {v:.0f}" for k, v in t.items() if k != "total")
        + ".\n",
    ]
    if NOTES.exists():
        parts += ["", NOTES.read_text().strip(), ""]
    return "\n".join(parts).rstrip() + "\n"


def _tool_table(bench: Bench) -> str:
    data = bench.details["tool_input"]
    rows = []
    for size, micro in sorted(data["micro"].items()):
        gw = data["client"]["gateway"].get(size, {})
        helper = data["client"]["gateway-sdk-helper"].get(size, {})
        sdk = micro.get("sdk", {})
        rows.append(
            [
                f"{size // 1024} KB",
                str(micro["fragments"]),
                fmt(gw.get("first_to_parsed_ms")),
                fmt(gw.get("last_to_parsed_ms")),
                fmt(helper.get("first_to_parsed_ms")),
                fmt(micro["translator"]["total_s"] * 1000),
                fmt(micro["translator"]["after_last_s"] * 1000),
                fmt(sdk["total_s"] * 1000) if sdk else "–",
            ]
        )
    return table(
        [
            "input",
            "fragments",
            "gateway first→parsed ms",
            "gateway last→parsed ms",
            "SDK-helper gateway first→parsed ms",
            "translator in-process ms",
            "translator join+parse ms",
            "SDK accumulator in-process ms",
        ],
        rows,
    )


def write(bench: Bench, path: Path) -> None:
    command = bench.details.get("command") or "python -m bench" + (" --quick" * bench.quick)
    if path.name != "BENCH.md" or path.parent != ROOT:
        command += f" --out {path.name}"
    path.write_text(render(bench, command))
    print(f"wrote {path}", file=sys.stderr)

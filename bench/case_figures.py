"""Case 14: what the figure check costs a run (gateway/figures, issue 43).

A 2,000-character answer written from real offline `get_sec_company_facts` results,
checked against ~200 KB of such results (bench/figures_eval.py): CPU time of the process
per repetition, so the machine's other load counts less than in wall time. A run pays
both steps at its end: the index of the results (built once per run) and the check of the
answer against it; the target is about their sum, each repetition's index and check added
before the median is taken. Timed with the collector set as the gateway sets it after
startup (`bench.common.gateway_gc`), not with Python's defaults that the bench's own
process keeps otherwise.

The install compiles the check's modules with mypyc where it can (setup.py): the row with
the target is the check as installed here (it says which); a second row times the same
source run as Python (`GATEWAY_PURE_PYTHON=1`, in a process of its own), what an install
without a C compiler pays.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys

from bench.figures_eval import Timing, load, measure
from bench.run import Bench, Row
from gateway import figures

TARGET_MS = 5.0


async def figure_check(bench: Bench) -> None:
    repeat = 50 if bench.quick else 200
    timing = measure(await load(), random.Random(7), repeat=repeat)
    how = "compiled (mypyc)" if figures.COMPILED else "Python"
    total = _add(bench, timing, f"as installed: {how}", f"<= {TARGET_MS:g} ms")
    bench.details["figures"] = {
        "check_ms": timing.check,
        "index_ms": timing.build,
        "compiled": figures.COMPILED,
    }
    if figures.COMPILED:
        python = await _as_python(repeat)
        bench.details["figures"]["python"] = {"check_ms": python.check, "index_ms": python.build}
        _add(bench, python, "the same source as Python", "", reference=total)


def _add(bench: Bench, timing: Timing, how: str, target: str, reference: float = 0.0) -> float:
    both = [build + check for build, check in zip(timing.build, timing.check, strict=True)]
    total = statistics.median(both)
    check, build = statistics.median(timing.check), statistics.median(timing.build)
    what = f"{timing.chars:,}-char answer, {timing.figures} figures, {timing.result_chars:,} chars"
    bench.add(
        Row(
            "14",
            f"figure check at a run's end, {how}: {what} of tool results indexed and checked "
            "(CPU, median)",
            total,
            "ms",
            ref_name="as installed" if reference else "",
            ref_value=reference or None,
            target=target,
            passed=total <= TARGET_MS if target else None,
            note=f"medians: indexing the results {build:.2f} ms, checking the answer "
            f"{check:.2f} ms",
        )
    )
    return total


async def _as_python(repeat: int) -> Timing:
    """The same measurement in a process that runs the check's source."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.figures_eval",
        "--timing",
        "--json",
        "--repeat",
        str(repeat),
        env={**os.environ, "GATEWAY_PURE_PYTHON": "1"},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    found = json.loads(out)
    assert not found.pop("compiled"), "GATEWAY_PURE_PYTHON=1 still ran the compiled check"
    return Timing(**found)

"""Case 14: what the figure check costs a run (gateway/figures, issue 43).

A 2,000-character answer written from real offline `get_sec_company_facts` results,
checked against ~200 KB of such results (bench/figures_eval.py): CPU time of the process
per repetition, so the machine's other load counts less than in wall time. A run pays
both steps at its end: the index of the results (built once per run) and the check of the
answer against it; the target is about their sum, each repetition's index and check added
before the median is taken. Timed with the collector set as the gateway sets it after
startup (`bench.common.gateway_gc`), not with Python's defaults that the bench's own
process keeps otherwise.
"""

from __future__ import annotations

import random
import statistics

from bench.figures_eval import load, measure
from bench.run import Bench, Row

TARGET_MS = 5.0


async def figure_check(bench: Bench) -> None:
    timing = measure(await load(), random.Random(7), repeat=50 if bench.quick else 200)
    both = [build + check for build, check in zip(timing.build, timing.check, strict=True)]
    total = statistics.median(both)
    check, build = statistics.median(timing.check), statistics.median(timing.build)
    bench.details["figures"] = {"check_ms": timing.check, "index_ms": timing.build}
    what = f"{timing.chars:,}-char answer, {timing.figures} figures, {timing.result_chars:,} chars"
    bench.add(
        Row(
            "14",
            f"figure check at a run's end: {what} of tool results indexed and checked "
            "(CPU, median)",
            total,
            "ms",
            target=f"<= {TARGET_MS:g} ms",
            passed=total <= TARGET_MS,
            note=f"medians: indexing the results {build:.2f} ms, checking the answer "
            f"{check:.2f} ms",
        )
    )

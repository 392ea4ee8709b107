"""Case 14: what the figure check costs a run (gateway/figures, issue 43).

A 2,000-character answer written from real offline `get_sec_company_facts` results,
checked against ~200 KB of such results (bench/figures_eval.py): CPU time of the process
per repetition, so the machine's other load counts less than in wall time. The index of
the results is built once per run, at its end; the check of the answer is the figure the
target is about.
"""

from __future__ import annotations

import random
import statistics

from bench.figures_eval import load, measure
from bench.run import Bench, Row

TARGET_MS = 5.0


async def figure_check(bench: Bench) -> None:
    timing = measure(await load(), random.Random(7), repeat=50 if bench.quick else 200)
    check, build = statistics.median(timing.check), statistics.median(timing.build)
    bench.details["figures"] = {"check_ms": timing.check, "index_ms": timing.build}
    what = f"{timing.chars:,}-char answer, {timing.figures} figures, {timing.result_chars:,} chars"
    bench.add(
        Row(
            "14",
            f"figure check: {what} of tool results (CPU, median)",
            check,
            "ms",
            target=f"<= {TARGET_MS:g} ms",
            passed=check <= TARGET_MS,
            note=f"indexing the results, once per run: {build:.2f} ms",
        )
    )

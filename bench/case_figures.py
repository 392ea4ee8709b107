"""Case 14: what the figure check costs a run (gateway/figures, issue 43).

A 2,000-character answer written from real offline `get_sec_company_facts` results,
checked against ~200 KB of such results (bench/figures_eval.py): CPU time of the process
per repetition, so the machine's other load counts less than in wall time. A run indexes
each round's results as the round ends (`ResultParts`) and, at its end, before `final`,
merges those indexes and checks the answer: the target is about that end, which `final`
waits for. The indexing as the results come, and the whole of what a run pays, are
reported beside it, as is the check that indexed everything at the end.
"""

from __future__ import annotations

import random
import statistics

from bench.figures_eval import load, measure
from bench.run import Bench, Row

TARGET_MS = 5.0


async def figure_check(bench: Bench) -> None:
    timing = measure(await load(), random.Random(7), repeat=50 if bench.quick else 200)
    end, parts = statistics.median(timing.end), statistics.median(timing.parts)
    paid = statistics.median(a + b for a, b in zip(timing.parts, timing.end, strict=True))
    at_end = statistics.median(a + b for a, b in zip(timing.build, timing.check, strict=True))
    bench.details["figures"] = {
        "check_ms": timing.check,
        "index_ms": timing.build,
        "parts_ms": timing.parts,
        "end_ms": timing.end,
    }
    what = f"{timing.chars:,}-char answer, {timing.figures} figures, {timing.result_chars:,} chars"
    bench.add(
        Row(
            "14",
            f"figure check at a run's end, before `final`: {what} of tool results, their "
            "indexes merged and the answer checked (CPU, median)",
            end,
            "ms",
            target=f"<= {TARGET_MS:g} ms",
            passed=end <= TARGET_MS,
            note=f"indexing the results as each round ends: {parts:.2f} ms in all; "
            f"what a run pays in all {paid:.2f} ms (everything indexed at the end instead: "
            f"{at_end:.2f} ms)",
        )
    )

"""The figure check, measured: answers written from real tool results of the bundled
EDGAR snapshot, with correct figures and with planted errors, scored; and the check's
cost on a 2,000-character answer against 200 KB of tool results.

    python -m bench.figures_eval [--answers 600] [--seed 7] [--timing [--json]]

Each answer states a company's figures for one fiscal year from the offline
`get_sec_company_facts` results (amounts in several formats, a growth rate, a margin, a
per-share amount, a "(in millions)" table, another company's figure, and often an analyst
paragraph: a change between two years, a ratio's change in percentage points, a computed
fiscal Q4), and either nothing wrong or one planted error: another period's value, a wrong
scale, transposed or dropped digits, a wrong rounding, an invented number, a growth rate
off by more than its rounding, a right value for the wrong company, a wrong change, a
wrong change in points, a wrong Q4. A planted error is caught when its figure comes out
`unsourced` or `other_period`; a correct figure is flagged when it comes out so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from bench.common import gateway_gc
from bench.figures_answers import COMPANIES, ERRORS, Answer, Data, load, messages, write
from gateway import figures

FLAGGED = ("unsourced", "other_period")
__all__ = ["COMPANIES", "ERRORS", "Score", "Timing", "evaluate", "load", "measure"]


@dataclass
class Score:
    answers: int = 0
    planted: Counter[str] = field(default_factory=Counter)
    caught: Counter[str] = field(default_factory=Counter)
    correct: int = 0
    flagged: int = 0
    unseen: int = 0
    misses: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    def add(self, answer: Answer) -> None:
        report = figures.check(answer.text, figures.build(messages(answer)))
        status = {c.figure.start: c.status for c in report.figures}
        self.answers += 1
        for start, end, kind in answer.marks:
            got = status.get(start)
            self.unseen += got is None
            if kind == "ok":
                self.correct += 1
                if got in FLAGGED or got is None:
                    self.flagged += 1
                    self.alarms.append(f"{answer.text[start:end]!r} {got}: {answer.text[:200]!r}")
                continue
            self.planted[kind] += 1
            if got in FLAGGED:
                self.caught[kind] += 1
            else:
                self.misses.append(
                    f"{kind} {answer.text[start:end]!r} {got}: {answer.text[:240]!r}"
                )

    def lines(self) -> list[str]:
        planted, caught = sum(self.planted.values()), sum(self.caught.values())
        out = [
            f"answers: {self.answers}; planted errors: {planted}, caught {caught} "
            f"({caught / planted:.1%}); correct figures: {self.correct}, flagged {self.flagged} "
            f"({self.flagged / self.correct:.2%}); figures not found in the text: {self.unseen}",
        ]
        for kind in ERRORS:
            out.append(f"  {kind}: {self.caught[kind]}/{self.planted[kind]}")
        return out


def evaluate(data: Data, count: int, seed: int) -> Score:
    rng = random.Random(seed)
    score = Score()
    while score.answers < count:
        error = None if score.answers % 3 == 0 else ERRORS[score.answers % len(ERRORS)]
        answer = write(data, rng, error)
        if answer is not None:
            score.add(answer)
    return score


@dataclass
class Timing:
    """CPU milliseconds of each repetition: indexing the results, checking the answer."""

    chars: int
    figures: int
    result_chars: int
    results: int
    build: list[float]
    check: list[float]


def measure(data: Data, rng: random.Random, repeat: int = 200) -> Timing:
    """The check of a ~2,000-character answer against ~200 KB of tool results."""
    results = list(data.values())
    chosen, size = [], 0
    for result in rng.sample(results, len(results)):
        if size >= 200_000:
            break
        chosen.append(result)
        size += len(result.content)
    answer = Answer()
    while len(answer.text) < 2_000:
        one = write(data, rng, None)
        if one is not None:
            answer.say(one.text + "\n\n")
            chosen += [r for r in one.results if r not in chosen]
    answer.text, answer.results = answer.text[:2_000], chosen
    conversation = messages(answer)
    timing = Timing(len(answer.text), 0, sum(len(r.content) for r in chosen), len(chosen), [], [])
    with gateway_gc():  # the check runs in the gateway, with its collector settings
        for _ in range(repeat):
            start = time.process_time()
            index = figures.build(conversation)
            middle = time.process_time()
            timing.figures = len(figures.check(answer.text, index).figures)
            timing.build.append((middle - start) * 1000)
            timing.check.append((time.process_time() - middle) * 1000)
    return timing


def timing_lines(t: Timing) -> list[str]:
    build, check = t.build, t.check
    return [
        f"the figure check's modules: {'compiled (mypyc)' if figures.COMPILED else 'Python'}",
        f"answer {t.chars:,} chars, {t.figures} figures; tool results "
        f"{t.result_chars:,} chars in {t.results} results",
        f"  index the results (once per run): median {statistics.median(build):.2f} ms, "
        f"p90 {statistics.quantiles(build, n=10)[-1]:.2f} ms",
        f"  check the answer against them: median {statistics.median(check):.2f} ms, "
        f"p90 {statistics.quantiles(check, n=10)[-1]:.2f} ms",
        f"  both: median {statistics.median(map(sum, zip(build, check, strict=True))):.2f} ms",
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.figures_eval", description=__doc__)
    parser.add_argument("--answers", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--json", action="store_true", help="with --timing: as JSON")
    parser.add_argument("--repeat", type=int, default=200, help="with --timing")
    parser.add_argument("--show", type=int, default=0, help="print this many misses and alarms")
    args = parser.parse_args()
    data = await load()
    if args.timing:
        timing = measure(data, random.Random(args.seed), args.repeat)
        if args.json:
            print(json.dumps({**vars(timing), "compiled": figures.COMPILED}))
        else:
            print("\n".join(timing_lines(timing)))
        return
    score = evaluate(data, args.answers, args.seed)
    print("\n".join(score.lines()))
    for line in (score.misses + score.alarms)[: args.show]:
        print(line)


if __name__ == "__main__":
    asyncio.run(main())

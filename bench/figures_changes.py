"""The evaluation's analyst paragraphs (bench/figures_answers.py): a change of an amount
between two fiscal years (stated before its inputs), a ratio's change in percentage
points, and a fiscal Q4 computed as its year less three quarters; correct, or with the
derived figure planted wrong."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from bench.figures_formats import money, still_right

CHANGES = ("wrong_change", "wrong_points", "wrong_q4")
Rows = dict[int, dict[str, Any]]


def paragraph(
    answer: Any,
    rng: random.Random,
    error: str | None,
    labels: tuple[str, str],
    rows: tuple[Any, Any],
) -> bool:
    """Write one analyst paragraph (of the kind `error` plants, or any when it plants none
    here): False when this answer cannot carry it."""
    kind = error if error in CHANGES else rng.choice(CHANGES)
    planted = error in CHANGES
    if kind == "wrong_change":
        return _change(answer, rng, planted, labels[0], rows[0])
    if kind == "wrong_points":
        return _points(answer, rng, planted, labels, rows)
    return _q4(answer, rng, planted, labels[0], rows[0])


def _spoilt(value: float, rng: random.Random, planted: bool, fixed: str = "") -> str | None:
    """`value` as `money` writes it, or, planted, a value off by 10 to 60 % (or `fixed`)."""
    if not planted:
        return money(value, rng)
    shown = fixed or money(value * rng.choice((rng.uniform(0.4, 0.9), rng.uniform(1.1, 1.6))), rng)
    return None if still_right(shown, value) else shown


def _change(answer: Any, rng: random.Random, planted: bool, label: str, rows: Any) -> bool:
    annual: Rows = rows.annual
    year = max(annual)
    earlier = [y for y in annual if year - 4 <= y < year]
    if not earlier:
        return False
    before = rng.choice(earlier)
    a, b = annual[before]["value"], annual[year]["value"]
    shown = _spoilt(abs(b - a), rng, planted)
    if shown is None or abs(b - a) < 1e6:
        return False
    verb = "rose" if b >= a else "fell"
    answer.say(f"\n\nIts {label} {verb} by ")
    answer.figure(shown, "wrong_change" if planted else "ok")
    answer.say(f" from FY{before} to FY{year}: from ")
    answer.figure(money(a, rng))
    answer.say(f" (FY{before}) to ")
    answer.figure(money(b, rng))
    answer.say(f" (FY{year}).")
    return True


def _points(
    answer: Any, rng: random.Random, planted: bool, labels: tuple[str, str], rows: Any
) -> bool:
    whole, part = rows[0].annual, rows[1].annual
    years = sorted(y for y in set(whole) & set(part) if whole[y]["value"])
    if len(years) < 2:
        return False
    before, year = sorted(rng.sample(years[-5:], 2))
    ratios = [part[y]["value"] / whole[y]["value"] * 100 for y in (before, year)]
    change = ratios[1] - ratios[0]
    if planted:
        change += rng.choice((-1, 1)) * rng.uniform(0.3, 3.0)
    answer.say(f"\n\n{labels[1].capitalize()} as a share of {labels[0]} went from ")
    answer.figure(f"{ratios[0]:.1f}%")
    answer.say(" to ")
    answer.figure(f"{ratios[1]:.1f}%")
    answer.say(f" from FY{before} to FY{year}, ")
    answer.figure(f"{change:+.1f} percentage points", "wrong_points" if planted else "ok")
    for y in (before, year):
        answer.say(f"; FY{y} {labels[1]} of ")
        answer.figure(money(part[y]["value"], rng))
        answer.say(f" on {labels[0]} of ")
        answer.figure(money(whole[y]["value"], rng))
    answer.say(".")
    return True


def _q4(answer: Any, rng: random.Random, planted: bool, label: str, rows: Any) -> bool:
    for year in sorted(rows.annual, reverse=True)[:3]:
        row = rows.annual[year]
        quarters = _quarters(row, rows.quarterly)
        if quarters is not None:
            break
    else:
        return False
    q4 = row["value"] - sum(q["value"] for q in quarters)
    wrong = money(q4 + quarters[-1]["value"], rng) if rng.random() < 0.5 else ""
    shown = _spoilt(q4, rng, planted, wrong)
    if shown is None:
        return False
    answer.say(f"\n\nIts {label} for fiscal Q4 FY{year} (the quarter ended {row['end']}) was ")
    answer.figure(shown, "wrong_q4" if planted else "ok")
    answer.say(f", computed as its FY{year} {label} of ")
    answer.figure(money(row["value"], rng))
    answer.say(" less the first three quarters: ")
    for n, quarter in enumerate(quarters):
        answer.say(", " if n else "")
        answer.figure(money(quarter["value"], rng))
    answer.say(".")
    return True


def _quarters(year: dict[str, Any], quarterly: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The three quarters of `year` before its last, or None."""
    first = date.fromisoformat(year["start"]) - timedelta(days=7)
    last = date.fromisoformat(year["end"]) - timedelta(days=45)
    found = {
        q["end"]: q
        for q in quarterly
        if q.get("start")
        and first <= date.fromisoformat(q["start"])
        and date.fromisoformat(q["end"]) <= last
        and (date.fromisoformat(q["end"]) - date.fromisoformat(q["start"])).days < 120
    }
    return [found[end] for end in sorted(found)] if len(found) == 3 else None

"""More generated questions, as analysts ask them (issue 45): named quarters (a fiscal
quarter by number and year, the quarter ended in a month, a calendar quarter of a company
whose fiscal year is not the calendar), the latest 10-Q, the change in a figure between two
named fiscal years, and what the demo must name as not reported (units sold, same-store
sales, a price target, today's trading).

Each company's fiscal calendar is read here from its facts, on its own: a quarter belongs
to the full year (an annual value's start and end) that contains it, or, after the last
reported year, to the year after it; its number is how many quarters of about 91 days its
end is from the start of that year. The figures a right answer gives are read from the
snapshot the same way `generated.py` reads them.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
import re

__all__ = ["change_expected", "more", "quarter_expected", "quarter_number"]

from tests.demo.generated import (
    BY_KEY,
    COMPANIES,
    CONCEPT_OF,
    NOT_HELD,
    Case,
    Company,
    Expected,
    Figure,
    Period,
    Row,
    _possessive,
    expected,
    fiscal_year,
    rows,
)

CALENDAR = "us-gaap:NetIncomeLoss"
ORDINALS = ("first", "second", "third", "fourth")
MONTHS = tuple(calendar.month_name)


def _date(value: object) -> dt.date:
    return dt.date.fromisoformat(str(value))


def quarter_number(cik: int, row: Row) -> tuple[int, int] | None:
    """(fiscal year, quarter) of a quarterly value, from the company's full years."""
    years = [(_date(r["start"]), _date(r["end"])) for r in rows(cik, CALENDAR, "annual")]
    start, end = _date(row["start"]), _date(row["end"])
    home = next(((s, e) for s, e in years if s <= start and end <= e), None)
    if home is None and years and start > max(e for _, e in years):
        last = max(e for _, e in years)
        home = (last + dt.timedelta(days=1), last + dt.timedelta(days=365))
        if end > home[1]:
            return None
    if home is None:
        return None
    fy = fiscal_year({"end": home[1].isoformat()})
    return fy, max(1, min(4, round((end - home[0]).days / 91.3)))


def _quarterly(cik: int, concept: str) -> tuple[Row, ...]:
    return rows(cik, concept, "quarterly")


def _calendar_match(row: Row, year: int, q: int) -> int:
    first = dt.date(year, 3 * q - 2, 1)
    last = dt.date(year, 3 * q, calendar.monthrange(year, 3 * q)[1])
    return (min(last, _date(row["end"])) - max(first, _date(row["start"]))).days + 1


def _ended_in(row: Row, year: int, month: int) -> bool:
    end = _date(row["end"])
    early = end - dt.timedelta(days=7)
    return (end.year, end.month) == (year, month) or (
        (early.year, early.month) == (year, month) and end.day <= 7
    )


def find_quarter(cik: int, concept: str, period: Period) -> Row | None:
    """The quarterly value of the quarter a period names (kind quarter)."""
    kind, number, year = period.kind, *_spec(period)
    found = _quarterly(cik, concept)
    if kind == "fiscal_q":
        return next((r for r in found if quarter_number(cik, r) == (year, number)), None)
    if kind == "ended_q":
        return next((r for r in found if _ended_in(r, year, number)), None)
    if kind == "10q":
        return next((r for r in found if str(r["form"]).startswith("10-Q")), None)
    best = max(found, key=lambda r: _calendar_match(r, year, number), default=None)
    return best if best is not None and _calendar_match(best, year, number) >= 60 else None


def _spec(period: Period) -> tuple[int, int]:
    """(quarter or month, year) of a quarter period; its `said` ends with "|n|year"."""
    _, number, year = period.said.rsplit("|", 2)
    return int(number), int(year)


def asked(period: Period) -> str:
    number, year = _spec(period)
    if period.kind == "fiscal_q":
        return f"fiscal Q{number} {year}"
    if period.kind == "calendar_q":
        return f"calendar Q{number} {year}"
    if period.kind == "ended_q":
        return f"the quarter ended {MONTHS[number]} {year}"
    return "the latest quarter"


def quarter_end(company: Company, period: Period) -> str | None:
    """The last day of a named quarter: a quarter of the company's own (its net income's
    quarters), or for a fiscal Q4 the last day of the fiscal year."""
    row = find_quarter(company.cik, CALENDAR, period)
    if row is not None:
        return str(row["end"])
    number, year = _spec(period)
    if period.kind == "fiscal_q" and number == 4:
        annual = rows(company.cik, CALENDAR, "annual")
        return next((str(r["end"]) for r in annual if fiscal_year(r) == year), None)
    return None


def quarter_expected(company: Company, figure: Figure, period: Period) -> Expected:
    if figure.instant:
        found = rows(company.cik, figure.concept, "instant")
        if period.kind == "10q":
            row = next((r for r in found if str(r["form"]).startswith("10-Q")), None)
        else:
            end = quarter_end(company, period)
            row = next((r for r in found if r["end"] == end), None) if end else None
        if row is None:
            return Expected(None, missing=(asked(period),) if found else ("no such figure",))
        return Expected(float(row["value"]), f"at {row['end']}")
    concept = CONCEPT_OF[figure.parts[0]] if figure.parts else figure.concept
    row = find_quarter(company.cik, concept, period)
    if row is None and period.kind == "fiscal_q" and not figure.parts and figure.key != "eps":
        return fourth_expected(company, figure, period)
    if row is None:
        return Expected(None, missing=(asked(period),))
    where = quarter_number(company.cik, row)
    said = f"Q{where[1]} FY{where[0]}" if where and period.kind != "10q" else row["end"]
    if not figure.parts:
        return Expected(float(row["value"]), said)
    bottom = _quarterly(company.cik, CONCEPT_OF[figure.parts[1]])
    other = next((r for r in bottom if (r["start"], r["end"]) == (row["start"], row["end"])), None)
    if other is None or (not figure.difference and other["value"] <= 0):
        return Expected(None, missing=(asked(period),))
    a, b = float(row["value"]), float(other["value"])
    if figure.difference:
        return Expected(a - b, said, parts=(a, b))
    return Expected(round(a / b * 100, 1), said, parts=(a, b), percent=True)


def fourth_expected(company: Company, figure: Figure, period: Period) -> Expected:
    """A fiscal Q4: the year's value less its three quarters, when all four are reported."""
    number, year = _spec(period)
    annual = rows(company.cik, figure.concept, "annual")
    whole = next((r for r in annual if fiscal_year(r) == year), None)
    quarters: dict[int, Row] = {}
    for row in _quarterly(company.cik, figure.concept):
        where = quarter_number(company.cik, row)
        if where is not None and where[0] == year:
            quarters.setdefault(where[1], row)
    if number != 4 or whole is None or sorted(quarters) != [1, 2, 3]:
        return Expected(None, missing=(asked(period),))
    if quarters[1]["start"] != whole["start"]:
        return Expected(None, missing=(asked(period),))
    three = tuple(float(quarters[n]["value"]) for n in (1, 2, 3))
    value = float(whole["value"]) - sum(three)
    return Expected(value, f"Q4 FY{year}", parts=(float(whole["value"]), *three))


def _quarter_period(rng: random.Random) -> Period:
    roll, year, q = rng.random(), rng.choice(range(2021, 2027)), rng.randrange(1, 5)
    yy = f"{year % 100:02d}"
    if roll < 0.5:
        said = rng.choice((f"Q{q} FY{year}", f"q{q} fy{yy}", f"fiscal Q{q} {year}",
                           f"the {ORDINALS[q - 1]} quarter of fiscal {year}", f"FY{yy} Q{q}",
                           f"Q{q} {year}"))  # fmt: skip
        return Period("fiscal_q", f"{said}|{q}|{year}")
    if roll < 0.7:
        month = rng.randrange(1, 13)
        name = MONTHS[month]
        said = rng.choice(
            (f"the quarter ended {name} {year}", f"the {name.lower()} {year} quarter")
        )
        return Period("ended_q", f"{said}|{month}|{year}")
    if roll < 0.82:
        said = rng.choice((f"calendar Q{q} {year}", f"CY{year} Q{q}"))
        return Period("calendar_q", f"{said}|{q}|{year}")
    said = rng.choice(("in the latest 10-Q", "per its most recent 10-Q", "in its latest 10-Q"))
    return Period("10q", f"{said}|0|0")


_QUARTER_TEMPLATES = ("{name} {figure} {period}", "what was {poss} {figure} for {period}",
                      "{figure} of {name}, {period}", "{poss} {figure} {period}?")  # fmt: skip
_FIGURES = tuple(BY_KEY.values())


def quarter_case(rng: random.Random) -> Case:
    company, figure = rng.choice(COMPANIES), rng.choice(_FIGURES)
    period = _quarter_period(rng)
    text = rng.choice(_QUARTER_TEMPLATES).format(
        name=rng.choice(company.said), poss=_possessive(rng.choice(company.said)),
        figure=rng.choice(figure.said), period=period.said.split("|")[0])  # fmt: skip
    others = tuple(c for c in COMPANIES if c != company)
    kind = "latest 10-Q" if period.kind == "10q" else "named quarter"
    return Case((text,), quarter_expected(company, figure, period), company, others, kind)


def quarter_chain(rng: random.Random) -> Case:
    """A fiscal quarter, then "and the quarter before?": the quarter and company carry."""
    company = rng.choice(COMPANIES)
    figure = rng.choice([f for f in _FIGURES if not f.instant])
    year, number = rng.choice(range(2022, 2027)), rng.randrange(1, 5)
    first = f"{rng.choice(company.said)} {rng.choice(figure.said)} Q{number} FY{year}"
    follow = rng.choice(("and the quarter before?", "what about the prior quarter?",
                         "and the previous quarter?"))  # fmt: skip
    before, year_before = (number - 1, year) if number > 1 else (4, year - 1)
    period = Period("fiscal_q", f"|{before}|{year_before}")
    others = tuple(c for c in COMPANIES if c != company)
    return Case((first, follow), quarter_expected(company, figure, period), company, others,
                "quarter before")  # fmt: skip


def figure_follow_up(rng: random.Random) -> Case:
    """A figure alone after a question on a company's year keeps both; a company the
    snapshot does not hold, named after it, is never answered with the first's figures."""
    company = rng.choice(COMPANIES)
    first_figure, then = rng.choice(_PLAIN), rng.choice(_PLAIN)
    year = rng.choice(range(2019, 2026))
    first = f"{rng.choice(company.said)} {rng.choice(first_figure.said)} fy{year % 100:02d}"
    others = tuple(c for c in COMPANIES if c != company)
    if rng.random() < 0.7:
        follow = rng.choice(("what's the {f}?", "what about the {f}?", "and {f}?", "{f}?"))
        text = follow.format(f=rng.choice(then.said))
        expect = expected(company, then, Period("fiscal", "", year))
        return Case((first, text), expect, company, others, "figure follow-up")
    said, named = rng.choice(NOT_HELD)
    text = f"what was {_possessive(said)} {rng.choice(then.said)}"
    return Case((first, text), Expected(None, missing=(named,)), kind="not held after")


_PLAIN = tuple(f for f in BY_KEY.values() if not f.parts and not f.instant)


def _value(company: Company, figure: Figure, year: int) -> tuple[Row, ...] | None:
    """The reported rows a figure of a fiscal year is made of (one, or its two parts)."""
    if figure.parts:
        top, bottom = (rows(company.cik, CONCEPT_OF[p], "annual") for p in figure.parts)
        a = next((r for r in top if fiscal_year(r) == year), None)
        b = next((r for r in bottom if a and (r["start"], r["end"]) == (a["start"], a["end"])),
                 None)  # fmt: skip
        ok = a is not None and b is not None and (figure.difference or b["value"] > 0)
        return (a, b) if ok and a and b else None
    if figure.instant:
        ends = {fiscal_year(r): r["end"] for r in rows(company.cik, CALENDAR, "annual")}
        found = rows(company.cik, figure.concept, "instant")
        row = next((r for r in found if r["end"] == ends.get(year)), None)
        return (row,) if row else None
    row = next((r for r in rows(company.cik, figure.concept, "annual") if fiscal_year(r) == year),
               None)  # fmt: skip
    return (row,) if row else None


def change_expected(company: Company, figure: Figure, first: int, last: int) -> Expected:
    concepts = [CONCEPT_OF[p] for p in figure.parts] if figure.parts else [figure.concept]
    kind = "instant" if figure.instant else "annual"
    if any(not rows(company.cik, c, kind) for c in concepts):
        return Expected(None, missing=("no such figure",))
    old, new = _value(company, figure, first), _value(company, figure, last)
    if old is None or new is None:
        lacking = [y for y, v in ((first, old), (last, new)) if v is None]
        return Expected(None, missing=tuple(f"fiscal year {y}" for y in lacking[:1]))
    values = tuple(float(r["value"]) for r in (*old, *new))
    said = f"FY{first} to FY{last}"
    if not figure.parts:
        return Expected(abs(values[1] - values[0]), said, parts=values)
    if figure.difference:
        moved = abs((values[2] - values[3]) - (values[0] - values[1]))
        return Expected(moved, said, parts=(*values, values[0] - values[1], values[2] - values[3]))
    return Expected(round(values[2] / values[3] * 100, 1), said, parts=values, percent=True)


_CHANGE_TEMPLATES = (
    "how much did {poss} {figure} change from FY{a} to FY{b}",
    "{name} {figure} fy{aa} vs fy{bb}",
    "how much did {name} {figure} rise between {a} and {b}",
    "{figure} change for {name} from FY{a} to FY{b}",
)


def change_case(rng: random.Random) -> Case:
    company = rng.choice(COMPANIES)
    figure = rng.choice(_FIGURES)
    first = rng.choice(range(2018, 2026))
    last = rng.choice(range(first + 1, 2027))
    text = rng.choice(_CHANGE_TEMPLATES).format(
        name=rng.choice(company.said), poss=_possessive(rng.choice(company.said)),
        figure=rng.choice(figure.said), a=first, b=last, aa=f"{first % 100:02d}",
        bb=f"{last % 100:02d}")  # fmt: skip
    others = tuple(c for c in COMPANIES if c != company)
    return Case((re.sub(r"\s+", " ", text),), change_expected(company, figure, first, last),
                company, others, "change")  # fmt: skip


NOT_REPORTED = (
    ("how many units did {name} sell last year", "units sold"),
    ("{poss} units sold in fy24", "units sold"),
    ("what were {poss} same-store sales last year", "same-store sales"),
    ("{name} comparable store sales growth", "same-store sales"),
    ("whats the price target on {name}", "price target"),
    ("how is {name} trading today", "today's trading"),
    ("{name} stock price today", "today's trading"),
)


def not_reported_case(rng: random.Random) -> Case:
    company = rng.choice(COMPANIES)
    template, what = rng.choice(NOT_REPORTED)
    name = rng.choice(company.said)
    text = template.format(name=name, poss=_possessive(name))
    return Case((text,), Expected(None, missing=(what,)), company, kind="not reported")


def more(rng: random.Random) -> Case:
    """One question of the kinds above: quarters most, then changes, then refusals."""
    roll = rng.random()
    if roll < 0.45:
        return quarter_case(rng)
    if roll < 0.55:
        return quarter_chain(rng)
    if roll < 0.8:
        return change_case(rng)
    if roll < 0.9:
        return figure_follow_up(rng)
    return not_reported_case(rng)

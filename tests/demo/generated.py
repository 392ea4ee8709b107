"""Questions generated the way analysts type them, with the facts a right answer gives
computed from the offline snapshot itself (its XBRL company facts), and the properties
every answer must have.

Companies (names, tickers, lowercase, possessives, typos) x figures (names and
abbreviations) x periods (fy23, FY'23, "fiscal 2023", "in 2023", "'23", last fiscal
year, calendar years, balance sheets at a year's end; quarters, TTM and YTD, which cannot
be placed) x follow-up chains ("what about the year before?", "and that year's cash?",
"what about NVIDIA?"), and questions it must decline (a company or person the snapshot
does not hold, investment advice, consensus). Seeded: the same set on every run.

`check` says, for one answer: whether it answered (led with the expected figure), every
figure it states that is not the asked company's figure of the asked period (a wrong
figure), and whether the period stated and any refusal name what was asked.
"""

from __future__ import annotations

import datetime as dt
import gzip
import random
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import orjson

import tools.sec
from tools.sec.facts import find_concept, metric_concept, series

TODAY = dt.date(2026, 11, 27)
STALE_DAYS = 730
ROOT = Path(tools.sec.__file__).with_name("snapshot")
SNAPSHOT = ROOT / "data.sec.gov/api/xbrl/companyfacts"
TAKEN = max(
    dt.date.fromisoformat(d["filed"])
    for d in orjson.loads((ROOT / "manifest.json").read_bytes())["documents"]
)
"""The day the snapshot was taken (its newest filing): its "last fiscal year" is counted
from then, whatever today is."""


@dataclass(frozen=True)
class Company:
    cik: int
    label: str
    """How answers name it (SEC's entity name in the facts)."""
    said: tuple[str, ...]
    """How analysts write it."""


COMPANIES: tuple[Company, ...] = (
    Company(320193, "Apple", ("Apple", "apple", "AAPL", "aapl", "appel", "$AAPL")),
    Company(1045810, "NVIDIA", ("NVIDIA", "nvidia", "Nvidia", "NVDA", "nvda", "nvidai")),
    Company(1318605, "Tesla", ("Tesla", "tesla", "TSLA", "telsa")),
    Company(1640147, "SNOWFLAKE", ("Snowflake", "snowflake", "SNOW")),
    Company(1652044, "ALPHABET", ("Alphabet", "alphabet", "GOOGL", "google", "Google")),
    Company(1835632, "MARVELL", ("Marvell", "marvell", "MRVL", "mrvl")),
)


@dataclass(frozen=True)
class Figure:
    key: str
    concept: str
    """The key metric name or XBRL concept the tools are asked for."""
    said: tuple[str, ...]
    instant: bool = False
    parts: tuple[str, str] | None = None
    """A margin or free cash flow: the two figures it is computed from."""
    difference: bool = False


_F = Figure
PRETAX = (
    "IncomeLossFromContinuingOperationsBeforeIncomeTaxesExtraordinaryItemsNoncontrollingInterest"
)
FIGURES: tuple[Figure, ...] = (
    _F("revenue", "revenue", ("revenue", "rev", "sales", "top line", "revnue", "revenues")),
    _F("net_income", "net_income", ("net income", "NI", "profit", "net earnings", "bottom line")),
    _F("operating_income", "operating_income",
       ("operating income", "op income", "operating profit", "income from operations")),
    _F("gross_profit", "gross_profit", ("gross profit",)),
    _F("rnd", "research_and_development", ("R&D", "r&d expense", "research and development")),
    _F("opex", "OperatingExpenses", ("opex", "operating expenses", "total operating expenses")),
    _F("sga", "SellingGeneralAndAdministrativeExpense", ("SG&A", "sg&a", "sga expense")),
    _F("capex", "capital_expenditures", ("capex", "capital expenditures", "capital spending")),
    _F("ocf", "operating_cash_flow", ("operating cash flow", "cash from operations")),
    _F("eps", "eps_diluted", ("diluted eps", "EPS", "earnings per share",
                              "loss per share (diluted)")),
    _F("dividends_paid", "PaymentsOfDividends", ("dividends paid",)),
    _F("buybacks", "PaymentsForRepurchaseOfCommonStock", ("buybacks", "share repurchases")),
    _F("assets", "total_assets", ("total assets", "assets"), instant=True),
    _F("equity", "stockholders_equity", ("stockholders' equity", "equity", "book value"),
       instant=True),
    _F("cash", "cash_and_equivalents", ("cash", "cash and equivalents"), instant=True),
    _F("debt", "long_term_debt", ("long-term debt", "debt"), instant=True),
    _F("gross_margin", "", ("gross margin",), parts=("gross_profit", "revenue")),
    _F("operating_margin", "", ("operating margin", "op margin"),
       parts=("operating_income", "revenue")),
    _F("net_margin", "", ("net margin", "profit margin"), parts=("net_income", "revenue")),
    _F("fcf", "", ("free cash flow", "FCF"), parts=("operating_cash_flow", "capital_expenditures"),
       difference=True),
    # Issue 45: what analysts name often, and ratios of two figures.
    _F("income_tax", "IncomeTaxExpenseBenefit", ("income tax expense", "provision for income taxes",
                                                 "tax expense")),
    _F("pretax", PRETAX, ("pretax income", "income before income taxes", "pre-tax profit")),
    _F("cost_of_revenue", "cost_of_revenue", ("cost of revenue", "cost of sales", "COGS")),
    _F("sbc", "ShareBasedCompensation", ("stock-based compensation", "SBC", "stock based comp")),
    _F("tax_rate", "", ("effective tax rate", "tax rate", "ETR"), parts=("income_tax", PRETAX)),
    _F("rnd_share", "", ("R&D as a share of revenue", "r&d as % of sales",
                         "research and development as a percentage of revenue"),
       parts=("research_and_development", "revenue")),
    _F("sga_share", "", ("SG&A as a share of revenue", "sg&a as a percentage of sales"),
       parts=("SellingGeneralAndAdministrativeExpense", "revenue")),
    _F("capex_share", "", ("capex as a share of revenue", "capex to revenue ratio"),
       parts=("capital_expenditures", "revenue")),
)  # fmt: skip
BY_KEY = {f.key: f for f in FIGURES}
CONCEPT_OF = {"gross_profit": "gross_profit", "revenue": "revenue", "net_income": "net_income",
              "operating_income": "operating_income", "operating_cash_flow": "operating_cash_flow",
              "capital_expenditures": "capital_expenditures",
              "income_tax": "IncomeTaxExpenseBenefit", PRETAX: PRETAX,
              "research_and_development": "research_and_development",
              "SellingGeneralAndAdministrativeExpense": "SellingGeneralAndAdministrativeExpense",
              }  # fmt: skip


@dataclass(frozen=True)
class Period:
    kind: str
    """fiscal, latest, none, calendar, unclear."""
    said: str
    year: int | None = None


UNCLEAR = ("q2", "ttm", "trailing twelve months", "H1", "ytd", "this year", "first half",
           "last twelve months")  # fmt: skip
"""Periods it cannot place (a quarter with no year among them); named quarters with a year
are placed (generated_more.py)."""


def fiscal_forms(year: int) -> tuple[str, ...]:
    yy = f"{year % 100:02d}"
    return (f"FY{year}", f"fy{yy}", f"FY'{yy}", f"fiscal {year}", f"fiscal year {year}",
            f"in {year}", f"'{yy}", f"fy {year}", f"FY{yy}")  # fmt: skip


LATEST = ("last fiscal year", "last yr", "last fiscal yr", "latest fiscal year",
          "most recent fiscal year", "last year")  # fmt: skip


# What the snapshot says: one concept's rows, one fiscal calendar per company.
Row = dict[str, Any]


@cache
def _facts(cik: int) -> dict[str, Any]:
    path = SNAPSHOT / f"CIK{cik:010d}.json.gz"
    data: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    return data


@cache
def rows(cik: int, concept: str, kind: str) -> tuple[Row, ...]:
    facts = _facts(cik)
    found = find_concept(facts, metric_concept(facts, concept) or concept)
    if isinstance(found, list):
        return ()
    units = found[1]["units"]
    unit = "USD" if "USD" in units else next(iter(units))
    return tuple(series(units[unit], kind))


def fiscal_year(row: Row) -> int:
    end = dt.date.fromisoformat(row["end"])
    return end.year - 1 if end.month == 1 and end.day <= 7 else end.year


@dataclass(frozen=True)
class Expected:
    """The figure a right answer states (None: there is none to state) and its period."""

    value: float | None
    period: str = ""
    """Text the answer's first sentence has: "FY2023", "the end of FY2023", a date."""
    parts: tuple[float, ...] = ()
    """Values a computed figure shows beside it (its two reported parts)."""
    missing: tuple[str, ...] = ()
    """Words a refusal or miss must contain (what was not understood or not held)."""
    percent: bool = False


def expected(company: Company, figure: Figure, period: Period) -> Expected:
    if period.kind == "unclear":
        return Expected(None, missing=(period.said,))
    if figure.parts:
        return _derived(company, figure, period)
    kind = "instant" if figure.instant else "annual"
    history = rows(company.cik, figure.concept, kind)
    if not history:  # the company reports no such figure: the answer says so, for the period
        return Expected(None, missing=(_asked(period),) if period.kind != "none" else ())
    if period.kind == "none":
        return _found(history[0] if history else None, kind, None, period)
    if figure.instant:
        return _instant(company, history, period)
    if period.kind == "calendar":
        row = next((r for r in history if _calendar(r) == period.year), None)
        return _found(row, kind, None, period)
    year = _year(company, period)
    if year is None:
        return Expected(None, missing=("last fiscal year",))
    row = next((r for r in history if fiscal_year(r) == year), None)
    return _found(row, kind, year, period)


def _asked(period: Period) -> str:
    """The period as an answer names it."""
    if period.kind == "fiscal":
        return f"fiscal year {period.year}"
    if period.kind == "calendar":
        return f"calendar year {period.year}"
    return "last fiscal year"


def _year(company: Company, period: Period) -> int | None:
    if period.kind == "fiscal":
        return period.year
    annual = rows(company.cik, "us-gaap:NetIncomeLoss", "annual")
    stale = (min(TODAY, TAKEN) - dt.date.fromisoformat(annual[0]["end"])).days > STALE_DAYS
    return None if stale else fiscal_year(annual[0]) - (period.year or 0)


def _instant(company: Company, history: tuple[Row, ...], period: Period) -> Expected:
    if period.kind == "calendar":
        y = period.year
        row = next((r for r in history if r["end"][:4] == str(y) and r["end"][5:] >= "12-24"), None)
        return _found(row, "instant", None, period)
    year = _year(company, period)
    if year is None:
        return Expected(None, missing=("last fiscal year",))
    calendar = rows(company.cik, "us-gaap:NetIncomeLoss", "annual")
    end = next((r["end"] for r in calendar if fiscal_year(r) == year), None)
    row = next((r for r in history if r["end"] == end), None) if end else None
    return _found(row, "instant", year, period)


def _found(row: Row | None, kind: str, year: int | None, period: Period) -> Expected:
    if row is None:
        asked = f"fiscal year {year}" if year else period.said
        if period.kind == "calendar":
            asked = f"calendar year {period.year}"
        return Expected(None, missing=(asked,) if asked else ())
    if kind == "instant":
        where = f"the end of FY{year}" if year else f"at {row['end']}"
        return Expected(float(row["value"]), where)
    return Expected(float(row["value"]), f"FY{fiscal_year(row)}")


def _calendar(row: Row) -> int | None:
    start, end = str(row.get("start") or ""), row["end"]
    if start[5:] <= "01-07" and end[5:] >= "12-24" and start[:4] == end[:4]:
        return int(end[:4])
    return None


def _derived(company: Company, figure: Figure, period: Period) -> Expected:
    assert figure.parts is not None
    top, bottom = (rows(company.cik, CONCEPT_OF[p], "annual") for p in figure.parts)
    if not top or not bottom:
        return Expected(None, missing=(_asked(period),) if period.kind != "none" else ())
    by_period = {(r.get("start"), r["end"]): r for r in bottom}
    pairs = [(a, by_period.get((a.get("start"), a["end"]))) for a in top]
    if period.kind == "calendar":  # only a fiscal year that runs January to December
        pair = next((p for p in pairs if _calendar(p[0]) == period.year), None)
        year = None
        if pair is None or pair[1] is None:
            return Expected(None, missing=(f"calendar year {period.year}",))
    elif period.kind == "none":
        pair, year = pairs[0], None
    else:
        year = _year(company, period)
        if year is None:
            return Expected(None, missing=("last fiscal year",))
        pair = next((p for p in pairs if fiscal_year(p[0]) == year), None)
    if pair is None or pair[1] is None or (not figure.difference and pair[1]["value"] <= 0):
        return Expected(None, missing=(f"fiscal year {year}" if year else "latest fiscal year",))
    a, b = float(pair[0]["value"]), float(pair[1]["value"])
    if figure.difference:
        return Expected(a - b, f"FY{fiscal_year(pair[0])}", parts=(a, b))
    return Expected(round(a / b * 100, 1), f"FY{fiscal_year(pair[0])}", parts=(a, b), percent=True)


# Questions, single and in chains.


@dataclass(frozen=True)
class Case:
    chain: tuple[str, ...]
    """The questions of one session, the last one checked."""
    expect: Expected
    company: Company | None = None
    others: tuple[Company, ...] = ()
    """Companies whose names must not appear in a figure answer."""
    kind: str = "single"


def _possessive(said: str) -> str:
    if said.startswith("$") or said.isupper():
        return said
    return said + ("'" if said.endswith("s") else "'s")


_TEMPLATES = (
    "{name} {figure} {period}",
    "what was {poss} {figure} {period}",
    "{figure} for {name} {period}",
    "{poss} {period} {figure}?",
    "how much {figure} did {name} report {period}",
    "{name} {period} {figure}",
)
_AT_END = ("{name} {figure} at the end of {period}", "{poss} {figure} at {period} end")


def _period(rng: random.Random, company: Company, figure: Figure) -> Period:
    roll = rng.random()
    if roll < 0.45:
        year = rng.choice(range(2018, 2027))
        return Period("fiscal", rng.choice(fiscal_forms(year)), year)
    if roll < 0.65:
        return Period("latest", rng.choice(LATEST))
    if roll < 0.8:
        return Period("none", "")
    if roll < 0.88:
        year = rng.choice(range(2019, 2026))
        return Period("calendar", rng.choice((f"CY{year}", f"calendar {year}")), year)
    return Period("unclear", rng.choice(UNCLEAR))


def _question(rng: random.Random, company: Company, figure: Figure, period: Period) -> str:
    name = rng.choice(company.said)
    template = rng.choice(_TEMPLATES)
    if figure.instant and period.kind in ("fiscal", "latest") and rng.random() < 0.5:
        template = rng.choice(_AT_END)
        if period.said.startswith(("in ", "'", "last year")):
            period = Period(period.kind, f"FY{period.year}" if period.year else "last fiscal year",
                            period.year)  # fmt: skip
    said = rng.choice(figure.said)
    text = template.format(name=name, poss=_possessive(name), figure=said, period=period.said)
    return re.sub(r"\s+", " ", text).strip()


def single(rng: random.Random) -> Case:
    company, figure = rng.choice(COMPANIES), rng.choice(FIGURES)
    period = _period(rng, company, figure)
    text = _question(rng, company, figure, period)
    others = tuple(c for c in COMPANIES if c != company)
    return Case((text,), expected(company, figure, period), company, others)


def chain(rng: random.Random) -> Case:
    """A question and one or two follow-ups: the period and company carry."""
    company, figure = rng.choice(COMPANIES), rng.choice(FIGURES)
    year = rng.choice(range(2019, 2026))
    start = Period("fiscal", rng.choice(fiscal_forms(year)), year)
    first = _question(rng, company, figure, start)
    others = tuple(c for c in COMPANIES if c != company)
    roll = rng.randrange(5)
    if roll == 0:
        follow = rng.choice(("what about the year before?", "and the prior year?",
                             "the year before?", "and a year earlier?"))  # fmt: skip
        return Case((first, follow), expected(company, figure, Period("fiscal", "", year - 1)),
                    company, others, "year before")  # fmt: skip
    if roll == 1:
        latest = Period("latest", "last fiscal year")
        first = _question(rng, company, figure, latest)
        then = rng.choice([f for f in FIGURES if not f.parts])
        follow = rng.choice(("and {f} that year?", "and how much {f} at the end of that year",
                             "what about {f} in that year?"))  # fmt: skip
        text = follow.format(f=rng.choice(then.said))
        return Case((first, text), expected(company, then, latest), company, others,
                    "that year")  # fmt: skip
    if roll == 2:
        other = rng.choice(range(2019, 2026))
        text = rng.choice(("and in fy{yy}?", "and in {y}?", "what about FY{y}?", "fy{yy}?"))
        text = text.format(y=other, yy=f"{other % 100:02d}")
        return Case((first, text), expected(company, figure, Period("fiscal", "", other)),
                    company, others, "another year")  # fmt: skip
    if roll == 3:
        moved = rng.choice([c for c in COMPANIES if c != company])
        text = f"what about {rng.choice(moved.said)}?"
        rest = tuple(c for c in COMPANIES if c != moved)
        return Case((first, text), expected(moved, figure, start), moved, rest,
                    "another company")  # fmt: skip
    third = ("and the year before that?", "and the one before that?")
    text = "what about the year before?"
    return Case((first, text, rng.choice(third[:1])),
                expected(company, figure, Period("fiscal", "", year - 2)), company, others,
                "two years back")  # fmt: skip


NOT_HELD = (("costco", "Costco"), ("walmart", "Walmart"), ("Microsoft", "Microsoft"),
            ("palantir", "Palantir"), ("AMZN", "Amazon"), ("Zyxwv Rockets", "Zyxwv Rockets"),
            ("Acme Widgets", "Acme Widgets"))  # fmt: skip
DECLINE = (
    ("is {name} a good buy", "investment advice"),
    ("should i short {name} here?", "investment advice"),
    ("should we buy {name} stock", "investment advice"),
    ("{poss} price target", "investment advice"),
    ("street consensus for {name} fy27 revenue", "consensus"),
    ("analyst estimates for {poss} eps next year", "consensus"),
)


def refusal(rng: random.Random) -> Case:
    roll = rng.randrange(3)
    figure = rng.choice([f for f in FIGURES if not f.parts])
    if roll == 0:
        said, named = rng.choice(NOT_HELD)
        period = rng.choice(("last year", "fy23", "", "in 2024"))
        text = rng.choice(("what was {poss} {f} {p}", "{n} {f} {p}", "{f} of {n} {p}"))
        text = text.format(poss=_possessive(said), n=said, f=rng.choice(figure.said), p=period)
        return Case((re.sub(r"\s+", " ", text).strip(),), Expected(None, missing=(named,)),
                    kind="not held")  # fmt: skip
    if roll == 1:
        text = rng.choice(("warren buffett's {f}", "{f} of warren buffett fy23",
                           "Buffett {f} last year"))  # fmt: skip
        return Case((text.format(f=rng.choice(figure.said)),),
                    Expected(None, missing=("Warren Buffett",)), kind="person")  # fmt: skip
    company = rng.choice(COMPANIES)
    name = rng.choice(company.said)
    template, why = rng.choice(DECLINE)
    text = template.format(name=name, poss=_possessive(name))
    return Case((text,), Expected(None, missing=(why,)), company, kind="declined")


def generate(n: int, seed: int = 30) -> list[Case]:
    """n cases: about 55% single questions, 15% follow-up chains, 8% to decline, and 22%
    of the kinds of generated_more.py (named quarters, the latest 10-Q, changes between two
    years, what is not reported)."""
    from tests.demo.generated_more import more  # it builds on this module

    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.22:
            cases.append(more(rng))
            continue
        cases.append(single(rng) if roll < 0.77 else chain(rng) if roll < 0.92 else refusal(rng))
    return cases


# Checking one answer.

_MONEY = re.compile(r"(-?)\$([\d,]+(?:\.(\d+))?)(?: (trillion|billion|million)| per share)?")
_SHARES = re.compile(r"\b(\d{1,3}(?:,\d{3})+) shares\b")
_PERCENT = re.compile(r"\*\*(-?[\d.]+)%\*\*")
_SCALE = {"trillion": 1e12, "billion": 1e9, "million": 1e6, "": 1.0}


@dataclass
class Verdict:
    answered: bool
    wrong: list[str] = field(default_factory=list)
    """Figures stated that are not the asked company's figure of the asked period."""
    problems: list[str] = field(default_factory=list)
    """The period stated is not the one asked, or a refusal does not say what it lacks."""


def figures(text: str) -> list[tuple[str, float, float]]:
    """(as printed, value, rounding tolerance) of every amount in an answer."""
    found = []
    for m in _MONEY.finditer(text):
        sign, amount, decimals, scale = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
        value = float(amount.replace(",", "")) * _SCALE[scale] * (-1 if sign else 1)
        tolerance = 0.5 * 10 ** -len(decimals) * _SCALE[scale] + 1e-9
        found.append((m.group(), value, tolerance))
    for m in _SHARES.finditer(text):
        found.append((m.group(), float(m.group(1).replace(",", "")), 0.5))
    return found


def first_sentence(text: str) -> str:
    end = re.search(r"\.(?:\s+(?=[A-Z*])|\s*$)|\n", text)
    return text[: end.start() + 1] if end else text


def check(case: Case, answer: str) -> Verdict:
    want = case.expect
    stated = figures(answer)
    if want.value is None:
        verdict = Verdict(False, [shown for shown, _, _ in stated])
        lowered = answer.lower()
        absent = [m for m in want.missing if m.lower() not in lowered]
        verdict.problems += [f"does not name {m!r}" for m in absent]
        return verdict
    allowed = (want.value, *want.parts)
    wrong = [
        shown
        for shown, value, tolerance in stated
        if not any(abs(value - a) <= tolerance for a in allowed)
    ]
    verdict = Verdict(False, wrong)
    if want.percent:
        shown_pct = _PERCENT.search(answer)
        led = shown_pct is not None and abs(float(shown_pct.group(1)) - want.value) <= 0.051
        if shown_pct is not None and not led:
            verdict.wrong.append(shown_pct.group())
    else:
        led = bool(stated) and abs(stated[0][1] - want.value) <= stated[0][2]
    verdict.answered = led and not verdict.wrong
    if led and want.period not in first_sentence(answer):
        verdict.problems.append(f"first sentence does not name {want.period}")
    if led:
        named = [c.label for c in case.others if c.label.lower() in answer.lower()]
        verdict.wrong += [f"names {n}" for n in named]
    return verdict

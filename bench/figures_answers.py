"""Answers for the figure check's evaluation (bench/figures_eval.py), written from real
offline `get_sec_company_facts` results of the bundled EDGAR snapshot: correct, or with
one planted error."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.figures_changes import CHANGES, paragraph
from bench.figures_formats import money, mutate_digits, still_right
from tools import ToolContext, ToolsConfig, open_toolset

COMPANIES = (
    ("AAPL", "Apple"),
    ("NVDA", "NVIDIA"),
    ("TSLA", "Tesla"),
    ("GOOGL", "Alphabet"),
    ("SNOW", "Snowflake"),
    ("MRVL", "Marvell"),
)
LABELS = {
    "revenue": "revenue",
    "gross_profit": "gross profit",
    "operating_income": "operating income",
    "net_income": "net income",
    "research_and_development": "R&D expense",
    "operating_cash_flow": "operating cash flow",
    "capital_expenditures": "capital expenditures",
}
ERRORS = (
    "other_period",
    "wrong_scale",
    "transposed",
    "dropped_digit",
    "wrong_rounding",
    "invented",
    "growth_off",
    "wrong_company",
    *CHANGES,
)


@dataclass
class Result:
    tool_use_id: str
    input: dict[str, Any]
    content: str
    annual: dict[int, dict[str, Any]]
    """Fiscal year (year of its end) -> its newest annual row."""
    quarterly: list[dict[str, Any]] = field(default_factory=list)


Data = dict[tuple[str, str], Result]


async def load() -> Data:
    """One offline tool result per company and figure (and diluted EPS)."""
    data: Data = {}
    async with open_toolset(ToolsConfig()) as toolset:
        for ticker, _ in COMPANIES:
            for concept in (*LABELS, "eps_diluted"):
                args = {"company_identifier": ticker, "concept": concept, "limit": 16}
                use_id = f"toolu_{ticker}_{concept}"
                ctx = ToolContext(tool_use_id=use_id, services=toolset.services)
                outcome = await toolset.registry.call("get_sec_company_facts", args, ctx)
                if outcome.is_error:
                    continue
                units: dict[str, Any] = orjson.loads(outcome.content).get("units", {})
                first: dict[str, Any] = next(iter(units.values()), {})
                rows = first.get("annual", [])
                annual: dict[int, dict[str, Any]] = {}
                for row in rows:
                    annual.setdefault(int(row["end"][:4]), row)
                quarters = first.get("quarterly", [])
                data[(ticker, concept)] = Result(use_id, args, outcome.content, annual, quarters)
    return data


@dataclass
class Answer:
    text: str = ""
    results: list[Result] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    """(start, end, kind) of each figure written: "ok" or the planted error."""

    def say(self, text: str) -> None:
        self.text += text

    def figure(self, text: str, kind: str = "ok") -> None:
        self.marks.append((len(self.text), len(self.text) + len(text), kind))
        self.text += text


def write(data: Data, rng: random.Random, error: str | None) -> Answer | None:
    ticker, name = rng.choice(COMPANIES)
    concepts = [c for c in LABELS if (ticker, c) in data]
    years = sorted({y for c in concepts for y in data[(ticker, c)].annual})
    year = rng.choice(years[1:]) if len(years) > 2 else None
    if year is None:
        return None
    have = [c for c in concepts if {year, year - 1} <= set(data[(ticker, c)].annual)]
    if len(have) < 3:
        return None
    first, second, third = rng.sample(have, 3)
    others = [
        t
        for t, _ in COMPANIES
        if t != ticker and year in getattr(data.get((t, first)), "annual", {})
    ]
    other = rng.choice(others) if others else None
    if error == "wrong_company" and other is None:
        return None
    answer = Answer()
    answer.results = [data[(ticker, c)] for c in (first, second, third)]
    if (ticker, "eps_diluted") in data:
        answer.results.append(data[(ticker, "eps_diluted")])
    if other is not None:
        answer.results.append(data[(other, first)])
    if not _sentences(answer, data, rng, error, ticker, name, year, (first, second, third), other):
        return None
    return answer


def _planted(
    data: Data,
    rng: random.Random,
    error: str,
    where: tuple[str, str, int, str | None],
    style: int,
) -> str | None:
    """The first figure with `error` planted (None: this answer cannot carry it)."""
    ticker, concept, year, other = where
    rows = data[(ticker, concept)].annual
    value = rows[year]["value"]
    if error == "other_period":
        years = [y for y in rows if y != year and abs(y - year) <= 3]
        return money(rows[rng.choice(years)]["value"], rng, style)
    if error == "wrong_scale":
        return money(value * rng.choice((1e3, 1e-3)), rng, style)
    if error == "invented":
        return money(value * rng.uniform(0.3, 3.0), rng, style)
    if error == "wrong_company":
        assert other is not None
        return money(data[(other, concept)].annual[year]["value"], rng, style)
    return mutate_digits(money(value, rng, style), rng, error)


def _sentences(
    answer: Answer,
    data: Data,
    rng: random.Random,
    error: str | None,
    ticker: str,
    name: str,
    year: int,
    concepts: tuple[str, str, str],
    other: str | None,
) -> bool:
    first, second, third = concepts
    row = data[(ticker, first)].annual[year]
    value, prior = row["value"], data[(ticker, first)].annual[year - 1]["value"]
    style = rng.randrange(6)
    shown = money(value, rng, style)
    kind = error if error not in (None, "growth_off", *CHANGES) else "ok"
    if kind != "ok":
        planted = _planted(data, rng, kind, (ticker, first, year, other), style)
        if planted is None or still_right(planted, value) or not planted.strip("-US$.,0BMbilonm "):
            return False
        shown = planted
    answer.say(f"**{name}** reported {LABELS[first]} of ")
    answer.figure(shown, kind)
    answer.say(f" in FY{year}, per its {row['form']} (accession ")
    answer.figure(row["accession_number"])
    growth = (value - prior) / abs(prior) * 100 if prior else 0.0
    if error == "growth_off":
        growth += rng.choice((-1, 1)) * rng.uniform(0.3, 6.0)
    answer.say("). That is a change of ")
    answer.figure(f"{growth:+.1f}%", "growth_off" if error == "growth_off" else "ok")
    answer.say(f" on FY{year - 1}.\n\nIn FY{year}, {LABELS[second]} was ")
    answer.figure(money(data[(ticker, second)].annual[year]["value"], rng))
    answer.say(f" and {LABELS[third]} was ")
    answer.figure(money(data[(ticker, third)].annual[year]["value"], rng))
    answer.say(".")
    _extras(answer, data, rng, ticker, name, year, concepts, other)
    if error in CHANGES or rng.random() < 0.5:
        labels = (LABELS[first], LABELS[second])
        rows = (data[(ticker, first)], data[(ticker, second)])
        return paragraph(answer, rng, error, labels, rows) or error not in CHANGES
    return True


def _extras(
    answer: Answer,
    data: Data,
    rng: random.Random,
    ticker: str,
    name: str,
    year: int,
    concepts: tuple[str, str, str],
    other: str | None,
) -> None:
    first, second, third = concepts
    a, b = data[(ticker, second)].annual[year]["value"], data[(ticker, first)].annual[year]["value"]
    if b and rng.random() < 0.7:
        answer.say(f" {LABELS[second].capitalize()} came to ")
        answer.figure(f"{a / b * 100:.1f}%")
        answer.say(f" of {LABELS[first]} in FY{year}.")
    eps = data.get((ticker, "eps_diluted"))
    if eps is not None and year in eps.annual and rng.random() < 0.6:
        answer.say(" Diluted EPS was ")
        answer.figure(f"${eps.annual[year]['value']:.2f}")
        answer.say(f" per share in FY{year}.")
    if rng.random() < 0.5:
        answer.say(f"\n\n| {name} (in millions) | FY{year} | FY{year - 1} |\n|---|---|---|\n")
        for concept in (first, third):
            rows = data[(ticker, concept)].annual
            answer.say(f"| {LABELS[concept]} | ")
            answer.figure(f"{rows[year]['value'] / 1e6:,.0f}")
            answer.say(" | ")
            answer.figure(f"{rows[year - 1]['value'] / 1e6:,.0f}")
            answer.say(" |\n")
    if other is not None and rng.random() < 0.5:
        other_name = dict(COMPANIES)[other]
        answer.say(f"\n\nFor comparison, {other_name} reported {LABELS[first]} of ")
        answer.figure(money(data[(other, first)].annual[year]["value"], rng))
        answer.say(f" in FY{year}.")


def messages(answer: Answer) -> list[dict[str, Any]]:
    uses = [
        {"type": "tool_use", "id": r.tool_use_id, "name": "get_sec_company_facts", "input": r.input}
        for r in answer.results
    ]
    results = [
        {"type": "tool_result", "tool_use_id": r.tool_use_id, "content": r.content}
        for r in answer.results
    ]
    return [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]

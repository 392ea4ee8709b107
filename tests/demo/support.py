"""Running a question through /api/stream, and checking that an answer states only facts
the tools returned: accession numbers, dates, CIKs and fiscal years found in the results,
dollar amounts that are reported values (rounded as printed), and percentages that are
quoted or computed from two reported values (a change, a growth rate, a margin)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.runs.loop import TURN_GAP
from gateway.sse import parse_frames
from tests.demo.conftest import Client
from tools import ToolContext, Toolset

_ACCESSION = re.compile(r"\b\d{10}-\d{2}-\d{6}\b")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_SCALED = re.compile(r"(-?)\$([\d,]+(?:\.(\d+))?) (trillion|billion|million)\b")
_PER_SHARE = re.compile(r"(-?)\$(\d[\d,]*\.\d+) per share")
_PLAIN_DOLLARS = re.compile(r"\$[\d,]+(?:\.\d+)?(?! (?:trillion|billion|million|per share))")
_PERCENT = re.compile(r"([+-]?)([\d,]+(?:\.\d+)?)%")
_CIK = re.compile(r"\bCIK \**(\d+)")
_FISCAL_YEAR = re.compile(r"\bFY(\d{4})\b")
_SCALE = {"trillion": 1e12, "billion": 1e9, "million": 1e6}


@dataclass
class Run:
    """One /api/stream run: its events, and views of them."""

    events: list[dict[str, Any]]
    sources: list[str] = field(default_factory=list)

    @property
    def final(self) -> dict[str, Any]:
        return self.events[-1]

    @property
    def result(self) -> str:
        return str(self.final.get("result", ""))

    @property
    def answer(self) -> str:
        """The text of the last model call: the answer after the tool turns."""
        last = max(i for i, e in enumerate(self.events) if e["type"] == "turn_start")
        text = "".join(e["text"] for e in self.events[last:] if e["type"] == "delta")
        return text.removeprefix(TURN_GAP)  # the blank line streamed after earlier turns' text

    def phase(self, phase: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == "tool_call" and e["phase"] == phase]

    @property
    def uses(self) -> list[dict[str, Any]]:
        return self.phase("tool_use")

    def turns_of(self, name: str) -> list[int]:
        return [e["turn"] for e in self.uses if e["tool"]["name"] == name]

    def inputs(self, name: str) -> list[dict[str, Any]]:
        return [e["tool"]["input"] for e in self.uses if e["tool"]["name"] == name]

    def plan(self) -> list[list[str]]:
        """Tool names per turn, in order."""
        turns: dict[int, list[str]] = {}
        for e in self.uses:
            turns.setdefault(e["turn"], []).append(e["tool"]["name"])
        return [turns[t] for t in sorted(turns)]


async def ask(client: Client, query: str, **body: Any) -> Run:
    response = await client.post("/api/stream", json={"query": query, **body})
    assert response.status == 200, await response.text()
    run = Run(parse_frames(await response.read()))
    assert run.final["type"] == "final", run.final
    return run


async def replay(run: Run, toolset: Toolset) -> list[str]:
    """The full results of the run's tool calls (events carry 2,000-character previews),
    checked against those previews so they are what the model saw."""
    outcomes: dict[str, str] = {}
    executed = {e["tool"]["id"] for e in run.phase("tool_executing")}
    for use in run.uses:
        tool = use["tool"]
        if tool["id"] not in executed:
            continue  # answered "not run" at the turn limit; its error event says so
        ctx = ToolContext(tool_use_id=tool["id"], services=toolset.services)
        outcome = await toolset.registry.call(tool["name"], tool["input"], ctx)
        outcomes[tool["id"]] = outcome.content
    for event in run.phase("tool_error"):
        outcomes.setdefault(event["tool"]["id"], event["error"])
    for event in run.phase("tool_result"):
        assert outcomes[event["tool"]["id"]].startswith(event["preview"])
    for event in run.phase("tool_error"):
        assert outcomes[event["tool"]["id"]] == event["error"]
    run.sources = list(outcomes.values())
    return run.sources


def _numbers(value: Any, into: set[float]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        into.add(float(value))
    elif isinstance(value, dict):
        for item in value.values():
            _numbers(item, into)
    elif isinstance(value, list):
        for item in value:
            _numbers(item, into)


def reported_numbers(sources: list[str]) -> set[float]:
    found: set[float] = set()
    for text in sources:
        try:
            _numbers(orjson.loads(text), found)
        except orjson.JSONDecodeError:
            continue
    return found


def _near(value: float, decimals: int, scale: float, numbers: set[float]) -> set[float]:
    tolerance = 0.5 * 10**-decimals * scale + 1e-6 * scale
    return {n for n in numbers if abs(n - value) <= tolerance}


def _derivable(percent: float, values: set[float]) -> bool:
    """A change between two reported values, a compound growth rate, or a share of one in
    another (a margin: gross profit over revenue)."""
    for a, b in itertools.permutations(values, 2):
        if b > 0 and abs(a / b * 100 - percent) <= 0.051:
            return True
        if b <= 0 or a <= 0:
            continue
        if abs((a / b - 1) * 100 - percent) <= 0.051:
            return True
        for years in range(2, 31):
            if abs(((a / b) ** (1 / years) - 1) * 100 - percent) <= 0.051:
                return True
    return False


def _unsupported_amounts(text: str, corpus: str, numbers: set[float]) -> list[str]:
    """Dollar amounts that are neither reported values nor the difference of two reported
    values printed beside them (free cash flow: operating cash flow less capex)."""
    printed: list[float] = []
    computed: list[tuple[str, float, float]] = []
    for sign, amount, decimals, word in _SCALED.findall(text):
        if f"${amount} {word}" in corpus:
            continue  # quoted from a filing's text
        value = float(amount.replace(",", "")) * _SCALE[word] * (-1 if sign else 1)
        near = _near(value, len(decimals), _SCALE[word], numbers)
        printed.extend(near)
        if not near:
            tolerance = 0.5 * 10 ** -len(decimals) * _SCALE[word]
            computed.append((f"{sign}${amount} {word}", value, tolerance))
    return [
        shown
        for shown, value, tolerance in computed
        if not any(
            abs(a - b - value) <= 2 * tolerance for a, b in itertools.permutations(printed, 2)
        )
        and not _year_less_quarters(value, 4 * tolerance, printed)
    ]


def _year_less_quarters(value: float, tolerance: float, printed: list[float]) -> bool:
    """A fourth quarter: a year's value less three quarters' values printed beside it."""
    for n, year in enumerate(printed):
        others = printed[:n] + printed[n + 1 :]
        for three in itertools.combinations(others, 3):
            if abs(year - sum(three) - value) <= tolerance:
                return True
    return False


def ungrounded(text: str, sources: list[str]) -> list[str]:
    """Facts in `text` that the tool results do not support (empty when all are)."""
    corpus = "\n".join(sources)
    numbers = reported_numbers(sources)
    problems = [f"accession {a}" for a in _ACCESSION.findall(text) if a not in corpus]
    problems += [f"date {d}" for d in _DATE.findall(text) if d not in corpus]
    problems += [f"CIK {c}" for c in _CIK.findall(text) if c not in corpus]
    problems += [f"FY{y}" for y in _FISCAL_YEAR.findall(text) if f"{y}-" not in corpus]
    problems += _unsupported_amounts(text, corpus, numbers)
    for sign, amount in _PER_SHARE.findall(text):
        value = float(amount.replace(",", "")) * (-1 if sign else 1)
        if value not in numbers and f"${amount}" not in corpus:
            problems.append(f"${amount} per share")
    stripped = _PER_SHARE.sub("", _SCALED.sub("", text))
    problems += [f"{d}" for d in _PLAIN_DOLLARS.findall(stripped) if d not in corpus]
    for sign, amount in _PERCENT.findall(text):
        if f"{amount}%" in corpus:
            continue
        value = float(amount.replace(",", "")) * (-1 if sign == "-" else 1)
        if not _derivable(value, numbers):
            problems.append(f"{sign}{amount}%")
    return problems

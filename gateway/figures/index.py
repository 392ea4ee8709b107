"""The run's tool results as one index of numbers, built once per run (never per figure):
XBRL facts with their concept, period, form, accession and company; every other number
in a result (JSON leaves, numbers in filing text and search results, scaled by the words
after them or by the text's "(in millions)"); accession numbers and CIKs as identifiers;
and the names each company goes by.

Values are kept sorted (absolute values: a loss is stated as a positive amount), so a
figure finds its candidates with two bisections.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.figures.conversation import tool_results
from gateway.figures.periods import Span, span
from gateway.figures.sources import Source
from gateway.figures.where import Where

_TEXT_NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d,]\d)"
    r"\s?(%|percent|trillion|billion|million|thousand)?",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_ACCESSION = re.compile(r"\b\d{10}-\d{2}-\d{6}\b")
_CIK = re.compile(r"\bCIK\W{0,3}(\d{1,10})\b", re.IGNORECASE)
_IN_SCALE = re.compile(r"\bin\s(thousands|millions|billions)\b", re.IGNORECASE)
_WORD_SCALE = {"trillion": 1e12, "billion": 1e9, "million": 1e6, "thousand": 1e3}
_SKIP_KEYS = frozenset(
    {
        "description",
        "url",
        "filed",
        "start",
        "end",
        "frame",
        "fy",
        "fp",
        "cik",
        "accession_number",
        "accn",
        "accessionNumber",
    }
)
_GENERIC = frozenset({"the", "first", "american", "general", "united", "international", "new"})
MAX_TEXT_CHARS = 400_000
"""Characters of text results scanned for numbers per run."""
MAX_RESULT_CHARS = 2_000_000
"""Characters of tool results indexed per run (~70 ms of CPU here): the latest results
first; older ones past it are no source."""


@dataclass
class SourceIndex:
    sources: list[Source] = field(default_factory=list)
    identifiers: dict[str, Source] = field(default_factory=dict)
    """Accession numbers and CIKs the results name -> the first result naming each."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Lowercase name or ticker -> CIK."""
    facts: dict[tuple[str | None, str], list[Source]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """(company, concept) -> its facts, for growth rates."""
    by_period: dict[tuple[str | None, Span], list[Source]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """(company, period) -> its facts, for margins, shares, sums and differences."""
    by_year: dict[int, list[tuple[str | None, Span]]] = field(default_factory=dict)
    """Year a period ends in -> the (company, period) keys of `by_period` (and the year
    after, for quarters named by fiscal years)."""
    series: dict[tuple[str | None, str, int, bool], list[Source]] = field(default_factory=dict)
    """(company, concept, year the period ends in, longer than 300 days) -> its facts."""
    _keys: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """Absolute values, sorted: of amounts and other numbers; of percentages."""
    _sorted: tuple[list[Source], list[Source]] = field(default_factory=lambda: ([], []))
    _text_chars: int = 0

    def between(self, low: float, high: float, percent: bool = False) -> list[Source]:
        """Sources whose absolute value is in [low, high]: percentages, or the others."""
        keys, found = self._keys[percent], self._sorted[percent]
        return found[bisect_left(keys, low) : bisect_right(keys, high)]

    def finish(self) -> SourceIndex:
        ordered = sorted(self.sources, key=lambda s: abs(s.value))
        amounts = [s for s in ordered if not s.percent]
        percents = [s for s in ordered if s.percent]
        self._sorted = (amounts, percents)
        self._keys = ([abs(s.value) for s in amounts], [abs(s.value) for s in percents])
        for key in self.by_period:
            for year in (key[1].end.year, key[1].end.year - 1):
                self.by_year.setdefault(year, []).append(key)
        for (company, concept), facts in self.facts.items():
            for fact in facts:
                assert fact.period is not None
                where = (company, concept, fact.period.end.year, fact.period.days > 300)
                self.series.setdefault(where, []).append(fact)
        return self

    def add_result(self, tool_use_id: str, tool: str, tool_input: Any, content: str) -> None:
        """Index one tool result (JSON or not)."""
        data: Any = None
        if content[:1] in ("{", "["):
            try:
                data = orjson.loads(content)
            except orjson.JSONDecodeError:
                data = None
        before = len(self.sources)
        if data is None:
            self._text(tool_use_id, tool, content, None)
        else:
            self._walk(data, Where(tool_use_id, tool))
        self._alias_input(tool_input, self.sources[before:])

    def _alias_input(self, tool_input: Any, added: list[Source]) -> None:
        """A ticker the model asked with names the company the result is about."""
        if not isinstance(tool_input, dict):
            return
        asked = tool_input.get("company_identifier") or tool_input.get("ticker")
        companies = {s.company for s in added if s.company}
        if isinstance(asked, str) and len(companies) == 1 and asked.isalpha() and len(asked) <= 6:
            self.aliases.setdefault(asked.lower(), companies.pop())

    def _walk(self, node: Any, where: Where) -> None:
        if isinstance(node, dict):
            if not self._maybe_fact(node, where):
                self._walk_object(node, where)
        elif isinstance(node, list):
            fact, walk = self._maybe_fact, self._walk
            for item in node:  # most often a concept's facts: tried first, no detour
                if type(item) is not dict or not fact(item, where):
                    walk(item, where)
        elif isinstance(node, str):
            if _DIGIT.search(node):
                self._text(where.tool_use_id, where.tool, node, where.company)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            source = Source(where.tool_use_id, where.tool, float(node), company=where.company)
            self.sources.append(source)

    def _maybe_fact(self, node: dict[str, Any], where: Where) -> bool:
        """Index `node` as an XBRL fact if it is one (a number with its period)."""
        value: Any = node["value"] if "value" in node else node.get("val")
        if "end" not in node or type(value) not in (int, float):
            return False
        period = span(node.get("start"), node["end"])
        if period is None:
            return False
        self._fact(node, float(value), where, period)
        return True

    def _walk_object(self, node: dict[str, Any], where: Where) -> None:
        where = where.inside(node, self)
        for key, value in node.items():
            if key in _SKIP_KEYS:
                continue
            if key == "units" and isinstance(value, dict):
                for unit, sub in value.items():
                    self._walk(sub, where.with_unit(unit))
            else:
                self._walk(value, where)

    def _text(self, tool_use_id: str, tool: str, text: str, company: str | None) -> None:
        if self._text_chars >= MAX_TEXT_CHARS:
            return
        text = text[: MAX_TEXT_CHARS - self._text_chars]
        if "-" in text:
            for accession in _ACCESSION.findall(text):
                self.identify(accession, Source(tool_use_id, tool, 0.0, accession=accession))
        if "CIK" in text or "cik" in text:
            for cik in _CIK.findall(text):
                self.identify(cik.lstrip("0") or "0", Source(tool_use_id, tool, 0.0, company=cik))
        self._text_chars += len(text)
        note = _IN_SCALE.search(text)
        table = _WORD_SCALE[note.group(1).lower().rstrip("s")] if note else 0.0
        add = self.sources.append
        for number, word in _TEXT_NUMBER.findall(text):
            value = float(number.replace(",", ""))
            if word[:1] == "%" or word.lower() == "percent":
                add(Source(tool_use_id, tool, value, company=company, percent=True))
                continue
            add(Source(tool_use_id, tool, value, company=company))
            if word:
                add(Source(tool_use_id, tool, value * _WORD_SCALE[word.lower()], company=company))
            elif table and len(number) >= 3:
                add(Source(tool_use_id, tool, value * table, company=company))

    def identify(self, identifier: str, source: Source) -> None:
        if identifier not in self.identifiers:
            self.identifiers[identifier] = source

    def _fact(self, node: dict[str, Any], value: float, where: Where, period: Span) -> None:
        """An XBRL fact: a value with its period (and the values it restated)."""
        get = node.get
        accession = get("accession_number") or get("accn") or where.accession
        company = where.company
        if get("cik") is not None:  # a frame's row: one company each
            company = str(node["cik"]).lstrip("0")
            self.add_company(company, get("entity"), where)
        form = get("form") or where.form
        source = Source(
            where.tool_use_id,
            where.tool,
            value,
            where.concept,
            period,
            form if isinstance(form, str) else None,
            accession if isinstance(accession, str) else None,
            company,
            where.unit,
        )
        self.sources.append(source)
        self.facts[(company, where.concept or "")].append(source)
        self.by_period[(company, period)].append(source)
        if source.accession and source.accession not in self.identifiers:
            self.identifiers[source.accession] = source
        if "originally_reported" in node or "restated_in" in node:
            self._restated(node, where, period)

    def _restated(self, node: dict[str, Any], where: Where, period: Span) -> None:
        for key in ("originally_reported", "restated_in"):
            sub = node.get(key)
            if isinstance(sub, dict) and isinstance(sub.get("value"), (int, float)):
                self._fact(sub, float(sub["value"]), where, period)

    def add_company(self, cik: str, name: object, where: Where | None = None) -> None:
        if where is not None:
            self.identify(cik, Source(where.tool_use_id, where.tool, 0.0, company=cik))
        if not isinstance(name, str) or not name:
            return
        clean = re.sub(r"[^\w\s&-]", "", name).lower()
        self.aliases.setdefault(clean, cik)
        words = clean.split()
        if words and len(words[0]) >= 3 and words[0] not in _GENERIC:
            self.aliases.setdefault(words[0], cik)


def build(messages: Iterable[dict[str, Any]]) -> SourceIndex:
    """The index of the tool results in `messages`, the latest first, up to
    `MAX_RESULT_CHARS` of them (the check runs on the event loop)."""
    index = SourceIndex()
    left = MAX_RESULT_CHARS
    for use_id, name, tool_input, text in reversed(list(tool_results(messages))):
        if len(text) > left:
            break
        left -= len(text)
        index.add_result(use_id, name, tool_input, text)
    return index.finish()

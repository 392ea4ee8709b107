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
_NOT_IN_NAMES = re.compile(r"[^\w\s&-]")
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
    _keys: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """Absolute values, sorted: of amounts and other numbers; of percentages."""
    _sorted: tuple[list[Source], list[Source]] = field(default_factory=lambda: ([], []))
    _text_chars: int = 0
    _series: dict[tuple[str | None, str], dict[tuple[int, bool], list[Source]]] = field(
        default_factory=dict
    )
    _read: dict[str, _Read] = field(default_factory=dict)
    """Each text read so far, by its text."""
    _companies: set[tuple[str, str]] = field(default_factory=set)
    """(CIK, name) pairs whose aliases are taken."""

    def between(self, low: float, high: float, percent: bool = False) -> list[Source]:
        """Sources whose absolute value is in [low, high]: percentages, or the others."""
        keys, found = self._keys[percent], self._sorted[percent]
        return found[bisect_left(keys, low) : bisect_right(keys, high)]

    def series(self, company: str | None, concept: str) -> dict[tuple[int, bool], list[Source]]:
        """A concept's facts of one company by (year the period ends in, longer than 300
        days), for growth rates: worked out when first asked (few concepts are)."""
        found = self._series.get((company, concept))
        if found is None:
            found = self._series[(company, concept)] = {}
            for fact in self.facts.get((company, concept), ()):
                found.setdefault(fact.period.series_key, []).append(fact)  # type: ignore[union-attr]
        return found

    def finish(self) -> SourceIndex:
        ordered = sorted(self.sources, key=lambda s: abs(s.value))
        amounts = [s for s in ordered if not s.percent]
        percents = [s for s in ordered if s.percent]
        self._sorted = (amounts, percents)
        self._keys = ([abs(s.value) for s in amounts], [abs(s.value) for s in percents])
        for key in self.by_period:
            for year in (key[1].end.year, key[1].end.year - 1):
                self.by_year.setdefault(year, []).append(key)
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
        kind = type(node)  # orjson's output: exact types, no subclasses
        if kind is dict:
            if not self._maybe_fact(node, where):
                self._walk_object(node, where)
        elif kind is list:
            self._list(node, where)
        elif kind is str:
            if _DIGIT.search(node):
                self._text(where.tool_use_id, where.tool, node, where.company)
        elif kind is int or kind is float:
            source = Source(where.tool_use_id, where.tool, float(node), company=where.company)
            self.sources.append(source)

    def _list(self, items: list[Any], where: Where) -> None:
        """A list: most often a concept's facts in one unit, indexed here in one loop (the
        index's hot path: a thousand facts a run); anything else is walked."""
        tool_use_id, tool, concept, unit = where.tool_use_id, where.tool, where.concept, where.unit
        company, form_around, accession_around = where.company, where.form, where.accession
        add, by_period, identifiers = self.sources.append, self.by_period, self.identifiers
        concept_facts: list[Source] | None = None
        for item in items:
            found = _fact_period(item) if type(item) is dict else None
            if found is None:
                self._walk(item, where)
                continue
            get = item.get
            if get("cik") is not None:  # a frame's row: its own company
                self._fact(item, found[0], where, found[1])
                continue
            value, period = found
            accession = get("accession_number") or get("accn") or accession_around
            if type(accession) is not str:
                accession = None
            form = get("form") or form_around
            source = Source(
                tool_use_id,
                tool,
                value,
                concept,
                period,
                form if type(form) is str else None,
                accession,
                company,
                unit,
            )
            add(source)
            if concept_facts is None:
                concept_facts = self.facts[(company, concept or "")]
            concept_facts.append(source)
            by_period[(company, period)].append(source)
            if accession and accession not in identifiers:
                identifiers[accession] = source
            if "originally_reported" in item or "restated_in" in item:
                self._restated(item, where, period)

    def _maybe_fact(self, node: dict[str, Any], where: Where) -> bool:
        """Index `node` as an XBRL fact if it is one (a number with its period)."""
        found = _fact_period(node)
        if found is None:
            return False
        self._fact(node, found[0], where, found[1])
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
        self._text_chars += len(text)
        read = self._read.get(text)
        if read is None:  # results repeat their boilerplate ("10-K, 10-Q"): read once a run
            read = self._read[text] = _Read.of(text)
        for accession in read.accessions:
            self.identify(accession, Source(tool_use_id, tool, 0.0, accession=accession))
        for cik in read.ciks:
            self.identify(cik.lstrip("0") or "0", Source(tool_use_id, tool, 0.0, company=cik))
        add = self.sources.append
        for value, percent in read.numbers:
            add(Source(tool_use_id, tool, value, company=company, percent=percent))

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
            # A frame's row: its restated values are its own company's too.
            self._restated(node, where.with_company(company), period)

    def _restated(self, node: dict[str, Any], where: Where, period: Span) -> None:
        for key in ("originally_reported", "restated_in"):
            sub = node.get(key)
            if isinstance(sub, dict) and isinstance(sub.get("value"), (int, float)):
                self._fact(sub, float(sub["value"]), where, period)

    def add_company(self, cik: str, name: object, where: Where | None = None) -> None:
        if where is not None and cik not in self.identifiers:
            self.identifiers[cik] = Source(where.tool_use_id, where.tool, 0.0, company=cik)
        if not isinstance(name, str) or not name or (cik, name) in self._companies:
            return
        self._companies.add((cik, name))
        clean = _NOT_IN_NAMES.sub("", name).lower()
        self.aliases.setdefault(clean, cik)
        words = clean.split()
        if words and len(words[0]) >= 3 and words[0] not in _GENERIC:
            self.aliases.setdefault(words[0], cik)


@dataclass(frozen=True, slots=True)
class _Read:
    """What a text says: the accession numbers and CIKs it names, and its numbers as
    (value, percent), each scaled by the word after it or the text's "(in millions)" too."""

    accessions: list[str]
    ciks: list[str]
    numbers: list[tuple[float, bool]]

    @classmethod
    def of(cls, text: str) -> _Read:
        accessions = _ACCESSION.findall(text) if "-" in text else []
        ciks = _CIK.findall(text) if "CIK" in text or "cik" in text else []
        note = _IN_SCALE.search(text)
        table = _WORD_SCALE[note.group(1).lower().rstrip("s")] if note else 0.0
        numbers: list[tuple[float, bool]] = []
        add = numbers.append
        for number, word in _TEXT_NUMBER.findall(text):
            value = float(number.replace(",", ""))
            if word[:1] == "%" or word.lower() == "percent":
                add((value, True))
                continue
            add((value, False))
            if word:
                add((value * _WORD_SCALE[word.lower()], False))
            elif table and len(number) >= 3:
                add((value * table, False))
        return cls(accessions, ciks, numbers)


def _fact_period(node: dict[str, Any]) -> tuple[float, Span] | None:
    """An XBRL fact's value and period, if `node` is one (a number with its period)."""
    value: Any = node["value"] if "value" in node else node.get("val")
    kind = type(value)
    if kind is not int and kind is not float:
        return None
    end, start = node.get("end"), node.get("start")
    if type(end) is not str or not (start is None or type(start) is str):
        return None
    period = span(start, end)
    return None if period is None else (float(value), period)


def build(messages: Iterable[dict[str, Any]]) -> SourceIndex:
    """The index of the tool results in `messages`, the latest first, up to
    `MAX_RESULT_CHARS` of them (the check runs on the event loop)."""
    index = SourceIndex()
    left = MAX_RESULT_CHARS
    results = list(tool_results(messages))
    results.reverse()
    for use_id, name, tool_input, text in results:
        if len(text) > left:
            break
        left -= len(text)
        index.add_result(use_id, name, tool_input, text)
    return index.finish()

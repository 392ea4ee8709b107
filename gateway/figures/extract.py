"""The figures an answer states: amounts (with currency, scale words or a "(in millions)"
context), per-share amounts, percentages, share counts and ratios, each with its character
offsets, its value and the rounding it shows; accession numbers and CIKs as identifiers.
Years and dates are not figures: they name the periods figures are stated for (`periods`).

Pure text work, one pass of a few regular expressions over the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SCALES = {
    "trillion": 1e12,
    "tn": 1e12,
    "t": 1e12,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "million": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "thousand": 1e3,
    "k": 1e3,
}
MAX_FIGURES = 2_000
"""Figures checked per answer; an answer with more has the rest left out (and says so by
its count)."""

_LINKS = re.compile(r"https?://[^\s)\]>]+|\]\([^)\s]*\)")
"""Links and markdown link targets: their digits are addresses, not figures."""
_MASKS = re.compile(
    r"(?=[\dSDFCQHINRP])(?:"  # what each mask starts with: most places fail here
    r"\b(?:10-K|10-Q|8-K|20-F|40-F|6-K|S-1|S-3|S-4|DEF 14A|13F-HR)(?:/A)?\b"
    r"|\b(?:19|20)\d{2}-\d{2}-\d{2}\b"  # dates
    r"|\b(?:FY|CY|Q[1-4]|H[12])\s?'?\d{2,4}(?:Q[1-4]I?)?\b"  # period names
    r"|\b(?:Item|Note|Section|Rule|Part)\s+\d+[\w.]*)",
    re.IGNORECASE,
)
_ACCESSION = re.compile(r"(?=\d)\b\d{10}-\d{2}-\d{6}\b")  # "(?=": most places fail here
_CIK = re.compile(r"(?=c)\bCIK\W{0,3}(\d{1,10})\b", re.IGNORECASE)
_NUMBER = re.compile(
    r"(?=[-−–+$U€£\d])"  # what a figure starts with: most places fail here
    r"(?<![\w.,/+-])(?P<neg>[-−–+]\s?)?(?:(?P<cur>US\$|\$|USD\s?|€|£)\s?)?(?P<neg2>[-−–])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?(?![\d,]\d)|\d{1,3}(?:,\d{1,3})+)(?![\d,]\d)"
    r"(?:\s?(?P<scale>trillion|billion|million|thousand|bn|mn|mm|tn|[kKmMbBT])(?![A-Za-z]))?"
    r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b|percentage points?\b|pp\b))?"
    r"(?:(?P<x>x|×)(?![A-Za-z]))?"
    r"(?P<shares>\s(?:\w+\s)?shares\b)?"
)
_WORDS = frozenset({"trillion", "billion", "million", "thousand", "bn", "mn"})
"""Scale words that make an amount without a currency sign (not "m" or "k" alone)."""
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})*(?:\.\d+)?|\d+(?:\.\d+)?")
_PER_SHARE = re.compile(r"\s?(?:per|a|/)\s?(?:diluted\s|basic\s)?share", re.IGNORECASE)
_TABLE_SCALE = re.compile(r"(?=i)\bin\s(thousands|millions|billions)\b", re.IGNORECASE)


@dataclass
class Stated:
    """One figure of the answer."""

    text: str
    start: int
    end: int
    value: float | str
    unit: str
    """"USD" (or "EUR", "GBP"), "USD/share", "%", "shares", "x", "number"; "accession" or
    "cik" for identifiers."""
    tolerance: float
    """Half a unit of the last digit shown, at the figure's scale."""
    alternatives: tuple[tuple[float, float], ...] = ()
    """Other readings of the same text, each a value and its own tolerance (a table number
    read as written as well as scaled: "-842" in a "(in millions)" table is also -842 ± 0.5,
    not -842 ± 500,000)."""

    @property
    def identifier(self) -> bool:
        return self.unit in ("accession", "cik")


def figures(text: str) -> list[Stated]:
    """Every figure in `text`, in order, at most `MAX_FIGURES`."""
    unlinked = _LINKS.sub(lambda m: " " * len(m.group()), text)
    found: list[Stated] = [
        Stated(m.group(), m.start(), m.end(), m.group(), "accession", 0.0)
        for m in _ACCESSION.finditer(unlinked)
    ]
    found += [
        Stated(m.group(), m.start(), m.end(), m.group(1).lstrip("0") or "0", "cik", 0.0)
        for m in _CIK.finditer(unlinked)
    ]
    masked = _masked(unlinked, [(f.start, f.end) for f in found])
    scales = _table_scales(text)
    for match in _NUMBER.finditer(masked):
        figure = _figure(text, match, scales)
        if figure is not None:
            found.append(figure)
        if len(found) >= MAX_FIGURES:
            break
    found.sort(key=lambda f: f.start)
    return found[:MAX_FIGURES]


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    spans = spans + [(m.start(), m.end()) for m in _MASKS.finditer(text)]
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


@dataclass(frozen=True)
class _Number:
    """A number as written: its signed value, half a unit of its last digit, where it
    starts (its sign or currency) and where its digits end."""

    value: float
    half: float
    start: int
    digits_end: int


def _figure(text: str, match: re.Match[str], scales: list[tuple[int, int, float]]) -> Stated | None:
    num, cur = match.group("num"), match.group("cur")
    word = (match.group("scale") or "").lower()
    if not _GROUPED.fullmatch(num) and not (cur or word):
        return None  # "1,2": a list, not a figure; "$1,99 million" is a figure mistyped
    number = _number(match)
    return _worded(text, match, number, word) or _plain(text, match, number, scales)


def _number(match: re.Match[str]) -> _Number:
    digits = match.group("num").replace(",", "")
    neg = match.group("neg") or ""
    minus = (bool(neg.strip()) and neg.strip() in "-−–") or bool(match.group("neg2"))
    group = "neg" if neg else "cur" if match.group("cur") else "num"
    half = 0.5 * 10.0 ** -len(digits.partition(".")[2])
    value = -float(digits) if minus else float(digits)
    return _Number(value, half, match.start(group), match.end("num"))


def _worded(text: str, match: re.Match[str], n: _Number, word: str) -> Stated | None:
    """A percentage, a ratio, or an amount with a scale word."""
    start, end, cur = n.start, match.end(), match.group("cur")
    if match.group("pct"):
        return Stated(text[start:end].strip(), start, end, n.value, "%", n.half)
    if match.group("x"):
        return Stated(text[start:end], start, end, abs(n.value), "x", n.half)
    if word in SCALES and (cur or word in _WORDS):
        scale = SCALES[word]
        unit = "shares" if match.group("shares") else _currency(cur) if cur else "number"
        return Stated(text[start:end].strip(), start, end, n.value * scale, unit, n.half * scale)
    return None


def _plain(
    text: str, match: re.Match[str], n: _Number, scales: list[tuple[int, int, float]]
) -> Stated | None:
    """An amount without a scale word: in a "(in millions)" scope, scaled (and read as
    written too); else a currency amount, or a grouped number."""
    start, end, cur, num = n.start, n.digits_end, match.group("cur"), match.group("num")
    table = _scale_at(scales, match.start())
    if cur:
        unit = _currency(cur) + ("/share" if _PER_SHARE.match(text, end) else "")
        if table and not unit.endswith("/share"):
            scaled = n.value * table
            return Stated(
                text[start:end], start, end, scaled, unit, n.half * table, ((n.value, n.half),)
            )
        return Stated(text[start:end], start, end, n.value, unit, n.half)
    if table and (len(num) >= 3 or "." in num or _in_row(text, match.start())):
        scaled = n.value * table
        return Stated(
            text[start:end], start, end, scaled, "number", n.half * table, ((n.value, n.half),)
        )
    if "," in num:
        unit = "shares" if match.group("shares") else "number"
        return Stated(num, match.start("num"), end, abs(n.value), unit, n.half)
    return None


def _currency(sign: str) -> str:
    return {"€": "EUR", "£": "GBP"}.get(sign.strip(), "USD")


def _in_row(text: str, at: int) -> bool:
    """Whether `at` is in a markdown table row."""
    line = text.rfind("\n", 0, at) + 1
    return text.startswith("|", line)


def _table_scales(text: str) -> list[tuple[int, int, float]]:
    """The spans a "(in millions)" note scales: to the end of its block, or of the table
    that follows it."""
    spans = []
    for match in _TABLE_SCALE.finditer(text):
        end = text.find("\n\n", match.end())
        end = len(text) if end < 0 else end
        if "|" not in text[match.end() : end] and text[end + 2 : end + 3] == "|":
            after = text.find("\n\n", end + 2)
            end = len(text) if after < 0 else after
        scale = SCALES[match.group(1).lower().rstrip("s")]
        spans.append((match.start(), end, scale))
    return spans


def _scale_at(scales: list[tuple[int, int, float]], at: int) -> float:
    for start, end, scale in scales:
        if start <= at < end:
            return scale
    return 0.0

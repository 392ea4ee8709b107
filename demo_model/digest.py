"""Pick the telling lines out of filing text: risk headlines, section sub-headings with
their first sentence, 8-K items. Everything returned is quoted from the text as is."""

from __future__ import annotations

import re

__all__ = ["item_points", "lead_sentences", "risk_headlines", "table_rows", "topic_points"]

_ITEM = re.compile(r"^Item\s+\d{1,2}[A-C]?(?:\.\d{2})?\b", re.I)
_CATEGORY = re.compile(r"^(?:risks? (?:related|relating) to\b.*|.{3,60} risks)$", re.I)
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9\)”\"’%])[.!?](?=\s+[A-Z“\"(])")
_NOISE = re.compile(r"^(?:table of contents|\d+|.*\|.*\|.*\d+\s*$)$", re.I)
_BULLET = "•●▪◦-–*"
_ABBREVIATIONS = frozenset("mr mrs ms messrs dr jr sr st inc co corp ltd no u.s vs".split())  # noqa: SIM905
_SIGNATURES = re.compile(r"^(?:signatures?|pursuant to the requirements of)\b", re.I)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def lead_sentences(line: str, n: int = 1) -> str:
    """The first n sentences of a paragraph."""
    ends = [m.end() for m in _SENTENCE_END.finditer(line) if not _abbreviation(line, m.start())]
    return line[: ends[n - 1]] if len(ends) >= n else line


def _abbreviation(line: str, dot: int) -> bool:
    word = re.search(r"[\w.]+$", line[:dot])
    return word is not None and word.group().casefold() in _ABBREVIATIONS


def _one_sentence(line: str) -> bool:
    return line.endswith(".") and lead_sentences(line) == line


def _prose(line: str) -> bool:
    return len(line) >= 60 and "|" not in line and (line[:1].isupper() or line[:1] == "(")


def risk_headlines(text: str, limit: int = 10) -> list[tuple[str, str]]:
    """(category, headline) pairs: risk headings are one-sentence lines that lead a longer
    paragraph, or one-sentence bullets of a risk summary."""
    lines = _lines(text)
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    category = ""
    for i, line in enumerate(lines):
        if _CATEGORY.match(line) and len(line) <= 80:
            category = line
            continue
        bullet = line[:1] in _BULLET
        body = line.lstrip(_BULLET).strip()
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not (50 <= len(body) <= 320 and _one_sentence(body) and body[:1].isupper()):
            continue
        if body.startswith("The following") or not (bullet or len(following) > len(body)):
            continue
        key = body.casefold()
        if key not in seen:
            seen.add(key)
            found.append((category, body))
        if len(found) >= limit:
            break
    return found


def _subheading(line: str) -> bool:
    return (
        3 <= len(line) <= 60
        and line[:1].isupper()
        and line[-1:] not in ".:;,"
        and line[:1] not in _BULLET
        and "|" not in line
        and not _NOISE.match(line)
        and not _ITEM.match(line)
    )


def topic_points(text: str, limit: int = 8) -> list[tuple[str, str]]:
    """(sub-heading, its first sentence) for the sub-headings of a section."""
    lines = _lines(text)
    points: list[tuple[str, str]] = []
    for i, line in enumerate(lines):
        if not _subheading(line):
            continue
        for nxt in lines[i + 1 : i + 4]:
            if _subheading(nxt):
                break
            if _prose(nxt) and not nxt.startswith("The following"):
                points.append((line, lead_sentences(nxt)))
                break
        if len(points) >= limit:
            break
    return points


def item_points(text: str, limit: int = 6, sentences: int = 2) -> list[tuple[str, list[str]]]:
    """(item heading, its first sentences) for each item of an 8-K (or any item list)."""
    lines = _lines(text)
    points: list[tuple[str, list[str]]] = []
    for i, line in enumerate(lines):
        if not _ITEM.match(line) or "|" in line:
            continue
        said: list[str] = []
        for nxt in lines[i + 1 :]:
            if _ITEM.match(nxt) or _SIGNATURES.match(nxt) or len(said) >= sentences:
                break
            if _prose(nxt):
                said.append(lead_sentences(nxt, 2) if not said else lead_sentences(nxt))
        points.append((line, said))
        if len(points) >= limit:
            break
    return points


def table_rows(text: str, pattern: str, limit: int = 6) -> list[str]:
    """Table rows (cells joined by " | ") whose first cell matches `pattern`."""
    wanted = re.compile(pattern, re.I)
    rows = [line for line in _lines(text) if "|" in line and wanted.search(line.split("|")[0])]
    return rows[:limit]

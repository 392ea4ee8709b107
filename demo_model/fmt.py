"""How figures, periods and links read in an answer: "$130.5 billion (FY2025, ended
2025-01-26)". Every figure printed comes from a tool result; these only format it."""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["change", "count", "fiscal_year", "link", "money", "period", "table"]

_SCALES = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def money(value: float, unit: str = "USD") -> str:
    if unit == "USD/shares":
        return f"${value:,.2f} per share" if value >= 0 else f"-${-value:,.2f} per share"
    if unit == "shares":
        return f"{value:,.0f} shares"
    if unit != "USD":
        return f"{value:,} {unit}"
    sign, size = ("-" if value < 0 else ""), abs(value)
    for scale, word in _SCALES:
        if size >= scale:
            amount = size / scale
            return f"{sign}${amount:,.{1 if amount >= 10 else 2}f} {word}"
    return f"{sign}${size:,.0f}"


def fiscal_year(row: dict[str, Any]) -> int:
    """A fiscal year is named by the calendar year it ends in (52/53-week years ending in
    the first days of January belong to the year before)."""
    end = dt.date.fromisoformat(str(row["end"]))
    return end.year - 1 if end.month == 1 and end.day <= 7 else end.year


def period(row: dict[str, Any], kind: str) -> str:
    if kind == "annual":
        return f"FY{fiscal_year(row)}, ended {row['end']}"
    if kind == "quarterly":
        return f"quarter ended {row['end']}"
    return f"at {row['end']}"


def change(new: float, old: float) -> str:
    """The percentage change, or a word when there is no meaningful ratio."""
    if old == 0 or (old < 0) != (new < 0) or old < 0:
        return "n/m"
    return f"{(new / old - 1) * 100:+,.1f}%"


def link(url: str, text: str | None = None) -> str:
    return f"[{text or url}]({url})" if url else (text or "")


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (cells must not contain `|`)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """ "1 filing", "7 filings", "1 match", "2 matches"."""
    many = plural or (noun + "es" if noun.endswith(("s", "sh", "ch", "x")) else noun + "s")
    return f"{n:,} {noun if n == 1 else many}"

"""Typed, forgiving access to what the tools returned (their JSON shapes, read defensively:
a missing or odd field is skipped, never a crash)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from demo_model.conversation import Conversation, Step
from tools.sec.offline import OfflineSec

__all__ = [
    "NOT_REPORTED",
    "Doc",
    "Series",
    "as_doc",
    "as_of",
    "as_series",
    "held_note",
    "reason_of",
    "rows",
    "snapshot_names",
    "text_of",
    "valued",
]


def as_of(conv: Conversation, step: Step) -> dt.date:
    """The date a result speaks as of: today, or for the offline snapshot the day it was
    taken (its newest filing), so "the last fiscal year" of frozen data is the last one it
    could hold, whatever today is."""
    if "offline" not in text_of(step, "source"):
        return conv.today
    return min(conv.today, snapshot_date())


@cache
def snapshot_date() -> dt.date:
    manifest = OfflineSec().manifest
    return max(dt.date.fromisoformat(str(d["filed"])) for d in manifest["documents"])


def rows(step: Step | None, key: str) -> list[dict[str, Any]]:
    """The list of objects under `key` of a successful JSON result."""
    if step is None or step.is_error or not isinstance(step.data, dict):
        return []
    found = step.data.get(key)
    return [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []


def text_of(step: Step | None, key: str, default: str = "") -> str:
    if step is None or not isinstance(step.data, dict):
        return default
    value = step.data.get(key)
    return str(value) if value is not None else default


NOT_REPORTED = "the company reports no such figure in its XBRL data"

# A failed call's message, read for its cause: answers give the cause in plain words and
# never paste the tool's own text (URLs, exception names, hints meant for a model).
_CAUSES: tuple[tuple[str, str], ...] = (
    (r"companyfacts\S* is not in the offline EDGAR snapshot",
     "the offline snapshot has no XBRL figures for this company"),
    (r"submissions\S* is not in the offline EDGAR snapshot",
     "the offline snapshot has no filing list for this company"),
    (r"frames\S* is not in|Not found in the offline EDGAR snapshot",
     "the offline snapshot has no such data"),
    (r"is not in the offline EDGAR snapshot", "the offline snapshot does not hold this document"),
    (r"\breports no\b", NOT_REPORTED),
    (r"No EDGAR filer|no company|not a known company|Unknown company",
     "SEC knows no such company"),
    (r"timed? ?out", "the tool took too long and was stopped"),
    (r"rate|threshold|429", "SEC asked us to slow down"),
    (r"\b40[34]\b|not found|NoSuchKey|AccessDenied", "EDGAR has no such record"),
    (r"not run", "it was not run: the turn limit was reached"),
)  # fmt: skip


def reason_of(step: Step) -> str:
    """Why a call failed, in a few plain words (never the tool's raw message)."""
    for pattern, cause in _CAUSES:
        if re.search(pattern, step.content, re.I):
            return cause
    return "the tool reported an error"


def snapshot_names(step: Step) -> list[str]:
    """The companies an offline-snapshot refusal says it does have data for."""
    _, _, listed = step.content.partition(" only for: ")
    return [name.strip() for name in re.findall(r"([^;]+?) \(CIK \d+\)", listed)]


def held_note(step: Step, what: str) -> str:
    """ " It has XBRL figures only for Apple Inc., NVIDIA CORP and Tesla, Inc." after a
    refusal of the offline snapshot, naming the companies its message lists."""
    names = snapshot_names(step)
    if not names:
        return ""
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f" It has {what} only for {listed}".rstrip(".") + "."


@dataclass(frozen=True)
class Series:
    """One concept of one company, as get_sec_company_facts returns it."""

    company: str
    cik: int | None
    concept: str
    label: str
    unit: str
    annual: list[dict[str, Any]]
    quarterly: list[dict[str, Any]]
    instant: list[dict[str, Any]]


def as_series(step: Step) -> Series | None:
    data = step.data
    if step.is_error or not isinstance(data, dict) or not isinstance(data.get("units"), dict):
        return None
    units: dict[str, Any] = data["units"]
    if not units:
        return None
    unit = "USD" if "USD" in units else next(iter(units))
    kinds = units[unit] if isinstance(units[unit], dict) else {}
    company = data.get("company") if isinstance(data.get("company"), dict) else {}
    assert isinstance(company, dict)

    def valued_rows(kind: str) -> list[dict[str, Any]]:
        return valued(kinds.get(kind))

    return Series(
        company=str(company.get("name") or ""),
        cik=company.get("cik") if isinstance(company.get("cik"), int) else None,
        concept=str(data.get("concept") or ""),
        label=str(data.get("label") or data.get("concept") or ""),
        unit=unit,
        annual=valued_rows("annual"),
        quarterly=valued_rows("quarterly"),
        instant=valued_rows("instant"),
    )


def valued(found: Any) -> list[dict[str, Any]]:
    """The facts in a list that have a numeric value and an end date."""
    items = found if isinstance(found, list) else []
    return [
        r for r in items
        if isinstance(r, dict) and _number(r.get("value")) and isinstance(r.get("end"), str)
    ]  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Doc:
    """A page of a filing document, as get_sec_filing returns it."""

    url: str
    section: str | None
    heading: str | None
    text: str
    total_chars: int
    next_offset: int | None


def as_doc(step: Step) -> Doc | None:
    data = step.data
    if step.is_error or not isinstance(data, dict) or not isinstance(data.get("text"), str):
        return None
    total = data.get("total_chars")
    next_offset = data.get("next_offset")
    return Doc(
        url=str(data.get("url") or step.input.get("url") or ""),
        section=data.get("section") if isinstance(data.get("section"), str) else None,
        heading=data.get("heading") if isinstance(data.get("heading"), str) else None,
        text=data["text"],
        total_chars=total if isinstance(total, int) else len(data["text"]),
        next_offset=next_offset if isinstance(next_offset, int) else None,
    )

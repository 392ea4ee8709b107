"""XBRL frames from company facts: one value per company for a calendar period.

EDGAR's frames API "aggregates one fact for each reporting entity that is last filed that
most closely fits the calendrical period requested". Fitting, as EDGAR assigns a fact's
`frame`: a full-year duration belongs to the calendar year holding its midpoint (Apple's
year to late September and NVIDIA's to late January are both that calendar year), a
quarter to the calendar quarter holding its midpoint, an instant to the nearest quarter
end (CY2023Q4I). Year-to-date spans belong to no frame. Among a company's periods that
fit, the closest fit wins; its value is then chosen by the facts rule (`facts.reported`):
last filed, except that an 8-K or other non-periodic form never beats a periodic report,
where EDGAR's own frames take the last filed of any form.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from tools.sec.facts import Period, period_kind, periods, reported

__all__ = ["calendar_period", "company_frame_row", "frame_from_facts", "misfit", "period_bounds"]

_PERIOD = re.compile(r"^CY(\d{4})(?:Q([1-4])(I?))?$")


def period_bounds(period: str) -> tuple[str, dt.date, dt.date]:
    """(kind, first day, last day) of a calendar period: CY2023, CY2023Q1, CY2023Q4I."""
    match = _PERIOD.match(period)
    if match is None:
        raise ValueError(f"not a calendar period: {period!r}")
    year, quarter, instant = int(match[1]), match[2], match[3]
    if quarter is None:
        return "annual", dt.date(year, 1, 1), dt.date(year, 12, 31)
    first = dt.date(year, 3 * int(quarter) - 2, 1)
    last = _quarter_end(year, int(quarter))
    return ("instant" if instant else "quarterly"), first, last


def _quarter_end(year: int, quarter: int) -> dt.date:
    return dt.date(year, 12, 31) if quarter == 4 else dt.date(year, 3 * quarter + 1, 1) - _DAY


_DAY = dt.timedelta(days=1)


def calendar_period(fact: dict[str, Any]) -> str | None:
    """The calendar period a fact's period fits, as EDGAR names it, or None (year-to-date)."""
    kind = period_kind(fact)
    end = dt.date.fromisoformat(fact["end"])
    if kind == "instant":
        year, quarter = end.year, (end.month - 1) // 3 + 1
        prior_year, prior = (year - 1, 4) if quarter == 1 else (year, quarter - 1)
        # Ties go to the later quarter end, as EDGAR's do.
        if end - _quarter_end(prior_year, prior) < _quarter_end(year, quarter) - end:
            return f"CY{prior_year}Q{prior}I"
        return f"CY{year}Q{quarter}I"
    if kind not in ("annual", "quarterly"):
        return None
    start = dt.date.fromisoformat(fact["start"])
    middle = start + (end - start) / 2
    if kind == "annual":
        return f"CY{middle.year}"
    return f"CY{middle.year}Q{(middle.month - 1) // 3 + 1}"


def misfit(key: Period, first: dt.date, last: dt.date) -> int:
    """Days between a period (start, end) and a calendar period's bounds: 0 fits exactly."""
    start, end = key
    off = abs((dt.date.fromisoformat(end) - last).days)
    return off + abs((dt.date.fromisoformat(start) - first).days) if start else off


def company_frame_row(unit_facts: list[dict[str, Any]], period: str) -> dict[str, Any] | None:
    """One company's value for a calendar period by the facts rule, with its period and
    filing, or None when it reports no period that fits."""
    kind, first, last = period_bounds(period)
    fitting = {
        key: group
        for key, group in periods(unit_facts, kind).items()
        if calendar_period(group[0]) == period
    }
    if not fitting:
        return None
    # The closest fit; between equally close ones, the later period (min keeps the first).
    later_first = sorted(fitting, key=lambda key: (key[1], key[0]), reverse=True)
    best = min(later_first, key=lambda key: misfit(key, first, last))
    return reported(fitting[best])


def frame_from_facts(
    facts: dict[str, Any], concept_facts: dict[str, Any], unit: str, period: str
) -> list[dict[str, Any]]:
    """The frame row one company contributes, in EDGAR's shape, chosen by the facts rule
    (`company_frame_row`), plus the filing's form and date and any restatement."""
    unit_facts = concept_facts["units"].get(unit.replace("-per-", "/"), [])
    found = company_frame_row(unit_facts, period)
    if found is None:
        return []
    row = {
        "accn": found["accession_number"],
        "cik": facts["cik"],
        "entityName": facts["entityName"],
    }
    row.update({k: found[k] for k in ("start", "end") if k in found}, val=found["value"])
    row.update({k: found[k] for k in _FILING_EXTRAS if k in found})
    return [row]


_FILING_EXTRAS = ("form", "filed", "originally_reported", "restated_in")

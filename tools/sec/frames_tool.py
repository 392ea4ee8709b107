"""get_sec_xbrl_frames: one XBRL concept across companies for one calendar period."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.sec.edgar import Edgar
from tools.sec.source import SecNotFound

__all__ = ["GetXbrlFrames"]

_PERIOD = re.compile(r"^CY\d{4}(Q[1-4]I?)?$")
_NAME = re.compile(r"^[A-Za-z][\w-]*$")


class FramesInput(ToolInput):
    concept: str = Field(min_length=1, max_length=200)
    """XBRL concept, e.g. Revenues, NetIncomeLoss, Assets (or us-gaap:Assets)."""

    period: str = Field(max_length=12)
    """Calendar period: CY2023 (a year), CY2023Q1 (a quarter), or CY2023Q4I (an instant, for
    balance-sheet concepts such as Assets)."""

    taxonomy: str = Field(default="us-gaap", max_length=30)
    """us-gaap, ifrs-full, dei or srt."""

    unit: str = Field(default="USD", max_length=30)
    """Unit of measure: USD, USD/shares (per-share amounts), shares, pure."""

    limit: int = Field(default=20, ge=1, le=200)
    """How many companies to return, largest values first."""


class GetXbrlFrames(Tool[FramesInput]):
    """Compare companies on one XBRL concept for one calendar period (SEC frames API): every
    company's value of, say, Revenues for CY2023, largest first. Durations use CY2023 or
    CY2023Q1; balance-sheet instants use CY2023Q4I. A company's value is its full-year
    (or quarter) period closest to the calendar one (a fiscal year ending in September
    counts for that year), as last reported, so restated values win; each row names its
    accession_number (and, where known, form and filed; originally_reported/restated_in
    when restated). For a company's filings and original values use
    get_sec_company_facts."""

    name = "get_sec_xbrl_frames"
    input_model = FramesInput

    async def run(self, args: FramesInput, ctx: ToolContext) -> str:
        edgar = service(ctx, "sec", Edgar)
        taxonomy, _, concept = args.concept.rpartition(":")
        taxonomy = taxonomy or args.taxonomy
        period = args.period.strip().upper()
        if not _PERIOD.match(period):
            raise ToolFailure(f"period {args.period!r} is not CY2023, CY2023Q1 or CY2023Q4I.")
        if not (_NAME.match(concept) and _NAME.match(taxonomy)):
            raise ToolFailure(f"Not an XBRL concept name: {args.concept!r}.")
        unit = args.unit.strip()
        try:
            frame = await edgar.frame(taxonomy, concept, unit, period)
        except SecNotFound as exc:
            raise ToolFailure(f"{exc} {_frame_hint(period)}") from None
        # EDGAR's frames always have data, each row a val; pts is len(data).
        rows = sorted(frame["data"], key=lambda r: r["val"], reverse=True)
        return dump(
            {
                "source": edgar.label,
                "taxonomy": taxonomy,
                "concept": concept,
                "unit": unit,
                "period": period,
                "label": frame.get("label"),
                "total": len(rows),
                "count": min(len(rows), args.limit),
                "data": [_frame_row(r) for r in rows[: args.limit]],
            }
        )


def _frame_row(row: dict[str, Any]) -> dict[str, Any]:
    out = {"entity": row.get("entityName"), "cik": row.get("cik"), "value": row.get("val")}
    out.update({k: row[k] for k in ("start", "end") if k in row})
    out["accession_number"] = row.get("accn")
    # The offline derivation names the filing; EDGAR's frames give its accession only.
    out.update(
        {k: row[k] for k in ("form", "filed", "originally_reported", "restated_in") if k in row}
    )
    return out


def _frame_hint(period: str) -> str:
    if period.endswith("I"):
        return "Instants (…I) suit balance-sheet concepts; for flows use CY2023 or CY2023Q1."
    return (
        "Balance-sheet concepts (Assets, Liabilities, cash) are instants: use e.g. "
        f"{period if 'Q' in period else period + 'Q4'}I. Check concept and unit too."
    )

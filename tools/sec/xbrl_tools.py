"""The XBRL tools: one company's facts, and one concept across companies (frames, in
`tools.sec.frames_tool`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.sec.edgar import Edgar
from tools.sec.facts import find_concept, metric_concept, series, summarize
from tools.sec.frames_tool import GetXbrlFrames

__all__ = ["GetCompanyFacts", "GetXbrlFrames"]


class CompanyFactsInput(ToolInput):
    company_identifier: str = Field(min_length=1, max_length=200)
    """The company: ticker (AAPL), CIK (320193) or exact name (Apple)."""

    concept: str | None = Field(default=None, max_length=200)
    """One XBRL concept for its full history, e.g. Revenues, NetIncomeLoss, us-gaap:Assets,
    dei:EntityCommonStockSharesOutstanding, or a key metric name (revenue, net_income,
    eps_diluted, total_assets, ...) for the concept this company uses. Omit for a summary
    of all key metrics."""

    limit: int = Field(default=12, ge=1, le=80)
    """With concept: how many periods of each series (annual, quarterly) to return."""

    as_reported: bool = False
    """True for each period's value as first reported instead of as last reported (the
    default, which takes restatements)."""


class GetCompanyFacts(Tool[CompanyFactsInput]):
    """A company's XBRL financial data as reported to the SEC. Without concept: key metrics
    with their latest annual and quarterly values (or latest balance-sheet values), units
    and periods, whichever revenue concept the company uses. With concept: that concept's
    history, annual and quarterly, one value per period. Which filing's value: the last
    10-K, 10-Q (20-F, 40-F) or amendment reporting the period (restated values win;
    as_reported=true for the original); an 8-K or proxy never beats them. Annual values
    are full-year periods only, never a quarter or year-to-date. Each value names its
    filing (form, accession_number, filed); a restated one also has originally_reported
    and restated_in (value, form, accession_number, filed): say "as restated in ..."."""

    name = "get_sec_company_facts"
    input_model = CompanyFactsInput

    async def run(self, args: CompanyFactsInput, ctx: ToolContext) -> str:
        edgar = service(ctx, "sec", Edgar)
        company = await edgar.resolve(args.company_identifier)
        facts = await edgar.company_facts(company.cik)
        result: dict[str, Any] = {
            "source": edgar.label,
            "company": {"name": facts.get("entityName") or company.name, "cik": company.cik},
        }
        if args.concept is None:
            result["metrics"] = summarize(facts, as_reported=args.as_reported)
            result["note"] = (
                "Values are in the units shown (USD not scaled). Periods: start/end dates; "
                "'frame' is SEC's calendar period. Pass concept= for one concept's full history."
            )
            result["rule"] = _rule(args.as_reported)
            return dump(result)
        found = find_concept(facts, metric_concept(facts, args.concept) or args.concept)
        if isinstance(found, list):
            hint = f" Concepts containing it: {', '.join(found)}." if found else ""
            raise ToolFailure(f"{company.name or company.cik} reports no {args.concept!r}.{hint}")
        name, data = found
        result.update(concept=name, label=data.get("label"))
        result["description"] = (data.get("description") or "")[:400] or None
        result["units"] = {
            u: _history(rows, args.limit, args.as_reported) for u, rows in data["units"].items()
        }
        result["rule"] = _rule(args.as_reported)
        return dump(result)


def _rule(as_reported: bool) -> str:
    which = "first reported" if as_reported else "last reported (restatements win)"
    return (
        f"Each period's value as {which} in a 10-K, 10-Q or amendment; other forms only "
        "where no periodic report has the period."
    )


def _history(unit_facts: list[dict[str, Any]], limit: int, as_reported: bool) -> dict[str, Any]:
    kinds = ("instant",) if all("start" not in f for f in unit_facts) else ("annual", "quarterly")
    return {kind: series(unit_facts, kind, as_reported=as_reported)[:limit] for kind in kinds}

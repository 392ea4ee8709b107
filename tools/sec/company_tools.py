"""The company lookup and filing list tools."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field, model_validator

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.sec.edgar import Edgar
from tools.sec.filings import FilingQuery, collect_filings, filing_row

__all__ = ["SearchCompanyTickers", "SearchFilings"]

MAX_TICKERS_SHOWN = 5


class TickerSearchInput(ToolInput):
    search_term: str = Field(min_length=1, max_length=200)
    """A ticker (AAPL), a CIK (320193) or part of a company name (apple)."""

    exchange: str | None = None
    """Only companies listed on this exchange: Nasdaq, NYSE, CBOE or OTC."""

    limit: int = Field(default=10, ge=1, le=50)
    """How many matches to return at most."""


class SearchCompanyTickers(Tool[TickerSearchInput]):
    """Look up public companies in SEC's ticker list by ticker, CIK or name. Returns ticker,
    company name, CIK and exchange; exact and prefix matches come first. Use it to find the
    CIK or ticker to pass to the other SEC tools."""

    name = "search_sec_company_tickers"
    input_model = TickerSearchInput

    async def run(self, args: TickerSearchInput, ctx: ToolContext) -> str:
        edgar = service(ctx, "sec", Edgar)
        directory = await edgar.directory()
        matches = directory.search(args.search_term, args.exchange)
        shown = matches[: args.limit]
        result: dict[str, Any] = {
            "source": edgar.label,
            "query": args.search_term,
            "exchange": args.exchange,
            "total_matches": len(matches),
            "matches": [
                {
                    "ticker": x.ticker,
                    "name": x.name,
                    "cik": x.cik,
                    "exchange": x.exchange,
                    "match": kind,
                }
                for x, kind in shown
            ],
        }
        if len(matches) > len(shown):
            result["note"] = f"{len(matches) - len(shown)} more; raise limit or refine the term."
        return dump(result)


class FilingSearchInput(ToolInput):
    company_identifier: str = Field(min_length=1, max_length=200)
    """The company: ticker (TSLA), CIK (1318605) or exact name (Tesla)."""

    filing_type: str | None = Field(default=None, max_length=100)
    """Form type, e.g. 10-K, 10-Q, 8-K, DEF 14A, 4; several comma-separated. 10-K/A asks for
    amendments only. Omit for every form."""

    include_amendments: bool = False
    """Also return the amendments (10-K/A etc.) of the asked form types."""

    date_after: dt.date | None = None
    """Only filings filed on or after this date (YYYY-MM-DD)."""

    date_before: dt.date | None = None
    """Only filings filed on or before this date (YYYY-MM-DD)."""

    limit: int = Field(default=10, ge=1, le=100)
    """How many filings to return at most, newest first."""

    @model_validator(mode="after")
    def _dates_in_order(self) -> FilingSearchInput:
        if self.date_after and self.date_before and self.date_after > self.date_before:
            raise ValueError("date_after is later than date_before")
        return self


class SearchFilings(Tool[FilingSearchInput]):
    """List a company's SEC filings, newest first, filtered by form type and filing date;
    older filings are included when the date range reaches them. Each filing has its form,
    filing and report dates, accession number, primary document URL (for get_sec_filing)
    and description; 8-Ks also list their item numbers."""

    name = "search_sec_filings"
    input_model = FilingSearchInput

    async def run(self, args: FilingSearchInput, ctx: ToolContext) -> str:
        edgar = service(ctx, "sec", Edgar)
        company = await edgar.resolve(args.company_identifier)
        submissions = await edgar.submissions(company.cik)
        query = FilingQuery(
            forms=_forms(args.filing_type),
            include_amendments=args.include_amendments,
            date_after=args.date_after.isoformat() if args.date_after else None,
            date_before=args.date_before.isoformat() if args.date_before else None,
            limit=args.limit,
        )
        found = await collect_filings(edgar, submissions, query)
        filings = [filing_row(company.cik, row) for row in found.rows[: args.limit]]
        result: dict[str, Any] = {
            "source": edgar.label,
            "company": {
                "name": submissions.get("name") or company.name,
                "cik": company.cik,
                "tickers": list(company.tickers[:MAX_TICKERS_SHOWN]),
            },
            "filters": {
                "filing_type": args.filing_type,
                "include_amendments": args.include_amendments,
                "date_after": query.date_after,
                "date_before": query.date_before,
            },
            "count": len(filings),
            "filings": filings,
        }
        if found.pages_read:
            result["older_pages_read"] = found.pages_read
        notes = found.notes + _notes(len(found.rows), len(filings))
        if notes:
            result["notes"] = notes
        return dump(result)


def _notes(matched: int, shown: int) -> list[str]:
    if not shown:
        return ["No filing matches; check the form type or widen the dates."]
    if matched > shown:
        return [f"{matched - shown} more filings match; narrow the dates or raise limit."]
    return []


def _forms(filing_type: str | None) -> frozenset[str] | None:
    if filing_type is None:
        return None
    forms = frozenset(f.strip().upper() for f in filing_type.split(",") if f.strip())
    if not forms:
        raise ToolFailure("filing_type is empty; give a form such as 10-K, or omit it.")
    return forms

"""EDGAR full-text search: the tool, its result type, and the live EFTS backend.

Live, it asks efts.sec.gov (the search behind efts.sec.gov/LATEST/search-index, an
Elasticsearch answer with one hit per matching file). Offline, the local FTS5 index over
the bundled documents answers instead (`tools.search.index`), with the same hit shape.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.sec.companies import parse_cik
from tools.sec.source import SecSource, public_url

__all__ = [
    "EftsSearch",
    "FullTextHit",
    "FullTextQuery",
    "FullTextResult",
    "FullTextSearch",
    "SearchFullText",
]


@dataclass(frozen=True, slots=True)
class FullTextHit:
    """One matching filing document."""

    form: str
    filed: str
    company: str
    cik: int | None
    accession_number: str
    url: str
    period: str | None = None
    document_type: str | None = None  # an exhibit's type (EX-99.1) when not the form itself
    snippet: str | None = None
    offset: int | None = None  # where the snippet's passage starts in get_sec_filing's text


@dataclass(frozen=True, slots=True)
class FullTextResult:
    total: int
    total_is_lower_bound: bool
    hits: list[FullTextHit]


@dataclass(frozen=True, slots=True)
class FullTextQuery:
    query: str
    forms: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    cik: int | None = None
    limit: int = 10


class FullTextSearch:
    """A full-text backend; `label` names it in results."""

    label: str = ""

    async def search(self, query: FullTextQuery) -> FullTextResult:
        raise NotImplementedError


class EftsSearch(FullTextSearch):
    """SEC's own full-text search (filings since 2001)."""

    def __init__(self, source: SecSource) -> None:
        self.source = source
        self.label = f"{source.label} full-text search"

    async def search(self, query: FullTextQuery) -> FullTextResult:
        params = {"q": query.query}
        if query.forms:
            params["forms"] = ",".join(query.forms)
        if query.date_from or query.date_to:
            params.update(
                dateRange="custom",
                startdt=query.date_from or "2001-01-01",
                enddt=query.date_to or dt.date.today().isoformat(),
            )
        if query.cik is not None:
            params["ciks"] = f"{query.cik:010d}"
        data = await self.source.get_json("efts", "/LATEST/search-index", params)
        total = data.get("hits", {}).get("total", {})
        hits = [_efts_hit(h) for h in data.get("hits", {}).get("hits", [])[: query.limit]]
        return FullTextResult(int(total.get("value", 0)), total.get("relation") == "gte", hits)


def _efts_hit(hit: dict[str, Any]) -> FullTextHit:
    src = hit.get("_source", {})
    accession, _, filename = str(hit.get("_id", "")).partition(":")
    ciks = src.get("ciks") or []
    cik = int(ciks[0]) if ciks else None
    folder = f"/Archives/edgar/data/{cik}/{accession.replace('-', '')}"
    form = src.get("form") or next(iter(src.get("root_forms") or []), "")
    file_type = src.get("file_type")
    return FullTextHit(
        form=form,
        filed=src.get("file_date") or "",
        company="; ".join(src.get("display_names") or []),
        cik=cik,
        accession_number=src.get("adsh") or accession,
        url=public_url("www", f"{folder}/{filename}" if filename else folder),
        period=src.get("period_ending"),
        document_type=file_type if file_type and file_type != form else None,
    )


class FullTextInput(ToolInput):
    query: str = Field(min_length=1, max_length=500)
    """Words or "quoted phrases" to find in filing text, e.g. "supply chain" tariffs."""

    forms: list[str] | None = Field(default=None, max_length=20)
    """Only these form types, e.g. ["10-K", "8-K"]."""

    date_from: dt.date | None = None
    """Only filings filed on or after this date (YYYY-MM-DD)."""

    date_to: dt.date | None = None
    """Only filings filed on or before this date (YYYY-MM-DD)."""

    cik: str | None = Field(default=None, max_length=20)
    """Only filings of this company (CIK digits)."""

    limit: int = Field(default=10, ge=1, le=50)
    """How many matching documents to return at most."""


class SearchFullText(Tool[FullTextInput]):
    """Search the text of SEC filings (EDGAR full-text search) for words or quoted phrases,
    optionally by form type, filing dates and company. Returns matching documents with
    form, filing date, company, accession number and URL (for get_sec_filing)."""

    name = "search_sec_full_text"
    input_model = FullTextInput

    async def run(self, args: FullTextInput, ctx: ToolContext) -> str:
        backend = service(ctx, "sec_full_text", FullTextSearch)
        cik = parse_cik(args.cik) if args.cik else None
        if args.cik and cik is None:
            raise ToolFailure(f"cik must be a CIK number such as 320193, not {args.cik!r}.")
        query = FullTextQuery(
            query=args.query,
            forms=tuple(f.strip().upper() for f in args.forms or () if f.strip()),
            date_from=args.date_from.isoformat() if args.date_from else None,
            date_to=args.date_to.isoformat() if args.date_to else None,
            cik=cik,
            limit=args.limit,
        )
        found = await backend.search(query)
        hits = [{k: v for k, v in asdict(h).items() if v is not None} for h in found.hits]
        result: dict[str, Any] = {
            "source": backend.label,
            "query": args.query,
            "total": found.total,
            "total_is_lower_bound": found.total_is_lower_bound,
            "count": len(hits),
            "hits": hits,
        }
        if not hits:
            result["note"] = "No filing matches; try fewer or different words, or wider dates."
        return dump(result)

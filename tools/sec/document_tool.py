"""The filing document reader: clean text, one item on request, paged by offset."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.sec.companies import parse_cik
from tools.sec.documents import accession_number, filing_folder
from tools.sec.edgar import Edgar
from tools.sec.sections import find_section, page, section_titles
from tools.sec.source import SecNotFound, archives_path, public_url

__all__ = ["GetFiling"]


class GetFilingInput(ToolInput):
    url: str | None = Field(default=None, max_length=500)
    """URL of a filing document on www.sec.gov/Archives, as search_sec_filings returns it.
    Give either url, or cik plus accession_number."""

    cik: str | None = Field(default=None, max_length=20)
    """The filer's CIK (with accession_number, instead of url)."""

    accession_number: str | None = Field(default=None, max_length=30)
    """The accession number, e.g. 0000320193-24-000123 (with cik, instead of url)."""

    section: str | None = Field(default=None, max_length=100)
    """Only this part of the document: an item such as "Item 1A", "Item 7", "Item 5.02",
    "Part II Item 1A", or a heading such as "Risk Factors". Omit for the whole document."""

    offset: int = Field(default=0, ge=0)
    """Character offset to start reading from; use the next_offset of the previous call."""

    max_chars: int = Field(default=20_000, ge=1_000, le=60_000)
    """How many characters to return at most."""

    @model_validator(mode="after")
    def _one_way_to_name_the_filing(self) -> GetFilingInput:
        if not self.url and not (self.cik and self.accession_number):
            raise ValueError("give url, or both cik and accession_number")
        return self


class GetFiling(Tool[GetFilingInput]):
    """Read an SEC filing document (10-K, 10-Q, 8-K, exhibits, older plain-text filings) as
    clean text, tables as rows of cells joined by " | ". Ask for one item with section
    (e.g. "Item 1A" risk factors, "Item 7" MD&A, "Item 5.02" in an 8-K). Long text comes in
    pages: call again with offset=next_offset to continue."""

    name = "get_sec_filing"
    input_model = GetFilingInput

    async def run(self, args: GetFilingInput, ctx: ToolContext) -> str:
        edgar = service(ctx, "sec", Edgar)
        path = await _document_path(edgar, args)
        text = await edgar.document(path)
        result: dict[str, Any] = {"source": edgar.label, "url": public_url("www", path)}
        if args.section:
            section = find_section(text, args.section)
            if section is None:
                raise ToolFailure(_no_section(args.section, text))
            result.update(section=f"Item {section.item}", heading=section.title)
            text = section.text
        if args.offset and args.offset >= len(text):
            raise ToolFailure(f"offset {args.offset} is past the end ({len(text)} characters).")
        chunk, next_offset = page(text, args.offset, args.max_chars)
        result.update(
            total_chars=len(text),
            offset=args.offset,
            next_offset=next_offset,
            text=chunk,
        )
        if next_offset is not None:
            result["note"] = f"More text follows: call again with offset={next_offset}."
        return dump(result)


def _no_section(request: str, text: str) -> str:
    titles = section_titles(text)
    found = "; ".join(titles[:40]) if titles else "none (this document has no item headings)"
    return f"No section {request!r} in this document. Item headings found: {found}."


async def _document_path(edgar: Edgar, args: GetFilingInput) -> str:
    if args.url:
        return archives_path(args.url, (edgar.source.www_base,))
    cik = parse_cik(args.cik or "")
    if cik is None:
        raise ToolFailure(f"Not a CIK: {args.cik!r}; use digits such as 320193.")
    try:
        accession = accession_number(args.accession_number or "")
    except ValueError as exc:
        raise ToolFailure(str(exc)) from None
    folder = filing_folder(cik, accession)
    primary = await _primary_document(edgar, cik, accession)
    # Without a known primary document, the complete submission file always exists.
    return f"{folder}/{primary}" if primary else f"{folder}/{accession}.txt"


async def _primary_document(edgar: Edgar, cik: int, accession: str) -> str | None:
    """The primary document's file name from the filer's submissions, when listed there."""
    try:
        submissions = await edgar.submissions(cik)
    except SecNotFound:
        return None
    recent = submissions["filings"]["recent"]
    try:
        index = recent["accessionNumber"].index(accession)
    except ValueError:
        return None
    document: str | None = recent["primaryDocument"][index] or None
    return document

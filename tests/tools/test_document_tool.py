"""get_sec_filing on the real bundled documents, offline and against the fake SEC."""

from __future__ import annotations

import pytest

from tests.tools.conftest import FakeSecHosts, call_error, call_ok
from tools import Toolset

APPLE_10K = "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
NVIDIA_10K = "https://www.sec.gov/Archives/edgar/data/1045810/000104581025000023/nvda-20250126.htm"
NVIDIA_8K = "https://www.sec.gov/Archives/edgar/data/1045810/000104581026000024/nvda-20260302.htm"
TESLA_10Q = "https://www.sec.gov/Archives/edgar/data/1318605/000162828025035806/tsla-20250630.htm"
APPLE_2000_10Q = (
    "https://www.sec.gov/Archives/edgar/data/320193/000091205700023442/0000912057-00-023442.txt"
)


@pytest.fixture(params=["offline", "live"])
def toolset(request: pytest.FixtureRequest) -> Toolset:
    found: Toolset = request.getfixturevalue(request.param)
    return found


async def read_all(toolset: Toolset, **args: object) -> str:
    """Every page of a document or section, following next_offset."""
    pages, offset = [], 0
    while True:
        result = await call_ok(toolset, "get_sec_filing", offset=offset, **args)
        assert result["offset"] == offset
        pages.append(result["text"])
        if result["next_offset"] is None:
            assert sum(map(len, pages)) == result["total_chars"]
            return "".join(pages)
        offset = result["next_offset"]


@pytest.mark.parametrize(
    ("url", "section", "heading", "inside", "min_chars"),
    [
        (APPLE_10K, "Item 1A", "Item 1A. Risk Factors", "The Company’s business", 60_000),
        (
            APPLE_10K,
            "Item 7",
            "Item 7. Management’s Discussion",
            "Product, Service and Software Announcements",
            12_000,
        ),
        (NVIDIA_10K, "Item 1A", "Item 1A. Risk Factors", "Risks Related to Our Industry", 100_000),
        (
            NVIDIA_10K,
            "item 7.",
            "Item 7. Management's Discussion",
            "Fiscal Year 2025 Summary",
            30_000,
        ),
        (
            NVIDIA_8K,
            "Item 5.02",
            "Item 5.02. Departure of Directors",
            "Variable Compensation",
            2_000,
        ),
        (
            TESLA_10Q,
            "Part II Item 1A",
            "ITEM 1A. RISK FACTORS",
            "Other than the risk factors",
            1_000,
        ),
        (APPLE_10K, "Risk Factors", "Item 1A. Risk Factors", "The Company’s business", 60_000),
    ],
)
async def test_items_are_the_section_bodies_not_the_contents(
    toolset: Toolset, url: str, section: str, heading: str, inside: str, min_chars: int
) -> None:
    result = await call_ok(toolset, "get_sec_filing", url=url, section=section, max_chars=3_000)
    assert result["heading"].startswith(heading)
    assert result["text"].startswith(result["heading"])
    assert result["total_chars"] >= min_chars
    body = await read_all(toolset, url=url, section=section, max_chars=60_000)
    assert inside in body
    # The body stops at the next item: no other item heading inside it.
    assert "\nItem 1B." not in body and "\nItem 8." not in body and "\nItem 9.01" not in body


async def test_8k_item_ends_at_the_next_item(toolset: Toolset) -> None:
    result = await call_ok(toolset, "get_sec_filing", url=NVIDIA_8K, section="Item 9.01")
    assert result["text"].startswith("Item 9.01. Financial Statements and Exhibits.")
    assert "Variable Compensation Plan - Fiscal Year 2027" in result["text"]
    assert "SIGNATURE" not in result["text"]


async def test_clean_text_without_xbrl_noise_and_with_tables(toolset: Toolset) -> None:
    text = await read_all(toolset, url=APPLE_10K, max_chars=60_000)
    assert "Total net sales | 391,035 | 383,285 | 394,328" in text
    assert "Net income | $93,736 | $96,995 | $99,803" in text
    assert "<" not in text.replace("<=", "")
    for noise in ("us-gaap:", "dei:", "xbrli", "contextRef", "iso4217", "display:none"):
        assert noise not in text


async def test_paging_splits_at_line_ends_and_reassembles(toolset: Toolset) -> None:
    first = await call_ok(toolset, "get_sec_filing", url=APPLE_10K, max_chars=5_000)
    assert first["total_chars"] > 150_000
    assert 3_750 <= first["next_offset"] <= 5_000
    assert first["text"].endswith("\n")
    assert f"offset={first['next_offset']}" in first["note"]
    section = await read_all(toolset, url=NVIDIA_8K, section="Item 5.02", max_chars=1_000)
    whole = await call_ok(toolset, "get_sec_filing", url=NVIDIA_8K, section="Item 5.02")
    assert section == whole["text"]


async def test_offset_past_the_end(toolset: Toolset) -> None:
    message = await call_error(toolset, "get_sec_filing", url=NVIDIA_8K, offset=10_000_000)
    assert "past the end" in message


async def test_cik_and_accession_find_the_primary_document(toolset: Toolset) -> None:
    result = await call_ok(
        toolset,
        "get_sec_filing",
        cik="320193",
        accession_number="0000320193-24-000123",
        section="Item 1C",
    )
    assert result["url"] == APPLE_10K
    assert result["heading"] == "Item 1C. Cybersecurity"


async def test_accession_missing_from_submissions_reads_the_complete_text_file(
    toolset: Toolset,
) -> None:
    # Newer than the bundled NVIDIA submissions file: the .txt submission always exists.
    result = await call_ok(
        toolset,
        "get_sec_filing",
        cik="1045810",
        accession_number="000104581026000024",
        section="Item 5.02",
    )
    assert result["url"].endswith("/000104581026000024/0001045810-26-000024.txt")
    assert "Variable Compensation Plan" in result["text"]


async def test_plain_text_filing_from_2000(toolset: Toolset) -> None:
    result = await call_ok(toolset, "get_sec_filing", url=APPLE_2000_10Q, section="Item 2")
    assert result["heading"].startswith("ITEM 2. MANAGEMENT'S DISCUSSION")
    assert "<PAGE>" not in result["text"]
    whole = await call_ok(toolset, "get_sec_filing", url=APPLE_2000_10Q, max_chars=2_000)
    assert whole["text"].startswith("ACCESSION NUMBER: 0000912057-00-023442")
    assert "COMPANY CONFORMED NAME: APPLE COMPUTER INC" in whole["text"]


async def test_unknown_section_lists_the_real_headings(toolset: Toolset) -> None:
    message = await call_error(toolset, "get_sec_filing", url=APPLE_10K, section="Item 99")
    assert "No section 'Item 99'" in message
    assert "Item 1A. Risk Factors; Item 1B. Unresolved Staff Comments" in message


async def test_only_edgar_archive_urls(toolset: Toolset) -> None:
    message = await call_error(toolset, "get_sec_filing", url="https://example.com/a.htm")
    assert "Not an EDGAR document URL" in message


async def test_missing_document(toolset: Toolset) -> None:
    url = "https://www.sec.gov/Archives/edgar/data/320193/000032019399000001/nothing.htm"
    message = await call_error(toolset, "get_sec_filing", url=url)
    assert "nothing.htm" in message and ("Not found" in message or "not in the offline" in message)


async def test_exhibit_inside_a_complete_submission_offline(offline: Toolset) -> None:
    url = "https://www.sec.gov/Archives/edgar/data/796343/000079634323000044/adbeex991q123.htm"
    result = await call_ok(offline, "get_sec_filing", url=url, max_chars=2_000)
    assert "Adobe Reports Record Revenue" in result["text"]


async def test_live_fetch_uses_the_configured_host(live: Toolset, fake_sec: FakeSecHosts) -> None:
    mirror_url = fake_sec.urls["www"] + NVIDIA_8K.removeprefix("https://www.sec.gov")
    result = await call_ok(live, "get_sec_filing", url=mirror_url, section="5.02")
    assert result["url"] == NVIDIA_8K
    assert result["source"] == "live SEC EDGAR"
    assert fake_sec.fake.paths("www") == [NVIDIA_8K.removeprefix("https://www.sec.gov")]


async def test_paging_fetches_the_document_once(live: Toolset, fake_sec: FakeSecHosts) -> None:
    await read_all(live, url=NVIDIA_8K, max_chars=1_000)
    assert len(fake_sec.fake.paths("www")) == 1

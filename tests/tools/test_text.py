"""The pure text parts: HTML to text, complete submission files, item sections, paging."""

from __future__ import annotations

import pytest

from tools.sec.documents import accession_number, document_to_text
from tools.sec.htmltext import html_to_text, join_cells
from tools.sec.sections import find_section, page, section_titles
from tools.sec.submission import split_submission, submission_to_text


def test_hidden_parts_never_reach_the_text() -> None:
    html = (
        "<html><head><title>t</title><style>p{}</style></head><body>"
        '<div style="display:none"><ix:header><ix:hidden>'
        '<ix:nonNumeric name="dei:AmendmentFlag">false</ix:nonNumeric>'
        "<div>nested hidden</div></ix:hidden></ix:header></div>"
        "<script>var x = 1;</script><p>Visible&nbsp;text &amp; more</p>"
        '<span style="DISPLAY: none">gone</span><p>After<br/>break</p></body></html>'
    )
    assert html_to_text(html) == "Visible text & more\nAfter\nbreak"


def test_tables_become_rows_of_cells() -> None:
    html = (
        "<table><tr><td>Net sales</td><td></td><td>$</td><td>391,035</td><td></td>"
        "<td>(</td><td>1,234</td><td>)</td><td>12</td><td>%</td></tr>"
        "<tr><td><div>Two</div><div>lines</div></td><td>x</td></tr></table><p>after</p>"
    )
    assert html_to_text(html) == "Net sales | $391,035 | (1,234) | 12%\nTwo lines | x\nafter"


def test_join_cells_keeps_a_lone_sign() -> None:
    assert join_cells(["$", ""]) == "$"
    assert join_cells([")", "a"]) == ") | a"


def test_unclosed_void_tags_do_not_hide_the_rest() -> None:
    html = '<div style="display:none"><img src="x"><br></div><p>shown<hr>too</p>'
    assert html_to_text(html) == "shown\ntoo"


SUBMISSION = """<SEC-DOCUMENT>0000000000-26-000001.txt : 20260101
<SEC-HEADER>0000000000-26-000001.hdr.sgml : 20260101
ACCESSION NUMBER:		0000000000-26-000001
CONFORMED SUBMISSION TYPE:	8-K
FILED AS OF DATE:		20260101
	COMPANY DATA:
		COMPANY CONFORMED NAME:			EXAMPLE CORP
		CENTRAL INDEX KEY:			0000000001
</SEC-HEADER>
<DOCUMENT>
<TYPE>8-K
<SEQUENCE>1
<FILENAME>ex-20260101.htm
<DESCRIPTION>8-K
<TEXT>
<html><body><p>Item 8.01. Other Events.</p><p>Something happened.</p></body></html>
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>EX-99.1
<SEQUENCE>2
<FILENAME>ex991.txt
<TEXT>
<PAGE>
   Plain   text      keeps   its columns
<S>      <C>
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>GRAPHIC
<SEQUENCE>3
<FILENAME>logo.jpg
<TEXT>
begin 644 logo.jpg
M_]C_X``02D9)1@`!`0$`8`!@``#_
end
</TEXT>
</DOCUMENT>
</SEC-DOCUMENT>
"""


def test_complete_submission_split_and_rendered() -> None:
    docs = split_submission(SUBMISSION)
    assert [(d.type, d.filename, d.is_text) for d in docs] == [
        ("8-K", "ex-20260101.htm", True),
        ("EX-99.1", "ex991.txt", True),
        ("GRAPHIC", "logo.jpg", False),
    ]
    text = submission_to_text(SUBMISSION)
    assert text.splitlines()[:5] == [
        "ACCESSION NUMBER: 0000000000-26-000001",
        "CONFORMED SUBMISSION TYPE: 8-K",
        "FILED AS OF DATE: 20260101",
        "COMPANY CONFORMED NAME: EXAMPLE CORP",
        "CENTRAL INDEX KEY: 0000000001",
    ]
    assert "=== Document 1: 8-K ex-20260101.htm 8-K ===\nItem 8.01. Other Events.\n" in text
    assert "   Plain   text      keeps   its columns" in text
    assert "<PAGE>" not in text and "<S>" not in text and "begin 644" not in text
    assert text.endswith("=== Not text, omitted: GRAPHIC logo.jpg ===")
    assert document_to_text("/x/0000000000-26-000001.txt", SUBMISSION) == text


def test_document_to_text_by_kind() -> None:
    assert document_to_text("/a/index.json", '{"directory":{"name":"x"}}').startswith("{\n")
    assert document_to_text("/a/b.htm", "<html><p>x</p></html>") == "x"
    assert document_to_text("/a/b.txt", "plain   \n\ntext") == "plain\n\ntext"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0000320193-24-000123", "0000320193-24-000123"),
        (" 000032019324000123", "0000320193-24-000123"),
    ],
)
def test_accession_numbers(given: str, expected: str) -> None:
    assert accession_number(given) == expected


def test_bad_accession_number() -> None:
    with pytest.raises(ValueError, match="Not an accession number"):
        accession_number("0000320193-24")


TEN_K = """FORM 10-K
TABLE OF CONTENTS
Part I
Item 1. | Business | 1
Item 1A. | Risk Factors | 5
Item 7 | Management's Discussion | 20
Part II
Item 1. | Legal Proceedings | 30
PART I
Item 1. Business
We make things. See Item 1A of this report.
Item 7 of this report is discussed below, not a heading.
Item 1A. Risk Factors
Risk one.
Risk two.
Item 7 MANAGEMENT'S DISCUSSION
Sales grew.
PART II
Item 1. Legal Proceedings
None.
SIGNATURES
Signed.
"""


def test_find_section_picks_the_body_and_stops_at_the_next_item() -> None:
    section = find_section(TEN_K, "item 1a")
    assert section is not None
    assert section.text == "Item 1A. Risk Factors\nRisk one.\nRisk two."
    business = find_section(TEN_K, "Item 1")
    assert business is not None and business.text.startswith("Item 1. Business\nWe make things.")
    assert "Item 7 of this report" in business.text  # prose, not a heading


def test_find_section_by_part_title_and_signatures() -> None:
    legal = find_section(TEN_K, "Part II, Item 1")
    assert legal is not None and legal.text == "Item 1. Legal Proceedings\nNone."
    mdna = find_section(TEN_K, "management's discussion")
    assert mdna is not None and mdna.item == "7" and mdna.text.endswith("Sales grew.")
    assert find_section(TEN_K, "Item 9") is None
    assert find_section(TEN_K, "nothing like this") is None


def test_section_titles_prefer_the_bodies() -> None:
    assert section_titles(TEN_K) == [
        "Item 1. Business",
        "Item 1A. Risk Factors",
        "Item 7 MANAGEMENT'S DISCUSSION",
        "Item 1. Legal Proceedings",
    ]


def test_page_cuts_at_line_ends_and_covers_everything() -> None:
    text = "\n".join(f"line {i:03d} " + "x" * 40 for i in range(100))
    chunks: list[str] = []
    offset: int | None = 0
    while offset is not None:
        chunk, next_offset = page(text, offset, 1_000)
        assert len(chunk) <= 1_000
        assert next_offset is None or chunk.endswith("\n")
        chunks.append(chunk)
        offset = next_offset
    assert "".join(chunks) == text


def test_page_without_line_ends_cuts_at_a_space_or_hard() -> None:
    words = "word " * 500
    chunk, next_offset = page(words, 0, 1_002)
    assert chunk.endswith(" ") and next_offset == len(chunk)
    solid = "x" * 3_000
    assert page(solid, 0, 1_000) == ("x" * 1_000, 1_000)


def test_cells_and_rows_closed_implicitly_and_nested_tables() -> None:
    html = (
        "<TABLE><TR><TD>Revenue<TD>$<TD>100<TR><TD>Cost<TD>$<TD>40</TABLE>"
        "<table><tr><td><table><tr><td>inner</td><td>cells</td></tr></table></td>"
        "<td>outer</td></tr></table>"
    )
    assert html_to_text(html) == "Revenue | $100\nCost | $40\ninner cells | outer"

"""Every example quoted in issue 30, answered right: the period asked (and only it), the
words analysts use, and refusals that say what is not held or not given. Run in-process
with the real offline tools; every fact checked against what the tools returned."""

from __future__ import annotations

import orjson
import pytest

from demo_model.companies import CompanyIndex
from tests.demo.drive import Answer, answer
from tests.demo.generated import figures
from tests.demo.support import ungrounded
from tools import Toolset


async def ask_chain(index: CompanyIndex, toolset: Toolset, *questions: str) -> Answer:
    before: tuple[tuple[str, str], ...] = ()
    said = Answer("")
    for question in questions:
        said = await answer(index, toolset, question, before)
        before += ((question, said.text),)
    asked = orjson.dumps([c.input for c in said.calls]).decode()
    assert ungrounded(said.text, [*said.results, asked]) == [], said.text
    return said


def amounts(text: str) -> list[str]:
    return [shown for shown, _, _ in figures(text)]


# (questions of one session, the only figure the answer may state, text it must have)
WRONG_PERIODS = [
    (("apple diluted eps fy23",), "$6.13 per share", ("FY2023, ended 2023-09-30",)),
    (("apple net income fy22",), "$99.8 billion", ("FY2022, ended 2022-09-24",)),
    (("alphabet operating income fy23",), "$84.3 billion", ("FY2023, ended 2023-12-31",)),
    (("what was apple's revenue last fiscal year",
      "and how much cash did they have at the end of that year"),
     "$35.9 billion", ("at 2025-09-27, the end of FY2025",)),
    (("apple net income fy22", "what about the year before?"), "$94.7 billion",
     ("FY2021, ended 2021-09-25",)),
]  # fmt: skip


@pytest.mark.parametrize(("questions", "figure", "texts"), WRONG_PERIODS)
async def test_the_period_asked_and_no_other(
    index: CompanyIndex,
    toolset: Toolset,
    questions: tuple[str, ...],
    figure: str,
    texts: tuple[str, ...],
) -> None:
    said = await ask_chain(index, toolset, *questions)
    assert amounts(said.text) == [figure], said.text
    first = said.text.split(". ")[0]
    assert all(t in first for t in texts), said.text


async def test_a_balance_sheet_at_the_end_of_the_last_fiscal_year(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await ask_chain(index, toolset, "nvidia balance sheet at the end of its last fiscal yr")
    assert said.text.startswith("**NVIDIA CORP** balance sheet at the end of fiscal year 2026")
    assert "$206.8 billion | 2026-01-25" in said.text  # total assets on the year's last day
    assert "2026-04-26" not in said.text  # the latest quarter's date


async def test_item_7a_of_the_year_asked_or_nothing(index: CompanyIndex, toolset: Toolset) -> None:
    """Apple's FY2025 10-K is not in the snapshot's documents: said so, never Item 1A, and
    never the FY2024 10-K's Item 7A in its place."""
    said = await ask_chain(index, toolset, "fy2025 10-k item 7a for apple")
    assert "Item 7A" in said.text and "Item 1A" not in said.text
    assert "FY2025" in said.text and "could not read" in said.text
    assert "2024-11-01" not in said.text  # the FY2024 10-K
    older = await ask_chain(index, toolset, "apple 10-k item 7a fy2024")
    assert "“Item 7A. Quantitative and Qualitative Disclosures About Market Risk”" in older.text


ABBREVIATIONS = [
    ("apple op income", "operating income", "$133.1 billion"),
    ("apple opex", "operating expenses", "$62.2 billion"),
    ("apple sg&a", "SG&A expense", "$27.6 billion"),
    ("snowflake lose per share (diluted) fy2024", "diluted EPS", "-$2.55 per share"),
]


@pytest.mark.parametrize(("question", "label", "figure"), ABBREVIATIONS)
async def test_analysts_abbreviations(
    index: CompanyIndex, toolset: Toolset, question: str, label: str, figure: str
) -> None:
    said = await ask_chain(index, toolset, question)
    assert f"reported {label} of **{figure}**" in said.text


async def test_growth_year_over_year(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "nvidia rev growth y/y")
    assert "revenue, fiscal years as reported" in said.text
    assert "| FY2026 | 2026-01-25 | $215.9 billion | +65.5% |" in said.text


async def test_a_cik_for_an_edgar_pull(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "need palantir's cik for an edgar pull")
    assert said.text.startswith("**Palantir Technologies Inc.**: CIK **1321655**")


async def test_filings_discussing_a_topic(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "any filings discussing tariffs?")
    assert said.calls[0].name == "search_sec_full_text"
    assert said.text.startswith("EDGAR full-text search for “tariffs” found")


async def test_a_person_as_a_filer(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "warren buffett's form 4s")
    assert said.calls[0].input == {"company_identifier": "315090", "limit": 10, "filing_type": "4"}
    assert "(CIK 315090): 10 filings of form 4" in said.text


async def test_a_company_the_snapshot_does_not_hold(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "what was costco's revenue last year")
    assert said.text.startswith(
        "I couldn't get the revenue of Costco Wholesale for the last fiscal year: the offline "
        "snapshot has no XBRL figures for this company."
    )
    assert amounts(said.text) == []  # no other company's figures in its place
    assert "get_sec_xbrl_frames" not in [c.name for c in said.calls]


DECLINED = [
    ("is tesla a good buy", "I give no investment advice"),
    ("should i short mrvl here?", "I give no investment advice"),
    ("street consensus for nvidia fy27 revenue", "consensus and analysts' estimates are forecasts"),
]


@pytest.mark.parametrize(("question", "reason"), DECLINED)
async def test_advice_and_consensus_declined_with_the_reason(
    index: CompanyIndex, toolset: Toolset, question: str, reason: str
) -> None:
    said = await ask_chain(index, toolset, question)
    assert said.calls == [] and reason in said.text.split("\n")[0]
    assert amounts(said.text) == []


async def test_thanks_and_bye_in_one_short_line(index: CompanyIndex, toolset: Toolset) -> None:
    said = await ask_chain(index, toolset, "thanks, bye")
    assert said.text == "You're welcome. Goodbye!"

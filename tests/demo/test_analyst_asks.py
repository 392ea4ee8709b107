"""Questions as analysts ask them (issue 45), answered in-process with the real offline
tools: named quarters on each company's fiscal calendar, the latest 10-Q's figures, ratios
of two figures, the change between two named years, every part of a comparison answered,
follow-ups that keep the company, and what is not reported named as such."""

from __future__ import annotations

import pytest

from demo_model.companies import CompanyIndex
from demo_model.quarters import fiscal_quarter, fiscal_years
from demo_model.spans import two_years
from demo_model.understand import find_metrics
from tests.demo.drive import answer
from tools import Toolset


def _years(*spans: tuple[str, str]) -> list[dict[str, str]]:
    return [{"start": s, "end": e} for s, e in spans]


@pytest.mark.parametrize(
    ("annual", "quarter", "placed"),
    [
        # NVIDIA: fiscal years end in late January; FY2025 ran 2024-01-29 to 2025-01-26.
        (_years(("2024-01-29", "2025-01-26")), ("2024-04-29", "2024-07-28"), (2025, 2)),
        # Apple: a quarter after the last full year belongs to the year after it.
        (_years(("2024-09-29", "2025-09-27")), ("2025-09-28", "2025-12-27"), (2026, 1)),
        # Marvell: 52/53-week years ending around the start of February.
        (_years(("2024-02-04", "2025-02-01")), ("2024-08-04", "2024-11-02"), (2025, 3)),
        # Alphabet: the calendar year.
        (_years(("2024-01-01", "2024-12-31")), ("2024-01-01", "2024-03-31"), (2024, 1)),
    ],
)
def test_a_quarter_is_numbered_from_its_fiscal_years_start(
    annual: list[dict[str, str]], quarter: tuple[str, str], placed: tuple[int, int]
) -> None:
    row = {"start": quarter[0], "end": quarter[1]}
    assert fiscal_quarter(row, fiscal_years(annual)) == placed


async def _ask(index: CompanyIndex, toolset: Toolset, *chain: str) -> str:
    before: tuple[tuple[str, str], ...] = ()
    for question in chain:
        said = await answer(index, toolset, question, before)
        before += ((question, said.text),)
    return said.text


@pytest.mark.parametrize(
    ("question", "figure", "period"),
    [
        ("nvidia revenue for the quarter ended july 2024", "$30.0 billion", "Q2 FY2025"),
        ("What was Apple's revenue in Q2 FY2024?", "$90.8 billion", "2024-03-30"),
        ("marvell revenue q1 fy26", "$1.90 billion", "2025-05-03"),
        ("alphabet net income CY2025 Q3", "$35.0 billion", "2025-09-30"),
    ],
)
async def test_a_named_quarter_gets_that_quarters_figure(
    index: CompanyIndex, toolset: Toolset, question: str, figure: str, period: str
) -> None:
    said = await _ask(index, toolset, question)
    first = said.split("). ")[0]
    assert f"**{figure}**" in first and period in first and "10-Q filed" in said


async def test_a_calendar_quarter_of_a_non_calendar_year_says_which_quarter_it_is(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await _ask(index, toolset, "NVIDIA revenue calendar Q2 2024")
    assert "**$30.0 billion**" in said and "2024-04-29 to 2024-07-28" in said
    assert "covering most of calendar Q2 2024" in said


async def test_a_fourth_quarter_is_the_year_less_three_quarters(
    index: CompanyIndex, toolset: Toolset
) -> None:
    """No filing reports a fourth quarter: it is computed, with the four values shown;
    a per-share figure, which does not add up that way, is said to be missing."""
    said = await _ask(index, toolset, "Apple revenue Q4 FY2024")
    assert said.startswith(
        "**Apple Inc.**'s revenue for fiscal Q4 FY2024 (the quarter ended 2024-09-28) was "
        "**$94.9 billion**, computed as its FY2024 revenue of $391.0 billion"
    )
    assert all(f in said for f in ("$119.6 billion", "$90.8 billion", "$85.8 billion"))
    eps = await _ask(index, toolset, "apple eps q4 fy2024")
    assert eps.startswith("I have no diluted EPS of Apple Inc. for fiscal Q4 2024")
    assert "$" not in eps


async def test_the_latest_10q_gives_that_forms_figure(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await _ask(index, toolset, "What was Apple's net income in its latest 10-Q?")
    assert "**$42.1 billion** (quarter ended 2025-12-27), per its 10-Q" in said
    assert "10-K" not in said and "$112.0 billion" not in said
    # The change is on the same quarter a year before, not on the last quarter listed.
    assert "on quarter ended 2024-12-28" in said


async def test_ratios_show_both_inputs(index: CompanyIndex, toolset: Toolset) -> None:
    tax = await _ask(index, toolset, "Apple's effective tax rate in fiscal 2024")
    assert "**24.1%** in FY2024" in tax
    assert "income tax expense of $29.7 billion on pretax income of $123.5 billion" in tax
    rnd = await _ask(index, toolset, "R&D as a share of revenue for NVIDIA fy2025")
    assert "**9.9%**" in rnd and "$12.9 billion on revenue of $130.5 billion" in rnd


async def test_a_change_between_two_years_is_computed_from_both(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await _ask(index, toolset, "How much did Alphabet's revenue rise between 2023 and 2025?")
    assert said.startswith("**ALPHABET INC.**'s revenue rose by **$95.4 billion** (+31.0%)")
    assert "$307.4 billion (FY2023" in said and "$402.8 billion (FY2025" in said
    margin = await _ask(index, toolset, "apple gross margin change from fy2023 to fy2024")
    assert "from 44.1% to **46.2%**" in margin and "+2.1 percentage points" in margin


async def test_a_follow_up_asks_the_change_from_another_year(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await _ask(
        index, toolset, "NVIDIA net income fy2025", "how much did that grow from fy2024?"
    )
    assert said.startswith("**NVIDIA CORP**'s net income rose by **$43.1 billion** (+144.9%)")


async def test_a_change_with_a_missing_year_names_it(index: CompanyIndex, toolset: Toolset) -> None:
    said = await _ask(index, toolset, "How much did Apple's revenue rise between 2024 and 2026?")
    assert "no value for fiscal year 2026" in said and "$" not in said


async def test_which_grew_fastest_is_answered(index: CompanyIndex, toolset: Toolset) -> None:
    said = await _ask(
        index, toolset,
        "Compare the revenue of Apple, NVIDIA and Alphabet in their latest fiscal years, "
        "and which grew fastest?",
    )  # fmt: skip
    assert "**NVIDIA CORP** grew fastest: +65.5% in FY2026" in said
    assert "largest" not in said


async def test_a_follow_up_naming_only_a_figure_keeps_the_company(
    index: CompanyIndex, toolset: Toolset
) -> None:
    said = await _ask(index, toolset, "apple revenue fy2023", "what's the R&D spend?")
    assert said.startswith("**Apple Inc.** reported R&D expense of **$29.9 billion** (FY2023")
    other = await _ask(index, toolset, "apple revenue fy2023", "what was costco's revenue")
    assert "Apple Inc.** reported" not in other and "$" not in other and "Costco" in other
    ranked = await _ask(
        index, toolset, "apple revenue fy2023", "which companies had the most revenue in CY2023?"
    )
    assert "Apple Inc.** reported" not in ranked
    quarter = await _ask(index, toolset, "nvidia revenue Q2 FY2025", "and net income?")
    assert quarter.startswith("**NVIDIA CORP** reported net income") and "Q2 FY2025" in quarter


async def test_the_quarter_before_is_counted_on_the_fiscal_calendar(
    index: CompanyIndex, toolset: Toolset
) -> None:
    """Before NVIDIA's latest quarter (fiscal Q1 FY2027) comes its fiscal Q4 FY2026, which
    is computed; before Apple's fiscal Q1 FY2025, its fiscal Q4 FY2024."""
    said = await _ask(
        index, toolset, "NVIDIA revenue last quarter", "what about the quarter before?"
    )
    assert said.startswith("**NVIDIA CORP**'s revenue for fiscal Q4 FY2026 (the quarter ended")
    q2 = await _ask(index, toolset, "Apple revenue fy2024", "and Q2?")
    assert q2.startswith("**Apple Inc.** reported revenue of **$90.8 billion** (fiscal Q2 FY2024")
    apple = await _ask(index, toolset, "apple revenue q2 fy2025", "and the quarter before?")
    assert apple.startswith(
        "**Apple Inc.** reported revenue of **$124.3 billion** (fiscal Q1 FY2025"
    )


@pytest.mark.parametrize(
    ("question", "named"),
    [
        ("What are Apple's same-store sales?", "same-store sales"),
        ("How many iPhones did Apple sell last year?", "units sold"),
        ("What's the price target for NVIDIA?", "price target"),
        ("How is Tesla trading today?", "today's trading"),
    ],
)
async def test_what_is_not_reported_is_named_and_nothing_substituted(
    index: CompanyIndex, toolset: Toolset, question: str, named: str
) -> None:
    said = await answer(index, toolset, question)
    assert said.calls == [] and named in said.text and "$" not in said.text


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("How much did Alphabet revenue rise between 2023 and 2025?", (2023, 2025)),
        ("apple net income change from FY2023 to FY2024", (2023, 2024)),
        ("nvda rev fy24 vs fy25", (2024, 2025)),
        ("revenue between 2019 and 2022", None),  # no change asked: the years' table
        ("revenue in 2024", None),
    ],
)
def test_two_named_years_of_a_change(text: str, years: tuple[int, int] | None) -> None:
    assert two_years(text) == years


@pytest.mark.parametrize(
    ("text", "key", "parts"),
    [
        ("R&D as a share of revenue", "rnd_share", ("rnd", "revenue")),
        ("sbc as % of sales", "stock_comp_share", ("stock_comp", "revenue")),
        ("capex to revenue ratio", "capex_share", ("capex", "revenue")),
        ("effective tax rate", "effective_tax_rate", ("income_tax", "pretax_income")),
        ("revenue and R&D", "revenue", None),  # two figures, no ratio asked
    ],
)
def test_ratios_of_two_figures_are_read(text: str, key: str, parts: tuple[str, str] | None) -> None:
    found = find_metrics(text)
    assert found[0].key == key and found[0].ratio == parts


@pytest.mark.parametrize(
    ("question", "lead", "concept"),
    [
        # The concept each company uses for its cost of revenue.
        ("apple cost of revenue fy2024", "$210.4 billion", "CostOfGoodsAndServicesSold"),
        ("alphabet cost of revenue 2024", "$146.3 billion", "us-gaap:CostOfRevenue"),
        ("Apple income tax expense fy2024", "$29.7 billion", "IncomeTaxExpenseBenefit"),
        ("NVIDIA pretax income fy2025", "$84.0 billion", "BeforeIncomeTaxes"),
    ],
)
async def test_concepts_analysts_name(
    index: CompanyIndex, toolset: Toolset, question: str, lead: str, concept: str
) -> None:
    said = await _ask(index, toolset, question)
    assert f"of **{lead}**" in said.split(". ")[0] and concept in said

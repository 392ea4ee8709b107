"""The figure check on its own: what counts as a figure, and each status, against tool
results in the SEC tools' shapes."""

from __future__ import annotations

from typing import Any

from gateway import figures
from gateway.figures import extract
from tests.figures.support import (
    APPLE_EPS,
    APPLE_GROSS,
    APPLE_REVENUE,
    FACTS,
    NVIDIA_REVENUE,
    conversation,
    facts_result,
)

APPLE = conversation(
    (FACTS, APPLE_REVENUE, {"company_identifier": "AAPL"}),
    (FACTS, APPLE_GROSS, {"company_identifier": "AAPL"}),
    (FACTS, APPLE_EPS, {"company_identifier": "AAPL"}),
    (FACTS, NVIDIA_REVENUE, {"company_identifier": "NVDA"}),
)


def statuses(
    answer: str, messages: list[dict[str, Any]] = APPLE, question: str = ""
) -> dict[str, str]:
    report = figures.check(answer, figures.build(messages), question)
    return {c.figure.text: c.status for c in report.figures}


def test_what_counts_as_a_figure() -> None:
    text = (
        "Revenue was $416.2 billion (up 6.4%) in FY2025, ended 2025-09-27; EPS $7.46 per "
        "share; 15.1 billion shares; 1.9x cover; 12,345 units; 3 segments; Item 5.02; "
        "see [the 10-K](https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/x.htm), "
        "accession 0000320193-25-000079, CIK 0000320193."
    )
    found = {f.text: f for f in extract.figures(text)}
    assert set(found) == {
        "$416.2 billion",
        "6.4%",
        "$7.46",
        "15.1 billion shares",
        "1.9x",
        "12,345",
        "0000320193-25-000079",
        "CIK 0000320193",
    }
    assert found["$416.2 billion"].value == 416.2e9
    assert found["$416.2 billion"].tolerance == 0.05e9
    assert found["$7.46"].unit == "USD/share"
    assert found["15.1 billion shares"].unit == "shares"
    assert found["CIK 0000320193"].value == "320193"
    for figure in found.values():
        assert text[figure.start : figure.end] == figure.text


def test_each_status() -> None:
    found = statuses(
        "Apple's revenue was $416.2 billion in FY2025, up 6.4% on FY2024; its gross margin "
        "was 46.9% in FY2025, diluted EPS $7.46. In FY2024 revenue was $383.3 billion. "
        "Apple's services made $999.9 billion in FY2025. Apple's revenue was $215.9 billion "
        "in FY2025. (Accession 0000320193-25-000079; accession 0000320193-25-000080.)"
    )
    assert found == {
        "$416.2 billion": "sourced",
        "6.4%": "derived",  # 416,161 / 391,035 - 1
        "46.9%": "derived",  # 195,201 / 416,161
        "$7.46": "sourced",
        "$383.3 billion": "other_period",  # FY2023's revenue, stated for FY2024
        "$999.9 billion": "unsourced",
        "$215.9 billion": "unsourced",  # NVIDIA's revenue, stated as Apple's
        "0000320193-25-000079": "sourced",
        "0000320193-25-000080": "unsourced",
    }


def test_rounding_shown_is_the_tolerance() -> None:
    found = statuses(
        "Revenue: $416.16 billion, $416.2 billion, $416 billion, $416,161 million, "
        "$416.1 billion, $416.17 billion, $0.4 trillion, $420 billion."
    )
    assert found == {
        "$416.16 billion": "sourced",
        "$416.2 billion": "sourced",
        "$416 billion": "sourced",
        "$416,161 million": "sourced",
        "$0.4 trillion": "sourced",
        "$416.1 billion": "unsourced",
        "$416.17 billion": "unsourced",
        "$420 billion": "unsourced",
    }


def test_the_question_names_the_period_when_the_sentence_does_not() -> None:
    assert statuses("Revenue was $391.0 billion.", question="Apple revenue FY2025?") == {
        "$391.0 billion": "other_period"
    }
    assert statuses("Revenue was $391.0 billion.", question="Apple revenue?") == {
        "$391.0 billion": "sourced"
    }


def test_compounded_growth() -> None:
    found = statuses(
        "From FY2023 to FY2025 Apple's revenue went from $383.3 billion to $416.2 billion, "
        "about +4.2% a year compounded (not +4.5%)."
    )
    assert found["+4.2%"] == "derived"  # (416,161 / 383,285) ^ (1/2) - 1 = 4.20 %
    assert found["+4.5%"] == "unsourced"


def test_difference_of_two_stated_figures() -> None:
    found = statuses(
        "In FY2025 Apple's revenue of $416.2 billion less gross profit of $195.2 billion "
        "leaves $221.0 billion of cost of sales; $221.5 billion would be wrong."
    )
    assert found["$221.0 billion"] == "derived"
    assert found["$221.5 billion"] == "unsourced"
    report = figures.check(
        "Revenue $416.2 billion, gross profit $195.2 billion, cost $221.0 billion in FY2025.",
        figures.build(APPLE),
    )
    derived = report.figures[-1]
    assert derived.formula == (
        "us-gaap:Revenues 2024-09-29/2025-09-27 − us-gaap:GrossProfit 2024-09-29/2025-09-27"
    )
    assert [s.public()["tool_use_id"] for s in derived.sources] == ["toolu_0", "toolu_1"]


def test_event_fields_are_the_contracts() -> None:
    report = figures.check("Revenue was $416.2 billion in FY2025.", figures.build(APPLE))
    fields = report.event_fields()
    assert fields["counts"] == {"sourced": 1, "derived": 0, "unsourced": 0, "other_period": 0}
    (figure,) = fields["figures"]
    assert figure == {
        "text": "$416.2 billion",
        "start": 12,
        "end": 26,
        "value": 416.2e9,
        "unit": "USD",
        "status": "sourced",
        "formula": None,
        "sources": [
            {
                "tool_use_id": "toolu_0",
                "tool": FACTS,
                "accession": "0000320193-25-000079",
                "concept": "us-gaap:Revenues",
                "period": "2024-09-29/2025-09-27",
                "form": "10-K",
            }
        ],
    }


def test_the_source_the_sentence_names_comes_first() -> None:
    same = conversation(
        (FACTS, APPLE_REVENUE, {}),
        (
            FACTS,
            facts_result(
                320193,
                "Apple Inc.",
                "us-gaap:GrossProfit",
                [("2024-09-29", "2025-09-27", 416161000000)],
            ),
            {},
        ),
    )
    for sentence, concept in (
        ("Apple's gross profit was $416.2 billion in FY2025.", "us-gaap:GrossProfit"),
        ("Apple's revenues were $416.2 billion in FY2025.", "us-gaap:Revenues"),
    ):
        (checked,) = figures.check(sentence, figures.build(same)).figures
        assert checked.status == "sourced"
        assert checked.sources[0].concept == concept


def test_a_table_number_as_written_has_the_tolerance_of_its_own_digits() -> None:
    """ "-842" in a "(in millions)" table is read as -842 million ± 0.5 million and as
    written, -842 ± 0.5: not as -842 ± 500,000, which any number below 500,842 would fit."""
    table = (
        "Apple, FY2025 (in millions):\n\n| | FY2025 |\n|---|---|\n"
        "| Other income (expense), net | -842 |\n| Gross profit | 195,201 |\n"
    )

    def other_income(*values: float) -> dict[str, str]:
        result = facts_result(
            320193,
            "Apple Inc.",
            "us-gaap:NonoperatingIncomeExpense",
            [("2024-09-29", "2025-09-27", value) for value in values],
        )
        return statuses(table, conversation((FACTS, APPLE_GROSS, {}), (FACTS, result, {})))

    # Far off either reading: 300,000 is 299,158 from -842 and 842 million from -842 million.
    assert other_income(300000) == {"-842": "unsourced", "195,201": "sourced"}
    assert other_income(843, 841.4, 842.6e6, 841.4e6) == {"-842": "unsourced", "195,201": "sourced"}
    # The right value in either reading, and at either end of the last digit's half unit.
    for value in (-842, 842.4, 841.6, -842e6, 842.4e6, 841.6e6):
        assert other_income(value) == {"-842": "sourced", "195,201": "sourced"}, value

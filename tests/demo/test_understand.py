"""Reading questions: companies, intents, forms, dates, metrics, topics."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

import demo_model
from demo_model.companies import CompanyIndex
from demo_model.quarters import NamedQuarter
from demo_model.understand import Question, Span, understand

TODAY = dt.date(2026, 11, 22)
QUESTIONS_MD = Path(demo_model.__file__).with_name("QUESTIONS.md")


def read(index: CompanyIndex, text: str, earlier: tuple[str, ...] = ()) -> Question:
    return understand(text, index, TODAY, earlier)


def tickers(q: Question) -> list[str]:
    return [f.ticker for f in q.firms]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Find Tesla's 10-K filings", ["TSLA"]),
        ("tesla filings", ["TSLA"]),
        ("Show TSLA and $NVDA revenue", ["TSLA", "NVDA"]),
        ("Filings of CIK 320193", ["AAPL"]),
        ("What about CIK0001045810?", ["NVDA"]),
        ("Google's revenue", ["GOOGL"]),
        ("Any news on Meta and JPMorgan?", ["META", "JPM"]),
        ("Compare Marvell with Snowflake", ["MRVL", "SNOW"]),
        ("Target's revenue", []),  # a sentence's first word: maybe just a word
        ("Compare Target and Walmart revenue", ["TGT", "WMT"]),
        ("What is the target revenue for this block of news?", []),
        ("What is the CIK of Apple Inc.?", ["AAPL"]),
        ("Which companies reported the most revenue in CY2023?", []),
        ("What was the EPS of the SEC in FY2024?", []),
    ],
)
def test_companies(index: CompanyIndex, text: str, expected: list[str]) -> None:
    assert tickers(read(index, text)) == expected


def test_unknown_names(index: CompanyIndex) -> None:
    q = read(index, "Find 10-K filings of Zyxwv Rockets")
    assert q.firms == () and q.unknown == ("Zyxwv Rockets",)
    assert q.intent == "unknown_company"


def test_label_keeps_the_name_as_written(index: CompanyIndex) -> None:
    [tesla, nvidia] = read(index, "tesla and NVDA").firms
    assert tesla.label == "Tesla" and nvidia.label == "NVIDIA"
    [meta] = read(index, "Meta").firms
    assert meta.label == "Meta" and meta.cik == 1326801
    [apple] = read(index, "CIK 320193").firms
    assert apple.label == "Apple" and apple.said == "320193"


def test_examples_in_questions_md(index: CompanyIndex) -> None:
    rows = re.findall(r"^\| \d+ \| [^|]+ \| `(\w+)` \| ([^|]+) \|", QUESTIONS_MD.read_text(), re.M)
    assert len(rows) >= 12
    for intent, example in rows:
        assert read(index, example.strip()).intent == intent, example


def _named(kind: str, number: int, year: int, said: str) -> Span:
    return Span(quarter=True, named=NamedQuarter(kind, number, year, said))


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("Tesla 10-K since 2020", Span(after=dt.date(2020, 1, 1))),
        ("Tesla 10-K after 2020", Span(after=dt.date(2021, 1, 1))),
        ("Tesla 10-K before 2018", Span(before=dt.date(2017, 12, 31))),
        (
            "Tesla 8-Ks between 2019 and 2022",
            Span(dt.date(2019, 1, 1), dt.date(2022, 12, 31)),
        ),
        ("Tesla 8-Ks over the last 3 years", Span(after=dt.date(2023, 11, 22))),
        ("Apple revenue in fiscal 2024", Span(fiscal_year=2024)),
        ("Apple revenue FY2024", Span(fiscal_year=2024)),
        (
            "Most revenue in CY2023",
            Span(dt.date(2023, 1, 1), dt.date(2023, 12, 31), calendar_year=2023),
        ),
        (
            "Tesla 8-Ks in 2024",
            Span(dt.date(2024, 1, 1), dt.date(2024, 12, 31), 2024, 2024),
        ),
        ("Tesla filings", Span()),
    ],
)
def test_spans(index: CompanyIndex, text: str, span: Span) -> None:
    assert read(index, text).span == span


@pytest.mark.parametrize(
    ("text", "intent", "detail"),
    [
        ("What did Tesla's latest 8-K say?", "latest_filing", "8-K"),
        ("List Tesla's last 5 8-K filings", "filings", "8-K"),
        ("Show Apple's annual reports", "filings", "10-K"),
        ("Summarize Apple's management's discussion and analysis", "section", "Item 7"),
        ("What are NVIDIA's biggest risks?", "section", "Item 1A"),
        ("Did NVIDIA appoint a new CFO?", "exec", "Item 5.02"),
        ("What was Apple's operating income?", "metric", "operating_income"),
        ("Apple's earnings per share over time", "trend", "eps"),
        ("Apple's revenue since 2020", "trend", "revenue"),
        ("Apple vs NVIDIA net income", "compare", "net_income"),
        ("Apple total assets and liabilities", "balance_sheet", "assets"),
        ("Which companies had the highest net income in 2024?", "rank", "net_income"),
        ("Look up the ticker for Snowflake", "lookup", ""),
        ('Search filings for "export controls"', "full_text", "export controls"),
        ("Latest news on Tesla", "web", ""),
        ("hello", "greeting", ""),
        ("thanks!", "thanks", ""),
        ("Who audits NVIDIA?", "unsupported", ""),
        ("what risks does apple mention", "section", "Item 1A"),
        ("Which filings mention cybersecurity?", "full_text", "cybersecurity"),
        ("Tesla", "overview", ""),
        ("who is the ceo of tesla", "unsupported", ""),
        ("who sits on apple's board", "unsupported", ""),
        ("Any board changes at Apple?", "exec", "Item 5.02"),
        ("How is NVIDIA doing?", "overview", ""),
        ("revenue of apple in q4 2025", "metric", "revenue"),
        ("Apple's 10-Q filings for Q2 2025", "filings", "10-Q"),
        ("nvidia vs amd revenue", "compare", "revenue"),
        ("nvidias revnue last quarter", "metric", "revenue"),
        ("Tell me a joke", "help", ""),
    ],
)
def test_intents(index: CompanyIndex, text: str, intent: str, detail: str) -> None:
    q = read(index, text)
    assert q.intent == intent
    details = [*q.forms, *(m.key for m in q.metrics), q.phrase or ""]
    if q.topic:
        details.append(q.topic.section)
    assert not detail or detail in details


def test_limit(index: CompanyIndex) -> None:
    assert read(index, "List Tesla's last 5 8-K filings").limit == 5
    assert read(index, "Tesla's latest 8-K").limit is None


def test_follow_up_takes_the_earlier_company(index: CompanyIndex) -> None:
    q = read(index, "And its net income?", ("How has NVIDIA's revenue grown?",))
    assert q.intent == "metric" and tickers(q) == ["NVDA"]
    fresh = read(index, "Which filings mention 'tariffs'?", ("How has NVIDIA's revenue grown?",))
    assert fresh.firms == () and fresh.phrase == "tariffs"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("apple eps fy23", Span(fiscal_year=2023)),
        ("apple eps FY'23", Span(fiscal_year=2023)),
        ("apple eps fiscal 23", Span(fiscal_year=2023)),
        ("apple eps fy 2023", Span(fiscal_year=2023)),
        ("apple eps '23", Span(dt.date(2023, 1, 1), dt.date(2023, 12, 31), 2023, 2023)),
        ("apple eps last fiscal yr", Span(latest_year=True)),
        ("apple eps for the most recent fiscal year", Span(latest_year=True)),
        ("apple eps q3 2024", _named("fiscal", 3, 2024, "q3 2024")),
        ("apple eps Q2 FY'24", _named("fiscal", 2, 2024, "Q2 FY'24")),
        ("nvda rev second quarter of fiscal 2025",
         _named("fiscal", 2, 2025, "second quarter of fiscal 2025")),
        ("nvidia revenue CY2024 Q2",
         _named("calendar", 2, 2024, "CY2024 Q2")),
        ("nvidia revenue in calendar Q3 2024",
         _named("calendar", 3, 2024, "calendar Q3 2024")),
        ("apple revenue ttm", Span(unclear="ttm")),
        ("apple revenue trailing twelve months", Span(unclear="trailing twelve months")),
        ("apple revenue this year", Span(unclear="this year")),
        ("apple revenue h1", Span(unclear="h1")),
        ("apple revenue for the quarter ended december 2025",
         _named("ended", 12, 2025, "quarter ended december 2025")),
        ("nvidia revenue, july 2024 quarter",
         _named("ended", 7, 2024, "july 2024 quarter")),
        ("nvidia revenue in the march quarter", Span(unclear="march quarter")),
        ("apple quarterly revenue", Span(quarter=True)),
    ],
)  # fmt: skip
def test_periods_as_analysts_write_them(index: CompanyIndex, text: str, span: Span) -> None:
    assert read(index, text).span == span


def test_a_period_it_cannot_place_is_named_and_no_figure_is_fetched(index: CompanyIndex) -> None:
    q = read(index, "nvidia revenue ttm")
    assert q.intent == "unsupported" and q.unclear == ("ttm",)
    assert q.reason is not None and "“ttm”" in q.reason


@pytest.mark.parametrize(
    ("earlier", "text", "span"),
    [
        (("apple net income fy22",), "what about the year before?", Span(fiscal_year=2021)),
        (("apple net income fy22", "what about the year before?"), "and the year before that?",
         Span(fiscal_year=2020)),
        (("apple revenue last fiscal year",), "and its cash at the end of that year",
         Span(latest_year=True)),
        (("apple revenue",), "and the prior year?", Span(latest_year=True, back=1)),
        (("apple revenue fy2024",), "and its net income?", Span(fiscal_year=2024)),
        (("apple revenue fy2024",), "same for nvidia", Span(fiscal_year=2024)),
    ],
)  # fmt: skip
def test_follow_ups_carry_the_period(
    index: CompanyIndex, earlier: tuple[str, ...], text: str, span: Span
) -> None:
    q = read(index, text, earlier)
    assert q.span == span and q.intent == "metric" and q.firms


def test_that_year_without_an_earlier_question_is_not_understood(index: CompanyIndex) -> None:
    q = read(index, "apple revenue that year")
    assert q.intent == "unsupported" and q.unclear == ("that year",)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("apple op income", "operating_income"),
        ("apple opex", "opex"),
        ("apple sg&a", "sga"),
        ("apple SG&A", "sga"),
        ("tesla lose per share (diluted)", "eps"),
        ("nvidia rev", "revenue"),
        ("apple FCF", "free_cash_flow"),
        ("apple NI", "net_income"),
        ("apple op margin", "operating_margin"),
    ],
)
def test_analysts_abbreviations(index: CompanyIndex, text: str, key: str) -> None:
    q = read(index, text)
    assert [m.key for m in q.metrics] == [key] and tickers(q) and q.intent == "metric"


@pytest.mark.parametrize(
    ("text", "section"),
    [("apple 10-k item 7a", "Item 7A"), ("apple 10-k item 7", "Item 7"),
     ("apple item 1a", "Item 1A"), ("apple item 3", "Item 3"), ("apple item 8", "Item 8"),
     ("apple's market risk disclosures", "Item 7A")],
)  # fmt: skip
def test_ten_k_items_by_number(index: CompanyIndex, text: str, section: str) -> None:
    q = read(index, text)
    assert q.intent == "section" and q.topic is not None and q.topic.section == section


def test_people_who_file(index: CompanyIndex) -> None:
    q = read(index, "warren buffett's form 4s")
    assert [(f.cik, f.label, f.person) for f in q.firms] == [(315090, "Warren Buffett", True)]
    assert q.intent == "filings" and q.forms == ("4",)
    figures = read(index, "buffett net income fy23")
    assert figures.intent == "unsupported" and "person" in (figures.reason or "")


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("is tesla a good buy", "unsupported"),
        ("should i short mrvl here?", "unsupported"),
        ("street consensus for nvidia fy27 revenue", "unsupported"),
        ("apple ebitda", "unsupported"),
        ("thanks, bye", "thanks"),
        ("ok thanks, that's all", "thanks"),
        ("costco's revenue last year", "metric"),
        ("revenue last year", "help"),
    ],
)
def test_what_it_declines_and_why(index: CompanyIndex, text: str, intent: str) -> None:
    assert read(index, text).intent == intent

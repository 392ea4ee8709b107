"""Every question shape end to end: /api/stream -> gateway loop -> real SDK -> demo model
over HTTP, with the real offline SEC and search tools. Each test checks the turns, the
tool inputs, facts of the tool results in the answer, and no fact that is not in them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

import demo_model
from demo_model.periods import CALENDAR
from tests.demo.conftest import Client
from tests.demo.support import Run, ask, replay, ungrounded
from tools import Toolset

LOOKUP, FILINGS, READ = "search_sec_company_tickers", "search_sec_filings", "get_sec_filing"
FACTS, FRAMES = "get_sec_company_facts", "get_sec_xbrl_frames"
FULL_TEXT, WEB = "search_sec_full_text", "web_search"


async def grounded_run(client: Client, toolset: Toolset, query: str, **body: Any) -> Run:
    run = await ask(client, query, **body)
    sources = await replay(run, toolset)
    assert run.final["outcome"] == "completed", run.final
    # The model's own tool inputs (dates it derived from the question) may be repeated too.
    asked = orjson.dumps([use["tool"]["input"] for use in run.uses]).decode()
    assert ungrounded(run.result, [*sources, asked]) == []
    return run


def result_of(run: Run, name: str, n: int = 0) -> dict[str, Any]:
    uses = [e["tool"]["id"] for e in run.uses if e["tool"]["name"] == name]
    ids = [e["tool"]["id"] for e in run.uses]
    data: dict[str, Any] = orjson.loads(run.sources[ids.index(uses[n])])
    return data


async def test_filings_of_a_form_since_a_year(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Find Tesla's 10-K filings since 2020")
    assert run.plan() == [[LOOKUP], [FILINGS]] and run.final["turns"] == 3
    assert run.inputs(LOOKUP) == [{"search_term": "Tesla"}]
    [args] = run.inputs(FILINGS)
    assert args["company_identifier"] == "1318605"  # the CIK the lookup returned
    assert args["filing_type"] == "10-K" and args["date_after"] == "2020-01-01"
    filings = result_of(run, FILINGS)["filings"]
    assert len(filings) == 7
    for filing in filings:
        assert filing["accession_number"] in run.answer and filing["url"] in run.answer
    assert "Tesla, Inc. is CIK 1318605" in run.result  # reasoning from the lookup result


async def test_recent_filings(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What has Marvell filed recently?")
    [args] = run.inputs(FILINGS)
    assert args == {"company_identifier": "1835632", "limit": 10}
    filings = result_of(run, FILINGS)["filings"]
    assert all(f["accession_number"] in run.answer for f in filings)
    assert "By form:" in run.answer


async def test_revenue_growth(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "How has NVIDIA's revenue grown?")
    assert run.plan() == [[FACTS]] and run.final["turns"] == 2
    [args] = run.inputs(FACTS)
    assert args["company_identifier"] == "NVDA" and args["concept"] == "revenue"
    assert "us-gaap:Revenues" in run.answer
    for fact in ("$130.5 billion", "FY2025", "2025-01-26", "$60.9 billion", "+114.2%"):
        assert fact in run.answer


async def test_latest_value_of_one_metric(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What was Apple's net income last year?")
    # "last year" is the company's last fiscal year: its calendar comes in the same turn
    args, calendar = run.inputs(FACTS)
    assert args["company_identifier"] == "AAPL" and args["concept"] == "net_income"
    assert calendar == {"company_identifier": "AAPL", "concept": CALENDAR, "limit": 16}
    assert run.plan() == [[FACTS, FACTS]]
    latest = result_of(run, FACTS)["units"]["USD"]["annual"][0]
    assert latest["value"] == 112_010_000_000
    for fact in ("$112.0 billion", "FY2025, ended 2025-09-27", latest["accession_number"]):
        assert fact in run.answer


async def test_metric_of_a_fiscal_year(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What was Apple's revenue in fiscal 2024?")
    assert run.inputs(FACTS)[0]["concept"] == "revenue"
    assert "$391.0 billion" in run.answer and "FY2024, ended 2024-09-28" in run.answer


async def test_compare_companies_in_parallel(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Compare revenue of Apple, NVIDIA and Alphabet")
    assert run.plan() == [[FACTS, FACTS, FACTS]]  # one turn, three calls
    assert [a["company_identifier"] for a in run.inputs(FACTS)] == ["AAPL", "NVDA", "GOOGL"]
    answer = run.answer
    order = [answer.index(v) for v in ("$416.2 billion", "$402.8 billion", "$215.9 billion")]
    assert order == sorted(order)  # largest first


async def test_risk_factors(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What are Apple's risk factors?")
    assert run.plan() == [[LOOKUP], [FILINGS], [READ], [READ]]
    assert run.inputs(FILINGS)[0]["filing_type"] == "10-K"
    first, second = run.inputs(READ)
    assert first["section"] == second["section"] == "Item 1A"
    assert len(run.phase("tool_error")) == 1  # the newest 10-K is not in the snapshot
    assert second["url"].endswith("/000032019324000123/aapl-20240928.htm")
    text = result_of(run, READ, 1)["text"]
    headline = "The Company’s business can be impacted by political events"
    assert headline in text and headline in run.answer
    assert "0000320193-24-000123" in run.answer and "could not be read" in run.answer


async def test_mdna_summary(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Summarize NVIDIA's MD&A")
    assert run.inputs(READ)[-1]["section"] == "Item 7"
    text = result_of(run, READ, 1)["text"]
    assert "**Demand and Supply**" in run.answer and "Demand and Supply" in text
    assert "0001045810-25-000023" in run.answer


async def test_executive_changes(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Any executive changes at Meta?")
    assert run.plan() == [[LOOKUP], [FILINGS, FULL_TEXT], [READ]]
    [search] = run.inputs(FULL_TEXT)
    assert search["forms"] == ["8-K"] and search["cik"] == "1326801"
    assert run.inputs(READ)[0]["section"] == "Item 5.02"
    assert "Dina Powell McCormick" in run.answer and "0001628280-25-058337" in run.answer


async def test_executive_changes_list_other_filings(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What executive changes has NVIDIA reported?")
    assert "Jen-Hsun Huang President and Chief Executive Officer" in run.answer
    listed = [f for f in result_of(run, FILINGS)["filings"] if "5.02" in f.get("items", "")]
    assert listed and all(f["accession_number"] in run.answer for f in listed)


async def test_latest_8k_tries_until_one_is_readable(
    demo_gateway: Client, toolset: Toolset
) -> None:
    run = await grounded_run(demo_gateway, toolset, "What did NVIDIA's latest 8-K say?")
    assert run.plan() == [[LOOKUP], [FILINGS], [READ], [READ], [FULL_TEXT], [READ]]
    assert len(run.phase("tool_error")) == 2
    assert run.inputs(READ)[-1]["url"].endswith("/nvda-20260302.htm")
    assert "0001045810-26-000024" in run.answer and "Item 5.02" in run.answer
    assert "2 newer documents could not be read here" in run.answer


async def test_latest_10q(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What did Tesla's latest 10-Q say?")
    assert run.inputs(READ)[-1]["url"].endswith("/tsla-20250630.htm")
    assert "Our mission is to accelerate the world’s transition to sustainable energy." in (
        run.answer
    )


async def test_cik_lookup(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What is the CIK of Marvell?")
    assert run.inputs(LOOKUP) == [{"search_term": "Marvell"}] and run.final["turns"] == 2
    assert "CIK **1835632**" in run.answer and "MRVL" in run.answer


async def test_ranking_with_frames(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(
        demo_gateway, toolset, "Which companies reported the most revenue in CY2023?"
    )
    assert run.plan() == [[FRAMES, FRAMES]]
    assert {a["period"] for a in run.inputs(FRAMES)} == {"CY2023"}
    assert [a["concept"] for a in run.inputs(FRAMES)] == [
        "Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax"
    ]  # fmt: skip
    assert run.answer.index("$383.3 billion") < run.answer.index("$307.4 billion")
    assert "offline snapshot" in run.answer


async def test_full_text_search(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Which filings mention 'supply chain'?")
    assert run.plan() == [[FULL_TEXT], [READ]]
    assert run.inputs(FULL_TEXT)[0]["query"] == '"supply chain"'
    hits = result_of(run, FULL_TEXT)["hits"]
    assert hits and all(h["accession_number"] in run.answer for h in hits)
    assert run.inputs(READ)[0]["offset"] == hits[0]["offset"]
    assert "> While we work to enhance the resiliency and redundancy of our supply chain" in (
        run.answer
    )


async def test_news_with_web_search(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What's the latest news about NVIDIA?")
    assert run.plan() == [[WEB, FILINGS]]
    assert run.inputs(WEB)[0]["query"] == "NVIDIA news"
    assert "no internet access" in run.answer
    first = result_of(run, WEB)["results"][0]
    assert first["url"] in run.answer and "0001045810-26-000019" in run.answer


async def test_balance_sheet(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Show NVIDIA's balance sheet")
    assert run.plan() == [[FACTS]]
    assert run.inputs(FACTS) == [{"company_identifier": "NVDA"}]  # the key-metrics summary
    metrics = result_of(run, FACTS)["metrics"]
    assets = metrics["total_assets"]["latest"][0]
    assert assets["end"] in run.answer and "$259.5 billion" in run.answer
    for line in ("Total assets", "Total liabilities", "Stockholders' equity"):
        assert f"| {line} |" in run.answer


async def test_eps_history(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Show Apple's EPS history")
    assert run.plan() == [[FACTS, FACTS]]
    assert [a["concept"] for a in run.inputs(FACTS)] == ["eps_diluted", "eps_basic"]
    assert "$7.46 per share" in run.answer and "$6.08 per share" in run.answer


async def test_unknown_company(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Find 10-K filings of Zyxwv Rockets")
    assert run.plan() == [[LOOKUP]]
    assert run.inputs(LOOKUP) == [{"search_term": "Zyxwv Rockets"}]
    assert "I found nothing" in run.answer and "Zyxwv Rockets" in run.answer


async def test_off_topic_says_what_it_can_do(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What's a good recipe for pancakes?")
    assert run.uses == [] and run.final["turns"] == 1
    assert "demo model" in run.answer and "Find Tesla's 10-K filings since 2020" in run.answer


async def test_follow_up_uses_the_earlier_company(demo_gateway: Client, toolset: Toolset) -> None:
    first = await ask(demo_gateway, "How has NVIDIA's revenue grown?")
    session = first.final["session_id"]
    run = await grounded_run(demo_gateway, toolset, "And its net income?", sessionId=session)
    assert run.inputs(FACTS) == [
        {"company_identifier": "NVDA", "concept": "net_income", "limit": 16}
    ]


async def test_compare_one_fiscal_year(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(
        demo_gateway, toolset, "Compare revenue of Apple, NVIDIA and Alphabet in 2024"
    )
    assert all(a["limit"] >= 4 for a in run.inputs(FACTS))
    for fact in ("fiscal year 2024", "FY2024, ended 2024-09-28", "$391.0 billion",
                 "FY2024, ended 2024-01-28", "$60.9 billion", "$350.0 billion"):  # fmt: skip
        assert fact in run.answer
    assert "FY2025" not in run.answer and "FY2026" not in run.answer


async def test_an_8k_of_a_year_found_by_full_text(demo_gateway: Client, toolset: Toolset) -> None:
    """No filing list for Adobe offline: the demo searches the filings' text instead."""
    run = await grounded_run(demo_gateway, toolset, "What did Adobe report in its March 2023 8-K?")
    assert run.plan() == [[LOOKUP], [FILINGS], [FULL_TEXT], [READ]]
    [listed] = run.inputs(FILINGS)
    assert listed["date_after"] == "2023-01-01" and listed["date_before"] == "2023-12-31"
    assert run.inputs(FULL_TEXT)[0]["cik"] == "796343"
    assert "Item 2.02. Results of Operations and Financial Condition." in run.answer
    assert "first quarter fiscal year 2023 ended March 3, 2023" in run.answer


async def test_market_prices_are_out_of_scope(demo_gateway: Client) -> None:
    run = await ask(demo_gateway, "What's NVIDIA's market cap?")
    assert run.uses == [] and run.answer.startswith("I can't answer that: market prices")
    assert len(run.answer) < 400  # the reason and two examples, not the whole help text


QUESTIONS_MD = Path(demo_model.__file__).with_name("QUESTIONS.md")
EXAMPLES = re.findall(r"^\| \d+ \| [^|]+ \| `\w+` \| ([^|]+) \|", QUESTIONS_MD.read_text(), re.M)


@pytest.mark.parametrize("question", [e.strip() for e in EXAMPLES])
async def test_every_example_in_questions_md(
    demo_gateway: Client, toolset: Toolset, question: str
) -> None:
    """Each example of the demo's own list runs to a grounded answer with no tool error
    pasted into it."""
    run = await grounded_run(demo_gateway, toolset, question)
    assert run.answer.strip()
    for error in run.phase("tool_error"):
        words = re.sub(r"https?://\S+", "", error["error"]).strip()[:40]  # links may be cited
        assert words not in run.answer


async def test_margin_from_two_facts(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "What is Apple's gross margin?")
    assert run.plan() == [[FACTS, FACTS]]
    assert [a["concept"] for a in run.inputs(FACTS)] == ["gross_profit", "revenue"]
    profit = result_of(run, FACTS, 0)["units"]["USD"]["annual"][0]
    revenue = result_of(run, FACTS, 1)["units"]["USD"]["annual"][0]
    assert profit["end"] == revenue["end"]
    assert f"**{profit['value'] / revenue['value'] * 100:.1f}%**" in run.answer


async def test_follow_up_with_a_new_year(demo_gateway: Client, toolset: Toolset) -> None:
    first = await ask(demo_gateway, "What was Apple's revenue in 2022?")
    session = first.final["session_id"]
    run = await grounded_run(demo_gateway, toolset, "and in 2023?", sessionId=session)
    assert run.inputs(FACTS)[0]["concept"] == "revenue"
    assert "FY2023, ended 2023-09-30" in run.answer and "$383.3 billion" in run.answer
    other = await grounded_run(demo_gateway, toolset, "what about nvidia?", sessionId=session)
    assert other.inputs(FACTS)[0]["company_identifier"] == "NVDA"


async def test_a_year_outside_the_snapshot_is_said_plainly(
    demo_gateway: Client, toolset: Toolset
) -> None:
    run = await grounded_run(demo_gateway, toolset, "What was Tesla's revenue in 2024?")
    first = run.answer.split(":")[0]
    assert "no revenue" in first and "fiscal year 2024" in first and "$" not in first
    assert "2022-09-30" in run.answer  # where Tesla's figures in the snapshot end


async def test_greeting_and_thanks_without_tools(demo_gateway: Client) -> None:
    hello = await ask(demo_gateway, "hi there")
    thanks = await ask(demo_gateway, "thanks!", sessionId=hello.final["session_id"])
    for run in (hello, thanks):
        assert run.uses == [] and run.final["turns"] == 1
    assert hello.answer.startswith("Hello!") and len(hello.answer) < 400
    assert thanks.answer.startswith("You're welcome")


async def test_singular_counts(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Microsoft 10-K filings in 2024")
    assert "1 filing of form 10-K" in run.answer and "1 filings" not in run.answer


@pytest.mark.parametrize(
    ("question", "facts"),
    [
        (
            "Compare gross margin of Apple and NVIDIA",
            ["46.9%", "71.1%", "FY2026, ended 2026-01-25"],
        ),
        ("Apple gross margin history", ["| FY2018 | 2018-09-29 | 38.3% |", "46.9%"]),
        (
            "Tesla free cash flow",
            ["**$5.01 billion**", "less capital expenditures of $6.48 billion"],
        ),
        ("NVIDIA free cash flow", ["I can't compute the free cash flow", "through FY2012"]),
    ],
)
async def test_figures_computed_from_two_facts(
    demo_gateway: Client, toolset: Toolset, question: str, facts: list[str]
) -> None:
    """Margins across companies and years, and free cash flow, all from reported parts;
    when the parts are not of the same period it says so instead of mixing periods."""
    run = await grounded_run(demo_gateway, toolset, question)
    assert set(run.turns_of(FACTS)) == {1}  # every part fetched at once, in parallel
    for fact in facts:
        assert fact in run.answer


async def test_key_figures_of_one_year(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "How did Apple do last year?")
    assert run.inputs(FACTS) == [{"company_identifier": "AAPL"}]  # the key-metrics summary
    metrics = result_of(run, FACTS)["metrics"]
    latest = metrics["revenue"]["annual"][0]
    # "last year" names one year: its figures only, never the year before's
    assert run.answer.startswith("**Apple Inc.**, key figures of fiscal year 2025 (FY2025")
    assert "| Figure | Value |" in run.answer
    for key in ("revenue", "net_income", "operating_cash_flow"):
        assert metrics[key]["annual"][0]["end"] == latest["end"]  # one year, every row
    assert "| Net income | $112.0 billion |" in run.answer
    assert "$93.7 billion" not in run.answer  # FY2024's net income


async def test_key_figures_outside_the_snapshot(demo_gateway: Client, toolset: Toolset) -> None:
    run = await grounded_run(demo_gateway, toolset, "Tell me about Microsoft")
    assert run.answer.startswith(
        "I couldn't get the key figures of Microsoft: the offline snapshot"
    )
    assert "What has Microsoft filed recently?" in run.answer


async def test_a_comparison_with_a_missing_company(demo_gateway: Client, toolset: Toolset) -> None:
    """AMD is not in the snapshot: that comes first, and no 'largest' is claimed."""
    run = await grounded_run(demo_gateway, toolset, "nvidia vs amd revenue")
    assert run.answer.startswith("I couldn't get the revenue of Advanced Micro Devices")
    assert "largest" not in run.answer and "$215.9 billion" in run.answer


async def test_a_fourth_fiscal_quarter_is_not_given_as_another_period(
    demo_gateway: Client, toolset: Toolset
) -> None:
    """A 10-K reports the year, not its fourth quarter: the quarter is the year less the
    three quarters of the 10-Qs, each shown; never the year's figure in its place."""
    run = await grounded_run(demo_gateway, toolset, "revenue of apple in q4 2025")
    assert run.answer.startswith("**Apple Inc.**'s revenue for fiscal Q4 FY2025 (the quarter")
    assert "computed as its FY2025 revenue of $416.2 billion" in run.answer

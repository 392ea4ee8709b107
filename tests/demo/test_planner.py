"""Planning from the conversation alone: the next calls follow from the tool results in
the messages, the tools offered and `tool_choice`, with no state kept between calls."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

import demo_model
from demo_model.companies import CompanyIndex
from demo_model.conversation import read_request
from demo_model.planner import MAX_TURNS, respond
from demo_model.reply import Call, Reply, Say
from tools import all_tools

ALL_TOOLS = [t.name for t in all_tools()]
QUESTIONS_MD = Path(demo_model.__file__).with_name("QUESTIONS.md")
TESLA_LOOKUP = {
    "matches": [{"ticker": "TSLA", "name": "Tesla, Inc.", "cik": 1318605, "exchange": "Nasdaq"}]
}


def conversation(
    question: str,
    *turns: list[tuple[str, dict[str, Any], Any, bool]],
    tools: list[str] | None = None,
    choice: str = "auto",
    system: str = "",
) -> dict[str, Any]:
    """A request body: the question, then per turn the calls (name, input, result,
    is_error) as an assistant message and a user message of tool results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    n = 0
    for turn in turns:
        uses: list[dict[str, Any]] = [{"type": "text", "text": "Let me look."}]
        results: list[dict[str, Any]] = []
        for name, args, result, is_error in turn:
            n += 1
            uses.append({"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args})
            content = result if isinstance(result, str) else orjson.dumps(result).decode()
            results.append({"type": "tool_result", "tool_use_id": f"toolu_{n}",
                            "content": content, "is_error": is_error})  # fmt: skip
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    names = ALL_TOOLS if tools is None else tools
    return {
        "model": "claude-demo",
        "max_tokens": 4096,
        "system": system,
        "messages": messages,
        "tools": [{"name": n, "description": "", "input_schema": {}} for n in names],
        "tool_choice": {"type": choice},
    }


def plan(index: CompanyIndex, body: dict[str, Any]) -> Reply:
    return respond(read_request(body), index)


def test_first_turn_looks_the_company_up(index: CompanyIndex) -> None:
    reply = plan(index, conversation("Find Tesla's 10-K filings since 2020"))
    assert reply.stop_reason == "tool_use"
    assert isinstance(reply.blocks[0], Say) and "look up Tesla" in reply.blocks[0].text
    assert reply.calls == [Call("search_sec_company_tickers", {"search_term": "Tesla"})]


def test_next_turn_uses_the_cik_the_lookup_returned(index: CompanyIndex) -> None:
    lookup = ("search_sec_company_tickers", {"search_term": "Tesla"}, TESLA_LOOKUP, False)
    reply = plan(index, conversation("Find Tesla's 10-K filings since 2020", [lookup]))
    [call] = reply.calls
    assert call.input["company_identifier"] == "1318605"
    assert reply.text.startswith("Tesla, Inc. is CIK 1318605 (TSLA, Nasdaq).")


def test_a_failed_lookup_falls_back_to_the_ticker(index: CompanyIndex) -> None:
    lookup = ("search_sec_company_tickers", {"search_term": "Tesla"}, "Timed out.", True)
    reply = plan(index, conversation("Find Tesla's 10-K filings since 2020", [lookup]))
    assert reply.calls[0].input["company_identifier"] == "TSLA"


def test_without_the_lookup_tool_it_goes_by_ticker(index: CompanyIndex) -> None:
    body = conversation("Find Tesla's 10-K filings", tools=["search_sec_filings"])
    assert plan(index, body).calls == [
        Call("search_sec_filings", {"company_identifier": "TSLA", "limit": 10,
                                    "filing_type": "10-K"})
    ]  # fmt: skip


def test_tool_choice_none_answers_now(index: CompanyIndex) -> None:
    reply = plan(index, conversation("Find Tesla's 10-K filings", choice="none"))
    assert reply.calls == [] and reply.stop_reason == "end_turn"
    assert "ran out of turns" in reply.text


def test_a_turn_cap_ends_long_conversations(index: CompanyIndex) -> None:
    failing = [("get_sec_company_facts", {"company_identifier": "TSLA"}, "Down.", True)]
    body = conversation("How has Tesla's revenue grown?", *[failing] * MAX_TURNS)
    reply = plan(index, body)
    assert reply.calls == [] and "the tool reported an error" in reply.text
    assert "Down." not in reply.text  # a tool's own message is never pasted into the answer


def test_stateless_and_deterministic(index: CompanyIndex) -> None:
    body = conversation("Compare revenue of Apple and NVIDIA")
    assert plan(index, body) == plan(index, body)
    assert [c.input["company_identifier"] for c in plan(index, body).calls] == ["AAPL", "NVDA"]


def test_an_unreadable_document_means_trying_the_next(index: CompanyIndex) -> None:
    filings = {
        "company": {"name": "Apple Inc.", "cik": 320193},
        "filings": [
            {"form": "10-K", "filing_date": "2025-10-31", "accession_number": "A-2025",
             "url": "https://www.sec.gov/Archives/new.htm"},
            {"form": "10-K", "filing_date": "2024-11-01", "accession_number": "A-2024",
             "url": "https://www.sec.gov/Archives/old.htm"},
        ],
    }  # fmt: skip
    listed = ("search_sec_filings", {"company_identifier": "AAPL"}, filings, False)
    body = conversation("What are Apple's risk factors?", [listed], tools=["search_sec_filings",
                        "get_sec_filing"])  # fmt: skip
    [first] = plan(index, body).calls
    assert first.input == {"url": "https://www.sec.gov/Archives/new.htm", "max_chars": 20_000,
                           "section": "Item 1A"}  # fmt: skip
    gone = "https://www.sec.gov/Archives/new.htm is not in the offline EDGAR snapshot."
    failed = ("get_sec_filing", first.input, gone, True)
    body = conversation("What are Apple's risk factors?", [listed], [failed],
                        tools=["search_sec_filings", "get_sec_filing"])  # fmt: skip
    reply = plan(index, body)
    assert reply.calls[0].input["url"] == "https://www.sec.gov/Archives/old.htm"
    assert "could not be read (the offline snapshot does not hold this document)" in reply.text
    page = {"url": "https://www.sec.gov/Archives/old.htm", "section": "Item 1A",
            "heading": "Item 1A. Risk Factors", "total_chars": 300, "next_offset": None,
            "text": "Item 1A. Risk Factors\nSupply Risks\n"
                    "Our suppliers may fail to deliver the parts we need on time.\n"
                    + "A longer paragraph explaining the supplier risk. " * 3}  # fmt: skip
    read = ("get_sec_filing", reply.calls[0].input, page, False)
    body = conversation("What are Apple's risk factors?", [listed], [failed], [read],
                        tools=["search_sec_filings", "get_sec_filing"])  # fmt: skip
    answer = plan(index, body)
    assert answer.calls == []
    assert "- Our suppliers may fail to deliver the parts we need on time." in answer.text
    assert "A-2024" in answer.text and "1 newer document could not be read here" in answer.text


def test_request_reading() -> None:
    body = conversation("Find Tesla's 10-K filings", system="Today's date is 2025-03-04.")
    body["messages"][0]["content"] = [{"type": "text", "text": "Find Tesla's 10-K filings"}]
    lookup = {"type": "tool_use", "id": "t1", "name": "search_sec_company_tickers",
              "input": {"search_term": "Tesla"}}  # fmt: skip
    text = orjson.dumps(TESLA_LOOKUP).decode()
    result = {"type": "tool_result", "tool_use_id": "t1",
              "content": [{"type": "text", "text": text}]}  # fmt: skip
    body["messages"] += [{"role": "assistant", "content": [lookup]},
                         {"role": "user", "content": [result]}]  # fmt: skip
    conv = read_request(body)
    assert conv.question == "Find Tesla's 10-K filings" and conv.turns == 1
    assert conv.today == dt.date(2025, 3, 4) and not conv.tools_off
    [step] = conv.steps
    assert step.name == "search_sec_company_tickers" and step.data == TESLA_LOOKUP
    later = read_request({**body, "messages": [*body["messages"],
                          {"role": "assistant", "content": "Done."},
                          {"role": "user", "content": "And Apple?"}]})  # fmt: skip
    assert later.question == "And Apple?" and later.steps == () and later.turns == 0
    assert later.earlier == ("Find Tesla's 10-K filings",)


ODD_RESULTS: list[tuple[Any, bool]] = [
    ("{}", False),
    ("[]", False),
    ("not json at all", False),
    ('{"filings": "none", "matches": [1, 2], "units": {"USD": []}, "data": [null]}', False),
    ('{"units": {"USD": {"annual": [{"value": "big"}], "quarterly": 3}}}', False),
    ('{"metrics": {"total_assets": {"latest": [{"value": null}]}}, "text": 5}', False),
    ("The service is down.", True),
]


@pytest.mark.parametrize("odd", range(len(ODD_RESULTS)))
def test_odd_tool_results_never_break_the_plan(index: CompanyIndex, odd: int) -> None:
    """Whatever the tools return, every example ends in a text answer within the cap."""
    examples = re.findall(
        r"^\| \d+ \| [^|]+ \| `\w+` \| ([^|]+) \|", QUESTIONS_MD.read_text(), re.M
    )
    for example in examples:
        turns: list[list[tuple[str, dict[str, Any], Any, bool]]] = []
        for _ in range(MAX_TURNS + 1):
            reply = plan(index, conversation(example.strip(), *turns))
            if not reply.calls:
                break
            content, is_error = ODD_RESULTS[(odd + len(turns)) % len(ODD_RESULTS)]
            turns.append([(c.name, c.input, content, is_error) for c in reply.calls])
        assert reply.calls == [] and reply.text.strip(), example

"""The demo upstream inside the gateway: it says it is the demo, honours the turn limit's
wrap-up (`tool_choice: none`) and a run's tool allow-list, and serves /api/research."""

from __future__ import annotations

from tests.demo.conftest import Client, DemoFactory
from tests.demo.support import ask, replay, ungrounded
from tools import Toolset


async def test_health_and_system_info_say_demo(demo_gateway: Client) -> None:
    health = await (await demo_gateway.get("/health")).json()
    assert health["upstream"] == "demo" and health["ok"] is True
    run = await ask(demo_gateway, "What is the CIK of Marvell?")
    info = run.events[0]
    assert info["type"] == "system_info" and info["upstream"] == "demo"


async def test_wrap_up_after_max_turns(demo_gateway: Client) -> None:
    run = await ask(demo_gateway, "Find Tesla's 10-K filings since 2020", max_turns=1)
    final = run.final
    assert final["outcome"] == "max_turns" and final["turns"] == 2
    assert [e["code"] for e in run.events if e["type"] == "warning"] == ["max_turns"]
    assert [e["turn"] for e in run.phase("tool_executing")] == [1]  # the one round ran
    assert [e["turn"] for e in run.uses] == [1]  # the wrap-up call asked for no tool
    assert "ran out of turns" in run.answer


async def test_wrap_up_answers_from_what_it_has(demo_gateway: Client, toolset: Toolset) -> None:
    run = await ask(demo_gateway, "What are Apple's risk factors?", max_turns=2)
    sources = await replay(run, toolset)
    assert run.final["outcome"] == "max_turns"
    assert [e["turn"] for e in run.phase("tool_executing")] == [1, 2]
    assert run.answer and ungrounded(run.result, sources) == []


async def test_allow_list_is_respected(demo_gateway: Client, toolset: Toolset) -> None:
    run = await ask(
        demo_gateway,
        "What are Apple's risk factors?",
        tools=["search_sec_filings", "get_sec_filing"],
    )
    await replay(run, toolset)
    names = {e["tool"]["name"] for e in run.uses}
    assert names == {"search_sec_filings", "get_sec_filing"}
    assert run.uses[0]["tool"]["input"]["company_identifier"] == "AAPL"
    assert "Item 1A" in run.answer


async def test_without_the_needed_tool_it_says_so(demo_gateway: Client) -> None:
    run = await ask(
        demo_gateway, "Find Tesla's 10-K filings since 2020", tools=["get_sec_company_facts"]
    )
    assert run.uses == [] and run.final["turns"] == 1
    assert "`search_sec_filings` tool is not available" in run.answer


async def test_research_endpoint(make_demo_gateway: DemoFactory) -> None:
    client = await make_demo_gateway()
    response = await client.post("/api/research", json={"query": "What is the CIK of Marvell?"})
    assert response.status == 200
    body = await response.json()
    assert body["outcome"] == "completed" and "1835632" in body["text"]
    assert [c["name"] for c in body["toolCalls"]] == ["search_sec_company_tickers"]


async def test_thinking_is_streamed_and_sent_back(demo_gateway: Client) -> None:
    run = await ask(demo_gateway, "What is the CIK of Marvell?", thinking=True)
    kinds = [e["type"] for e in run.events]
    assert kinds.count("thinking_start") == 2 and kinds.count("thinking_complete") == 2
    assert kinds.count("thinking_signature") == 2
    thought = "".join(e["text"] for e in run.events if e["type"] == "thinking")
    assert "Question shape: lookup." in thought and "Next: search_sec_company_tickers." in thought
    assert "Next: answer from the tool results only." in thought
    assert run.final["outcome"] == "completed" and "1835632" in run.answer

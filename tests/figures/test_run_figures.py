"""The figure check at the end of a run, over HTTP: a fake model answering from the real
offline SEC tools, and the demo model. One `figures` event just before `final`, its
offsets into `final.result`, the counts in `final`, `/api/research` and the metric."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import orjson
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient

from gateway import figures
from gateway.figures.extract import MAX_FIGURES
from gateway.http import keys
from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.ops.observe import RunObserver
from gateway.runs.figures import MAX_ANSWER_CHARS, _annotate
from gateway.runs.loop import LoopDeps
from gateway.runs.manager import RunManager
from gateway.runs.run import Run, RunRequest
from tests.conftest import settings_for, stream
from tests.demo.conftest import Client, DemoFactory
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.test_run_ending import Overridden
from tools import ToolContext, ToolsConfig, open_toolset

FACTS = {"company_identifier": "AAPL", "concept": "revenue", "limit": 8}


async def annual_revenue() -> dict[str, int]:
    """Apple's annual revenue by fiscal year end, as the offline tool gives it."""
    async with open_toolset(ToolsConfig()) as toolset:
        ctx = ToolContext(tool_use_id="t", services=toolset.services)
        outcome = await toolset.registry.call("get_sec_company_facts", FACTS, ctx)
    rows = orjson.loads(outcome.content)["units"]["USD"]["annual"]
    return {row["end"][:4]: row["value"] for row in rows}


def billions(value: int) -> str:
    return f"${value / 1e9:.1f} billion"


async def gateway_on(
    fake_server: TestServer, aiohttp_client: AiohttpClient, metrics: Metrics, **overrides: Any
) -> Client:
    settings = settings_for(
        fake_server, sec_source="offline", search_backend="offline", **overrides
    )
    return await aiohttp_client(create_app(settings, metrics=metrics))


def answer_turns(fake: FakeAnthropic, text: str, **reply: Any) -> None:
    fake.add(
        Reply([Text("Looking it up."), ToolUse("get_sec_company_facts", FACTS, id="toolu_rev")]),
        Reply([Text(text)], **reply),
    )


async def test_each_figure_is_traced_to_the_fact_it_came_from(
    fake: FakeAnthropic, fake_server: TestServer, aiohttp_client: AiohttpClient
) -> None:
    revenue = await annual_revenue()
    metrics = Metrics(CollectorRegistry())
    text = (
        f"Apple's revenue was {billions(revenue['2025'])} in FY2025, up "
        f"{(revenue['2025'] / revenue['2024'] - 1) * 100:.1f}% on FY2024. "
        f"In FY2023 it was {billions(revenue['2022'])}. It also sold $987.6 billion of cars."
    )
    answer_turns(fake, text)
    client = await gateway_on(fake_server, aiohttp_client, metrics)
    events = await stream(client, query="Apple revenue FY2025?")
    assert [e["type"] for e in events[-2:]] == ["figures", "final"]
    figures, final = events[-2], events[-1]
    result = final["result"]
    assert set(figures) >= {"figures", "counts"}
    for figure in figures["figures"]:
        assert result[figure["start"] : figure["end"]] == figure["text"]
        assert set(figure) == {
            "text",
            "start",
            "end",
            "value",
            "unit",
            "status",
            "sources",
            "formula",
        }
    by_text = {f["text"]: f for f in figures["figures"]}
    sourced = by_text[billions(revenue["2025"])]
    assert sourced["status"] == "sourced"
    assert sourced["value"] == round(revenue["2025"] / 1e8) * 1e8
    assert sourced["sources"][0] == {
        "tool_use_id": "toolu_rev",
        "tool": "get_sec_company_facts",
        "accession": "0000320193-25-000079",
        "concept": "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
        "period": "2024-09-29/2025-09-27",
        "form": "10-K",
    }
    growth = next(f for f in figures["figures"] if f["unit"] == "%")
    assert growth["status"] == "derived" and "÷" in growth["formula"]
    assert by_text[billions(revenue["2022"])]["status"] == "other_period"
    assert by_text["$987.6 billion"]["status"] == "unsourced"
    counts = {"sourced": 1, "derived": 1, "unsourced": 1, "other_period": 1}
    assert figures["counts"] == final["figures"] == counts
    exported = (await (await client.get("/metrics")).text()).splitlines()
    line = 'gateway_answer_figures_total{model="claude-test-model",status="unsourced"} 1.0'
    assert line in exported


async def test_research_and_off(
    fake: FakeAnthropic, fake_server: TestServer, aiohttp_client: AiohttpClient
) -> None:
    revenue = await annual_revenue()
    text = f"Revenue was {billions(revenue['2025'])} in FY2025."
    answer_turns(fake, text)
    client = await gateway_on(fake_server, aiohttp_client, Metrics(CollectorRegistry()))
    response = await client.post("/api/research", json={"query": "Apple revenue?"})
    folded = await response.json()
    assert folded["figures"] == {"sourced": 1, "derived": 0, "unsourced": 0, "other_period": 0}
    answer_turns(fake, text)
    off = await gateway_on(
        fake_server, aiohttp_client, Metrics(CollectorRegistry()), gateway_figure_check="off"
    )
    events = await stream(off, query="Apple revenue?")
    assert "figures" not in [e["type"] for e in events]
    assert "figures" not in events[-1]


async def test_an_answer_cut_off_is_checked_as_far_as_it_went(
    fake: FakeAnthropic, fake_server: TestServer, aiohttp_client: AiohttpClient
) -> None:
    revenue = await annual_revenue()
    whole = billions(revenue["2025"])
    text = f"Revenue was {whole} in FY2025, and in FY2024 {whole[:4]}"
    answer_turns(fake, text, stop_reason="max_tokens")
    client = await gateway_on(fake_server, aiohttp_client, Metrics(CollectorRegistry()))
    events = await stream(client, query="Apple revenue?")
    figures, final = events[-2], events[-1]
    assert final["outcome"] == "max_tokens"
    assert [f["text"] for f in figures["figures"]] == [whole]  # the cut "$416" is left out
    assert final["figures"]["sourced"] == 1


async def test_demo_answers_are_sourced(demo_gateway: Client) -> None:
    for query in (
        "What was Apple's revenue in fiscal 2023?",
        "NVIDIA gross margin FY2024",
        "Tesla net income fiscal 2021",
    ):
        events = await stream(demo_gateway, query=query)
        figures, final = events[-2], events[-1]
        assert figures["type"] == "figures", query
        assert final["figures"]["sourced"] >= 1, (query, figures)
        assert final["figures"]["unsourced"] == final["figures"]["other_period"] == 0, figures
        for figure in figures["figures"]:
            assert final["result"][figure["start"] : figure["end"]] == figure["text"]


async def test_batch_results_carry_the_counts(make_demo_gateway: DemoFactory) -> None:
    client = await make_demo_gateway(gateway_batch_poll_s=0.02)
    questions = ["What was Apple's revenue in fiscal 2023?", "NVIDIA gross margin FY2024"]
    response = await client.post("/api/batches", json={"questions": questions})
    assert response.status == 202
    batch_id = (await response.json())["batch_id"]
    lines = await batch_results(client, batch_id)
    for question, line in zip(questions, lines, strict=True):
        research = await (await client.post("/api/research", json={"query": question})).json()
        assert line["figures"] == research["figures"], question
        assert line["figures"]["sourced"] >= 1


async def batch_results(client: Client, batch_id: str) -> list[dict[str, Any]]:
    async with asyncio.timeout(60):
        while True:
            state = await (await client.get(f"/api/batches/{batch_id}")).json()
            if state["state"] == "ended":
                break
            await asyncio.sleep(0.05)
    body = await (await client.get(f"/api/batches/{batch_id}/results")).read()
    return [orjson.loads(line) for line in body.splitlines()]


async def test_no_figures_no_event_and_a_failing_check_costs_only_the_event(
    fake: FakeAnthropic, gateway: Client
) -> None:
    fake.add(Reply([Text("Hello there, researcher.")]))
    events = await stream(gateway, query="hi")
    assert [e["type"] for e in events[-2:]] == ["turn_complete", "final"]
    assert events[-1]["figures"] == {"sourced": 0, "derived": 0, "unsourced": 0, "other_period": 0}
    manager: RunManager = gateway.app[keys.RUNS]
    make = manager.factory.deps

    def broken(run: Run, request: RunRequest, endpoint: str, parent: Any) -> LoopDeps:
        made = make(run, request, endpoint, parent)
        made.observer = cast(RunObserver, Overridden(made.observer, "count_figures", _raise))
        return made

    manager.factory.deps = broken
    fake.add(Reply([Text("Revenue was $5.2 billion.")]))
    events = await stream(gateway, query="revenue?")
    assert [e["type"] for e in events[-2:]] == ["turn_complete", "final"]
    assert events[-1]["result"] == "Revenue was $5.2 billion." and "figures" not in events[-1]


def _raise(*_: Any) -> None:
    raise RuntimeError("injected")


async def test_ten_thousand_figures_over_http(fake: FakeAnthropic, gateway: Client) -> None:
    """Past `MAX_ANSWER_CHARS` the check is skipped and says so: `final` still comes."""
    text = " ".join(f"${n}.5 million" for n in range(10_000))
    fake.add(Reply([Text(text, chunk=50_000)]))
    events = await stream(gateway, query="many")
    skipped, final = events[-2], events[-1]
    assert skipped["type"] == "warning" and skipped["code"] == "figure_check_skipped"
    assert final["result"] == text and "figures" not in final


async def test_the_longest_answer_checked(fake: FakeAnthropic, gateway: Client) -> None:
    text = " ".join(f"${n}.5 million" for n in range(MAX_ANSWER_CHARS))[:MAX_ANSWER_CHARS]
    text = text[: text.rindex(" ")]  # whole figures only, within the limit
    fake.add(Reply([Text(text, chunk=50_000)]))
    events = await stream(gateway, query="many")
    figures, final = events[-2], events[-1]
    assert figures["type"] == "figures" and len(figures["figures"]) > 1_000
    assert len(figures["figures"]) <= MAX_FIGURES and final["figures"]["unsourced"] > 1_000


@pytest.mark.parametrize(
    "text",
    [
        "Hello there, researcher.",
        "",
        "Five billion dollars, up ten percent: $ and % alone, 10-K without its form's digits.",
        "Revenue was $5.2 billion, CIK 320193, 0000320193-23-000106.",
        "Revenue was $٥ billion.",  # a digit of another script is a digit to the check
    ],
)
def test_an_answer_without_a_digit_is_not_checked_and_counts_the_same(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = figures.check(text, figures.build([]), "").counts()
    digits = any(c.isdecimal() for c in text)
    if not digits:  # neither the index nor the check is made for such an answer

        def _never(*_: Any) -> Any:
            raise AssertionError("the check ran on an answer without a digit")

        monkeypatch.setattr(figures, "build", _never)
        monkeypatch.setattr(figures, "check", _never)
    counted: list[dict[str, int]] = []
    observer: Any = SimpleNamespace(count_figures=lambda model, counts: counted.append(counts))
    final: Any = {"result": text, "outcome": "completed", "model": "m", "turns": 1}
    event = _annotate([{"role": "user", "content": "q"}], observer, final)
    assert final["figures"] == expected
    assert (event is None) == (sum(expected.values()) == 0)
    assert counted == ([expected] if digits else [])

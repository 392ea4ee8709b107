"""Bulk research over the offline demo: a batch of questions, each run by the same tool
loop as `/api/research`, its model calls sent round by round as Message Batches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient

from gateway.http.app import create_app
from tests.demo.conftest import demo_settings

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]

TEMPLATES = (
    "What was {c}'s net income last year?",
    "How has {c}'s revenue grown?",
    "Show {c}'s EPS history",
    "What is {c}'s gross margin?",
    "Show {c}'s balance sheet",
    "What is the CIK of {c}?",
    "What are {c}'s risk factors?",
    "Find {c}'s 10-K filings since 2020",
    "How did {c} do last year?",
    "What was {c}'s revenue last quarter?",
)
COMPANIES = ("Apple", "NVIDIA", "Tesla", "Microsoft", "Meta")
QUESTIONS = [t.format(c=c) for t in TEMPLATES for c in COMPANIES]


DEMO_PRICE = {"models": {"demo": {"input": 3.0, "output": 15.0, "cache_write_5m": 3.75,
                                  "cache_read": 0.3}}}  # fmt: skip
"""The demo is free; priced here so that the batch discount shows."""


def priced(tmp_path: Path) -> str:
    path = tmp_path / "prices.json"
    path.write_bytes(orjson.dumps(DEMO_PRICE))
    return str(path)


@pytest.fixture
async def make_client(aiohttp_client: AiohttpClient, tmp_path: Path) -> MakeClient:
    async def make(**overrides: Any) -> Client:
        values: dict[str, Any] = {
            "gateway_batch_poll_s": 0.02,
            "gateway_prices_file": priced(tmp_path),
            **overrides,
        }
        return await aiohttp_client(create_app(demo_settings(**values)))

    return make


async def finished(client: Client, batch_id: str, timeout_s: float = 120) -> dict[str, Any]:
    async with asyncio.timeout(timeout_s):
        while True:
            response = await client.get(f"/api/batches/{batch_id}")
            assert response.status == 200
            body: dict[str, Any] = await response.json()
            if body["state"] == "ended":
                return body
            await asyncio.sleep(0.05)


async def results(client: Client, batch_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/batches/{batch_id}/results")
    assert response.status == 200
    assert response.content_type == "application/x-ndjson"
    return [orjson.loads(line) for line in (await response.read()).splitlines()]


def comparable(folded: dict[str, Any]) -> dict[str, Any]:
    """A fold without what differs between any two runs (ids, timings) or between the
    batch and the live price (the batch tier's marker, the cost)."""
    usage = {k: v for k, v in folded["usage"].items() if k != "batch_requests"}
    calls = [{k: v for k, v in c.items() if k != "duration_ms"} for c in folded["toolCalls"]]
    keep = ("text", "outcome", "stop_reason", "turns", "tool_call_count", "model", "subtype")
    return {**{k: folded[k] for k in keep}, "usage": usage, "toolCalls": calls}


async def test_fifty_questions_answer_as_research_does(make_client: MakeClient) -> None:
    client = await make_client()
    response = await client.post("/api/batches", json={"questions": QUESTIONS, "max_turns": 8})
    assert response.status == 202
    batch_id = (await response.json())["batch_id"]
    progress = await finished(client, batch_id)
    lines = await results(client, batch_id)
    assert [line["index"] for line in lines] == list(range(len(QUESTIONS)))
    live = await asyncio.gather(*(
        client.post("/api/research", json={"query": q, "max_turns": 8}) for q in QUESTIONS
    ))  # fmt: skip
    for question, line, answer in zip(QUESTIONS, lines, live, strict=True):
        assert answer.status == 200, question
        expected = await answer.json()
        assert comparable(line) == comparable(expected), question
        assert line["usage"]["batch_requests"] == line["turns"]  # every call on the batch tier
        assert expected["total_cost_usd"] > 0
        assert line["total_cost_usd"] == pytest.approx(expected["total_cost_usd"] / 2)
    # One Message Batch per round: as many as the longest question's model calls.
    assert len(progress["rounds"]) == max(line["turns"] for line in lines)
    assert progress["rounds"][0]["requests"] == len(QUESTIONS)
    assert all(q["state"] == "done" and q["outcome"] == "completed" for q in progress["questions"])
    total = sum(line["total_cost_usd"] for line in lines)
    assert progress["total_cost_usd"] == pytest.approx(total)
    assert progress["saved_usd"] == pytest.approx(total, rel=1e-3)  # half price: saved as much

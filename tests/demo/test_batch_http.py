"""Batches over HTTP against the demo's Message Batches API on a server of the test's own
(so the test can slow its batches down, or have some requests expire or error): what is
refused before a batch starts, who may see it, its events, cancel, failed requests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient, AiohttpServer

from demo_model import create_demo_app
from demo_model.batch_store import BatchRequest, BatchStore, errored
from demo_model.batches import BATCHES
from gateway.http.app import create_app
from tests.conftest import read_events
from tests.demo.conftest import demo_settings
from tests.demo.test_batch_research import MakeClient, finished, priced, results

Client = TestClient[Any, Any]
KEYS = "alice:key-alice,bob:key-bob"
ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
QUESTIONS = ["What was Apple's net income last year?", "What is the CIK of Tesla?",
             "Show NVIDIA's EPS history"]  # fmt: skip


@pytest.fixture
async def demo_app(aiohttp_server: AiohttpServer) -> tuple[web.Application, str]:
    app = create_demo_app(delay_s=0)
    server = await aiohttp_server(app)
    return app, str(server.make_url("")).rstrip("/")


@pytest.fixture
async def make_client(
    aiohttp_client: AiohttpClient, demo_app: tuple[web.Application, str], tmp_path: Path
) -> MakeClient:
    async def make(**overrides: Any) -> Client:
        values: dict[str, Any] = {
            "gateway_prices_file": priced(tmp_path),
            "gateway_upstream": "anthropic", "anthropic_api_key": "sk-demo",
            "anthropic_base_url": demo_app[1], "sdk_model": "demo",
            "gateway_batch_poll_s": 0.02, **overrides,
        }  # fmt: skip
        return await aiohttp_client(create_app(demo_settings(**values)))

    return make


def store(demo_app: tuple[web.Application, str]) -> BatchStore:
    return demo_app[0][BATCHES]


async def start(client: Client, headers: dict[str, str] | None = None, **body: Any) -> str:
    response = await client.post("/api/batches", json=body, headers=headers)
    assert response.status == 202, await response.text()
    batch_id: str = (await response.json())["batch_id"]
    return batch_id


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "questions"),
        ({"questions": []}, "questions"),
        ({"questions": "What is the CIK of Tesla?"}, "questions"),
        ({"questions": ["ok", 3]}, None),
        ({"questions": ["ok"], "query": "shared?"}, "query"),
        ({"questions": ["ok", {"query": "x", "sessionId": "s1"}]}, "sessionId"),
        ({"questions": ["ok", {"query": "x", "max_turns": 0}]}, None),
        ({"questions": ["ok", {"query": "x", "tools": ["no_such_tool"]}]}, None),
    ],
)
async def test_bad_batches_are_refused_before_anything_is_submitted(
    make_client: MakeClient, demo_app: tuple[web.Application, str], body: dict[str, Any],
    field: str | None,
) -> None:  # fmt: skip
    client = await make_client()
    response = await client.post("/api/batches", json=body)
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "VALIDATION_ERROR"
    if field is not None:
        assert error["details"].get("field") == field
    else:
        assert error["details"]["index"] == 1 and error["message"].startswith("questions[1]")
    assert store(demo_app).page(before_id=None, after_id=None, limit=10)[0] == []


async def test_an_openai_upstream_has_no_batches(aiohttp_client: AiohttpClient) -> None:
    settings = demo_settings(
        gateway_upstream="openai", openai_model="gpt-test", openai_base_url="http://127.0.0.1:9/v1"
    )
    client = await aiohttp_client(create_app(settings))
    response = await client.post("/api/batches", json={"questions": QUESTIONS})
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "VALIDATION_ERROR" and "Messages API" in error["message"]


async def test_a_batch_is_its_keys_alone(make_client: MakeClient) -> None:
    client = await make_client(gateway_api_keys=KEYS)
    batch_id = await start(client, ALICE, questions=QUESTIONS[:1])
    for path in ("", "/events", "/results"):
        response = await client.get(f"/api/batches/{batch_id}{path}", headers=BOB)
        assert response.status == 404, path
    assert (await client.post(f"/api/batches/{batch_id}/cancel", headers=BOB)).status == 404
    response = await client.get(f"/api/batches/{batch_id}", headers=ALICE)
    assert response.status == 200
    assert (await client.get("/api/batches/batch_nope", headers=ALICE)).status == 404


async def test_events_progress_and_metrics(make_client: MakeClient) -> None:
    client = await make_client()
    batch_id = await start(client, questions=QUESTIONS)
    response = await client.get(f"/api/batches/{batch_id}/events")
    assert response.status == 200 and response.content_type == "text/event-stream"
    events = await read_events(response)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "batch_status" and kinds[-1] == "batch_complete"
    assert set(kinds) == {"batch_status", "question", "batch_complete"}
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    done = [e for e in events if e["type"] == "question" and e["state"] == "done"]
    assert sorted(e["index"] for e in done) == [0, 1, 2]
    assert events[-1]["counts"] == {"completed": 3} and events[-1]["outcome"] == "completed"
    progress = await finished(client, batch_id)
    assert progress["counts"] == {"completed": 3}
    metrics = await (await client.get("/metrics")).text()
    assert 'sdk_batches_total{outcome="completed"} 1.0' in metrics
    rounds = len(progress["rounds"])
    assert f"sdk_batch_rounds_total {float(rounds)}" in metrics
    saved = f'claude_batch_saved_usd_total{{key="anonymous",model="demo"}} {progress["saved_usd"]}'
    assert progress["saved_usd"] > 0 and saved in metrics


async def test_cancel_stops_the_questions_and_their_message_batch(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    store(demo_app).processing_s = 30.0
    client = await make_client()
    batch_id = await start(client, questions=QUESTIONS)
    async with asyncio.timeout(10):
        while not (await (await client.get(f"/api/batches/{batch_id}")).json())["rounds"]:
            await asyncio.sleep(0.02)
    response = await client.post(f"/api/batches/{batch_id}/cancel")
    assert response.status == 200 and (await response.json())["cancelled"] is True
    progress = await finished(client, batch_id, timeout_s=10)
    assert progress["counts"] == {"cancelled": 3}
    api_batch = store(demo_app).page(before_id=None, after_id=None, limit=10)[0][0]
    assert api_batch.cancel_initiated_at is not None
    assert [line["outcome"] for line in await results(client, batch_id)] == ["cancelled"] * 3
    again = await client.post(f"/api/batches/{batch_id}/cancel")
    assert (await again.json())["cancelled"] is False


async def test_expired_and_errored_requests_say_so(
    make_client: MakeClient, demo_app: tuple[web.Application, str]
) -> None:
    demo_store = store(demo_app)
    answer = demo_store.process

    async def faulty(request: BatchRequest) -> dict[str, Any]:
        if request.custom_id.startswith("q1-t1-"):
            return {"type": "expired"}
        if request.custom_id.startswith("q2-t2-"):
            return errored("overloaded_error", "Overloaded")
        return await answer(request)

    demo_store.process = faulty
    client = await make_client()
    batch_id = await start(client, questions=QUESTIONS)
    progress = await finished(client, batch_id)
    outcomes = [q["outcome"] for q in progress["questions"]]
    assert outcomes == ["completed", "expired", "errored"]
    assert progress["counts"] == {"completed": 1, "expired": 1, "errored": 1}
    lines = await results(client, batch_id)
    assert lines[0]["outcome"] == "completed"
    assert lines[1]["error"]["details"]["batch_result"] == "expired"
    assert lines[1]["error"]["details"]["custom_id"].startswith("q1-t1-")
    assert lines[2]["error"]["code"] == "OVERLOADED_ERROR"
    assert lines[2]["error"]["details"]["batch_result"] == "errored"

"""Batches through the gateway against the strict fake Message Batches API, when the API
does what it may: expire or error some requests, take its time, fail a call, or get a
cancel in the middle of a round. Each question's outcome says what happened to it, and
nothing is ever submitted twice."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient
from pytest_aiohttp import AiohttpClient, AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from tests.conftest import settings_for
from tests.fakes.anthropic import Reply, Text, ToolUse
from tests.fakes.batches import BatchRequest, FakeBatches
from tools.registry import ToolRegistry

Client = TestClient[Any, Any]
Start = Callable[..., Awaitable[tuple[Client, FakeBatches]]]


def call(custom_id: str) -> str:
    """The gateway's call a custom_id names (`q{index}-t{turn}`), without its batch tail."""
    return custom_id.rsplit("-", 1)[0]


def script(request: BatchRequest) -> Reply:
    """Each question: one echo call, then an answer naming its question."""
    question = request.custom_id.split("-")[0]
    if len(request.params["messages"]) == 1:
        return Reply([Text("Looking."), ToolUse("echo", {"text": question})])
    return Reply([Text(f"Answer for {question}.")])


@pytest.fixture
async def start(
    aiohttp_server: AiohttpServer, aiohttp_client: AiohttpClient, registry: ToolRegistry,
    metrics: Metrics,
) -> Start:  # fmt: skip
    async def make(**knobs: Any) -> tuple[Client, FakeBatches]:
        fake = FakeBatches(script, **knobs)
        upstream = await aiohttp_server(fake.app())
        settings = settings_for(upstream, gateway_batch_poll_s=0.02)
        toolset = StaticToolset(registry, backends={"test": "local"})
        app = create_app(settings, toolset=toolset, metrics=metrics)
        return await aiohttp_client(app), fake

    return make


async def submit(client: Client, count: int) -> str:
    questions = [f"Question {i}" for i in range(count)]
    response = await client.post("/api/batches", json={"questions": questions})
    assert response.status == 202, await response.text()
    batch_id: str = (await response.json())["batch_id"]
    return batch_id


async def progress(client: Client, batch_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/batches/{batch_id}")
    assert response.status == 200
    body: dict[str, Any] = await response.json()
    return body


async def ended(client: Client, batch_id: str) -> dict[str, Any]:
    async with asyncio.timeout(20):
        while (body := await progress(client, batch_id))["state"] != "ended":
            await asyncio.sleep(0.02)
    return body


async def results(client: Client, batch_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/batches/{batch_id}/results")
    assert response.status == 200
    return [orjson.loads(line) for line in (await response.read()).splitlines()]


async def test_expired_and_errored_requests_end_their_questions_and_say_so(start: Start) -> None:
    client, fake = await start(
        expire={"q1-t2"}, error={"q2-t1": "api_error", "q3-t2": "invalid_request_error"}
    )
    batch_id = await submit(client, 5)
    body = await ended(client, batch_id)
    outcomes = [q["outcome"] for q in body["questions"]]
    assert outcomes == ["completed", "expired", "errored", "errored", "completed"]
    assert [q["batch_result"] for q in body["questions"]] == [
        "succeeded", "expired", "errored", "errored", "succeeded"
    ]  # fmt: skip
    lines = await results(client, batch_id)
    assert [line["index"] for line in lines] == list(range(5))
    assert lines[0]["text"].endswith("Answer for q0.") and "error" not in lines[0]
    assert lines[1]["error"]["code"] == "TIMEOUT_ERROR"
    assert re.search(r"q1-t2-\w{44} expired", lines[1]["error"]["message"])
    assert re.search(r"q2-t1-\w{44} errored", lines[2]["error"]["message"])
    assert re.search(r"q3-t2-\w{44} errored", lines[3]["error"]["message"])
    assert lines[2]["error"]["code"] != lines[3]["error"]["code"]  # a 500 is not a 400
    # Nothing twice: the expired and errored requests were not sent again.
    assert set(fake.received.values()) == {1}
    second_round = {"q0-t2", "q1-t2", "q3-t2", "q4-t2"}
    assert set(map(call, fake.received)) == {f"q{i}-t1" for i in range(5)} | second_round
    assert len(fake.submitted) == 2 == len(body["rounds"])
    # The second round holds only the questions the first round left going.
    assert body["rounds"][1]["requests"] == 4


async def test_a_slow_batch_is_polled_until_it_ends(start: Start) -> None:
    client, fake = await start(processing_s=0.3)
    began = time.monotonic()
    batch_id = await submit(client, 3)
    await fake.created.wait()
    await asyncio.sleep(0.1)
    waiting = await progress(client, batch_id)
    assert waiting["state"] == "running"
    assert [r["state"] for r in waiting["rounds"]] == ["submitted"]
    assert {q["state"] for q in waiting["questions"]} == {"waiting_model"}
    early = await client.get(f"/api/batches/{batch_id}/results")
    assert early.status == 409
    body = await ended(client, batch_id)
    assert time.monotonic() - began >= 0.6  # two rounds, each waited for
    assert [q["outcome"] for q in body["questions"]] == ["completed"] * 3
    assert set(fake.received.values()) == {1} and len(fake.received) == 6
    lines = await results(client, batch_id)
    assert [line["toolCalls"][0]["result"]["content"] for line in lines] == [
        f"echo: q{i}" for i in range(3)
    ]


async def test_a_cancel_mid_round_cancels_the_api_batch(start: Start) -> None:
    client, fake = await start(processing_s=30)
    batch_id = await submit(client, 4)
    await fake.created.wait()
    [api_batch] = fake.submitted
    response = await client.post(f"/api/batches/{batch_id}/cancel")
    assert response.status == 200
    body = await ended(client, batch_id)
    assert fake.cancels == [api_batch]
    batch = fake.batch(api_batch)
    assert batch is not None and batch.task is not None
    await asyncio.wait_for(batch.task, 5)  # the API's side: every request not yet run
    assert batch.counts()["canceled"] == 4
    assert [q["outcome"] for q in body["questions"]] == ["cancelled"] * 4
    assert len(fake.submitted) == 1  # no second round after the cancel
    lines = await results(client, batch_id)
    assert [(line["outcome"], line["is_error"], line["toolCalls"]) for line in lines] == [
        ("cancelled", True, [])
    ] * 4


async def test_a_request_the_api_canceled_ends_its_question_cancelled(start: Start) -> None:
    client, fake = await start(processing_s=30)
    batch_id = await submit(client, 2)
    await fake.created.wait()
    [api_batch] = fake.submitted
    batch = fake.batch(api_batch)
    assert batch is not None
    fake.store.cancel(batch)  # cancelled on the API's side (its console), not the gateway's
    body = await ended(client, batch_id)
    assert [q["outcome"] for q in body["questions"]] == ["cancelled", "cancelled"]  # one word
    assert [q["batch_result"] for q in body["questions"]] == ["canceled", "canceled"]  # the API's
    assert body["counts"] == {"cancelled": 2} and body["outcome"] == "completed"


async def test_a_cancelled_batchs_progress_says_so(start: Start) -> None:
    client, fake = await start(processing_s=30)
    batch_id = await submit(client, 2)
    await fake.created.wait()
    assert (await progress(client, batch_id))["outcome"] is None  # running
    assert (await client.post(f"/api/batches/{batch_id}/cancel")).status == 200
    body = await ended(client, batch_id)
    assert body["outcome"] == "cancelled" and body["counts"] == {"cancelled": 2}


async def test_an_overloaded_create_is_tried_again_once_not_twice(start: Start) -> None:
    client, fake = await start()
    fake.fail("create", 529)
    batch_id = await submit(client, 2)
    body = await ended(client, batch_id)
    assert [q["outcome"] for q in body["questions"]] == ["completed", "completed"]
    assert set(fake.received.values()) == {1}  # the refused create created nothing


async def test_a_create_that_keeps_failing_ends_every_question_with_its_code(
    start: Start,
) -> None:
    client, fake = await start()
    fake.fail("create", 400, times=10)
    batch_id = await submit(client, 3)
    body = await ended(client, batch_id)
    assert not fake.received
    lines = await results(client, batch_id)
    assert {line["error"]["code"] for line in lines} != {None}
    assert all("creating a Message Batch" in line["error"]["message"] for line in lines)
    assert {q["outcome"] for q in body["questions"]} == {lines[0]["error"]["code"]}


async def test_a_failed_poll_does_not_lose_the_round(start: Start) -> None:
    client, fake = await start(processing_s=0.2)
    fake.fail("retrieve", 500)
    fake.fail("results", 529)
    batch_id = await submit(client, 2)
    body = await ended(client, batch_id)
    assert [q["outcome"] for q in body["questions"]] == ["completed", "completed"]
    assert set(fake.received.values()) == {1}

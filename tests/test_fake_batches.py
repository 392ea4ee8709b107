"""The fake Message Batches API, judged by the real SDK: its objects parse as the SDK's
types, its refusals are the fake Messages API's, and its knobs do what they say."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anthropic
import pytest
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from pytest_aiohttp import AiohttpServer

from tests.fakes.anthropic import Reply, Text, Thinking, ToolUse
from tests.fakes.batches import BatchRequest, FakeBatches

SDK = anthropic.AsyncAnthropic
MODEL = "claude-test-model"
TOOL = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}
Serve = Callable[[FakeBatches], Awaitable[SDK]]


def params(question: str, **extra: Any) -> Any:
    return {"model": MODEL, "max_tokens": 2_000, "tools": [TOOL],
            "messages": [{"role": "user", "content": question}], **extra}  # fmt: skip


def script(request: BatchRequest) -> Reply:
    """A tool call for a first turn, an answer naming the question after a tool result."""
    messages = request.params["messages"]
    if len(messages) == 1:
        return Reply([Text("Looking."), ToolUse("lookup", {"q": messages[0]["content"]})])
    return Reply([Text(f"Answer to {request.custom_id}.")], input_tokens=40, output_tokens=7)


@pytest.fixture
async def serve(aiohttp_server: AiohttpServer) -> AsyncIterator[Serve]:
    clients: list[SDK] = []

    async def start(fake: FakeBatches) -> SDK:
        server = await aiohttp_server(fake.app())
        url = str(server.make_url("")).rstrip("/")
        clients.append(SDK(api_key="test", base_url=url, max_retries=0))
        return clients[-1]

    yield start
    for client in clients:
        await client.close()


async def ended(sdk: SDK, batch_id: str) -> MessageBatch:
    async with asyncio.timeout(10):
        while (batch := await sdk.messages.batches.retrieve(batch_id)).processing_status != "ended":
            await asyncio.sleep(0.01)
    return batch


async def results(sdk: SDK, batch_id: str) -> dict[str, MessageBatchIndividualResponse]:
    return {line.custom_id: line async for line in await sdk.messages.batches.results(batch_id)}


async def test_scripted_replies_come_back_as_messages(serve: Serve) -> None:
    fake = FakeBatches(script)
    sdk = await serve(fake)
    turn: Any = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found"}]},
    ]  # fmt: skip
    second: Any = {**params("x"), "messages": turn}
    batch = await sdk.messages.batches.create(
        requests=[
            {"custom_id": "first", "params": params("Tesla?")},
            {"custom_id": "second", "params": second},
        ]
    )
    assert (await ended(sdk, batch.id)).request_counts.succeeded == 2
    lines = await results(sdk, batch.id)
    one, two = lines["first"].result, lines["second"].result
    assert one.type == "succeeded" and two.type == "succeeded"
    assert one.message.stop_reason == "tool_use" and one.message.model == MODEL
    [use] = [b for b in one.message.content if b.type == "tool_use"]
    assert use.name == "lookup" and use.input == {"q": "Tesla?"}
    assert two.message.content[0].type == "text"
    assert two.message.content[0].text == "Answer to second."
    assert (two.message.usage.input_tokens, two.message.usage.output_tokens) == (40, 7)
    assert two.message.usage.service_tier == "batch"
    assert one.message.id != two.message.id
    assert fake.received == {"first": 1, "second": 1}
    assert [r.custom_id for r in fake.submitted[batch.id]] == ["first", "second"]


async def test_what_the_messages_api_refuses_is_errored_or_a_400(serve: Serve) -> None:
    sdk = await serve(FakeBatches(script))
    unknown: Any = [{"custom_id": "a", "params": params("x", bogus=1)}]
    with pytest.raises(anthropic.BadRequestError, match=r"requests.0.params.bogus: Extra inputs"):
        await sdk.messages.batches.create(requests=unknown)
    thinking = {"type": "enabled", "budget_tokens": 100}
    unknown_model: Any = {**params("x"), "model": "claude-nothing"}
    batch = await sdk.messages.batches.create(
        requests=[
            {"custom_id": "budget", "params": params("x", thinking=thinking)},
            {"custom_id": "model", "params": unknown_model},
            {"custom_id": "fine", "params": params("x")},
        ]
    )
    await ended(sdk, batch.id)
    lines = await results(sdk, batch.id)
    budget, model = lines["budget"].result, lines["model"].result
    assert budget.type == "errored" and budget.error.error.type == "invalid_request_error"
    assert "budget_tokens" in budget.error.error.message
    assert model.type == "errored" and model.error.error.type == "not_found_error"
    assert lines["fine"].result.type == "succeeded"


async def test_expired_and_errored_requests_as_scripted(serve: Serve) -> None:
    fake = FakeBatches(script, expire={"late"}, error=lambda c: c.startswith("bad"))
    fake.error_type = "invalid_request_error"
    sdk = await serve(fake)
    ids = ["late", "bad1", "bad2", "ok"]
    batch = await sdk.messages.batches.create(
        requests=[{"custom_id": c, "params": params(c)} for c in ids]
    )
    counts = (await ended(sdk, batch.id)).request_counts
    assert (counts.expired, counts.errored, counts.succeeded, counts.canceled) == (1, 2, 1, 0)
    lines = await results(sdk, batch.id)
    assert lines["late"].result.type == "expired"
    bad = lines["bad1"].result
    assert bad.type == "errored" and bad.error.error.type == "invalid_request_error"


async def test_a_slow_batch_can_be_canceled(serve: Serve) -> None:
    fake = FakeBatches(script, processing_s=30)
    sdk = await serve(fake)
    batch = await sdk.messages.batches.create(
        requests=[{"custom_id": f"q{i}", "params": params("x")} for i in range(3)]
    )
    await asyncio.sleep(0.05)
    assert (await sdk.messages.batches.retrieve(batch.id)).processing_status == "in_progress"
    await sdk.messages.batches.cancel(batch.id)
    assert fake.cancels == [batch.id]
    assert (await ended(sdk, batch.id)).request_counts.canceled == 3


async def test_an_endpoint_fails_as_told(serve: Serve) -> None:
    fake = FakeBatches(script)
    fake.fail("create", 529)
    fake.fail("retrieve", 500)
    sdk = await serve(fake)
    one: Any = [{"custom_id": "a", "params": params("x")}]
    with pytest.raises(anthropic.InternalServerError) as overloaded:
        await sdk.messages.batches.create(requests=one)
    assert overloaded.value.status_code == 529 and not fake.received
    batch = await sdk.messages.batches.create(requests=one)
    with pytest.raises(anthropic.InternalServerError):
        await sdk.messages.batches.retrieve(batch.id)
    assert (await ended(sdk, batch.id)).request_counts.succeeded == 1


async def test_a_beta_batch_is_checked_against_the_beta_types(serve: Serve) -> None:
    fake = FakeBatches(lambda r: Reply([Thinking("hm"), Text("ok")]))
    sdk = await serve(fake)
    beta_params: Any = params("x", thinking={"type": "adaptive"})
    batch = await sdk.beta.messages.batches.create(
        requests=[{"custom_id": "a", "params": beta_params}], betas=["context-1m-2025-08-07"]
    )
    assert [r.betas for r in fake.submitted[batch.id]] == [frozenset({"context-1m-2025-08-07"})]
    await ended(sdk, batch.id)
    [line] = [line async for line in await sdk.beta.messages.batches.results(batch.id)]
    assert line.result.type == "succeeded"
    assert [b.type for b in line.result.message.content] == ["thinking", "text"]

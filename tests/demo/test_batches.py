"""The demo's Message Batches API, judged by the real SDK: the shapes parse as its types, a
batch's answers are the ones `/v1/messages` gives, and the API's refusals are its errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anthropic
import pytest
from aiohttp import ClientSession
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse
from pytest_aiohttp import AiohttpServer

from demo_model import create_demo_app
from demo_model.batches import BATCHES
from tests.demo.test_server import request

SDK = anthropic.AsyncAnthropic
MakeSdk = Callable[..., Awaitable[tuple[SDK, str]]]


@pytest.fixture
async def make_sdk(aiohttp_server: AiohttpServer) -> AsyncIterator[MakeSdk]:
    clients: list[SDK] = []

    async def make(processing_s: float = 0.0, keep: int | None = None) -> tuple[SDK, str]:
        app = create_demo_app(delay_s=0, batch_processing_s=processing_s)
        if keep is not None:
            app[BATCHES].keep = keep
        url = str((await aiohttp_server(app)).make_url("")).rstrip("/")
        clients.append(SDK(api_key="demo", base_url=url, max_retries=0))
        return clients[-1], url

    yield make
    for client in clients:
        await client.close()


async def ended(sdk: SDK, batch_id: str) -> MessageBatch:
    async with asyncio.timeout(20):
        while (batch := await sdk.messages.batches.retrieve(batch_id)).processing_status != "ended":
            await asyncio.sleep(0.01)
    return batch


async def results(sdk: SDK, batch_id: str) -> dict[str, MessageBatchIndividualResponse]:
    return {line.custom_id: line async for line in await sdk.messages.batches.results(batch_id)}


async def test_a_batch_answers_as_the_messages_api_does(make_sdk: MakeSdk) -> None:
    sdk, _ = await make_sdk()
    questions = {"tesla": "Find Tesla's 10-K filings since 2020", "hi": "Hello there"}
    requests: list[Any] = [{"custom_id": k, "params": request(q)} for k, q in questions.items()]
    requests.append({"custom_id": "bad", "params": {**request("x"), "max_tokens": 0}})
    created = await sdk.messages.batches.create(requests=requests)
    assert created.id.startswith("msgbatch_") and created.type == "message_batch"
    assert created.processing_status == "in_progress" and created.results_url is None
    assert created.request_counts.processing == 3 and created.ended_at is None
    assert (created.expires_at - created.created_at).total_seconds() == 24 * 3600
    batch = await ended(sdk, created.id)
    counts = batch.request_counts
    assert (counts.processing, counts.succeeded, counts.errored) == (0, 2, 1)
    assert batch.results_url is not None and batch.results_url.endswith(f"/{batch.id}/results")
    lines = await results(sdk, batch.id)
    assert list(lines) == ["tesla", "hi", "bad"]
    for custom_id, question in questions.items():
        result = lines[custom_id].result
        assert result.type == "succeeded"
        direct = await sdk.messages.create(**request(question))
        assert result.message.usage.service_tier == "batch"
        result.message.usage.service_tier = None  # the one difference: the tier billed
        assert result.message.model_dump() == direct.model_dump()
    bad = lines["bad"].result
    assert bad.type == "errored" and bad.error.error.type == "invalid_request_error"
    assert "max_tokens" in bad.error.error.message


@pytest.mark.parametrize(
    ("requests", "words"),
    [
        ([], "between 1 and 100000"),
        ([{"custom_id": "a b", "params": request("x")}], "custom_id: String should match"),
        ([{"custom_id": "x" * 65, "params": request("x")}], "custom_id: String should match"),
        ([{"custom_id": "a", "params": request("x")}] * 2, "Duplicate custom_id 'a'"),
        ([{"custom_id": "a", "params": request("x", stream=True)}], "params.stream: Input should"),
        ([{"custom_id": "a", "params": request("x"), "extra": 1}], "extra: Extra inputs"),
    ],
)
async def test_a_create_body_the_api_refuses_is_a_400(
    make_sdk: MakeSdk, requests: list[Any], words: str
) -> None:
    sdk, _ = await make_sdk()
    with pytest.raises(anthropic.BadRequestError) as caught:
        await sdk.messages.batches.create(requests=requests)
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert words in caught.value.message


async def test_results_wait_for_the_end_and_a_cancel_ends_it(make_sdk: MakeSdk) -> None:
    sdk, url = await make_sdk(processing_s=30)
    requests: list[Any] = [{"custom_id": f"q{i}", "params": request("Hello")} for i in range(3)]
    batch = await sdk.messages.batches.create(requests=requests)
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        await sdk.messages.batches.results(batch.id)
    results_url = f"{url}/v1/messages/batches/{batch.id}/results"
    async with ClientSession() as session, session.get(results_url) as early:
        assert early.status == 400
        assert (await early.json())["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.BadRequestError, match="cancel it before deleting"):
        await sdk.messages.batches.delete(batch.id)
    canceling = await sdk.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at
    done = await ended(sdk, batch.id)
    assert done.request_counts.canceled == 3 and done.request_counts.succeeded == 0
    assert {line.result.type for line in (await results(sdk, batch.id)).values()} == {"canceled"}
    with pytest.raises(anthropic.BadRequestError, match="already ended"):
        await sdk.messages.batches.cancel(batch.id)
    deleted = await sdk.messages.batches.delete(batch.id)
    assert deleted.type == "message_batch_deleted" and deleted.id == batch.id
    with pytest.raises(anthropic.NotFoundError):
        await sdk.messages.batches.retrieve(batch.id)


async def test_listing_pages_newest_first(make_sdk: MakeSdk) -> None:
    sdk, _ = await make_sdk()
    ids = []
    for i in range(5):
        one: Any = [{"custom_id": f"r{i}", "params": request("Hello")}]
        ids.append((await sdk.messages.batches.create(requests=one)).id)
    newest_first = ids[::-1]
    first = await sdk.messages.batches.list(limit=2)
    assert [b.id for b in first.data] == newest_first[:2] and first.has_more
    assert (first.first_id, first.last_id) == (newest_first[0], newest_first[1])
    assert [b.id async for b in await sdk.messages.batches.list(limit=2)] == newest_first
    before = await sdk.messages.batches.list(before_id=newest_first[3], limit=2)
    assert [b.id for b in before.data] == newest_first[1:3] and before.has_more
    with pytest.raises(anthropic.BadRequestError, match="limit"):
        await sdk.messages.batches.list(limit=1001)


async def test_an_unknown_batch_is_a_404(make_sdk: MakeSdk) -> None:
    sdk, _ = await make_sdk()
    with pytest.raises(anthropic.NotFoundError) as caught:
        await sdk.messages.batches.retrieve("msgbatch_01nothere")
    assert caught.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]


async def test_batches_in_progress_are_capped(make_sdk: MakeSdk) -> None:
    sdk, _ = await make_sdk(processing_s=30, keep=2)
    one: Any = [{"custom_id": "a", "params": request("Hello")}]
    for _ in range(2):
        await sdk.messages.batches.create(requests=one)
    with pytest.raises(anthropic.RateLimitError):
        await sdk.messages.batches.create(requests=one)

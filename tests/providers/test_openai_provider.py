"""`OpenAIProvider` against the fake Chat Completions server, through the official SDK
over real HTTP: one attempt per call, events relayed, failures mapped to the gateway's
codes, and a multi-round history the fake validates on every call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.base import ModelCall, Provider
from gateway.providers.openai.provider import NO_KEY, OpenAIProvider, create_client
from gateway.providers.openai.stream import ChatTurn
from tests.fakes.openai import Call, FakeOpenAI, Reply
from tests.providers.emitted import attempt

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a company up.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


def model_call(messages: list[dict[str, Any]], **fields: Any) -> ModelCall:
    values: dict[str, Any] = {"model": "gpt-test", "max_tokens": 500, "system": "Be terse."}
    values.update(fields)
    return ModelCall(messages=messages, tools=values.pop("tools", TOOLS), **values)


async def failure_of(provider: Provider, call: ModelCall) -> UpstreamFailure:
    turn = provider.new_turn(1)
    with pytest.raises(UpstreamFailure) as caught:
        await attempt(provider, call, turn)
    return caught.value


QUESTION = [{"role": "user", "content": "Apple's 2024 revenue?"}]


async def test_text_streams_as_deltas(provider: OpenAIProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(text="Apple made $391B.", chunk=4, prompt_tokens=40, cached_tokens=8))
    turn = provider.new_turn(1)
    events = await attempt(provider, model_call(QUESTION), turn)
    assert [e["type"] for e in events] == ["delta"] * 5
    assert "".join(e["text"] for e in events) == "Apple made $391B."
    assert turn.content == [{"type": "text", "text": "Apple made $391B."}]
    assert turn.stop_reason == "end_turn" and turn.model == "gpt-4.1-2025-04-14"
    assert turn.usage["input_tokens"] == 32 and turn.usage["cache_read_input_tokens"] == 8
    request = fake_openai.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "Be terse."}
    assert request["stream_options"] == {"include_usage": True}
    assert fake_openai.headers[0]["authorization"] == "Bearer sk-fake"


async def test_one_tool_with_fragmented_arguments(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    arguments = {"q": "Apple Inc. annual report, fiscal 2024, revenue by segment"}
    fake_openai.add(Reply(calls=[Call("lookup", arguments, fragment=3)]))
    turn = provider.new_turn(2)
    events = await attempt(provider, model_call(QUESTION), turn)
    phases = [e["phase"] for e in events]
    assert phases[0] == "tool_start" and phases[-1] == "tool_use"
    assert phases.count("tool_input_delta") > 20
    assert events[-1]["tool"]["input"] == arguments
    assert turn.stop_reason == "tool_use" and turn.tool_uses[0]["input"] == arguments


async def test_three_parallel_calls(provider: OpenAIProvider, fake_openai: FakeOpenAI) -> None:
    names = ["AAPL", "MSFT", "NVDA"]
    fake_openai.add(Reply(calls=[Call("lookup", {"q": n}) for n in names], interleave=True))
    turn = provider.new_turn(1)
    events = await attempt(provider, model_call(QUESTION), turn)
    uses = [e["tool"] for e in events if e["phase"] == "tool_use"]
    assert [u["input"]["q"] for u in uses] == names
    assert [u["id"] for u in turn.tool_uses] == [u["id"] for u in uses]
    assert len({u["id"] for u in uses}) == 3


async def test_length_is_max_tokens(provider: OpenAIProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.add(Reply(text="It was about", finish_reason="length"))
    turn = provider.new_turn(1)
    await attempt(provider, model_call(QUESTION), turn)
    assert turn.stop_reason == "max_tokens" and turn.texts == ["It was about"]


@pytest.mark.parametrize(
    ("headers", "wait"), [({"retry-after": "7"}, 7.0), ({"retry-after-ms": "1500"}, 1.5)]
)
async def test_429_is_a_retryable_rate_limit_with_its_wait(
    provider: OpenAIProvider, fake_openai: FakeOpenAI, headers: dict[str, str], wait: float
) -> None:
    fake_openai.add(Reply(status=429, error_code="rate_limit_exceeded", headers=headers))
    failure = await failure_of(provider, model_call(QUESTION))
    assert (failure.code, failure.retryable, failure.retry_after_s) == (
        "RATE_LIMIT_ERROR", True, wait
    )  # fmt: skip
    assert failure.details["upstream_status"] == 429


async def test_a_failed_attempt_then_a_retry_on_the_reset_turn(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(Reply(text="partial", cut_after=2), Reply(text="Whole answer."))
    turn = provider.new_turn(1)
    with pytest.raises(UpstreamFailure):
        await attempt(provider, model_call(QUESTION), turn)
    assert turn.emitted > 0  # the caller must not retry this one silently
    turn.reset()
    await attempt(provider, model_call(QUESTION), turn)
    assert turn.texts == ["Whole answer."] and turn.emitted == 2


@pytest.mark.parametrize(
    ("reply", "code", "retryable"),
    [
        (Reply(status=500), "UNKNOWN_ERROR", True),
        (Reply(status=503), "NETWORK_ERROR", True),
        (Reply(status=400, error_type="invalid_request_error"), "VALIDATION_ERROR", False),
        (Reply(text="x" * 80, chunk=4, cut_after=5), "NETWORK_ERROR", True),
        (Reply(text="x" * 80, error_after=3, error_type="server_error"), "UNKNOWN_ERROR", True),
        (Reply(text="no end", no_finish=True), "NETWORK_ERROR", True),
    ],
    ids=["500", "503", "400", "cut", "error-chunk", "no-finish"],
)
async def test_failures_map_to_gateway_codes(
    provider: OpenAIProvider, fake_openai: FakeOpenAI, reply: Reply, code: str, retryable: bool
) -> None:
    fake_openai.add(reply)
    failure = await failure_of(provider, model_call(QUESTION))
    assert (failure.code, failure.retryable) == (code, retryable)


async def test_bad_key_and_closed_port_and_stall(
    openai_server: TestServer, fake_openai: FakeOpenAI, unused_tcp_port: int
) -> None:
    url = str(openai_server.make_url("/v1"))
    cases = [
        (url, "sk-wrong", "AUTHENTICATION_ERROR"),
        (f"http://127.0.0.1:{unused_tcp_port}/v1", "sk-fake", "NETWORK_ERROR"),
        (url, "sk-fake", "TIMEOUT_ERROR"),
    ]
    fake_openai.add(Reply(text="slow", stall_after=1))
    for base_url, key, code in cases:
        client = create_client(base_url, key, timeout_s=0.5)
        try:
            failure = await failure_of(OpenAIProvider(client), model_call(QUESTION))
        finally:
            await client.close()
        assert failure.code == code, failure.message


async def test_the_turn_must_be_the_providers_own(provider: OpenAIProvider) -> None:
    assert isinstance(provider.new_turn(1), ChatTurn)
    with pytest.raises(TypeError):
        await attempt(provider, model_call(QUESTION), object())  # type: ignore[arg-type]


async def test_a_cancelled_attempt_closes_the_upstream_stream(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(Reply(text="one two three", chunk=4, stall_after=2))
    turn = provider.new_turn(1)
    first = asyncio.Event()

    def emit(batch: list[Event]) -> None:
        first.set()

    async def consume() -> None:
        await provider.attempt(model_call(QUESTION), turn, emit)

    task = asyncio.create_task(consume())
    async with asyncio.timeout(5):
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await fake_openai.disconnected.wait()
    assert fake_openai.disconnects == 1 and turn.partial_texts() == ["one "]


async def test_blocks_the_request_cannot_carry_are_reported_on_the_turn(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    thinking = {"type": "thinking", "thinking": "Let me see.", "signature": "sig"}
    history: list[dict[str, Any]] = [
        *QUESTION,
        {"role": "assistant", "content": [thinking, {"type": "text", "text": "Hm."}]},
        {"role": "user", "content": "Go on."},
    ]
    fake_openai.add(Reply(text="Done."))
    turn = provider.new_turn(2)
    await attempt(provider, model_call(history), turn)
    assert turn.dropped == {"thinking": 1} and fake_openai.rejected == []
    assert fake_openai.requests[0]["messages"][2] == {"role": "assistant", "content": "Hm."}


async def test_a_local_server_needs_no_key_but_openai_does(
    openai_server: TestServer, fake_openai: FakeOpenAI
) -> None:
    fake_openai.api_key = NO_KEY  # a local server that takes whatever the SDK sends
    fake_openai.add(Reply(text="ok"))
    client = create_client(str(openai_server.make_url("/v1")), None, timeout_s=5)
    try:
        await attempt(OpenAIProvider(client), model_call(QUESTION), ChatTurn(1))
    finally:
        await client.close()
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        create_client(None, None, timeout_s=5)

"""The fake Chat Completions server checked against the official SDK: its stream helper's
accumulator must rebuild exactly the reply that was scripted, and its status errors must
carry what the real API sends."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.fakes.openai import Call, FakeOpenAI, Reply
from tests.fakes.openai_rules import Invalid, validate

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look something up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
HELLO: list[Any] = [{"role": "user", "content": "hello"}]


async def test_sdk_accumulator_rebuilds_text_and_usage(
    fake_openai: FakeOpenAI, openai_client: openai.AsyncOpenAI
) -> None:
    fake_openai.add(Reply(text="Revenue grew 12% — in 2024.", prompt_tokens=50, cached_tokens=30))
    async with openai_client.chat.completions.stream(
        model="gpt-test", messages=HELLO, stream_options={"include_usage": True}
    ) as stream:
        completion = await stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.message.content == "Revenue grew 12% — in 2024."
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 50
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 30


@pytest.mark.parametrize("interleave", [False, True])
async def test_sdk_accumulator_joins_parallel_fragments_by_index(
    fake_openai: FakeOpenAI, openai_client: openai.AsyncOpenAI, interleave: bool
) -> None:
    args = [{"q": "Apple 10-K " * 3}, {"q": "MSFT"}, {"q": "NVDA revenue by segment"}]
    calls = [Call("lookup", a, fragment=5) for a in args]
    fake_openai.add(Reply(text="Checking.", calls=calls, interleave=interleave))
    async with openai_client.chat.completions.stream(
        model="gpt-test", messages=HELLO, tools=TOOLS
    ) as stream:
        completion = await stream.get_final_completion()
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking."
    tool_calls = choice.message.tool_calls or []
    assert [c.id for c in tool_calls] == [c.id for c in calls]
    assert [json.loads(c.function.arguments) for c in tool_calls] == args


async def test_status_error_reaches_the_sdk_with_body_and_retry_after(
    fake_openai: FakeOpenAI, openai_client: openai.AsyncOpenAI
) -> None:
    fake_openai.add(
        Reply(status=429, error_type="requests", error_code="rate_limit_exceeded",
              headers={"retry-after-ms": "1500"})
    )  # fmt: skip
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model="m", messages=HELLO, stream=True)
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after-ms"] == "1500"


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {}}]}],
         "'cache_control' was unexpected"),
        ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}],
         "Invalid value: 'tool_result'"),
        ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c", "content": "r"}],
         "must be a response to a preceeding message"),
        ([{"role": "user", "content": "q"},
          {"role": "assistant", "content": None, "tool_calls": [
              {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
          {"role": "user", "content": "next"}],
         "did not have response messages: c1"),
    ],
)  # fmt: skip
async def test_invalid_history_is_refused_like_the_real_api(
    fake_openai: FakeOpenAI, openai_client: openai.AsyncOpenAI, messages: Any, fragment: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await openai_client.chat.completions.create(model="m", messages=messages, stream=True)
    assert fragment in caught.value.message
    assert fake_openai.rejected and fake_openai.rejected[0]["error"]["type"] == (
        "invalid_request_error"
    )


async def test_anthropic_top_level_fields_are_refused(
    fake_openai: FakeOpenAI, openai_client: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await openai_client.chat.completions.create(
            model="m", messages=HELLO, stream=True, extra_body={"system": "You are a test."}
        )
    assert "Unrecognized request argument supplied: system" in caught.value.message


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"tools": [{**TOOLS[0], "function": {**TOOLS[0]["function"], "x": 1}}]}, "tools[0]"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "z": 1}]}]},
         "messages[0].content[0]"),
        ({"max_completion_tokens": "10"}, "max_completion_tokens"),
    ],
)  # fmt: skip
def test_the_fake_holds_bodies_to_the_sdks_request_type(change: dict[str, Any], param: str) -> None:
    good = {"model": "gpt-test", "messages": HELLO, "stream": True, "tools": TOOLS}
    validate({**good, "max_completion_tokens": 10})
    with pytest.raises(Invalid) as raised:
        validate({**good, **change})
    assert str(raised.value.body["error"]["param"]).startswith(param), raised.value.body

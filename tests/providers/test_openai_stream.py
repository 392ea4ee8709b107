"""`ChatTurn`: Chat Completions chunks to gateway events and a canonical turn, checked
against the official SDK's accumulator (`ChatCompletionStreamState`, the state behind
`client.chat.completions.stream`)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import orjson
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk, ParsedChatCompletion

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.stream import SSEDecoder
from gateway.providers.openai.stream import STOP_REASONS, ChatTurn
from tests.fakes.openai import Call, FakeOpenAI, Reply

REPLY = Reply(
    text="Apple’s revenue: $391B.",
    chunk=5,
    calls=[
        Call("lookup", {"q": "AAPL 10-K", "year": 2024}, fragment=4),
        Call("lookup", {"q": "MSFT"}, fragment=3),
        Call("fetch", {"url": "https://sec.gov/x?a=1&b=2"}, fragment=7),
    ],
    interleave=True,
    prompt_tokens=120,
    cached_tokens=100,
    completion_tokens=33,
)


def run(body: bytes, *splits: int) -> ChatTurn:
    """Feed `body` to a turn cut into pieces at `splits`, as reads from a socket are."""
    turn, decoder = ChatTurn(1), SSEDecoder()
    bounds = [0, *splits, len(body)]
    for start, end in itertools.pairwise(bounds):
        for data in decoder.feed(body[start:end]):
            if data != b"[DONE]":
                turn.feed_payload(data)
    turn.finish()
    return turn


def sdk_final(body: bytes) -> ParsedChatCompletion[None]:
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    for data in SSEDecoder().feed(body):
        if data != b"[DONE]":
            state.handle_chunk(ChatCompletionChunk.model_validate(orjson.loads(data)))
    return state.get_final_completion()


def expected_from_sdk(completion: ParsedChatCompletion[None]) -> dict[str, Any]:
    """What the turn must hold, read off the SDK's result through the documented mapping."""
    message = completion.choices[0].message
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens_details is not None
    cached = usage.prompt_tokens_details.cached_tokens or 0
    uses = [
        {"type": "tool_use", "id": c.id, "name": c.function.name, "input": json.loads(args)}
        for c in message.tool_calls or ()
        if (args := c.function.arguments)
    ]
    return {
        "content": [{"type": "text", "text": message.content}, *uses],
        "stop_reason": STOP_REASONS[completion.choices[0].finish_reason],
        "model": completion.model,
        "usage": {
            "input_tokens": usage.prompt_tokens - cached,
            "output_tokens": usage.completion_tokens,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        },
    }


def view(turn: ChatTurn) -> dict[str, Any]:
    return {
        "content": turn.content,
        "stop_reason": turn.stop_reason,
        "model": turn.model,
        "usage": turn.usage,
    }


def test_every_read_boundary_gives_the_sdk_accumulators_turn() -> None:
    body = FakeOpenAI().body(REPLY)
    expected = expected_from_sdk(sdk_final(body))
    assert len(expected["content"]) == 4
    for cut in range(1, len(body)):
        assert view(run(body, cut)) == expected, cut
    assert view(run(body, *range(1, len(body)))) == expected  # one byte per read


def test_text_so_far_matches_the_sdk_snapshot_after_every_chunk() -> None:
    chunks = FakeOpenAI().chunks(REPLY, include_usage=True)
    turn = ChatTurn(1)
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    for chunk in chunks:
        turn.feed(chunk)
        state.handle_chunk(ChatCompletionChunk.model_validate(chunk))
        snapshot = state.current_completion_snapshot.choices[0].message.content or ""
        assert "".join(turn.partial_texts()) == snapshot


def test_fragmented_tool_events_in_order() -> None:
    reply = Reply(calls=[Call("lookup", {"q": "revenue"}, id="call_1", fragment=4)])
    turn = ChatTurn(3)
    chunks = FakeOpenAI().chunks(reply, include_usage=True)
    out: list[dict[str, Any]] = [dict(e) for c in chunks for e in turn.feed(c)]
    phases = [e["phase"] for e in out]
    assert phases == ["tool_start"] + ["tool_input_delta"] * 4 + ["tool_use"]
    assert out[0]["tool"] == {"id": "call_1", "name": "lookup"} and out[0]["turn"] == 3
    assert "".join(e["partial_json"] for e in out[1:-1]) == '{"q":"revenue"}'
    assert out[-1]["tool"]["input"] == {"q": "revenue"}
    assert turn.emitted == len(out) and turn.stop_reason == "tool_use"


@pytest.mark.parametrize(("finish", "stop"), sorted(STOP_REASONS.items()))
def test_finish_reasons_map_to_canonical_stop_reasons(finish: str, stop: str) -> None:
    turn = ChatTurn(1)
    for chunk in FakeOpenAI().chunks(Reply(text="x", finish_reason=finish), include_usage=True):
        turn.feed(chunk)
    turn.finish()
    assert turn.stop_reason == stop


@pytest.mark.parametrize(
    ("raw", "why"), [('{"q": "x"', "not valid JSON"), ("[1, 2]", "must be a JSON object")]
)
def test_bad_arguments_become_an_input_error(raw: str, why: str) -> None:
    turn = ChatTurn(1)
    reply = Reply(calls=[Call("lookup", raw_arguments=raw, id="call_bad")])
    for chunk in FakeOpenAI().chunks(reply, include_usage=True):
        turn.feed(chunk)
    assert turn.tool_uses[0]["input"] == {}
    assert why in turn.input_errors["call_bad"]


def test_a_stream_without_finish_reason_is_a_retryable_network_error() -> None:
    turn = ChatTurn(1)
    for chunk in FakeOpenAI().chunks(
        Reply(text="half an ans", no_finish=True), include_usage=False
    ):
        turn.feed(chunk)
    assert turn.partial_texts() == ["half an ans"] and turn.texts == []
    with pytest.raises(UpstreamFailure) as caught:
        turn.finish()
    assert caught.value.code == "NETWORK_ERROR" and caught.value.retryable


@pytest.mark.parametrize(
    ("error", "code", "retryable"),
    [
        ({"message": "busy", "code": 502}, "NETWORK_ERROR", True),  # OpenRouter's shape
        ({"message": "slow down", "type": "rate_limit_error"}, "RATE_LIMIT_ERROR", True),
        ({"message": "bad", "type": "invalid_request_error"}, "VALIDATION_ERROR", False),
    ],
)
def test_an_error_chunk_raises(error: dict[str, Any], code: str, retryable: bool) -> None:
    with pytest.raises(UpstreamFailure) as caught:
        ChatTurn(1).feed({"error": error})
    assert (caught.value.code, caught.value.retryable) == (code, retryable)
    assert caught.value.message == error["message"]


def test_missing_ids_are_made_unique_and_reset_forgets_an_attempt() -> None:
    turn = ChatTurn(4)
    fragments = [{"index": i, "function": {"name": "f", "arguments": "{}"}} for i in (0, 1)]
    turn.feed({"choices": [{"index": 0, "delta": {"tool_calls": fragments}}]})
    turn.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    assert [u["id"] for u in turn.tool_uses] == ["call_4_0", "call_4_1"]
    turn.reset()
    assert (turn.content, turn.emitted, turn.stop_reason, turn.usage) == ([], 0, None, {})
    with pytest.raises(UpstreamFailure):
        turn.finish()


def test_tool_calls_ended_with_stop_still_want_answers() -> None:
    turn = ChatTurn(1)
    reply = Reply(calls=[Call("lookup", {"q": "x"})], finish_reason="stop")
    for chunk in FakeOpenAI().chunks(reply, include_usage=False):
        turn.feed(chunk)
    assert turn.stop_reason == "tool_use" and turn.tool_uses[0]["input"] == {"q": "x"}


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_is_relayed_as_thinking_but_kept_out_of_the_history(field: str) -> None:
    reply = Reply(reasoning="Revenue is in the 10-K.", reasoning_field=field, text="$391B.")
    turn = ChatTurn(2)
    chunks = FakeOpenAI().chunks(reply, include_usage=True)
    out: list[dict[str, Any]] = [dict(e) for c in chunks for e in turn.feed(c)]
    kinds = [e["type"] for e in out]
    assert kinds == ["thinking_start"] + ["thinking"] * 3 + ["thinking_complete", "delta"]
    assert "".join(e["text"] for e in out if e["type"] == "thinking") == reply.reasoning
    assert turn.content == [{"type": "text", "text": "$391B."}]
    assert turn.partial_texts() == ["$391B."]


def test_a_structured_output_refusal_is_text_with_stop_reason_refusal() -> None:
    turn = ChatTurn(1)
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]},
        {"choices": [{"index": 0, "delta": {"refusal": "I can't help with that."}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    out = [e for c in chunks for e in turn.feed(c)]
    assert out == [{"type": "delta", "text": "I can't help with that."}]
    assert turn.stop_reason == "refusal" and turn.texts == ["I can't help with that."]

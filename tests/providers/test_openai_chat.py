"""`chat_body`: the canonical (Messages API) history as a Chat Completions request. Every
body is also checked with the fake server's validation, i.e. as the real API would."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.providers.base import ModelCall
from gateway.providers.openai.chat import chat_body
from tests.fakes.openai_rules import Invalid, validate

TOOL = {
    "name": "lookup",
    "description": "Look a company up.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    "cache_control": {"type": "ephemeral"},
}


def use(id: str, q: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": "lookup", "input": {"q": q}}


def result(id: str, content: Any, *, error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": id, "content": content}
    if error:
        block["is_error"] = True
    return block


def call(messages: list[dict[str, Any]], **fields: Any) -> ModelCall:
    values: dict[str, Any] = {
        "model": "gpt-test",
        "max_tokens": 1000,
        "messages": messages,
        "system": "You are a test.",
        "tools": [TOOL],
    }
    values.update(fields)
    return ModelCall(**values)


def body_of(model_call: ModelCall) -> dict[str, Any]:
    body, dropped = chat_body(model_call)
    assert not dropped
    validate(body)
    return body


def test_a_tool_round_puts_the_calls_before_their_answers() -> None:
    text = {"type": "text", "text": "Let me look.", "cache_control": {"type": "ephemeral"}}
    body = body_of(
        call([
            {"role": "user", "content": "Apple revenue?"},
            {"role": "assistant", "content": [text, use("toolu_1", "AAPL")]},
            {"role": "user", "content": [result("toolu_1", "391B")]},
            {"role": "assistant", "content": [{"type": "text", "text": "It was $391B."}]},
            {"role": "user", "content": "And Microsoft?"},
        ])
    )  # fmt: skip
    assert body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "Apple revenue?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "toolu_1", "type": "function",
             "function": {"name": "lookup", "arguments": '{"q":"AAPL"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "391B"},
        {"role": "assistant", "content": "It was $391B."},
        {"role": "user", "content": "And Microsoft?"},
    ]  # fmt: skip
    assert body["tools"] == [{"type": "function", "function": {
        "name": "lookup", "description": "Look a company up.",
        "parameters": TOOL["input_schema"]}}]  # fmt: skip
    assert body["tool_choice"] == "auto"
    assert body["max_completion_tokens"] == 1000
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "cache_control" not in json.dumps(body) and "system" not in body


def test_parallel_calls_errors_and_trailing_text() -> None:
    ids = ["toolu_a", "toolu_b", "toolu_c"]
    answers = [
        result("toolu_a", "plain"),
        result("toolu_b", [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]),
        result("toolu_c", "No such company.", error=True),
        {"type": "text", "text": "Also consider 2023."},
        {"type": "text", "text": "Be brief."},
    ]
    body = body_of(
        call([
            {"role": "user", "content": "Compare."},
            {"role": "assistant", "content": [use(i, i[-1]) for i in ids]},
            {"role": "user", "content": answers},
        ])
    )  # fmt: skip
    assistant, *rest = body["messages"][2:]
    assert assistant["content"] is None
    assert [c["id"] for c in assistant["tool_calls"]] == ids
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"q": "a"}, {"q": "b"}, {"q": "c"}
    ]  # fmt: skip
    assert rest == [
        {"role": "tool", "tool_call_id": "toolu_a", "content": "plain"},
        {"role": "tool", "tool_call_id": "toolu_b", "content": "one\n\ntwo"},
        {"role": "tool", "tool_call_id": "toolu_c", "content": "Error: No such company."},
        {"role": "user", "content": "Also consider 2023.\n\nBe brief."},
    ]


def test_thinking_and_server_tool_blocks_are_dropped_and_counted() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    redacted = {"type": "redacted_thinking", "data": "xxx"}
    server_use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                  "input": {"query": "x"}}  # fmt: skip
    server_result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                     "content": []}  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": [thinking, redacted]},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": [
            thinking, server_use, server_result, {"type": "text", "text": "Found."},
            use("toolu_1", "x")]},
        {"role": "user", "content": [result("toolu_1", "r")]},
    ]  # fmt: skip
    server_tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    body, dropped = chat_body(call(messages, tools=[TOOL, server_tool]))
    validate(body)
    assert dropped == {
        "thinking": 2,
        "redacted_thinking": 1,
        "server_tool_use": 1,
        "web_search_tool_result": 1,
        "tool:web_search_20250305": 1,
    }
    roles = [m["role"] for m in body["messages"]]
    # The thinking-only assistant message is gone rather than sent empty.
    assert roles == ["system", "user", "user", "assistant", "tool"]
    assert body["messages"][3]["content"] == "Found."
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup"]


def test_wrap_up_call_keeps_the_tools_but_may_not_use_them() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Q"},
        {"role": "assistant", "content": [use("toolu_1", "x")]},
        {"role": "user", "content": [result("toolu_1", "Not run: the turn limit was reached.")]},
    ]
    body = body_of(call(messages, tool_choice="none"))
    assert body["tool_choice"] == "none" and len(body["tools"]) == 1


def test_no_tools_no_tool_choice_no_system() -> None:
    body = body_of(call([{"role": "user", "content": "Hi"}], tools=[], system=None))
    assert "tools" not in body and "tool_choice" not in body
    assert body["messages"] == [{"role": "user", "content": "Hi"}]


def test_output_schema_becomes_a_strict_json_schema_response_format() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    body = body_of(call([{"role": "user", "content": "Q"}], output_schema=schema))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": schema, "strict": True},
    }


def test_legacy_max_tokens_field_for_servers_that_only_know_it() -> None:
    body, _ = chat_body(call([{"role": "user", "content": "Q"}]), max_tokens_field="max_tokens")
    assert body["max_tokens"] == 1000 and "max_completion_tokens" not in body


def test_the_validator_refuses_tool_results_sent_as_anthropic_blocks() -> None:
    # The mistake the translation exists to avoid, checked so the test above can fail.
    untranslated = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Q"},
            {"role": "assistant", "content": [use("toolu_1", "x")]},
        ],
    }
    with pytest.raises(Invalid):
        validate(untranslated)

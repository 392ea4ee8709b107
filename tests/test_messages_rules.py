"""The fake Messages API refuses what the real one refuses: the SDK's request type, nothing
unknown at any depth, and the documented rules the type cannot say."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpClient

from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.messages_rules import request_problem

EPHEMERAL = {"type": "ephemeral"}
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def good() -> dict[str, Any]:
    """A tool round as the gateway sends it: thinking, a server tool, breakpoints."""
    return {
        "model": "claude-test-model", "max_tokens": 4_000, "stream": True,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}],
        "tools": [
            {"name": "lookup", "description": "Look up.", "input_schema": SCHEMA},
            {"type": "web_search_20260318", "name": "web_search", "max_uses": 5,
             "cache_control": EPHEMERAL},
        ],
        "tool_choice": {"type": "auto"},
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found"},
                {"type": "text", "text": "1 round left.", "cache_control": EPHEMERAL},
            ]},
        ],
    }  # fmt: skip


def test_a_good_request_passes() -> None:
    assert request_problem(good()) is None


def _set(path: str, value: Any) -> dict[str, Any]:
    body = good()
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is _DELETE:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return body


_DELETE = object()
LOCAL_SEARCH = {"name": "web_search", "description": "Search.", "input_schema": SCHEMA}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("temperature", 0.5, "temperature: Extra inputs are not permitted"),
        ("stream", False, "stream: Input should be True"),
        ("max_tokens", "4000", "max_tokens: Input should be a valid integer"),
        ("tools.1.x", 1, "tools.1.x: Extra inputs are not permitted"),
        ("messages.2.content.0.extra", 1, "messages.2.content.0.extra: Extra inputs"),
        ("messages.1.content.1.input", "x", "messages.1.content.1.input"),
        ("tools.0", LOCAL_SEARCH | {"name": "web_search"}, "tools: Tool names must be unique."),
        ("tools.0.name", "sec lookup", "tools.0.custom.name: String should match pattern"),
        ("messages.0", {"role": "user", "content": [
            {"type": "text", "text": "a", "cache_control": EPHEMERAL},
            {"type": "text", "text": "b", "cache_control": EPHEMERAL},
        ]}, "A maximum of 4 blocks with cache_control may be provided. Found 5."),
        ("tool_choice", {"type": "any"}, "Thinking may not be enabled when tool_choice forces"),
        ("thinking", {"type": "enabled", "budget_tokens": 512}, "greater than or equal to 1024"),
        ("thinking", {"type": "enabled", "budget_tokens": 4_000}, "`max_tokens` must be greater"),
        ("messages.2.content", [{"type": "text", "text": "no results"}],
         "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
         "toolu_1."),
        ("messages.2.content.0", {"type": "text", "text": "first"},
         "`tool_use` ids were found without `tool_result` blocks"),
        ("messages.2.content.0.tool_use_id", "toolu_2",
         "messages.1: `tool_use` ids were found without"),
        ("messages.0.content", [{"type": "tool_result", "tool_use_id": "toolu_9", "content": ""}],
         "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"),
        ("messages.2.content.1.text", "", "messages: text content blocks must be non-empty"),
        ("messages", [], "messages: at least one message is required"),
    ],
)  # fmt: skip
def test_the_rules(path: str, value: Any, message: str) -> None:
    problem = request_problem(_set(path, copy.deepcopy(value)))
    assert problem is not None and message in problem, problem


def test_the_sdks_response_objects_are_not_the_wire_format() -> None:
    # The SDK takes its own `TextBlock` in a message for convenience; the API takes no
    # field a `TextBlockParam` does not have.
    body = _set("messages.0.content", [{"type": "text", "text": "x", "parsed_output": None}])
    assert "Extra inputs are not permitted" in (request_problem(body) or "")


async def test_a_refusal_is_the_apis_error_json(
    fake: FakeAnthropic, fake_server: TestServer, aiohttp_client: AiohttpClient
) -> None:
    client: TestClient[Any, Any] = await aiohttp_client(fake_server)
    body = _set("tools.0", dict(LOCAL_SEARCH))
    response = await client.post("/v1/messages", json=body)
    assert response.status == 400
    answer = await response.json()
    assert answer["type"] == "error"
    assert answer["error"] == {
        "type": "invalid_request_error", "message": "tools: Tool names must be unique."
    }  # fmt: skip
    assert answer["request_id"].startswith("req_")
    assert response.headers["request-id"] == answer["request_id"]
    assert fake.rejected == ["tools: Tool names must be unique."]


def test_with_a_beta_header_the_beta_type_is_the_shape() -> None:
    body = good()
    assert request_problem(body, beta=True) is None
    body["context_management"] = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    assert request_problem(body, beta=True) is None  # a beta field
    assert "context_management: Extra inputs" in (request_problem(body) or "")

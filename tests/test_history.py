"""A client's `messages` checked to the Messages API's rules before any SSE header: a
table of histories the API refuses (each a 400 naming its JSON path), and histories it
takes, including every shape the gateway itself saves."""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from gateway.history import history_problem
from gateway.http import keys
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, ServerToolUse, Text, Thinking, ToolUse
from tests.test_wire import CITATION, SEARCH_RESULTS

USE = {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}
ASK = {"role": "user", "content": "hi"}


def asked(*blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """A user question, an assistant turn of `blocks`, the results of its tools."""
    return [ASK, {"role": "assistant", "content": list(blocks)}]


def answered(*results: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(results)}


BAD: dict[str, tuple[list[Any], str]] = {
    "empty history": ([], "messages"),
    "not an object": (["hi"], "messages[0]"),
    "starts with assistant": ([{"role": "assistant", "content": "x"}], "messages[0].role"),
    "system role": ([{"role": "system", "content": "x"}], "messages[0].role"),
    "roles do not alternate": ([ASK, ASK], "messages[1].role"),
    "ends with assistant": ([ASK, {"role": "assistant", "content": "x"}], "messages[1].role"),
    "extra message key": ([{**ASK, "name": "bob"}], "messages[0]"),
    "empty string content": ([{"role": "user", "content": ""}], "messages[0].content"),
    "empty block list": ([{"role": "user", "content": []}], "messages[0].content"),
    "unknown block type": (
        [{"role": "user", "content": [{"type": "video", "url": "x"}]}],
        "messages[0].content[0].type",
    ),
    "assistant block from user": (
        [{"role": "user", "content": [USE]}],
        "messages[0].content[0].type",
    ),
    "empty text block": (
        [{"role": "user", "content": [{"type": "text", "text": ""}]}],
        "messages[0].content[0].text",
    ),
    "whitespace text block": (
        [{"role": "user", "content": [{"type": "text", "text": " \n"}]}],
        "messages[0].content[0].text",
    ),
    "text that is not a string": (
        [{"role": "user", "content": [{"type": "text", "text": 5}]}],
        "messages[0].content[0].text",
    ),
    "extra block key": (
        [{"role": "user", "content": [{"type": "text", "text": "a", "colour": "red"}]}],
        "messages[0].content[0]",
    ),
    "tool_use without input": (
        [*asked({k: v for k, v in USE.items() if k != "input"}), answered(RESULT)],
        "messages[1].content[0]",
    ),
    "tool_use_id an object": (
        [*asked(USE), answered({**RESULT, "tool_use_id": {"id": "toolu_1"}})],
        "messages[2].content[0].tool_use_id",
    ),
    "tool_use_id a list": (
        [*asked(USE), answered({**RESULT, "tool_use_id": ["toolu_1"]})],
        "messages[2].content[0].tool_use_id",
    ),
    "duplicate tool ids": (
        [*asked(USE, USE), answered(RESULT, RESULT)],
        "messages[1].content[1].id",
    ),
    "result for an unknown tool": (
        [*asked(USE), answered(RESULT, {**RESULT, "tool_use_id": "toolu_9"})],
        "messages[2].content[1].tool_use_id",
    ),
    "tool_use left unanswered": (
        [*asked(USE), {"role": "user", "content": "go on"}],
        "messages[2].content",
    ),
    "result after text": (
        [*asked(USE), answered({"type": "text", "text": "first"}, RESULT)],
        "messages[2].content[1]",
    ),
    "result in the first message": ([answered(RESULT)], "messages[0].content[0].tool_use_id"),
    "bad image source": (
        [{"role": "user", "content": [{"type": "image", "source": {"type": "ftp", "url": "x"}}]}],
        "messages[0].content[0].source.type",
    ),
    "bad cache_control": (
        [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": "yes"}]}],
        "messages[0].content[0].cache_control",
    ),
    "is_error not a boolean": (
        [*asked(USE), answered({**RESULT, "is_error": "no"})],
        "messages[2].content[0].is_error",
    ),
    "thinking without signature": (
        [*asked({"type": "thinking", "thinking": "hm"}, USE), answered(RESULT)],
        "messages[1].content[0]",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_histories_the_api_refuses(name: str) -> None:
    messages, path = BAD[name]
    problem = history_problem(messages)
    assert problem is not None and problem[0] == path, problem


GOOD: dict[str, list[Any]] = {
    "a question": [ASK],
    "text blocks with cache_control": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}}
            ],
        }
    ],
    "tool round with budget note": [
        *asked({"type": "text", "text": "let me"}, USE),
        answered({**RESULT, "is_error": False}, {"type": "text", "text": "2 tool rounds left"}),
    ],
    "tool_result with blocks": [
        *asked(USE),
        answered({**RESULT, "content": [{"type": "text", "text": "a"}]}),
    ],
    "image by url": [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
                {"type": "text", "text": "what is this?"},
            ],
        }
    ],
    "thinking with signature": [
        *asked({"type": "thinking", "thinking": "hm", "signature": "sig"}, USE),
        answered(RESULT),
    ],
}


@pytest.mark.parametrize("name", list(GOOD))
def test_histories_the_api_takes(name: str) -> None:
    assert history_problem(GOOD[name]) is None


async def test_what_the_gateway_saves_goes_back_as_messages(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """Thinking with its signature, a local tool round with its budget note, server tool
    blocks with citations: the saved history, sent back as `messages`, is accepted."""
    client = await make_gateway(search_backend="anthropic")
    fake.add(
        Reply([Thinking("I should echo."), ToolUse("echo", {"text": "t"})]),
        Reply([
            ServerToolUse("web_search", {"query": "nvidia news"}, SEARCH_RESULTS),
            Text("NVIDIA news.", citations=[CITATION]),
        ]),
        Reply([Text("again")]),
    )  # fmt: skip
    events = await stream(client, query="echo t", thinking=True)
    assert events[-1]["type"] == "final", events[-1]
    saved = await client.app[keys.RUNS].sessions.get(events[-1]["session_id"])
    assert [m["role"] for m in saved] == ["user", "assistant", "user", "assistant"]
    history = [*saved, {"role": "user", "content": "and again?"}]
    assert history_problem(history) is None
    again = await stream(client, messages=history)
    assert again[-1]["type"] == "final" and again[-1]["result"] == "again"


@pytest.mark.parametrize("name", ["unknown block type", "tool_use_id an object", "extra block key"])
async def test_refused_before_the_stream(make_gateway: GatewayFactory, name: str) -> None:
    client = await make_gateway()
    messages, path = BAD[name]
    response = await client.post("/api/stream", json={"messages": messages})
    body = await response.json()
    assert response.status == 400 and response.content_type == "application/json"
    assert body["error"]["code"] == "VALIDATION_ERROR"
    assert body["error"]["details"]["field"] == path and path in body["error"]["message"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.sampled_from(["user", "assistant", "text", "tool_use", "tool_result", "toolu_1", "image"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(
        st.sampled_from(["role", "content", "type", "text", "id", "name", "input",
                         "tool_use_id", "source", "cache_control", "signature", "x"]),
        inner, max_size=5,
    ),
    max_leaves=30,
)  # fmt: skip


TYPES = [
    "text",
    "image",
    "document",
    "tool_result",
    "search_result",
    "tool_use",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
]
BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)},
    optional={
        "text": JSON,
        "id": st.sampled_from(["toolu_1", "toolu_2"]) | JSON,
        "name": JSON,
        "input": JSON,
        "tool_use_id": st.sampled_from(["toolu_1", "toolu_2"]) | JSON,
        "content": JSON | st.lists(JSON),
        "source": JSON,
        "signature": JSON,
        "data": JSON,
        "cache_control": JSON,
        "citations": JSON,
        "is_error": JSON,
    },
)
MESSAGE = st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant"]),
    "content": st.text(max_size=3) | st.lists(BLOCK, min_size=1, max_size=3),
})  # fmt: skip


@hypothesis.settings(max_examples=300, deadline=None, derandomize=True)
@hypothesis.given(st.lists(JSON, max_size=4) | st.lists(MESSAGE, min_size=1, max_size=5))
def test_any_json_gets_an_answer_never_an_exception(messages: list[Any]) -> None:
    problem = history_problem(messages)
    assert problem is None or (isinstance(problem[0], str) and problem[0].startswith("messages"))

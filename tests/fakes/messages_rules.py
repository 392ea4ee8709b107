"""Request validation for the fake Messages API: every request held to the published rules,
with the real API's messages where they are known.

First the shape: the body must be an instance of the installed SDK's own request type
(`MessageCreateParamsStreaming`, or the beta one when an `anthropic-beta` header is sent),
with nothing unknown in it (`sdk_types`). Then the rules the types cannot say, each with
where it is documented:

- tool names: unique across client and server tools, and a client tool's name matches
  `^[a-zA-Z0-9_-]{1,64}$` (docs.claude.com, "Tool use > Implement tool use", the `name`
  of a client tool; the uniqueness message is the API's own, as answered in issue 28).
  Server tools' names and types are fixed by their SDK types (`Literal`).
- at most 4 `cache_control` breakpoints in tools, system and messages ("Prompt caching":
  "You can define up to 4 cache breakpoints"; the message is the API's).
- thinking: `tool_choice` may not force tool use ("Extended thinking > Extended thinking
  with tool use": only `auto` and `none`); a budget is at least 1,024 and below
  `max_tokens` ("Extended thinking > Max tokens and context window size"). Thinking
  against `temperature`/`top_k`: today's request type has neither field, so the shape
  check refuses them whatever the thinking.
- turns: every `tool_use` answered by a `tool_result` in the very next (user) message,
  the results first in it, and no result without its call ("Implement tool use >
  Handling tool use and tool result content blocks"; the messages are the API's own);
  text blocks non-empty (the API's own message).
- the model record's limits (`models.request_problem`): the thinking forms, effort
  levels, structured output, server tools and `max_tokens` the model has.
"""

from __future__ import annotations

import re
from typing import Any

from anthropic.types.beta.message_create_params import (
    MessageCreateParamsStreaming as BetaMessageCreateParamsStreaming,
)
from anthropic.types.message_create_params import MessageCreateParamsStreaming

from tests.fakes.sdk_types import cached_validator, type_problem

CLIENT_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_BREAKPOINTS = 4
MIN_THINKING_BUDGET = 1_024


def request_problem(body: Any, *, beta: bool = False) -> str | None:
    """The `invalid_request_error` message the API gives for `body`, or None."""
    request_type = BetaMessageCreateParamsStreaming if beta else MessageCreateParamsStreaming
    problem = type_problem(cached_validator(request_type), body)
    if problem is not None:
        return problem
    for rule in (_tools, _breakpoints, _thinking, _turns):
        problem = rule(body)
        if problem is not None:
            return problem
    return None


def _tools(body: dict[str, Any]) -> str | None:
    names: list[str] = []
    for i, tool in enumerate(body.get("tools") or ()):
        name = tool["name"]
        if tool.get("type", "custom") == "custom" and not CLIENT_TOOL_NAME.match(name):
            pattern = CLIENT_TOOL_NAME.pattern
            return f"tools.{i}.custom.name: String should match pattern '{pattern}'"
        names.append(name)
    if len(set(names)) != len(names):
        return "tools: Tool names must be unique."
    return None


def _breakpoints(body: dict[str, Any]) -> str | None:
    blocks: list[Any] = [*(body.get("tools") or ())]
    system = body.get("system")
    if isinstance(system, list):
        blocks += system
    for message in body["messages"]:
        if isinstance(message["content"], list):
            blocks += message["content"]
    found = sum(1 for block in blocks if block.get("cache_control") is not None)
    if found > MAX_BREAKPOINTS:
        limit = MAX_BREAKPOINTS
        return f"A maximum of {limit} blocks with cache_control may be provided. Found {found}."
    return None


def _thinking(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking") or {}
    kind = thinking.get("type")
    if kind not in ("enabled", "adaptive"):
        return None
    if (body.get("tool_choice") or {}).get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    if kind == "enabled":
        budget = thinking["budget_tokens"]
        if budget < MIN_THINKING_BUDGET:
            return (
                "thinking.enabled.budget_tokens: Input should be greater than or equal to "
                f"{MIN_THINKING_BUDGET}"
            )
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`."
    return None


def _turns(body: dict[str, Any]) -> str | None:
    messages = body["messages"]
    if not messages:
        return "messages: at least one message is required"
    asked: list[str] = []  # the tool_use ids of the message before
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            if block["type"] == "text" and not block["text"]:
                return "messages: text content blocks must be non-empty"
        if asked:
            problem = _answers(i - 1, asked, message["role"], blocks)
            if problem is not None:
                return problem
        for j, block in enumerate(blocks):
            if block["type"] == "tool_result" and block["tool_use_id"] not in asked:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {block['tool_use_id']}. Each `tool_result` block "
                    "must have a corresponding `tool_use` block in the previous message."
                )
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
    return None


def _answers(at: int, asked: list[str], role: str, blocks: list[dict[str, Any]]) -> str | None:
    """The results of message `at`'s calls: all of them, first in the next user message."""
    leading: list[str] = []
    for block in blocks:
        if block["type"] != "tool_result":
            break
        leading.append(block["tool_use_id"])
    missing = [tool_id for tool_id in asked if role != "user" or tool_id not in leading]
    if not missing:
        return None
    return (
        f"messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately "
        f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
        "`tool_result` block in the next message."
    )

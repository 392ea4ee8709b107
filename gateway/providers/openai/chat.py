"""The Chat Completions wire format, without I/O: a canonical `ModelCall` as a request body.

The history stays in Anthropic Messages form; this is where it becomes OpenAI's. The shape
rules the API enforces, and that providers got wrong before (see the module tests):
an assistant message carries its `tool_calls`, and the `tool` messages answering them
come right after it, one per call, in order, each with its `tool_call_id`. A canonical
user message that holds `tool_result` blocks and then text becomes those `tool` messages
followed by one user message with the text.

Blocks with no Chat Completions equivalent (thinking, redacted thinking, server tool
calls and results, images) are dropped and counted, so the caller can say so.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

import orjson

from gateway.providers.base import ModelCall

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
# Why `max_completion_tokens` by default: OpenAI's reasoning models reject `max_tokens`,
# and vLLM, LiteLLM, OpenRouter and Azure (2024-09-01 and later) accept the new name.
# Ollama and LM Studio only know `max_tokens` (Ollama silently ignores the new name,
# ollama/ollama#7125), hence the option.
ERROR_PREFIX = "Error: "
# Chat Completions has no `is_error` on a tool message: the prefix tells the model.
SCHEMA_NAME = "answer"


def chat_body(
    call: ModelCall, *, max_tokens_field: MaxTokensField = "max_completion_tokens"
) -> tuple[dict[str, Any], Counter[str]]:
    """The streaming request body for `call`, and the canonical blocks (and tools) that
    had to be dropped, counted by type."""
    dropped: Counter[str] = Counter()
    messages: list[dict[str, Any]] = []
    system = "\n\n".join(part for part in (call.system, call.system_suffix) if part)
    if system:
        messages.append({"role": "system", "content": system})
    for message in call.messages:
        if message["role"] == "assistant":
            messages.extend(_assistant(message["content"], dropped))
        else:
            messages.extend(_user(message["content"], dropped))
    body: dict[str, Any] = {
        "model": call.model,
        "messages": messages,
        max_tokens_field: call.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    tools = [_tool(tool, dropped) for tool in (*call.tools, *call.server_tools)]
    functions = [tool for tool in tools if tool is not None]
    if functions:
        body["tools"] = functions
        body["tool_choice"] = call.tool_choice
        if not call.parallel_tools:
            body["parallel_tool_calls"] = False
    if call.thinking is not None and call.thinking.get("type") != "disabled":
        dropped["thinking_config"] += 1
    if call.output_schema is not None:
        schema = {"name": SCHEMA_NAME, "schema": call.output_schema, "strict": True}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    return body, dropped


def _user(content: str | list[dict[str, Any]], dropped: Counter[str]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "tool_result":
            out.append(_tool_message(block))
        elif kind == "text":
            texts.append(block["text"])
        else:
            dropped[str(kind)] += 1
    if texts:
        out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


def _tool_message(block: dict[str, Any]) -> dict[str, Any]:
    content = _result_text(block.get("content"))
    if block.get("is_error"):
        content = ERROR_PREFIX + content
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": content}


def _result_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    # A list of blocks: keep the text; nothing else has a place in a tool message.
    return "\n\n".join(b["text"] for b in content if b.get("type") == "text")


def _assistant(content: str | list[dict[str, Any]], dropped: Counter[str]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"role": "assistant", "content": content}]
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            arguments = orjson.dumps(block.get("input") or {}).decode()
            function = {"name": block["name"], "arguments": arguments}
            calls.append({"id": block["id"], "type": "function", "function": function})
        else:
            dropped[str(kind)] += 1
    text = "".join(texts)
    if not text and not calls:
        return []  # only dropped blocks: an empty assistant message says nothing
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _tool(tool: dict[str, Any], dropped: Counter[str]) -> dict[str, Any] | None:
    if "input_schema" not in tool:  # a server tool: only the Messages API runs those
        dropped[f"tool:{tool.get('type', 'unknown')}"] += 1
        return None
    function = {
        "name": tool["name"],
        "description": tool.get("description", ""),
        "parameters": tool["input_schema"],
    }
    return {"type": "function", "function": function}

"""Request validation for the fake Chat Completions server: what the real API answers 400
to, with its error messages, for the mistakes a translator from the Messages API makes
(Anthropic-only fields and block types, tool results before or apart from the assistant
message that asked for them, unanswered tool calls).

Stricter than OpenAI in one place, on purpose: the `tool` messages must answer the calls
in the order the assistant made them.

After these rules, the body must be an instance of the installed SDK's own request type
(`CompletionCreateParamsStreaming`), nothing unknown in it at any depth (`sdk_types`).
"""

from __future__ import annotations

import re
from typing import Any

from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

from tests.fakes.sdk_types import cached_validator, type_problem

TOP_LEVEL = frozenset({
    "model", "messages", "stream", "stream_options", "tools", "tool_choice",
    "max_completion_tokens", "max_tokens", "response_format", "temperature", "top_p",
    "parallel_tool_calls", "stop", "seed", "user", "n", "presence_penalty",
    "frequency_penalty", "logprobs", "top_logprobs", "logit_bias", "metadata", "store",
    "reasoning_effort", "service_tier", "prediction", "modalities", "audio",
    "prompt_cache_key", "safety_identifier", "verbosity",
})  # fmt: skip
MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio"},
    "tool": {"role", "content", "tool_call_id"},
}
PART_TYPES = {
    "user": ("text", "image_url", "input_audio", "file"),
    "assistant": ("text", "refusal"),
}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Invalid(Exception):
    """A 400 `invalid_request_error`, as OpenAI words it."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.body = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": code,
            }
        }


def validate(body: Any) -> None:
    """Raise `Invalid` for a request the real API would refuse."""
    if not isinstance(body, dict):
        raise Invalid("We could not parse the JSON body of your request.")
    for key in body:
        if key not in TOP_LEVEL:
            raise Invalid(f"Unrecognized request argument supplied: {key}")
    if not isinstance(body.get("model"), str):
        raise Invalid("you must provide a model parameter")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Invalid("Invalid 'messages': empty array.", "messages", "empty_array")
    if "stream_options" in body and body.get("stream") is not True:
        raise Invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    for i, message in enumerate(messages):
        _message(i, message)
    _tool_sequence(messages)
    _tools(body)
    _response_format(body.get("response_format"))
    if body.get("stream") is True:  # a non-streaming body is the fake's own refusal
        _sdk_type(body)


def _sdk_type(body: dict[str, Any]) -> None:
    problem = type_problem(cached_validator(CompletionCreateParamsStreaming), body)
    if problem is not None:
        path, _, message = problem.partition(": ")
        param = re.sub(r"\.(\d+)", r"[\1]", path)  # OpenAI writes `messages[0].content`
        raise Invalid(f"Invalid '{param}': {message}", param)


def _extra(keys: set[str], allowed: set[str], where: str) -> None:
    extra = sorted(keys - allowed)
    if extra:
        raise Invalid(f"Additional properties are not allowed ('{extra[0]}' was unexpected)", where)


def _message(i: int, message: Any) -> None:
    where = f"messages[{i}]"
    role = message.get("role") if isinstance(message, dict) else None
    if role not in MESSAGE_KEYS:
        supported = "', '".join(MESSAGE_KEYS)
        raise Invalid(
            f"Invalid value: '{role}'. Supported values are: '{supported}'.",
            f"{where}.role",
            "invalid_value",
        )
    _extra(set(message), MESSAGE_KEYS[role], where)
    content = message.get("content")
    if content is None and not (role == "assistant" and message.get("tool_calls")):
        raise Invalid(
            "Invalid value for 'content': expected a string, got null.", f"{where}.content"
        )
    if isinstance(content, list):
        for j, part in enumerate(content):
            _part(f"{where}.content[{j}]", part, PART_TYPES.get(role, ("text",)))
    elif content is not None and not isinstance(content, str):
        raise Invalid(f"Invalid type for '{where}.content'.", f"{where}.content", "invalid_type")
    if role == "assistant":
        for j, call in enumerate(message.get("tool_calls") or ()):
            _tool_call(f"{where}.tool_calls[{j}]", call)
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise Invalid(f"Missing required parameter: '{where}.tool_call_id'.", where)


def _part(where: str, part: Any, types: tuple[str, ...]) -> None:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind not in types:
        supported = "', '".join(types)
        raise Invalid(
            f"Invalid value: '{kind}'. Supported values are: '{supported}'.",
            f"{where}.type",
            "invalid_value",
        )
    if kind == "text":
        _extra(set(part), {"type", "text"}, where)


def _tool_call(where: str, call: Any) -> None:
    if not isinstance(call, dict) or call.get("type") != "function":
        raise Invalid(f"Invalid value for '{where}.type'.", f"{where}.type", "invalid_value")
    _extra(set(call), {"id", "type", "function"}, where)
    function = call.get("function") or {}
    _extra(set(function), {"name", "arguments"}, f"{where}.function")
    if not isinstance(call.get("id"), str) or len(call["id"]) > 40:
        raise Invalid(f"Invalid '{where}.id': expected a string of at most 40 characters.")
    if not isinstance(function.get("arguments"), str):
        raise Invalid(
            f"Invalid type for '{where}.function.arguments': expected a string, "
            "but got an object instead.",
            f"{where}.function.arguments",
            "invalid_type",
        )


def _tool_sequence(messages: list[dict[str, Any]]) -> None:
    expected: list[str] = []
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if not expected:
                raise Invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{i}].role",
                )
            answered = expected.pop(0)
            if message["tool_call_id"] != answered:
                raise Invalid(
                    f"Invalid parameter: 'tool_call_id' of '{message['tool_call_id']}' not "
                    f"found in 'tool_calls' of previous message (expected '{answered}').",
                    f"messages.[{i}].tool_call_id",
                )
            continue
        if expected:
            _unanswered(expected)
        if message["role"] == "assistant":
            expected = [call["id"] for call in message.get("tool_calls") or ()]
    if expected:
        _unanswered(expected)


def _unanswered(ids: list[str]) -> None:
    raise Invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{', '.join(ids)}",
        "messages",
    )


def _tools(body: dict[str, Any]) -> None:
    tools = body.get("tools")
    for i, tool in enumerate(tools or ()):
        where = f"tools[{i}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise Invalid(f"Missing required parameter: '{where}.type'.", f"{where}.type")
        _extra(set(tool), {"type", "function"}, where)
        function = tool.get("function") or {}
        _extra(set(function), {"name", "description", "parameters", "strict"}, where)
        if not TOOL_NAME.match(str(function.get("name"))):
            raise Invalid(f"Invalid '{where}.function.name'.", f"{where}.function.name")
    if "parallel_tool_calls" in body:
        if not tools:
            raise Invalid(
                "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only "
                "allowed when 'tools' are specified.",
                "parallel_tool_calls",
            )
        if not isinstance(body["parallel_tool_calls"], bool):
            raise Invalid("Invalid type for 'parallel_tool_calls'.", "parallel_tool_calls")
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not tools:
        raise Invalid(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified.",
            "tool_choice",
        )
    if choice not in ("none", "auto", "required") and not (
        isinstance(choice, dict) and choice.get("type") == "function"
    ):
        raise Invalid("Invalid value for 'tool_choice'.", "tool_choice", "invalid_value")


def _response_format(value: Any) -> None:
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise Invalid("Invalid value for 'response_format.type'.", "response_format.type")
    if kind == "json_schema" and not isinstance((value.get("json_schema") or {}).get("name"), str):
        raise Invalid(
            "Missing required parameter: 'response_format.json_schema.name'.",
            "response_format.json_schema.name",
        )

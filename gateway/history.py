"""A client-supplied history checked to the Messages API's rules, before any SSE header:
what the API would refuse after the stream started is a 400 here, with the JSON path.

The shapes come from the installed SDK's request types (`anthropic.types.*Param`, the
TypedDicts the SDK itself sends), read once at import: the block types each role may
send, their required and allowed keys, and the type of every field, nested blocks
included. The rules between blocks (roles alternate, tool ids unique, every tool_result
answers a tool_use of the assistant message just before, results first) are below.
"""

from __future__ import annotations

import collections.abc
import types
from typing import Any, Literal, Union, get_args, get_origin

import typing_extensions
from anthropic.types import (
    BashCodeExecutionToolResultBlockParam,
    CodeExecutionToolResultBlockParam,
    DocumentBlockParam,
    ImageBlockParam,
    RedactedThinkingBlockParam,
    SearchResultBlockParam,
    ServerToolUseBlockParam,
    TextBlockParam,
    TextEditorCodeExecutionToolResultBlockParam,
    ThinkingBlockParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
    WebFetchToolResultBlockParam,
    WebSearchToolResultBlockParam,
)
from anthropic.types.beta import BetaCompactionBlockParam
from typing_extensions import is_typeddict

from gateway.errors import ValidationFailed

BLOCKS: dict[str, dict[str, Any]] = {
    "user": {
        "text": TextBlockParam,
        "image": ImageBlockParam,
        "document": DocumentBlockParam,
        "tool_result": ToolResultBlockParam,
        "search_result": SearchResultBlockParam,
    },
    "assistant": {
        "text": TextBlockParam,
        "tool_use": ToolUseBlockParam,
        "thinking": ThinkingBlockParam,
        "redacted_thinking": RedactedThinkingBlockParam,
        "server_tool_use": ServerToolUseBlockParam,
        "web_search_tool_result": WebSearchToolResultBlockParam,
        "web_fetch_tool_result": WebFetchToolResultBlockParam,
        # Code execution's results (the files it made are named in them), verbatim.
        "code_execution_tool_result": CodeExecutionToolResultBlockParam,
        "bash_code_execution_tool_result": BashCodeExecutionToolResultBlockParam,
        "text_editor_code_execution_tool_result": TextEditorCodeExecutionToolResultBlockParam,
        # Server-side compaction's summary, sent back verbatim (context management).
        "compaction": BetaCompactionBlockParam,
    },
}
SEQUENCES = (collections.abc.Iterable, collections.abc.Sequence, list)
MAPPINGS = (dict, collections.abc.Mapping)


def check_history(messages: list[Any]) -> None:
    """Raise a 400 naming the first thing the Messages API would reject."""
    problem = history_problem(messages)
    if problem is not None:
        path, message = problem
        raise ValidationFailed(f"Invalid messages: {path}: {message}", {"field": path})


def history_problem(messages: list[Any]) -> tuple[str, str] | None:
    """(JSON path, what is wrong) for the first problem, or None."""
    if not messages:
        return "messages", "must not be empty"
    tool_ids: set[str] = set()
    for i, message in enumerate(messages):
        path = f"messages[{i}]"
        expected = "user" if i % 2 == 0 else "assistant"
        problem = _message_problem(path, message, expected)
        if problem is None:
            previous = messages[i - 1]["content"] if i else []
            problem = _pairing_problem(path, message["content"], previous, tool_ids)
        if problem is not None:
            return problem
    if messages[-1]["role"] != "user":
        return f"messages[{len(messages) - 1}].role", "the last message must be from the user"
    return None


def _message_problem(path: str, message: Any, expected: str) -> tuple[str, str] | None:
    if not isinstance(message, dict):
        return path, "must be an object"
    extra = sorted(set(message) - {"role", "content"})
    if extra:
        return path, f"unknown keys {extra}"
    if message.get("role") != expected:
        return f"{path}.role", f"must be {expected!r}: roles alternate, starting with user"
    content = message.get("content")
    if isinstance(content, str):
        return None if content.strip() else (f"{path}.content", "must not be empty")
    if not isinstance(content, list) or not content:
        return f"{path}.content", "must be a string or a non-empty list of blocks"
    for j, block in enumerate(content):
        problem = _block_problem(f"{path}.content[{j}]", block, BLOCKS[expected])
        if problem is not None:
            return problem
    return None


def _block_problem(path: str, block: Any, allowed: dict[str, Any]) -> tuple[str, str] | None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return path, "must be an object with a string 'type'"
    shape = allowed.get(block["type"])
    if shape is None:
        return f"{path}.type", f"must be one of {sorted(allowed)} here"
    return _typed_dict_problem(path, block, shape)


def _pairing_problem(
    path: str, content: Any, previous: Any, tool_ids: set[str]
) -> tuple[str, str] | None:
    """Tool ids unique; each tool_result answers a tool_use of the message before, and
    results come first; every tool_use of the message before is answered."""
    if isinstance(content, str):
        return _unanswered(path, previous, set())
    asked = {b["id"] for b in _blocks(previous) if b["type"] == "tool_use"}
    answered: set[str] = set()
    results_done = False
    for j, block in enumerate(content):
        where = f"{path}.content[{j}]"
        if block["type"] in ("tool_use", "server_tool_use"):
            if block["id"] in tool_ids:
                return f"{where}.id", f"duplicate tool use id {block['id']!r}"
            tool_ids.add(block["id"])
        if block["type"] != "tool_result":
            results_done = True
            continue
        tool_use_id = block["tool_use_id"]
        if tool_use_id not in asked or tool_use_id in answered:
            return f"{where}.tool_use_id", (
                f"{tool_use_id!r} answers no unanswered tool_use of the message before"
            )
        if results_done:
            return where, "tool_result blocks must come first in their message"
        answered.add(tool_use_id)
    return _unanswered(path, previous, answered)


def _unanswered(path: str, previous: Any, answered: set[str]) -> tuple[str, str] | None:
    missing = sorted(
        b["id"] for b in _blocks(previous) if b["type"] == "tool_use" and b["id"] not in answered
    )
    if missing:
        return f"{path}.content", f"no tool_result for tool_use {missing} of the message before"
    return None


def _blocks(content: Any) -> list[dict[str, Any]]:
    return content if isinstance(content, list) else []


def _typed_dict_problem(path: str, value: Any, shape: Any) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return path, "must be an object"
    hints, required = _hints(shape)
    missing = sorted(required - set(value))
    if missing:
        return path, f"missing required keys {missing}"
    extra = sorted(set(value) - set(hints))
    if extra:
        return path, f"unknown keys {extra}"
    if value.get("type") == "text" and not str(value.get("text", "")).strip():
        return f"{path}.text", "text blocks must contain non-whitespace text"
    for key, item in value.items():
        problem = _problem(f"{path}.{key}", item, hints[key])
        if problem is not None:
            return problem
    return None


def _problem(path: str, value: Any, annotation: Any) -> tuple[str, str] | None:
    """Whether `value` fits `annotation`, as far as JSON can carry it; annotations this
    does not know (file inputs, say) pass."""
    origin = get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        return _union_problem(path, value, get_args(annotation))
    if origin is Literal:
        allowed = get_args(annotation)
        return None if value in allowed else (path, f"must be one of {list(allowed)}")
    if is_typeddict(annotation):
        return _typed_dict_problem(path, value, annotation)
    if annotation in (str, int, float, bool):
        return _scalar_problem(path, value, annotation)
    if origin in SEQUENCES:
        if not isinstance(value, list):
            return path, "must be a list"
        (item,) = get_args(annotation) or (Any,)
        for k, element in enumerate(value):
            problem = _problem(f"{path}[{k}]", element, item)
            if problem is not None:
                return problem
        return None
    if origin in MAPPINGS or annotation is dict:
        return None if isinstance(value, dict) else (path, "must be an object")
    return None


def _scalar_problem(path: str, value: Any, kind: type) -> tuple[str, str] | None:
    if kind is float:
        fits = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind is int:
        fits = isinstance(value, int) and not isinstance(value, bool)
    else:
        fits = isinstance(value, kind)
    return None if fits else (path, f"must be a {_JSON_NAMES[kind]}")


_JSON_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _union_problem(path: str, value: Any, members: tuple[Any, ...]) -> tuple[str, str] | None:
    if value is None:
        return None if type(None) in members else (path, "must not be null")
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        tagged = [m for m in members if is_typeddict(m) and _tag_fits(m, value["type"])]
        if tagged:  # a discriminated union: the member its `type` names decides
            return _typed_dict_problem(path, value, tagged[0])
        if any(is_typeddict(m) for m in members):
            return f"{path}.type", f"unknown block type {value['type']!r}"
    problems = [_problem(path, value, m) for m in members if m is not type(None)]
    if any(p is None for p in problems):
        return None
    return problems[0]


def _tag_fits(shape: Any, tag: str) -> bool:
    annotation = _hints(shape)[0].get("type")
    return get_origin(annotation) is Literal and tag in get_args(annotation)


_REQUIRED: Any = typing_extensions.Required
_NOT_REQUIRED: Any = typing_extensions.NotRequired
_HINTS: dict[Any, tuple[dict[str, Any], frozenset[str]]] = {}


def _hints(shape: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A TypedDict's field types without their Required wrappers, and its required keys
    (read from the wrappers: the SDK's postponed annotations hide them from
    `__required_keys__`), cached."""
    if shape not in _HINTS:
        hints: dict[str, Any] = {}
        required: set[str] = set()
        for key, hint in typing_extensions.get_type_hints(shape, include_extras=True).items():
            wrapper: Any = get_origin(hint)
            if wrapper is _REQUIRED:
                required.add(key)
            if wrapper in (_REQUIRED, _NOT_REQUIRED):
                (hint,) = get_args(hint)
            hints[key] = hint
        _HINTS[shape] = hints, frozenset(required)
    return _HINTS[shape]

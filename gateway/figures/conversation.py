"""The tool results of a conversation, as the loop keeps it: the gateway's tools' results
(user messages' `tool_result` blocks) and the API's own (web search, web fetch), each with
the name and input of the call it answers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson


def tool_results(messages: Iterable[dict[str, Any]]) -> Iterator[tuple[str, str, Any, str]]:
    """(tool_use_id, tool, input, text) of every tool result in a conversation: the
    gateway's tools' results and the API's own (web search, web fetch)."""
    uses: dict[str, tuple[str, Any]] = {}
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type", "")
            if kind in ("tool_use", "server_tool_use"):
                uses[str(block.get("id"))] = (str(block.get("name")), block.get("input"))
            elif kind == "tool_result" or kind.endswith("_tool_result"):
                if block.get("is_error"):
                    continue
                use_id = str(block.get("tool_use_id"))
                name, tool_input = uses.get(use_id, (kind, None))
                yield use_id, name, tool_input, _text_of(block.get("content"))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        if texts:
            return "\n".join(texts)
    if content is None:
        return ""
    return orjson.dumps(content, default=str).decode()

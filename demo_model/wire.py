"""A reply as the Messages API sends it: the streaming event sequence, or one Message.

The stream is the real one: `message_start` (with usage), `ping`, per block
`content_block_start` / `content_block_delta`... / `content_block_stop` (`text_delta` of a
few words each, tool input as several `input_json_delta` fragments), `message_delta`
(stop reason, output tokens), `message_stop`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from demo_model.reply import Reply, Say, Think, block_id

__all__ = ["message", "sse", "stream_events", "usage_of"]

WORDS_PER_DELTA = 3
JSON_FRAGMENT_CHARS = 24
_WORD = re.compile(r"\s*\S+\s*")


def usage_of(request: dict[str, Any], reply: Reply) -> dict[str, int]:
    """Token counts of the size a real model would report: about four characters a token."""
    sent = len(orjson.dumps({k: v for k, v in request.items() if k != "stream"}))
    thought = sum(len(b.thinking) for b in reply.blocks if isinstance(b, Think))
    produced = len(reply.text) + thought + sum(len(orjson.dumps(c.input)) + 20 for c in reply.calls)
    return {
        "input_tokens": max(1, sent // 4),
        "output_tokens": max(1, produced // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _content(request: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for index, block in enumerate(reply.blocks):
        if isinstance(block, Say):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, Think):
            signature = block_id("sig", [request.get("messages"), block.thinking], index)
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": signature})
        else:
            tool_id = block_id("toolu", request.get("messages"), index)
            blocks.append({"type": "tool_use", "id": tool_id, "name": block.name,
                           "input": block.input})  # fmt: skip
    return blocks


def message(request: dict[str, Any], reply: Reply, model: str) -> dict[str, Any]:
    """The non-streaming response body."""
    return {
        "id": block_id("msg", request.get("messages")),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _content(request, reply),
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": usage_of(request, reply),
    }


def stream_events(request: dict[str, Any], reply: Reply, model: str) -> list[dict[str, Any]]:
    """The streaming event sequence of the same message."""
    whole = message(request, reply, model)
    usage = dict(whole["usage"], output_tokens=1)
    start = dict(whole, content=[], stop_reason=None, usage=usage)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(whole["content"]):
        events.extend(_block_events(index, block))
    events.append({
        "type": "message_delta",
        "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": whole["usage"]["output_tokens"]},
    })  # fmt: skip
    events.append({"type": "message_stop"})
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in text_pieces(block["text"])]
    elif block["type"] == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in text_pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:
        start = dict(block, input={})
        raw = orjson.dumps(block["input"]).decode()
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in json_pieces(raw)]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def text_pieces(text: str) -> list[str]:
    """A few words per piece, whitespace kept, so the pieces join back to the text."""
    words = _WORD.findall(text)
    if "".join(words) != text:  # leading/trailing whitespace only: keep it exact
        return [text] if text else []
    return ["".join(words[i : i + WORDS_PER_DELTA]) for i in range(0, len(words), WORDS_PER_DELTA)]


def json_pieces(raw: str) -> list[str]:
    """The API starts a tool input with an empty fragment, then sends it in pieces."""
    return [""] + [
        raw[i : i + JSON_FRAGMENT_CHARS] for i in range(0, len(raw), JSON_FRAGMENT_CHARS)
    ]


def sse(event: dict[str, Any]) -> bytes:
    kind: str = event["type"]
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"

"""A Message (what a batch request's `succeeded` result holds) as the SSE `data` payloads a
streaming call would have carried, so the stream translator turns it into the same events,
history and usage as a live call: one translator, one relay.

Each block is started empty and filled by one delta (a stream sends many; joined, they
are the same), as the API streams it: text by `text_delta` (citations by
`citations_delta`), tool input by `input_json_delta`, thinking by `thinking_delta` and
`signature_delta`, compaction by `compaction_delta`; other blocks arrive whole.
"""

from __future__ import annotations

from typing import Any

import orjson

BATCH_TIER = "batch"


def message_payloads(message: dict[str, Any]) -> list[bytes]:
    # A result of the Batches API was billed at its price, whatever the body says.
    usage = {**(message.get("usage") or {}), "service_tier": BATCH_TIER}
    # As a stream starts: no content, no stop yet (those come in the deltas).
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    raw: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message.get("content") or ()):
        raw.extend(_block_events(index, block))
    stop = {
        "stop_reason": message.get("stop_reason"),
        "stop_sequence": message.get("stop_sequence"),
    }
    for key in ("stop_details", "container"):  # a stream's message_delta names them too
        if message.get(key) is not None:
            stop[key] = message[key]
    delta: dict[str, Any] = {"type": "message_delta", "delta": stop, "usage": usage}
    if message.get("context_management") is not None:
        delta["context_management"] = message["context_management"]
    raw.append(delta)
    raw.append({"type": "message_stop"})
    return [orjson.dumps(event) for event in raw]


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block.get("type")
    deltas: list[dict[str, Any]] = []
    start = dict(block)
    if kind == "text":
        start["text"] = ""
        start.pop("citations", None)  # each comes as a delta, as the stream sends them
        deltas = [{"type": "citations_delta", "citation": c} for c in block.get("citations") or ()]
        deltas.append({"type": "text_delta", "text": block["text"]})
    elif kind in ("tool_use", "server_tool_use"):
        start["input"] = {}
        deltas = [
            {
                "type": "input_json_delta",
                "partial_json": orjson.dumps(block.get("input") or {}).decode(),
            }
        ]
    elif kind == "thinking":
        start.update(thinking="", signature="")
        deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
        if block.get("signature"):
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "compaction" and block.get("content") is not None:
        start["content"] = None
        delta = {"type": "compaction_delta", "content": block["content"]}
        if start.pop("encrypted_content", None) is not None:  # the stream's delta has it
            delta["encrypted_content"] = block["encrypted_content"]
        deltas = [delta]
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]

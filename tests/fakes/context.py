"""Context management as the Messages API does it, for the fake: the prompt's size against
the model's window, server-side compaction (`compact_20260112`) and context editing
(`clear_tool_uses_20250919`, `clear_thinking_20251015`).

Requests are checked as the API checks them: the beta header each feature needs, the edit
shapes (the keys of the installed SDK's `Beta*EditParam` TypedDicts), what the model
record supports, the compaction trigger's floor, `clear_thinking` first and only with
thinking on. A prompt over the model's window is refused ("prompt is too long").

Compaction: content before the newest `compaction` block is ignored; past the trigger, the
conversation is summarised into a new block that opens the answer, and the answering call
sees only the summary (its usage), while the summary's own tokens are reported apart in
`usage.iterations`. Editing: past the trigger, old tool results are cleared (the newest
`keep` stay) and the answer's `message_delta` says what was cleared.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from anthropic.types.beta import (
    BetaClearThinking20251015EditParam,
    BetaClearToolUses20250919EditParam,
    BetaCompact20260112EditParam,
)

from tests.fakes.prompt_cache import prompt_blocks, tokens

EDIT_TYPES: dict[str, Any] = {
    "compact_20260112": BetaCompact20260112EditParam,
    "clear_tool_uses_20250919": BetaClearToolUses20250919EditParam,
    "clear_thinking_20251015": BetaClearThinking20251015EditParam,
}
BETA_OF = {
    "compact_20260112": "compact-2026-01-12",
    "clear_tool_uses_20250919": "context-management-2025-06-27",
    "clear_thinking_20251015": "context-management-2025-06-27",
}
MIN_COMPACT_TRIGGER = 50_000
DEFAULT_TRIGGER = {"compact_20260112": 150_000, "clear_tool_uses_20250919": 100_000}
CLEARED = "[cleared]"


def count(body: dict[str, Any]) -> int:
    return sum(tokens(block) for block, _ in prompt_blocks(body))


@dataclass
class Applied:
    """What the API did to one request before answering it."""

    body: dict[str, Any]
    """The prompt the model answered from (compacted or edited)."""
    compaction: str | None = None
    """The new summary, when this request compacted."""
    compaction_usage: dict[str, int] = field(default_factory=dict)
    applied_edits: list[dict[str, Any]] | None = None
    """`context_management.applied_edits`; None when the request asked for no edits."""


def problem(info: dict[str, Any], body: dict[str, Any], betas: set[str]) -> str | None:
    """The `invalid_request_error` message for a context request the API refuses."""
    has_compaction = any(
        isinstance(block, dict) and block.get("type") == "compaction"
        for message in body.get("messages") or ()
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )
    if has_compaction and "compact-2026-01-12" not in betas:
        return "messages: compaction blocks require the compact-2026-01-12 beta"
    config = body.get("context_management")
    if config is None:
        return None
    if not isinstance(config, dict) or set(config) - {"edits"}:
        return "context_management: Extra inputs are not permitted"
    edits = config.get("edits") or []
    for n, edit in enumerate(edits):
        found = _edit_problem(info, body, betas, n, edit)
        if found is not None:
            return found
    return None


def _edit_problem(
    info: dict[str, Any], body: dict[str, Any], betas: set[str], n: int, edit: Any
) -> str | None:
    caps = info["capabilities"]["context_management"]
    kind = edit.get("type") if isinstance(edit, dict) else None
    where = f"context_management.edits.{n}"
    if kind not in EDIT_TYPES:
        return f"{where}.type: Input tag {kind!r} found using 'type' does not match"
    if BETA_OF[kind] not in betas:
        return f"{where}: {kind} requires the anthropic-beta header {BETA_OF[kind]}"
    extra = set(edit) - set(EDIT_TYPES[kind].__annotations__)
    if extra:
        return f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted"
    if not caps.get("supported") or not caps.get(kind, {}).get("supported"):
        return f"{where}: {kind} is not supported by {info['id']}"
    trigger = (edit.get("trigger") or {}).get("value")
    if kind == "compact_20260112" and trigger is not None and trigger < MIN_COMPACT_TRIGGER:
        return f"{where}.trigger.value: must be at least {MIN_COMPACT_TRIGGER}"
    if kind == "clear_thinking_20251015":
        if n != 0:
            return f"{where}: clear_thinking_20251015 must be the first edit"
        thinking = (body.get("thinking") or {}).get("type")
        if thinking not in ("enabled", "adaptive"):
            return f"{where}: clear_thinking_20251015 requires thinking to be enabled"
    return None


def apply(body: dict[str, Any], window: int | None) -> Applied | str:
    """The prompt the model sees, or the refusal for one over the window."""
    body = copy.deepcopy(body)
    body["messages"] = _after_compaction(body["messages"])
    size = count(body)
    edits = (body.get("context_management") or {}).get("edits")
    compacts = any(edit["type"] == "compact_20260112" for edit in edits or ())
    # Cleared tool results never reach the model; a compaction reads the whole prompt.
    if window is not None and size > window and (edits is None or compacts):
        return f"prompt is too long: {size} tokens > {window} maximum"
    if edits is None:
        return Applied(body)
    applied = Applied(body, applied_edits=[])
    for edit in edits:
        kind = edit["type"]
        trigger = (edit.get("trigger") or {}).get("value") or DEFAULT_TRIGGER.get(kind, 0)
        if kind == "compact_20260112" and size >= trigger:
            _compact(applied, size)
        elif kind == "clear_tool_uses_20250919" and size >= trigger:
            keep = (edit.get("keep") or {}).get("value", 3)
            cleared = _clear_tool_uses(body["messages"], keep)
            if cleared:
                after = count(body)
                assert applied.applied_edits is not None
                applied.applied_edits.append({
                    "type": kind, "cleared_input_tokens": size - after,
                    "cleared_tool_uses": cleared,
                })  # fmt: skip
                size = after
    if window is not None and size > window:
        return f"prompt is too long: {size} tokens > {window} maximum"
    return applied


def _after_compaction(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the API reads of a history: from its newest compaction block on."""
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        if not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            block = content[j]
            if block.get("type") == "compaction" and block.get("content") is not None:
                return [{**messages[i], "content": content[j:]}, *messages[i + 1 :]]
    return messages


def _compact(applied: Applied, size: int) -> None:
    messages = applied.body["messages"]
    summary = f"Summary of the {len(messages)} messages so far ({size} tokens)."
    applied.compaction = summary
    applied.compaction_usage = {
        "input_tokens": size, "output_tokens": tokens(summary.encode()),
        "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
    }  # fmt: skip
    block = {"type": "compaction", "content": summary}
    applied.body["messages"] = [{"role": "assistant", "content": [block]}]


def _clear_tool_uses(messages: list[dict[str, Any]], keep: int) -> int:
    results = [
        block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("content") != CLEARED
    ]
    old = results[: max(0, len(results) - keep)]
    for block in old:
        block["content"] = CLEARED
    return len(old)

"""Thinking blocks bound to the conversation: what a run does with the ones it replays.

On the models that bind (`BINDS` of `providers/anthropic/lineup.py`), a thinking block
sent back after anything before it changed (the system prompt, the tools, an earlier
message) is a 400, "The block is bound to a different conversation" (platform docs,
build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation). Within one
run the gateway keeps that prefix byte-stable: the date, the tools and the system prompt
are fixed when the run starts (the cache breakpoints move, but `cache_control` is not
content). Between the runs of a session it cannot: the date in the system prompt moves on
the next day, each request's `tools` allow-list and `code_execution` choose the offered
tools, and an MCP server's `list_changed` replaces its tools. So when a run starts with
thinking blocks already in its history (an earlier run's, or a client's), and the model
binds:

- where the run's `thinking` takes `block_binding` (adaptive or budget thinking), every call
  sends `prefix_mismatch_behavior: "drop_block"` with its beta: the API drops the blocks
  that no longer fit, keeps those that do, and nothing fails;
- otherwise (`between_tools`, `disabled`, no `thinking`: the docs' "if your request turns
  thinking off, remove thinking manually") the run drops those blocks from the history
  itself, before its first call.
"""

from __future__ import annotations

from typing import Any

BINDING_BETA = "thinking-binding-controls-2026-08-01"
"""The beta `thinking.block_binding` needs (platform docs, preserved-thinking)."""
DROP_BLOCK = {"prefix_mismatch_behavior": "drop_block"}
THINKING_BLOCKS = frozenset({"thinking", "redacted_thinking"})


def takes_block_binding(thinking: dict[str, Any] | None) -> bool:
    return thinking is not None and thinking.get("type") in ("adaptive", "enabled")


def has_thinking(messages: list[dict[str, Any]]) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") in THINKING_BLOCKS
        for message in messages
        if message.get("role") == "assistant" and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def settle_history(
    binds: bool, thinking: dict[str, Any] | None, messages: list[dict[str, Any]]
) -> bool:
    """At a run's start: True when its calls must send `drop_block`; or the replayed
    thinking blocks dropped from `messages` (all but its last message) in place."""
    earlier = messages[:-1]
    if not binds or not has_thinking(earlier):
        return False
    if takes_block_binding(thinking):
        return True
    for index, message in enumerate(earlier):
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            kept = [b for b in content if b.get("type") not in THINKING_BLOCKS]
            messages[index] = {**message, "content": kept or [{"type": "text", "text": "…"}]}
    return False


def with_drop_block(
    thinking: dict[str, Any] | None, betas: tuple[str, ...]
) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """A call's `thinking` and betas with `drop_block`."""
    if thinking is None or not takes_block_binding(thinking):
        return thinking, betas
    return {**thinking, "block_binding": DROP_BLOCK}, (*betas, BINDING_BETA)

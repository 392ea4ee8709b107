"""Keeping a long run inside the model's context window.

Three ways, chosen once per run from `GATEWAY_CONTEXT` and the model record:

- `compact`: the Messages API's server-side compaction (`compact_20260112`): past the
  trigger, it summarises the older conversation into a `compaction` block at the start of
  its answer; the block goes back verbatim and the API ignores what came before it.
- `edit`: the Messages API's context editing: `clear_tool_uses_20250919` replaces old tool
  results with a placeholder past the trigger, keeping the newest; with thinking on,
  `clear_thinking_20251015` drops the thinking of older turns.
- `gateway`: upstreams without either (Chat Completions, the demo model): before a call
  whose history would pass the trigger, the gateway clears old tool results itself,
  keeping the newest, as LiteLLM's polyfill of context editing does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

Strategy = Literal["compact", "edit", "gateway"]
COMPACT_EDIT = "compact_20260112"
CLEAR_TOOL_USES_EDIT = "clear_tool_uses_20250919"
CLEAR_THINKING_EDIT = "clear_thinking_20251015"
COMPACT_BETA = "compact-2026-01-12"
CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
MIN_COMPACT_TRIGGER = 50_000
"""The API's floor for a compaction trigger."""
DEFAULT_TRIGGER = 150_000
"""The API's own default for compaction; used for every strategy when nothing is set."""
CLEARED = "[Tool result cleared to save context. Call the tool again if you need it.]"
CHARS_PER_TOKEN = 4
KEEP_THINKING_TURNS = 10
"""As the Node server kept them."""


@dataclass(frozen=True)
class ContextPlan:
    """How one run keeps its conversation inside the window."""

    strategy: Strategy
    trigger_tokens: int
    keep_tool_uses: int
    clear_thinking: bool = False
    """Thinking is on: also drop the thinking of older turns (`edit` only)."""
    edits: tuple[dict[str, Any], ...] = field(default=())
    betas: tuple[str, ...] = ()

    @property
    def request(self) -> dict[str, Any] | None:
        """The Messages API `context_management` parameter, or None."""
        return {"edits": list(self.edits)} if self.edits else None


def api_plan(
    strategy: Literal["compact", "edit"], trigger: int, keep: int, *, thinking: bool
) -> ContextPlan:
    """The request parts of the API's own strategies (SDK: `BetaContextManagementConfigParam`)."""
    if strategy == "compact":
        edit = {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": trigger}}
        return ContextPlan("compact", trigger, keep, edits=(edit,), betas=(COMPACT_BETA,))
    edits: list[dict[str, Any]] = []
    if thinking:  # the API wants it first, and only with thinking on
        edits.append(
            {
                "type": CLEAR_THINKING_EDIT,
                "keep": {"type": "thinking_turns", "value": KEEP_THINKING_TURNS},
            }
        )
    edits.append(
        {
            "type": CLEAR_TOOL_USES_EDIT,
            "trigger": {"type": "input_tokens", "value": trigger},
            "keep": {"type": "tool_uses", "value": keep},
        }
    )
    return ContextPlan(
        "edit",
        trigger,
        keep,
        clear_thinking=thinking,
        edits=tuple(edits),
        betas=(CONTEXT_MANAGEMENT_BETA,),
    )


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """About four characters a token, the serialised history."""
    return len(orjson.dumps(messages)) // CHARS_PER_TOKEN


@dataclass(frozen=True)
class Cleared:
    tool_uses: int
    input_tokens: int


def clear_old_tool_results(messages: list[dict[str, Any]], keep: int) -> Cleared:
    """Replace the content of every tool result but the newest `keep` with a short notice
    (the run's and the session's history are the model's view from now on). Messages are
    replaced, never changed in place: others may hold them. The tool_use blocks and their
    ids stay, so the history stays valid for every API."""
    places = [
        (i, j)
        for i, message in enumerate(messages)
        if message["role"] == "user" and isinstance(message["content"], list)
        for j, block in enumerate(message["content"])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    count = chars = 0
    for i, j in places[: max(0, len(places) - keep)]:
        block = messages[i]["content"][j]
        if block.get("content") == CLEARED:
            continue
        chars += len(orjson.dumps(block.get("content"))) - len(CLEARED)
        content = list(messages[i]["content"])
        content[j] = {**block, "content": CLEARED}
        messages[i] = {**messages[i], "content": content}
        count += 1
    return Cleared(count, max(0, chars) // CHARS_PER_TOKEN)

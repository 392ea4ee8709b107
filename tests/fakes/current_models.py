"""The December 2026 lineup as the fake serves it, and the rules the current models add.

Each rule with the page of the platform docs (platform.claude.com/docs/en/...) it is from:

- `models/sonnet-5-5/whats-new-sonnet-5-5` ("Turn off up-front thinking with
  between_tools"): Claude Sonnet 5.5 refuses `thinking: {"type": "disabled"}` and takes
  `{"type": "between_tools"}` instead, at efforts low, medium and high only (xhigh and
  max are a 400); its progress updates, the notes it writes between tool calls, still come
  back as `thinking` blocks, with text.
- the same page ("Text between tool calls") and `build-with-claude/extended-thinking`
  ("Controlling thinking display"): on Sonnet 5.5 and Opus 5.5 thinking is on by default
  with `display: "omitted"`, so every `thinking` block comes back empty (signature only);
  `"summarized"` returns the text of all of them, `"updates"` (beta
  `thinking-display-updates-2026-08-18`) only the progress updates' text.
- `build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation`: on the
  models it lists, a `thinking` block replayed after anything before it changed (`system`,
  `tools`, an earlier message) or to another model is a 400 "The block is bound to a
  different conversation"; `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`
  with beta `thinking-binding-controls-2026-08-01` removes such blocks (and the rest of that
  turn's consecutive thinking blocks) instead. `cache_control` marks are not content.
  A message's string content counts as the one text block it stands for.
- `about-claude/models/overview` and the model pages: ids, windows, output limits; Claude
  Sonnet 5 is "Active (legacy)" (the Models API says `active`).

The fake binds a block by its signature: `bound:` and a hash of the model and the prefix the
request that produced it had.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tests.fakes.models import model_info

DISPLAY_BETA = "thinking-display-updates-2026-08-18"
BINDING_BETA = "thinking-binding-controls-2026-08-01"
BOUND_PREFIX = "bound:"
BINDING_MODELS = frozenset({
    "claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-1",
    "claude-fable-5-2", "claude-mythos-5-1", "claude-mythos-5-2",
})  # fmt: skip
OMITTED_BY_DEFAULT = frozenset({"claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"})
"""Models whose `thinking.display` defaults to "omitted"."""
BETWEEN_TOOLS_EFFORTS = ("low", "medium", "high")
BOUND_MESSAGE = (
    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is bound to "
    "a different conversation. Remove the block, or set "
    '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)


def current_catalogue() -> dict[str, dict[str, Any]]:
    """Sonnet 5.5 (between_tools, no disabled), Opus 5.5 (adaptive always on), Haiku 5.5
    (adaptive or disabled)."""
    efforts = ("low", "medium", "high", "xhigh", "max")
    models = [
        model_info("claude-sonnet-5-5", efforts=efforts, disabled=False, between_tools=True),
        model_info("claude-opus-5-5", efforts=efforts, disabled=False, between_tools=False),
        model_info("claude-haiku-5-5", efforts=efforts, between_tools=False),
    ]
    return {m["id"]: m for m in models}


def problem(body: dict[str, Any], betas: set[str]) -> str | None:
    """What the current models' rules refuse in `body` (the record's own limits aside)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict):
        return None
    if thinking.get("display") == "updates" and DISPLAY_BETA not in betas:
        return f'thinking.display: "updates" requires the {DISPLAY_BETA} beta'
    if thinking.get("block_binding") is not None and BINDING_BETA not in betas:
        return f"thinking.block_binding: requires the {BINDING_BETA} beta"
    effort = (body.get("output_config") or {}).get("effort")
    if thinking.get("type") == "between_tools" and effort not in (None, *BETWEEN_TOOLS_EFFORTS):
        return f"thinking.type.between_tools is not supported with effort {effort!r}"
    return None


def display_of(body: dict[str, Any]) -> str:
    """How the request's thinking comes back: omitted, summarized, updates or
    between_tools (progress updates only, with text)."""
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "between_tools":
        return "between_tools"
    default = "omitted" if body.get("model") in OMITTED_BY_DEFAULT else "summarized"
    return str(thinking.get("display") or default)


def shown(display: str, *, progress: bool) -> bool:
    """Whether a thinking block's text comes back at this display."""
    if display in ("updates", "between_tools"):
        return progress
    return display == "summarized"


def _prefix_hash(model: str, body: dict[str, Any], upto: int) -> str:
    prefix = {
        "model": model,
        "system": _unmarked(body.get("system")),
        "tools": _unmarked(body.get("tools")),
        "messages": [_normal(m) for m in _unmarked(body["messages"][:upto])],
    }
    text = json.dumps(prefix, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _normal(message: dict[str, Any]) -> dict[str, Any]:
    """String content is one text block, as the API reads it."""
    content = message["content"]
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content}]}
    return message


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def bound_signature(body: dict[str, Any]) -> str:
    """The signature of a thinking block the answer to `body` makes."""
    model = str(body.get("model"))
    return BOUND_PREFIX + _prefix_hash(model, body, len(body["messages"]))


def check_bindings(body: dict[str, Any]) -> tuple[str | None, list[str]]:
    """(the 400's message, or None; the paths of the blocks dropped with `drop_block`).
    On a drop the body's messages lose those blocks, as the model sees them."""
    model = str(body.get("model"))
    if model not in BINDING_MODELS:
        return None, []
    behaviour = ((body.get("thinking") or {}).get("block_binding") or {}).get(
        "prefix_mismatch_behavior"
    )
    dropped: list[str] = []
    for i, message in enumerate(body["messages"]):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        failing = [j for j, block in enumerate(content) if _fails(block, model, body, i)]
        if not failing:
            continue
        if behaviour != "drop_block":
            return BOUND_MESSAGE.format(i=i, j=failing[0]), []
        gone = _with_consecutive(content, failing)
        dropped += [f"messages.{i}.content.{j}" for j in sorted(gone)]
        message["content"] = [b for j, b in enumerate(content) if j not in gone]
    return None, dropped


def _fails(block: Any, model: str, body: dict[str, Any], i: int) -> bool:
    if not isinstance(block, dict) or block.get("type") != "thinking":
        return False
    signature = str(block.get("signature", ""))
    if not signature.startswith(BOUND_PREFIX):
        return True  # a model that binds takes only blocks bound to a conversation
    return signature != BOUND_PREFIX + _prefix_hash(model, body, i)


def _with_consecutive(content: list[Any], failing: list[int]) -> set[int]:
    """A removal takes the rest of that turn's consecutive thinking blocks."""
    gone = set(failing)
    for j in failing:
        k = j + 1
        while k < len(content) and content[k].get("type") in ("thinking", "redacted_thinking"):
            gone.add(k)
            k += 1
    return gone

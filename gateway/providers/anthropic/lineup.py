"""What the Models API does not say of a model and the platform docs do: the fallback table.

A model record names the `thinking.type` values a model takes (`between_tools` included),
its efforts and its lifecycle; it does not say which `thinking.display` values a model
takes, which models bind their thinking blocks to the conversation, or which active model
the docs call legacy. Those come from here, each from the page named:

- `thinking.display` "updates" (beta `thinking-display-updates-2026-08-18`: the progress
  updates' text only, reasoning omitted): Claude Sonnet 5.5, Opus 5.5 and the Fable and
  Mythos 5.x models (build-with-claude/extended-thinking, "Controlling thinking display";
  models/sonnet-5-5/whats-new-sonnet-5-5, "Text between tool calls").
- `thinking.display` "summarized" on a model whose default is "omitted": those, and Claude
  Haiku 5.5 (models/haiku-5-5/whats-new-haiku-5-5).
- thinking blocks bound to the model and the conversation, and
  `thinking.block_binding` (beta `thinking-binding-controls-2026-08-01`): the models listed
  by build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation.
- legacy ("Active (legacy)" on the model pages, `active` in the Models API) and the current
  model of each line: about-claude/models/overview; models/sonnet-5/overview.
"""

from __future__ import annotations

import re

DISPLAY_BETA = "thinking-display-updates-2026-08-18"
_FABLE_MYTHOS = ("claude-fable-5-1", "claude-fable-5-2", "claude-mythos-5-1", "claude-mythos-5-2")
DISPLAY_UPDATES = frozenset(("claude-sonnet-5-5", "claude-opus-5-5", *_FABLE_MYTHOS))
DISPLAY_SUMMARIZED = DISPLAY_UPDATES | {"claude-haiku-5-5"}
BINDS = DISPLAY_SUMMARIZED
"""The fix page's list is these seven models."""
CURRENT = {"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-5-5"}
LEGACY = {
    "claude-sonnet-5": CURRENT["sonnet"],
    "claude-opus-5": CURRENT["opus"],
    "claude-haiku-4-5": CURRENT["haiku"],
}
"""Active models the docs call legacy, and the model they point to."""
_DATED = re.compile(r"-\d{8}$")


def alias(model: str) -> str:
    """A dated id's alias (`claude-haiku-4-5-20251001` -> `claude-haiku-4-5`)."""
    return _DATED.sub("", model)

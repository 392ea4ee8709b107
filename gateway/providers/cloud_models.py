"""What each Claude model takes on Amazon Bedrock and Google Cloud Vertex AI: the clouds
have no Models API for Claude, so the records ship here (pure; the ids are in
gateway/cloud_ids.py).

Source: Anthropic's "Claude on Amazon Bedrock" and "Claude on Vertex AI" pages and the
anthropic SDK 2.14.0, as read on 2026-12-05. A capability this table is not sure of is
left off (its request is refused with a 400 naming the upstream rather than sent to
fail): no server tools, code execution or skills, no API-side context management (the
gateway clears old tool results itself), which the clouds do not offer to every model or
region alike.

The 5.5 lineup and Fable/Mythos (Bedrock's Claude Opus 5.5 model card; the Vercel AI
SDK's Bedrock and Vertex release notes for Sonnet and Haiku 5.5): 1M context (Haiku 5.5:
200K, no cloud page gives more), 128K output, the five efforts; Sonnet 5.5 refuses
`disabled` and takes `between_tools` (thinking off with the notes between tool calls
still shown: kind "progress"); Opus 5.5 thinks always, and so do Fable and Mythos (as
Fable 5 does on Vertex); Haiku 5.5 takes `disabled`, no budgets, and has no native
structured output on Bedrock (left off on both: a record is the clouds'). The Claude 5
and Haiku 4.5 models name the current model the docs point to (legacy, `lineup.CURRENT`).
Of what the platform docs' fallback table (providers/anthropic/lineup.py) adds, only that
these models bind their thinking blocks to the conversation is kept (a fact of the model:
with thinking off the gateway drops the replayed blocks itself, with thinking on too).
`display` "updates" and `block_binding` need betas the clouds' pages do not list (the
cloud bodies carry neither), and `display` "summarized" is not on their pages either; so
with thinking on, every thinking block on a cloud is reasoning.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.cloud_ids import anthropic_id
from gateway.providers.anthropic.catalog import ModelRecord
from gateway.providers.anthropic.lineup import CURRENT

SOURCE = "Claude on Amazon Bedrock / Vertex AI model pages and anthropic SDK 2.14.0"
RETRIEVED = "2026-12-05"
EFFORTS = frozenset({"low", "medium", "high", "max"})
EFFORTS_5_5 = EFFORTS | {"xhigh"}
_BASE = ModelRecord(
    id="",
    lifecycle="active",
    source="provider",
    citations=True,
    thinking_disabled=True,
    structured_outputs=True,
    block_binding=False,  # its beta is not on the clouds' pages: the run drops blocks itself
)
_CLAUDE_5 = replace(
    _BASE,
    max_tokens=128_000,
    max_input_tokens=1_000_000,
    thinking_adaptive=True,
    efforts=EFFORTS,
)
_CLAUDE_4_5 = replace(_BASE, max_tokens=64_000, max_input_tokens=200_000, thinking_budget=True)
_ALWAYS_THINKS = replace(
    _CLAUDE_5, thinking_disabled=False, efforts=EFFORTS_5_5, binds_thinking=True
)
_HAIKU_5_5 = replace(
    _ALWAYS_THINKS, max_input_tokens=200_000, thinking_disabled=True, structured_outputs=False
)
RECORDS: dict[str, ModelRecord] = {
    "claude-sonnet-5-5": replace(_ALWAYS_THINKS, thinking_between_tools=True),
    "claude-opus-5-5": _ALWAYS_THINKS,
    "claude-haiku-5-5": _HAIKU_5_5,
    **dict.fromkeys(
        ("claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1"),
        _ALWAYS_THINKS,
    ),
    "claude-opus-5": replace(_CLAUDE_5, legacy_successor=CURRENT["opus"]),
    "claude-sonnet-5": replace(_CLAUDE_5, legacy_successor=CURRENT["sonnet"]),
    "claude-haiku-4-5": replace(_CLAUDE_4_5, legacy_successor=CURRENT["haiku"]),
    "claude-sonnet-4-5-20250929": replace(
        _CLAUDE_4_5, lifecycle="deprecated", retires_at="2026-11-30T00:00:00+00:00"
    ),
}
"""By the Messages API's id."""


def cloud_record(name: str) -> ModelRecord:
    """The record of a cloud's model under the gateway's name of it; a model this table
    does not know gets the safe defaults (nothing optional is sent to it)."""
    known = anthropic_id(name)
    if known is None or known not in RECORDS:
        return ModelRecord(id=name, display_name=name)
    return replace(RECORDS[known], id=name, display_name=f"{known} on {name.split('/')[0]}")

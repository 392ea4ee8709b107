"""What the demo model says in one call: text, tool calls, and why it stopped."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["Call", "Reply", "Say", "Think", "block_id"]


@dataclass(frozen=True)
class Say:
    """A text block."""

    text: str


@dataclass(frozen=True)
class Think:
    """A thinking block (sent when the request enables extended thinking)."""

    thinking: str


@dataclass(frozen=True)
class Call:
    """A tool_use block."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """One assistant message. `stop_reason` defaults from the blocks, as the API sets it."""

    blocks: tuple[Think | Say | Call, ...]
    forced_stop: str | None = field(default=None)

    @property
    def stop_reason(self) -> str:
        if self.forced_stop is not None:
            return self.forced_stop
        return "tool_use" if self.calls else "end_turn"

    @property
    def calls(self) -> list[Call]:
        return [b for b in self.blocks if isinstance(b, Call)]

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.blocks if isinstance(b, Say))


def block_id(prefix: str, seed: Any, index: int = 0) -> str:
    """A deterministic id (`toolu_...`, `msg_...`): the same conversation gets the same ids,
    a longer one new ids, so ids never repeat within a conversation."""
    digest = hashlib.sha256(orjson.dumps(seed, option=orjson.OPT_SORT_KEYS) + b"#%d" % index)
    return f"{prefix}_demo{digest.hexdigest()[:20]}"

"""Read a Messages API request the way a model reads it: the question being answered, the
tool calls made for it so far and what they returned, and what the caller allows."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["Conversation", "Step", "read_request"]

_TODAY = re.compile(r"\b(?:today(?:'s date)? is|current date:?)\s*(\d{4}-\d{2}-\d{2})", re.I)


@dataclass(frozen=True)
class Step:
    """One tool call of this question and its result (`content` is what the model saw)."""

    name: str
    input: dict[str, Any]
    content: str
    is_error: bool
    data: Any = field(default=None, compare=False)
    """The result parsed as JSON, when it is JSON (the SEC tools answer in JSON)."""


@dataclass(frozen=True)
class Conversation:
    question: str
    """The user's latest question."""
    earlier: tuple[str, ...]
    """Earlier questions of the same conversation, oldest first (for follow-ups)."""
    steps: tuple[Step, ...]
    """Tool calls made since the question, in order."""
    turns: int
    """Assistant messages since the question."""
    tools: frozenset[str]
    """Names of the tools the request offers."""
    tools_off: bool
    """`tool_choice` is `none`: answer now, without tools."""
    today: dt.date

    def done(self, name: str) -> list[Step]:
        return [s for s in self.steps if s.name == name]

    def can(self, name: str) -> bool:
        return not self.tools_off and name in self.tools


def read_request(body: dict[str, Any]) -> Conversation:
    questions, steps, turns = _walk(body.get("messages", []))
    choice = body.get("tool_choice") or {}
    names = frozenset(str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict))
    return Conversation(
        question=questions[-1] if questions else "",
        earlier=tuple(questions[:-1]),
        steps=tuple(steps),
        turns=turns,
        tools=names,
        tools_off=isinstance(choice, dict) and choice.get("type") == "none",
        today=_today(body.get("system")),
    )


def _walk(messages: list[dict[str, Any]]) -> tuple[list[str], list[Step], int]:
    """The user's questions; the tool steps and assistant turns since the last one."""
    questions: list[str] = []
    steps: list[Step] = []
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    turns = 0
    for msg in messages:
        blocks = _blocks(msg.get("content"))
        if msg.get("role") == "assistant":
            turns += 1
            for b in blocks:
                if b.get("type") == "tool_use":
                    pending[str(b.get("id"))] = (str(b.get("name")), _dict(b.get("input")))
            continue
        results = [b for b in blocks if b.get("type") == "tool_result"]
        # Text beside tool results is the caller's note ("Tool round 2 of 10 is done"),
        # not a new question: only a message without results asks one.
        text = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip()
        if text and not results:
            questions.append(text)
            steps, pending, turns = [], {}, 0
        for b in results:
            if str(b.get("tool_use_id")) in pending:
                name, args = pending.pop(str(b.get("tool_use_id")))
                steps.append(_step(name, args, b))
    return questions, steps, turns


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _step(name: str, args: dict[str, Any], block: dict[str, Any]) -> Step:
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    text = str(content or "")
    try:
        data = orjson.loads(text) if text[:1] in ("{", "[") else None
    except orjson.JSONDecodeError:
        data = None
    return Step(name, args, text, bool(block.get("is_error")), data)


def _today(system: Any) -> dt.date:
    if isinstance(system, list):
        system = " ".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    match = _TODAY.search(system) if isinstance(system, str) else None
    if match:
        try:
            return dt.date.fromisoformat(match.group(1))
        except ValueError:
            pass
    return dt.datetime.now(dt.UTC).date()

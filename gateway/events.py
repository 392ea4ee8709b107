"""The events a run produces, and `fold`, which turns them into the `/api/research` answer.

Events are plain dicts (serialised once, with orjson, when they enter the run's log):
a run relays thousands of them per second, and a model object per event would cost more
than everything else the gateway does with it. Each constructor below documents one type;
PROTOCOL.md is the full table. The log adds `run_id` and `seq` to every event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

Event = dict[str, Any]

PROTOCOL_VERSION = 1
USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
TERMINAL_TYPES = frozenset({"final", "error"})
# Events that come from the model itself: the first one ends "time to first event".
MODEL_EVENT_TYPES = frozenset({"delta", "thinking_start", "thinking", "tool_call"})

Outcome = Literal[
    "completed",
    "max_turns",
    "max_tokens",
    "refusal",
    "doom_loop",
    "cancelled",
    "client_disconnected",
    "context_exceeded",
]
OUTCOME_BY_STOP_REASON: dict[str, Outcome] = {
    "end_turn": "completed",
    "stop_sequence": "completed",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "model_context_window_exceeded": "context_exceeded",
}
ToolPhase = Literal[
    "tool_start", "tool_input_delta", "tool_use", "tool_executing", "tool_result", "tool_error"
]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def empty_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


def system_info(
    *, model: str, session_id: str, tools: int, upstream: str, trace_id: str | None
) -> Event:
    """First event of every run."""
    return {
        "type": "system_info",
        "message": "Research run started",
        "model": model,
        "timestamp": now_iso(),
        "session_id": session_id,
        "tools": tools,
        "upstream": upstream,
        "protocol": PROTOCOL_VERSION,
        "trace_id": trace_id,
    }


def turn_start(turn: int, max_turns: int) -> Event:
    """Before each model call."""
    return {"type": "turn_start", "turn": turn, "max_turns": max_turns}


def tool_call(phase: ToolPhase, tool: dict[str, Any], turn: int, **fields: Any) -> Event:
    """One phase of one tool call; `tool["id"]` ties the phases together."""
    return {"type": "tool_call", "phase": phase, "tool": tool, "turn": turn, **fields}


def turn_complete(
    turn: int, tool_count: int, stop_reason: str | None, usage: Event, upstream: str
) -> Event:
    """After each model call and its tools; `usage` is this call's, `upstream` who answered."""
    return {
        "type": "turn_complete",
        "turn": turn,
        "tool_count": tool_count,
        "stop_reason": stop_reason,
        "usage": usage,
        "upstream": upstream,
    }


def warning(code: str, message: str, turns: int, **fields: Any) -> Event:
    """Something the client should know; the run goes on."""
    return {"type": "warning", "code": code, "message": message, "turns": turns, **fields}


def final(
    *,
    model: str,
    run_id: str,
    session_id: str,
    outcome: Outcome,
    stop_reason: str | None,
    turns: int,
    tool_calls: int,
    duration_ms: float,
    usage: Event,
    result: str,
    trace_id: str | None,
    structured: Any = None,
) -> Event:
    """Last event of a run that did not fail. `result` is the run's text blocks, each
    turn's text joined with a blank line: the answer as a reader of the stream saw it; with
    an `output_format`, it is the final answer's JSON text and `structured` its value."""
    extra: Event = {"structured": structured} if structured is not None else {}
    return {
        "type": "final",
        "completed": now_iso(),
        "model": model,
        "run_id": run_id,
        "session_id": session_id,
        "outcome": outcome,
        "stop_reason": stop_reason,
        "turns": turns,
        "tool_calls": tool_calls,
        "duration_ms": round(duration_ms, 1),
        "usage": usage,
        "result": result,
        "trace_id": trace_id,
        **extra,
    }


def citation(citation: Event, turn: int) -> Event:
    """A citation the model attached to the text it is writing."""
    return {"type": "citation", "citation": citation, "turn": turn}


def error(body: Event) -> Event:
    """Last event of a run that failed; `body` is the error JSON of PROTOCOL."""
    return {"type": "error", "error": body}


def fold(stream: list[Event]) -> Event:
    """The `/api/research` answer (Node shape, filled in) from a run's events."""
    text: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    result: Event = {"text": "", "thinkingBlocks": thinking, "signatures": [], "citations": []}
    for event in stream:
        kind = event["type"]
        if kind == "delta":
            text.append(event["text"])
        elif kind in _THINKING_TYPES:
            _fold_thinking(thinking, result["signatures"], event)
        elif kind == "tool_call":
            _fold_tool_call(calls, event)
        elif kind == "citation":
            result["citations"].append(event["citation"])
        elif kind == "system_info":
            result.update(model=event["model"], session_id=event["session_id"])
        elif kind in TERMINAL_TYPES:
            result.update(_fold_terminal(event))
    result["toolCalls"] = list(calls.values())
    if "outcome" not in result:  # no final event: the text as it streamed
        result["text"] = "".join(text)
    return result


_THINKING_TYPES = frozenset({"thinking_start", "thinking", "thinking_signature"})


def _fold_thinking(thinking: list[dict[str, Any]], signatures: list[str], event: Event) -> None:
    kind = event["type"]
    if kind == "thinking_start":
        thinking.append({"thinking": "", "signature": None})
    elif kind == "thinking" and thinking:
        thinking[-1]["thinking"] += event["text"]
    elif kind == "thinking_signature" and thinking:
        thinking[-1]["signature"] = event["signature"]
        signatures.append(event["signature"])


def _fold_tool_call(calls: dict[str, dict[str, Any]], event: Event) -> None:
    tool = event["tool"]
    call = calls.setdefault(tool["id"], {"id": tool["id"], "name": tool.get("name")})
    if event.get("server"):
        call["server"] = True
    phase = event["phase"]
    if phase in ("tool_use", "tool_executing"):
        call["input"] = tool["input"]
    elif phase == "tool_result":
        call["result"] = {
            "content": event["preview"],
            "is_error": False,
            "bytes": event["bytes"],
            "truncated": event["truncated"],
        }
        call["duration_ms"] = event["duration_ms"]
    elif phase == "tool_error":
        call["result"] = {"content": event["error"], "is_error": True}
        call["duration_ms"] = event["duration_ms"]


def _fold_terminal(event: Event) -> Event:
    if event["type"] == "error":
        return {"error": event["error"]}
    keys = ("run_id", "session_id", "model", "outcome", "stop_reason", "turns", "usage")
    folded = {key: event[key] for key in keys}
    folded.update(
        text=event["result"],
        duration_ms=event["duration_ms"],
        tool_call_count=event["tool_calls"],
        trace_id=event.get("trace_id"),
    )
    if "structured" in event:
        folded["structured"] = event["structured"]
    return folded

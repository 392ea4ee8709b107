"""`fold`: a run's events, as read back from its log, turned into the `/api/research`
answer (the Node shape, filled in properly).

The `match` covers every `EventType`, so a new event type fails the type check here until
it is folded (or knowingly skipped).
"""

from __future__ import annotations

from typing import Any, assert_never, cast

from gateway.events import EventType

Folded = dict[str, Any]


class _Fold:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[dict[str, Any]] = []
        self.calls: dict[str, dict[str, Any]] = {}
        self.costs: list[float | None] = []
        self.result: Folded = {
            "text": "",
            "thinkingBlocks": self.thinking,
            "signatures": [],
            "citations": [],
        }

    def add(self, event: dict[str, Any]) -> None:
        kind = cast(EventType, event["type"])
        match kind:
            case "delta":
                self.text.append(event["text"])
            case "thinking_start":
                kind = event.get("kind", "reasoning")
                self.thinking.append({"thinking": "", "signature": None, "kind": kind})
            case "thinking" if self.thinking:
                self.thinking[-1]["thinking"] += event["text"]
            case "thinking_signature" if self.thinking:
                self.thinking[-1]["signature"] = event["signature"]
                self.result["signatures"].append(event["signature"])
            case "tool_call":
                _fold_tool_call(self.calls, event)
            case "citation" | "file":
                self._collect(event)
            case "system_info":
                self.result.update(model=event["model"], session_id=event["session_id"])
            case "final" | "error":
                self.result.update(_fold_terminal(event))
            case (
                "thinking"
                | "thinking_signature"
                | "thinking_complete"
                | "turn_start"
                | "turn_complete"
                | "warning"
                | "system_init"
                | "figures"
                | "context_edited"
            ):
                self._progress(event)
            case _:
                assert_never(kind)

    def _collect(self, event: dict[str, Any]) -> None:
        """Citations, and the files code execution made (`files`, only when there are)."""
        if event["type"] == "citation":
            self.result["citations"].append(event["citation"])
        else:
            keep = ("file_id", "filename", "mime_type", "size_bytes", "turn")
            self.result.setdefault("files", []).append({k: event[k] for k in keep})

    def _progress(self, event: dict[str, Any]) -> None:
        """The stream's progress: the answer has it in its totals, but a failed run's cost
        is its completed turns'."""
        if event["type"] == "turn_complete":
            self.costs.append(event.get("cost_usd"))


def fold(stream: list[dict[str, Any]]) -> Folded:
    """The `/api/research` answer from a run's events (as parsed from its log)."""
    state = _Fold()
    for event in stream:
        state.add(event)
    result = state.result
    result["toolCalls"] = list(state.calls.values())
    if "outcome" not in result:  # no final event: the text as it streamed
        result["text"] = "".join(state.text)
    if "total_cost_usd" not in result:  # no final event: the turns that completed
        priced = None not in state.costs
        result["total_cost_usd"] = sum(c or 0.0 for c in state.costs) if priced else None
    return result


def _fold_tool_call(calls: dict[str, dict[str, Any]], event: dict[str, Any]) -> None:
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


def _fold_terminal(event: dict[str, Any]) -> Folded:
    if event["type"] == "error":
        return {"error": event["error"]}
    keys = ("run_id", "session_id", "model", "outcome", "stop_reason", "turns", "usage")
    folded = {key: event[key] for key in keys}
    folded.update(
        text=event["result"],
        duration_ms=event["duration_ms"],
        tool_call_count=event["tool_calls"],
        trace_id=event.get("trace_id"),
        total_cost_usd=event.get("total_cost_usd"),
        subtype=event.get("subtype"),
        is_error=event.get("is_error"),
        num_turns=event.get("num_turns"),
        details=event.get("details"),
    )
    for key in ("structured", "figures"):
        if key in event:
            folded[key] = event[key]
    return folded

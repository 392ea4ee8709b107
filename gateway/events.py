"""The events a run produces: one typed union, every event built by a constructor here.

Events are plain dicts at run time (serialised once, with orjson, when they enter the
run's log): a run relays thousands of them per second, and a model object per event would
cost more than everything else the gateway does with it. The `TypedDict`s give mypy the
shapes: a new event type is one class, one constructor and one `EventType` entry, and
`fold` (gateway/fold.py) fails the type check until it handles it. PROTOCOL.md is the
full table. The log adds `run_id` and `seq` to every event.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal, NotRequired, TypedDict, cast

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
REFUSAL_CATEGORIES = frozenset(
    ("cyber", "bio", "frontier_llm", "reasoning_extraction", "general_harms")
)
"""`stop_details.category` as the SDK's `RefusalStopDetails` has it; others are `other`."""


def refusal_details(stop_details: dict[str, Any] | None) -> dict[str, Any] | None:
    """`final.details` of a refusal: its category (None when it names none) and
    explanation; None when the model gave no `stop_details`."""
    if not stop_details or stop_details.get("type", "refusal") != "refusal":
        return None
    category = stop_details.get("category")
    if category is not None and category not in REFUSAL_CATEGORIES:
        category = "other"
    return {"category": category, "explanation": stop_details.get("explanation")}


Subtype = Literal["success", "error_max_turns", "error_during_execution"]
"""Node's `final.subtype`: how the Agent SDK named the end of a run."""
SUBTYPE_BY_OUTCOME: dict[str, Subtype] = {
    # The model answered (a refusal and a cut-off answer are answers, as in Node)...
    "completed": "success",
    "max_tokens": "success",
    "refusal": "success",
    # ... or was stopped for its turns; anything else broke the run off.
    "max_turns": "error_max_turns",
    "doom_loop": "error_max_turns",
}
ToolPhase = Literal[
    "tool_start", "tool_input_delta", "tool_use", "tool_executing", "tool_result", "tool_error"
]
EventType = Literal[
    "system_info",
    "system_init",
    "turn_start",
    "thinking_start",
    "thinking",
    "thinking_signature",
    "thinking_complete",
    "delta",
    "citation",
    "tool_call",
    "turn_complete",
    "warning",
    "context_edited",
    "final",
    "error",
    "file",
    "figures",
]


class _Stamped(TypedDict):
    run_id: NotRequired[str]
    """Added by the run's log."""
    seq: NotRequired[int]
    """Added by the run's log: 1, 2, 3, ... per run."""


class SystemInfo(_Stamped):
    type: Literal["system_info"]
    message: str
    model: str
    timestamp: str
    session_id: str
    tools: int
    upstream: str
    protocol: int
    trace_id: str | None


class SystemInit(_Stamped):
    """Node's own first event, which its clients read the session id from."""

    type: Literal["system_init"]
    session_id: str
    tools: int
    model: str


class TurnStart(_Stamped):
    type: Literal["turn_start"]
    turn: int
    max_turns: int


class ThinkingStart(_Stamped):
    type: Literal["thinking_start"]
    turn: int
    kind: Literal["reasoning", "progress"]
    """`progress`: a note the model writes before a tool call (a progress update), not its
    reasoning."""


class ThinkingDelta(_Stamped):
    type: Literal["thinking"]
    text: str


class ThinkingSignature(_Stamped):
    type: Literal["thinking_signature"]
    signature: str


class ThinkingComplete(_Stamped):
    type: Literal["thinking_complete"]
    turn: int


class Delta(_Stamped):
    type: Literal["delta"]
    text: str


class Citation(_Stamped):
    type: Literal["citation"]
    citation: dict[str, Any]
    turn: int


class ToolCall(_Stamped):
    type: Literal["tool_call"]
    phase: ToolPhase
    tool: dict[str, Any]
    turn: int
    partial_json: NotRequired[str]
    success: NotRequired[bool]
    preview: NotRequired[str]
    bytes: NotRequired[int]
    truncated: NotRequired[bool]
    error: NotRequired[str]
    duration_ms: NotRequired[float | None]
    server: NotRequired[bool]
    """Run by the API itself (web search, web fetch), not by the gateway."""


class TurnComplete(_Stamped):
    type: Literal["turn_complete"]
    turn: int
    tool_count: int
    stop_reason: str | None
    usage: dict[str, int]
    upstream: str
    cost_usd: float | None
    """This call's price in dollars; None when its model has no price."""


class Warning(_Stamped):
    type: Literal["warning"]
    code: str
    message: str
    turns: int
    attempt: NotRequired[int]
    delay_s: NotRequired[float]
    error_code: NotRequired[str]
    upstream: NotRequired[str]
    next_upstream: NotRequired[str]
    dropped: NotRequired[list[str]]
    model: NotRequired[str]
    file_id: NotRequired[str]


class ContextEdited(_Stamped):
    type: Literal["context_edited"]
    turn: int
    strategy: Literal["compact", "clear_tool_uses", "clear_thinking", "gateway_clear"]
    cleared_input_tokens: int | None
    """As reported: None where the API reports no count (compaction)."""
    cleared_tool_uses: int | None
    cleared_thinking_turns: NotRequired[int]
    usage: NotRequired[dict[str, int]]
    """Compaction's own tokens (its `usage.iterations` entry), counted in the turn's usage."""


class File(_Stamped):
    """A file the model made with code execution, downloadable at `/api/files/{file_id}`
    with the key that started the run."""

    type: Literal["file"]
    file_id: str
    filename: str | None
    """None when the Files API could not be asked (a `warning` says so)."""
    mime_type: str | None
    size_bytes: int | None
    turn: int


class Figures(_Stamped):
    """Each figure of `final.result` and where it came from (gateway/figures), just
    before `final`."""

    type: Literal["figures"]
    figures: list[dict[str, Any]]
    """{text, start, end, value, unit, status, sources, formula}: `start`/`end` are offsets
    in `final.result`; each source {tool_use_id, tool, accession?, concept?, period?, form?}."""
    counts: dict[str, int]
    """Figures per status: sourced, derived, unsourced, other_period."""


class Final(_Stamped):
    type: Literal["final"]
    completed: str
    model: str
    run_id: str  # type: ignore[misc]  # always set on final, not only by the log
    session_id: str
    outcome: str
    stop_reason: str | None
    turns: int
    tool_calls: int
    duration_ms: float
    usage: dict[str, int]
    result: str
    trace_id: str | None
    subtype: Subtype
    is_error: bool
    num_turns: int
    total_cost_usd: float | None
    """The run's price in dollars; None when a model call of it has no price."""
    details: dict[str, Any] | None
    """A refusal's `{category, explanation}` (`stop_details`); None otherwise."""
    structured: NotRequired[Any]
    figures: NotRequired[dict[str, int]]
    """The figure check's counts per status (with GATEWAY_FIGURE_CHECK=annotate)."""


class Error(_Stamped):
    type: Literal["error"]
    error: dict[str, Any]


Event = (
    SystemInfo
    | SystemInit
    | TurnStart
    | ThinkingStart
    | ThinkingDelta
    | ThinkingSignature
    | ThinkingComplete
    | Delta
    | Citation
    | ToolCall
    | TurnComplete
    | Warning
    | ContextEdited
    | Final
    | Error
    | File
    | Figures
)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def empty_usage() -> dict[str, int]:
    return dict.fromkeys(USAGE_KEYS, 0)


def system_info(
    *, model: str, session_id: str, tools: int, upstream: str, trace_id: str | None
) -> SystemInfo:
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


def system_init(*, session_id: str, tools: int, model: str) -> SystemInit:
    """Right after `system_info`, as the Node server sent it."""
    return {"type": "system_init", "session_id": session_id, "tools": tools, "model": model}


def turn_start(turn: int, max_turns: int) -> TurnStart:
    """Before each model call."""
    return {"type": "turn_start", "turn": turn, "max_turns": max_turns}


def thinking_start(
    turn: int, kind: Literal["reasoning", "progress"] = "reasoning"
) -> ThinkingStart:
    return {"type": "thinking_start", "turn": turn, "kind": kind}


def thinking(text: str) -> ThinkingDelta:
    return {"type": "thinking", "text": text}


def thinking_signature(signature: str) -> ThinkingSignature:
    return {"type": "thinking_signature", "signature": signature}


def thinking_complete(turn: int) -> ThinkingComplete:
    return {"type": "thinking_complete", "turn": turn}


def delta(text: str) -> Delta:
    return {"type": "delta", "text": text}


def citation(citation: dict[str, Any], turn: int) -> Citation:
    """A citation the model attached to the text it is writing."""
    return {"type": "citation", "citation": citation, "turn": turn}


def tool_call(phase: ToolPhase, tool: dict[str, Any], turn: int, **fields: Any) -> ToolCall:
    """One phase of one tool call; `tool["id"]` ties the phases together. `fields` are
    the phase's own (see `ToolCall`)."""
    return cast(
        ToolCall, {"type": "tool_call", "phase": phase, "tool": tool, "turn": turn, **fields}
    )


def turn_complete(
    turn: int,
    tool_count: int,
    stop_reason: str | None,
    usage: dict[str, int],
    upstream: str,
    cost_usd: float | None = None,
) -> TurnComplete:
    """After each model call and its tools; `usage` is this call's, `upstream` who answered,
    `cost_usd` what it cost."""
    return {
        "type": "turn_complete",
        "turn": turn,
        "tool_count": tool_count,
        "stop_reason": stop_reason,
        "usage": usage,
        "upstream": upstream,
        "cost_usd": cost_usd,
    }


def context_edited(
    turn: int,
    strategy: str,
    cleared_input_tokens: int | None,
    cleared_tool_uses: int | None,
    **fields: Any,
) -> ContextEdited:
    """The conversation was compacted or cleared (by the API, or by the gateway itself)."""
    event = {
        "type": "context_edited",
        "turn": turn,
        "strategy": strategy,
        "cleared_input_tokens": cleared_input_tokens,
        "cleared_tool_uses": cleared_tool_uses,
        **fields,
    }
    return cast(ContextEdited, event)


def warning(code: str, message: str, turns: int, **fields: Any) -> Warning:
    """Something the client should know; the run goes on. `fields` see `Warning`."""
    event = {"type": "warning", "code": code, "message": message, "turns": turns, **fields}
    return cast(Warning, event)


def file(
    file_id: str, filename: str | None, mime_type: str | None, size_bytes: int | None, turn: int
) -> File:
    """A file code execution made in `turn` (its metadata as the Files API gave it)."""
    return {
        "type": "file",
        "file_id": file_id,
        "filename": filename,
        "mime_type": mime_type,
        "size_bytes": size_bytes,
        "turn": turn,
    }


def figures(found: list[dict[str, Any]], counts: dict[str, int]) -> Figures:
    """The figure check of the answer `final` is about to carry."""
    return {"type": "figures", "figures": found, "counts": counts}


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
    usage: dict[str, int],
    result: str,
    trace_id: str | None,
    total_cost_usd: float | None = None,
    structured: Any = None,
    details: dict[str, Any] | None = None,
) -> Final:
    """Last event of a run that did not fail. `result` is the concatenation of the run's
    `delta` texts, byte for byte (the loop streams a blank line between turns' texts);
    with an `output_format`, `structured` is the final answer's value. `subtype`,
    `is_error` and `num_turns` are Node's names for the outcome and the turns."""
    subtype = SUBTYPE_BY_OUTCOME.get(outcome, "error_during_execution")
    event: Final = {
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
        "subtype": subtype,
        "is_error": subtype != "success",
        "num_turns": turns,
        "total_cost_usd": None if total_cost_usd is None else round(total_cost_usd, 8),
        "details": details,
    }
    if structured is not None:
        event["structured"] = structured
    return event


def error(body: dict[str, Any]) -> Error:
    """Last event of a run that failed; `body` is the error JSON of PROTOCOL."""
    return {"type": "error", "error": body}

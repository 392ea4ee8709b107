"""Each run's Messages API requests, shaped by the run's options and the model record.

`plan_run` turns a validated request into the parts every call of the run shares (thinking
form, effort, structured output, `max_tokens` cap, server tools), refusing before any SSE
header what the model cannot do. `request_params` builds one call's body, with the prompt
cache breakpoints: tool definitions, the system prompt, and the newest message, so each call
reads the previous call's prefix. Nothing that changes within a run comes before a
breakpoint: the date is its own system block after the cached prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway import events
from gateway.context import (
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    COMPACT_EDIT,
    DEFAULT_TRIGGER,
    MIN_COMPACT_TRIGGER,
    ContextPlan,
    api_plan,
)
from gateway.errors import ValidationFailed
from gateway.events import Event
from gateway.providers.anthropic import lineup
from gateway.providers.anthropic.catalog import ModelRecord
from gateway.providers.anthropic.code_execution import CODE_EXECUTION_TOOL, container_param
from gateway.providers.plan import CallPlan

DEFAULT_THINKING_BUDGET = 8_192
BETWEEN_TOOLS_EFFORTS = ("low", "medium", "high")
"""`between_tools` is a 400 at xhigh and max (models/sonnet-5-5/whats-new-sonnet-5-5)."""
MIN_THINKING_BUDGET = 1_024
EPHEMERAL = {"type": "ephemeral"}
# Blocks the API lets carry a breakpoint (thinking blocks may not, server-tool results are
# left alone).
_CACHEABLE = frozenset({"text", "tool_result", "tool_use", "image", "document"})
SERVER_TOOL_DEFINITIONS: dict[str, dict[str, Any]] = {
    "web_search": {"type": "web_search_20260318", "name": "web_search", "max_uses": 5},
    "web_fetch": {"type": "web_fetch_20260318", "name": "web_fetch", "max_uses": 5},
}

ThinkingChoice = str | int  # "off" | "adaptive" | "on" | a budget in tokens


@dataclass(frozen=True)
class ContextChoice:
    """The operator's context settings (`GATEWAY_CONTEXT*`)."""

    mode: str = "compact"
    trigger_tokens: int | None = None
    keep_tool_uses: int = 3


def plan_run(
    record: ModelRecord,
    *,
    max_tokens: int,
    thinking: ThinkingChoice,
    effort: str | None,
    effort_explicit: bool,
    output_format: dict[str, Any] | None,
    server_tools: tuple[str, ...],
    cache: bool,
    context: ContextChoice = ContextChoice(),
    parallel_tools: bool = True,
    code_execution: bool = False,
    skills: tuple[str, ...] = (),
) -> CallPlan:
    """The run's shared call parts; `ValidationFailed` for what the model cannot do."""
    record.check_usable()
    cap = min(max_tokens, record.max_tokens) if record.max_tokens else max_tokens
    notices: list[Event] = []
    if record.lifecycle == "deprecated":
        retires = f" and retires on {record.retires_at[:10]}" if record.retires_at else ""
        message = f"The model {record.id} is deprecated{retires}; ask the operator to move on"
        notices.append(events.warning("model_deprecated", message, 0, model=record.id))
    effort_param = _effort(record, effort, explicit=effort_explicit)
    thinking_param = _thinking(record, thinking, cap, notices, effort_param)
    if record.source == "defaults" and effort_explicit:
        message = "Effort is not set: the model's capabilities could not be read"
        notices.append(events.warning("effort_skipped", message, 0))
    if output_format is not None and not record.structured_outputs:
        raise ValidationFailed(
            f"The model {record.id} does not support structured output (output_format)",
            {"field": "output_format", "model": record.id},
        )
    return CallPlan(
        model=record.id,
        max_tokens=cap,
        thinking=thinking_param,
        effort=effort_param,
        output_schema=output_format["schema"] if output_format is not None else None,
        server_tools=_server_tools(record, server_tools, code_execution=code_execution),
        context_window=record.max_input_tokens,
        structured=output_format is not None,
        cache=cache,
        context=_context(record, context, thinking=_thinking_on(thinking_param)),
        parallel_tools=parallel_tools,
        notices=tuple(notices),
        container=container_param(skills) if code_execution else None,
        betas=_thinking_betas(thinking_param),
        binds_thinking=record.binds_thinking,
        block_binding=record.block_binding,
    )


def _thinking_on(thinking: dict[str, Any] | None) -> bool:
    return thinking is not None and thinking.get("type") in ("adaptive", "enabled")


def _context(record: ModelRecord, choice: ContextChoice, *, thinking: bool) -> ContextPlan | None:
    """Compaction where the record has it (and `compact` is asked for), else context
    editing, else the gateway's own clearing; None when the operator turned it off."""
    if choice.mode == "off":
        return None
    trigger = choice.trigger_tokens or DEFAULT_TRIGGER
    if record.max_input_tokens:
        trigger = min(trigger, record.max_input_tokens * 3 // 4)
    edits = record.context_edits
    if choice.mode == "compact" and COMPACT_EDIT in edits:
        return api_plan(
            "compact", max(trigger, MIN_COMPACT_TRIGGER), choice.keep_tool_uses, thinking=False
        )
    if CLEAR_TOOL_USES_EDIT in edits:
        clear_thinking = thinking and CLEAR_THINKING_EDIT in edits
        return api_plan("edit", trigger, choice.keep_tool_uses, thinking=clear_thinking)
    return ContextPlan("gateway", trigger, choice.keep_tool_uses)


def _thinking(
    record: ModelRecord,
    choice: ThinkingChoice,
    max_tokens: int,
    notices: list[Event],
    effort: str | None = None,
) -> dict[str, Any] | None:
    if choice == "off" or choice == 0:
        return _thinking_off(record, effort)
    param = _thinking_asked(record, choice, max_tokens, notices)
    if param is not None and param["type"] == "adaptive" and record.display_summarized:
        # Reasoning and the notes between tool calls shown (the default is "omitted").
        return {**param, "display": "summarized"}
    return param


def _thinking_off(record: ModelRecord, effort: str | None) -> dict[str, Any] | None:
    """Thinking off, with the notes a model writes between tool calls still shown: its
    `between_tools` form (at the efforts that take it), else display "updates" where
    thinking is always on, else `disabled` where the model takes it; else nothing."""
    if record.thinking_between_tools and effort in (None, *BETWEEN_TOOLS_EFFORTS):
        return {"type": "between_tools"}
    if record.display_updates and record.thinking_adaptive:
        return {"type": "adaptive", "display": "updates"}
    # Say "off" only to a model that takes it; otherwise leave the field out.
    return {"type": "disabled"} if record.thinking and record.thinking_disabled else None


def _thinking_betas(thinking: dict[str, Any] | None) -> tuple[str, ...]:
    return (lineup.DISPLAY_BETA,) if thinking and thinking.get("display") == "updates" else ()


def _thinking_asked(
    record: ModelRecord, choice: ThinkingChoice, max_tokens: int, notices: list[Event]
) -> dict[str, Any] | None:
    if record.source == "defaults":
        message = "Thinking is off: the model's capabilities could not be read"
        notices.append(events.warning("thinking_skipped", message, 0))
        return None
    if not record.thinking:
        raise _refuse(record, "does not support thinking")
    if choice == "adaptive":
        if not record.thinking_adaptive:
            raise _refuse(record, "takes thinking only as a budget: send true or a number")
        return {"type": "adaptive"}
    if record.thinking_adaptive and (choice == "on" or not record.thinking_budget):
        return {"type": "adaptive"}  # a budget means "on" for a model that decides itself
    budget = DEFAULT_THINKING_BUDGET if choice == "on" else int(choice)
    if budget >= max_tokens:
        raise ValidationFailed(
            f"thinking must be below the max_tokens of {max_tokens}", {"field": "thinking"}
        )
    return {"type": "enabled", "budget_tokens": budget}


def _effort(record: ModelRecord, effort: str | None, *, explicit: bool) -> str | None:
    if record.source == "defaults":
        return None
    if effort is None or effort in record.efforts:
        return effort
    if not explicit:  # the operator's default: leave it out where the model has no such level
        return None
    levels = sorted(record.efforts) or "none"
    raise _refuse(record, f"does not take effort {effort!r} (it takes: {levels})", "effort")


def _server_tools(
    record: ModelRecord, names: tuple[str, ...], *, code_execution: bool = False
) -> tuple[dict[str, Any], ...]:
    if record.source == "models_api":
        missing = [name for name in names if name not in record.server_tools]
        if missing:
            raise _refuse(record, f"does not offer the server tools {missing}", "tools")
        if code_execution and "code_execution" not in record.server_tools:
            raise _refuse(record, "does not offer the code execution tool", "code_execution")
    tools = tuple(SERVER_TOOL_DEFINITIONS[name] for name in names)
    return (*tools, CODE_EXECUTION_TOOL) if code_execution else tools


def _refuse(record: ModelRecord, what: str, field: str = "thinking") -> ValidationFailed:
    return ValidationFailed(f"The model {record.id} {what}", {"field": field, "model": record.id})


def cached_tools(tools: list[dict[str, Any]], *, cache: bool) -> list[dict[str, Any]]:
    """The run's tool definitions, the last one marked as a cache breakpoint."""
    if not cache or not tools:
        return tools
    return [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]


def system_blocks(
    prompt: str | None, suffix: dict[str, Any] | None, *, cache: bool
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if prompt:
        blocks.append(
            {"type": "text", "text": prompt, **({"cache_control": EPHEMERAL} if cache else {})}
        )
    return [*blocks, suffix] if suffix else blocks


def with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history with the newest message's last cacheable block marked; the stored
    history itself is never changed (it is re-sent and saved as the model saw it)."""
    if not messages:
        return messages
    last = messages[-1]
    content = last["content"]
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": EPHEMERAL}]
        return [*messages[:-1], {**last, "content": blocks}]
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if isinstance(block, dict) and block.get("type") in _CACHEABLE:
            if block.get("type") == "text" and not block.get("text"):
                continue
            marked = [
                *content[:index],
                {**block, "cache_control": EPHEMERAL},
                *content[index + 1 :],
            ]
            return [*messages[:-1], {**last, "content": marked}]
    return messages

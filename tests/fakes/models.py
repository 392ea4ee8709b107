"""The fake's model catalogue: Models API `ModelInfo` records, and the 400s the Messages API
answers for a request a model cannot take (a thinking form, an effort level, structured
output, web search, `max_tokens` over the model's own)."""

from __future__ import annotations

from typing import Any

from anthropic.types import (
    ToolChoiceAnyParam,
    ToolChoiceAutoParam,
    ToolChoiceNoneParam,
    ToolChoiceToolParam,
)

TOOL_CHOICES: dict[str, Any] = {
    "auto": ToolChoiceAutoParam, "any": ToolChoiceAnyParam, "tool": ToolChoiceToolParam,
    "none": ToolChoiceNoneParam,
}  # fmt: skip


def _yes(value: bool) -> dict[str, bool]:
    return {"supported": value}


def model_info(
    model_id: str,
    *,
    lifecycle: str = "active",
    adaptive: bool = True,
    budget: bool = False,
    efforts: tuple[str, ...] = ("low", "medium", "high", "max"),
    structured: bool = True,
    citations: bool = True,
    web_search: bool = True,
    max_tokens: int = 128_000,
    max_input_tokens: int = 1_000_000,
    retires_at: str | None = None,
    compaction: bool = True,
    editing: bool = True,
    disabled: bool = True,
    between_tools: bool = False,
) -> dict[str, Any]:
    """A `ModelInfo` as `GET /v1/models/{id}` returns it, every capability key present
    (`between_tools`: only Claude Sonnet 5.5 has it, models/sonnet-5-5/whats-new)."""
    levels = ("low", "medium", "high", "xhigh", "max")
    effort = {level: _yes(level in efforts) for level in levels}
    return {
        "type": "model",
        "id": model_id,
        "display_name": model_id.replace("-", " ").title(),
        "created_at": "2026-05-01T00:00:00Z",
        "lifecycle": lifecycle,
        "deprecated_at": "2026-08-01T00:00:00Z" if lifecycle != "active" else None,
        "retires_at": retires_at,
        "max_input_tokens": max_input_tokens,
        "max_tokens": max_tokens,
        "capabilities": {
            "batch": _yes(True),
            "citations": _yes(citations),
            "code_execution": _yes(web_search),
            "context_management": {
                "supported": compaction or editing,
                "clear_thinking_20251015": _yes(editing),
                "clear_tool_uses_20250919": _yes(editing),
                "compact_20260112": _yes(compaction),
            },
            "effort": {"supported": bool(efforts), **effort},
            "image_input": _yes(True),
            "pdf_input": _yes(True),
            "server_tools": {
                "supported": web_search,
                "code_execution": _yes(web_search),
                "web_search": _yes(web_search),
            },
            "structured_outputs": _yes(structured),
            "thinking": {
                "supported": adaptive or budget,
                "types": {
                    "adaptive": _yes(adaptive),
                    "enabled": _yes(budget),
                    "disabled": _yes(disabled),
                    "between_tools": _yes(between_tools),
                },
            },
        },
    }


def default_catalogue() -> dict[str, dict[str, Any]]:
    """Today's shapes: Claude 5 models think adaptively; Haiku 4.5 only with a budget; the
    Node default is deprecated; an old model is retired; the 5.5 models as
    `current_models` has them."""
    models = [
        model_info("claude-sonnet-5"),
        model_info("claude-opus-5"),
        model_info("claude-test-model"),
        model_info(
            "claude-haiku-4-5", adaptive=False, budget=True, efforts=(), max_tokens=64_000,
            max_input_tokens=200_000, web_search=True,
        ),
        model_info(
            "claude-sonnet-4-5-20250929", lifecycle="deprecated", adaptive=False, budget=True,
            efforts=(), max_tokens=64_000, max_input_tokens=200_000,
            retires_at="2026-11-30T00:00:00Z",
        ),
        model_info(
            "claude-3-haiku-20240307", lifecycle="retired", adaptive=False, budget=False,
            efforts=(), structured=False, citations=False, web_search=False, max_tokens=4_096,
            max_input_tokens=200_000,
        ),
    ]  # fmt: skip
    from tests.fakes.current_models import current_catalogue  # it builds on model_info

    return {**{m["id"]: m for m in models}, **current_catalogue()}


def request_problem(info: dict[str, Any], body: dict[str, Any]) -> str | None:
    """The `invalid_request_error` message the API gives for what `info` cannot take."""
    caps = info["capabilities"]
    if body.get("max_tokens", 0) > info["max_tokens"]:
        return (
            f"max_tokens: {body['max_tokens']} > {info['max_tokens']}, which is the maximum "
            f"allowed number of output tokens for {info['id']}"
        )
    problem = _thinking_problem(info, body.get("thinking")) or _tool_choice_problem(body)
    if problem:
        return problem
    config = body.get("output_config") or {}
    effort = config.get("effort")
    if effort is not None and not caps["effort"].get(effort, {}).get("supported"):
        return f"output_config.effort: {effort!r} is not supported by {info['id']}"
    if config.get("format") is not None and not caps["structured_outputs"]["supported"]:
        return f"output_config.format: structured outputs are not supported by {info['id']}"
    for i, tool in enumerate(body.get("tools") or ()):
        kind = str(tool.get("type", "custom"))
        if kind.startswith("web_search_") and not caps["server_tools"]["web_search"]["supported"]:
            return f"tools.{i}: {kind} is not supported by {info['id']}"
    return None


def _thinking_problem(info: dict[str, Any], thinking: Any) -> str | None:
    if not isinstance(thinking, dict):
        return None
    kind = thinking.get("type")
    types = info["capabilities"]["thinking"]["types"]
    if kind not in types or not types[kind]["supported"]:
        hint = " Use thinking.type.adaptive and output_config.effort instead." if (
            kind == "enabled" and types["adaptive"]["supported"]
        ) else ""  # fmt: skip
        return f"thinking.type.{kind} is not supported for this model.{hint}"
    return None


def _tool_choice_problem(body: dict[str, Any]) -> str | None:
    """`tool_choice` as the SDK's `ToolChoice*Param` types have it (`none` takes no
    `disable_parallel_tool_use`), and only with tools."""
    choice = body.get("tool_choice")
    if choice is None:
        return None
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in TOOL_CHOICES:
        return f"tool_choice.type: Input tag {kind!r} found using 'type' does not match"
    extra = set(choice) - set(TOOL_CHOICES[kind].__annotations__)
    if extra:
        return f"tool_choice.{kind}.{sorted(extra)[0]}: Extra inputs are not permitted"
    flag = choice.get("disable_parallel_tool_use")
    if flag is not None and not isinstance(flag, bool):
        return f"tool_choice.{kind}.disable_parallel_tool_use: Input should be a valid boolean"
    if not body.get("tools"):
        return "tool_choice may only be specified while providing tools."
    return None

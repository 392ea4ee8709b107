"""The model record: what the Models API says of the model a run uses, and what follows
from it for a request (thinking form, effort, `max_tokens` cap, context window, structured
outputs, server tools, lifecycle).

Read once per model with the SDK's `models.retrieve` and kept; a model the service does
not know, or one it has retired, is refused before any SSE header. When the Models API
cannot be read at all, the record is `SAFE_DEFAULTS`-shaped: nothing is sent that a model
might reject (no thinking form, no effort, no structured output), and it is read again
later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anthropic

from gateway.errors import ValidationFailed
from gateway.providers.anthropic import lineup

log = logging.getLogger(__name__)

Lifecycle = Literal["active", "deprecated", "retired", "unknown"]
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
RETRY_UNREADABLE_S = 60.0


@dataclass(frozen=True)
class ModelRecord:
    """The parts of a Models API `ModelInfo` that shape a request."""

    id: str
    display_name: str = ""
    lifecycle: Lifecycle = "unknown"
    source: Literal["models_api", "defaults", "provider"] = "defaults"
    """`defaults`: the Models API could not be read, nothing optional is sent;
    `provider`: a provider without model records says what its models take."""
    max_tokens: int | None = None
    max_input_tokens: int | None = None
    thinking_adaptive: bool = False
    thinking_budget: bool = False
    thinking_disabled: bool = False
    thinking_between_tools: bool = False
    """`thinking: {"type": "between_tools"}`: thinking off, the notes between tool calls
    still come back (as `thinking` blocks)."""
    display_updates: bool = False
    """Takes `thinking.display` "updates" (the notes' text only); from `lineup`."""
    display_summarized: bool = False
    """Takes `thinking.display` "summarized" where its default is "omitted"; `lineup`."""
    binds_thinking: bool = False
    """Its thinking blocks are bound to the conversation and take `block_binding`."""
    block_binding: bool = True
    """Where it binds, its upstream takes `thinking.block_binding` (the clouds do not)."""
    legacy_successor: str | None = None
    """Active but legacy: the current model the docs point to."""
    efforts: frozenset[str] = frozenset()
    structured_outputs: bool = False
    citations: bool = False
    server_tools: frozenset[str] = frozenset()
    context_edits: frozenset[str] = frozenset()
    """The `context_management` edits the model takes (`compact_20260112`, ...)."""
    retires_at: str | None = None
    deprecated_at: str | None = None

    @property
    def thinking(self) -> bool:
        return self.thinking_adaptive or self.thinking_budget

    def health(self) -> dict[str, Any]:
        """What `/health` shows of the model."""
        return {
            "id": self.id,
            "display_name": self.display_name,
            "lifecycle": self.lifecycle,
            "source": self.source,
            "retires_at": self.retires_at,
            "legacy": self.legacy_successor is not None,
            "current_model": self.legacy_successor,
            "note": self.lifecycle_note(),
            "max_tokens": self.max_tokens,
            "max_input_tokens": self.max_input_tokens,
            "thinking": _thinking_forms(self),
        }

    def check_usable(self) -> None:
        """Refuse a run on a model the service retired or does not know."""
        if self.lifecycle == "retired":
            raise ValidationFailed(
                f"The model {self.id!r} is retired; set SDK_MODEL to a current model",
                {"model": self.id, "lifecycle": "retired", "retired_at": self.deprecated_at},
            )

    def lifecycle_note(self) -> str | None:
        """What `/health` and the startup log say of a legacy or deprecated model."""
        retires = f", retires {self.retires_at[:10]}" if self.retires_at else ""
        if self.lifecycle == "deprecated":
            return f"{self.id} is deprecated{retires}: set SDK_MODEL to a current model"
        if self.legacy_successor is not None:
            return (
                f"{self.id} is legacy{retires or ' (no retirement date yet)'}: "
                f"the current model is {self.legacy_successor}"
            )
        return None


def _thinking_forms(record: ModelRecord) -> list[str]:
    forms = ["adaptive"] if record.thinking_adaptive else []
    forms = [*forms, "budget"] if record.thinking_budget else forms
    return [*forms, "between_tools"] if record.thinking_between_tools else forms


def _from_lineup(model: str) -> dict[str, Any]:
    """The table's facts of a model (`lineup`), by its id or a dated id's alias."""
    name = lineup.alias(model)
    return {
        "display_updates": name in lineup.DISPLAY_UPDATES,
        "display_summarized": name in lineup.DISPLAY_SUMMARIZED,
        "binds_thinking": name in lineup.BINDS,
        "legacy_successor": lineup.LEGACY.get(name),
    }


def record_from_info(info: Any) -> ModelRecord:
    """A record from the SDK's `ModelInfo` (capabilities may be missing on old entries)."""
    caps = getattr(info, "capabilities", None)
    thinking = getattr(caps, "thinking", None)
    types = getattr(thinking, "types", None)
    effort = getattr(caps, "effort", None)
    server = getattr(caps, "server_tools", None)
    efforts = frozenset(
        level
        for level in EFFORT_LEVELS
        if getattr(effort, "supported", False) and _supported(getattr(effort, level, None))
    )
    # The record names web search and code execution on their own; web fetch has no key,
    # so it goes with the server tools as a whole.
    servers = frozenset(
        name
        for name, capability in (
            ("web_search", getattr(server, "web_search", None)),
            ("web_fetch", server),
            ("code_execution", getattr(server, "code_execution", None)),
        )
        if _supported(capability)
    )
    thinking_on = bool(getattr(thinking, "supported", False))
    context = getattr(caps, "context_management", None)
    edits = frozenset(
        name
        for name in ("compact_20260112", "clear_tool_uses_20250919", "clear_thinking_20251015")
        if getattr(context, "supported", False) and _supported(getattr(context, name, None))
    )
    return ModelRecord(
        id=info.id,
        display_name=info.display_name,
        lifecycle=info.lifecycle,
        source="models_api",
        max_tokens=info.max_tokens,
        max_input_tokens=info.max_input_tokens,
        thinking_adaptive=thinking_on and _supported(getattr(types, "adaptive", None)),
        thinking_budget=thinking_on and _supported(getattr(types, "enabled", None)),
        thinking_disabled=_supported(getattr(types, "disabled", None)),
        thinking_between_tools=_supported(getattr(types, "between_tools", None)),
        efforts=efforts,
        structured_outputs=_supported(getattr(caps, "structured_outputs", None)),
        citations=_supported(getattr(caps, "citations", None)),
        server_tools=servers,
        context_edits=edits,
        retires_at=_iso(info.retires_at),
        deprecated_at=_iso(info.deprecated_at),
        **_from_lineup(info.id),
    )


def _supported(capability: Any) -> bool:
    return bool(getattr(capability, "supported", False))


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


class UnknownModel(ValidationFailed):
    def __init__(self, model: str) -> None:
        super().__init__(
            f"The model {model!r} is not known to the model service; set SDK_MODEL to a "
            "current model",
            {"model": model, "lifecycle": "unknown"},
        )


@dataclass
class ModelCatalog:
    """Model records by id, read through the SDK and cached for the life of the process
    (an unreadable Models API is tried again after a minute)."""

    client: anthropic.AsyncAnthropic
    _records: dict[str, ModelRecord] = field(default_factory=dict)
    _unknown: set[str] = field(default_factory=set)
    _retry_at: dict[str, float] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def cached(self, model: str) -> ModelRecord | None:
        return self._records.get(model)

    async def get(self, model: str) -> ModelRecord:
        """The record, reading it if needed; raises `UnknownModel` for an unknown id."""
        record = self._records.get(model)
        if record is not None and (
            record.source == "models_api" or time.monotonic() < self._retry_at.get(model, 0)
        ):
            return record
        if model in self._unknown:
            raise UnknownModel(model)
        async with self._lock:
            return await self._read(model)

    async def _read(self, model: str) -> ModelRecord:
        try:
            info = await self.client.models.retrieve(model)
        except anthropic.NotFoundError:
            self._unknown.add(model)
            log.error("model %s: the Models API does not know it", model)
            raise UnknownModel(model) from None
        except anthropic.APIError as exc:
            previous = self._records.get(model)
            if previous is None:
                log.warning(
                    "model %s: the Models API could not be read (%s: %s); using safe defaults "
                    "(no thinking, effort or structured output) until it can",
                    model,
                    type(exc).__name__,
                    exc,
                )
            self._retry_at[model] = time.monotonic() + RETRY_UNREADABLE_S
            # Nothing optional is sent; but a model that binds its thinking blocks still
            # does, so a continued session drops them (binding.py).
            record = previous or ModelRecord(
                id=model, binds_thinking=_from_lineup(model)["binds_thinking"]
            )
        else:
            record = record_from_info(info)
            _log_lifecycle(record)
        self._records[model] = record
        return record


def _log_lifecycle(record: ModelRecord) -> None:
    note = record.lifecycle_note()
    if note is not None:
        log.warning("model %s", note)
    elif record.lifecycle == "retired":
        log.error("model %s is retired: every run will be refused", record.id)
    else:
        log.info("model %s (%s): %s", record.id, record.display_name, record.lifecycle)


@dataclass
class StaticCatalog:
    """The record of a provider that has no Models API (Chat Completions servers)."""

    record: ModelRecord

    def cached(self, model: str) -> ModelRecord | None:
        return self.record if model == self.record.id else None

    async def get(self, model: str) -> ModelRecord:
        return self.record

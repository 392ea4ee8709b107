"""The registry: the one place tools are looked up, validated, timed out and capped.

`call` never raises for a tool problem: unknown names, invalid input, `ToolFailure`,
unexpected exceptions and timeouts all come back as an `is_error` `ToolOutcome`.
Cancellation is the exception: it always propagates, so a cancelled run stops its tools.

The gateway's own tools are registered once; the tools of an MCP server come and go with
its connection (`replace`). Neither mutates what a reader holds: a change builds new maps,
and `snapshot()` is a registry frozen as it stands, which a run takes at its start (a tool
that leaves mid-run still answers that run, with an `is_error` result).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from tools.base import RichResult, Tool, ToolContext, ToolFailure

log = logging.getLogger(__name__)

__all__ = ["ToolOutcome", "ToolRegistry", "cap_text"]


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call produced, as the model will see it."""

    content: str
    is_error: bool
    duration_ms: float
    truncated: bool = False
    original_chars: int = 0
    # Closed set, for spans and metric labels: None, "unknown_tool", "invalid_input",
    # "tool_failure", "exception", "timeout".
    error_type: str | None = None
    blocks: list[dict[str, Any]] | None = None
    """The `tool_result` content as blocks (text and images), when it is more than text;
    `content` is then its text."""


def cap_text(text: str, max_chars: int) -> tuple[str, bool]:
    """Keep head and tail of an over-long result, with a notice the model can act on."""
    if len(text) <= max_chars:
        return text, False
    notice = (
        f"\n\n[... result truncated: {len(text):,} characters, showing the first and last "
        f"{max_chars // 2:,}. Ask for a narrower section, a smaller page or an offset "
        "to read the rest ...]\n\n"
    )
    keep = max(0, max_chars - len(notice))
    head, tail = keep - keep // 2, keep // 2
    return text[:head] + notice + (text[-tail:] if tail else ""), True


def _validation_message(name: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "input"
        problems.append(f"{where}: {err['msg']}")
    return f"Invalid input for tool {name!r}: " + "; ".join(problems)


class ToolRegistry:
    """Named tools in a stable order, with a timeout and a result cap for every call."""

    def __init__(
        self,
        tools: Iterable[Tool[Any]] = (),
        *,
        timeout_s: float = 30.0,
        max_result_chars: int = 100_000,
    ) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        self._sources: dict[str, str] = {}
        """The tools of MCP servers: tool name -> server name (the gateway's own: absent)."""
        self._definitions: dict[frozenset[str] | None, list[dict[str, Any]]] = {}
        self._snapshot: ToolRegistry | None = None
        self.timeout_s = timeout_s
        self.max_result_chars = max_result_chars
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool[Any]) -> None:
        if tool.name in self._tools:
            raise ValueError(f"duplicate tool name: {tool.name}")
        self._changed({**self._tools, tool.name: tool}, self._sources)

    def replace(self, source: str, tools: Iterable[Tool[Any]]) -> list[str]:
        """Make `tools` the whole set of `source`'s tools (none: it left). A name another
        source already has is not taken; returns the names left out."""
        kept = {n: t for n, t in self._tools.items() if self._sources.get(n) != source}
        sources = {n: s for n, s in self._sources.items() if s != source}
        clashes = []
        for tool in tools:
            if tool.name in kept:
                clashes.append(tool.name)
                continue
            kept[tool.name] = tool
            sources[tool.name] = source
        if clashes:
            log.warning("tools of %s not offered, their names are taken: %s", source, clashes)
        self._changed(kept, sources)
        return clashes

    def _changed(self, tools: dict[str, Tool[Any]], sources: dict[str, str]) -> None:
        # New maps, never an update in place: a snapshot shares the ones it was taken with.
        self._tools, self._sources, self._definitions = tools, sources, {}
        self._snapshot = None

    def snapshot(self) -> ToolRegistry:
        """This registry as it is now, unchanged by later `replace` calls (one object per
        state of the registry, so a run start costs one attribute read)."""
        snap = self._snapshot
        if snap is None:
            snap = ToolRegistry(timeout_s=self.timeout_s, max_result_chars=self.max_result_chars)
            snap._tools, snap._sources, snap._definitions = (
                self._tools,
                self._sources,
                self._definitions,
            )
            snap._snapshot = snap
            self._snapshot = snap
        return snap

    def names(self) -> list[str]:
        return list(self._tools)

    def source_of(self, name: str) -> str | None:
        """The MCP server a tool comes from; None for the gateway's own."""
        return self._sources.get(name)

    def sources(self) -> dict[str, str]:
        """Tool name -> MCP server, for the tools of MCP servers (do not mutate)."""
        return self._sources

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def definitions(self, allow: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Tool definitions as the Messages API takes them, in registration order.

        Built once per allow-list: a JSON schema costs far more than a run can spend on it.
        Callers must not mutate what they get.
        """
        key = None if allow is None else frozenset(allow)
        cached = self._definitions.get(key)
        if cached is None:
            cached = self._definitions[key] = [
                {"name": t.name, "description": t.description(), "input_schema": t.input_schema()}
                for t in self._tools.values()
                if key is None or t.name in key
            ]
        return cached

    async def call(self, name: str, raw_input: Any, ctx: ToolContext) -> ToolOutcome:
        start = time.perf_counter()

        def done(content: str | RichResult, error_type: str | None = None) -> ToolOutcome:
            elapsed = (time.perf_counter() - start) * 1000
            if isinstance(content, RichResult):
                return self._rich(content, elapsed)
            if error_type is not None:
                return ToolOutcome(content, True, elapsed, error_type=error_type)
            capped, truncated = cap_text(content, self.max_result_chars)
            return ToolOutcome(capped, False, elapsed, truncated, len(content))

        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return done(f"Unknown tool {name!r}. Available tools: {known}.", "unknown_tool")
        try:
            args = tool.input_model.model_validate(raw_input)
        except ValidationError as exc:
            return done(_validation_message(name, exc), "invalid_input")
        try:
            async with asyncio.timeout(self.timeout_s):
                content = await tool.run(args, ctx)
        except TimeoutError:
            return done(f"Tool {name!r} timed out after {self.timeout_s:g} s.", "timeout")
        except ToolFailure as exc:
            return done(str(exc), "tool_failure")
        except Exception as exc:  # a tool bug must not end the run; the model is told
            return done(f"Tool {name!r} failed: {type(exc).__name__}: {exc}", "exception")
        return done(content)

    def _rich(self, result: RichResult, elapsed: float) -> ToolOutcome:
        """Blocks kept as they are, unless their text is over the cap: then one capped text
        block in their place, before the images."""
        text = result.text()
        capped, truncated = cap_text(text, self.max_result_chars)
        blocks = result.blocks
        if truncated:
            images = [b for b in blocks if b.get("type") != "text"]
            blocks = [{"type": "text", "text": capped}, *images]
        return ToolOutcome(capped, False, elapsed, truncated, len(text), blocks=blocks)

"""The tools a bench run offers the model: one that sleeps, one that takes a big input."""

from __future__ import annotations

import asyncio

from pydantic import Field

from tools.base import Tool, ToolContext, ToolInput
from tools.registry import ToolRegistry


class SleepInput(ToolInput):
    seconds: float = Field(1.0, ge=0, le=10)
    """How long to wait."""


class SleepTool(Tool[SleepInput]):
    """Wait, then answer: stands in for a slow lookup."""

    name = "bench_sleep"
    input_model = SleepInput

    async def run(self, args: SleepInput, ctx: ToolContext) -> str:
        await asyncio.sleep(args.seconds)
        return f"slept {args.seconds:g} s"


class EchoInput(ToolInput):
    path: str
    """Where the document would go."""
    content: str
    """The document; only its length is reported."""


class EchoTool(Tool[EchoInput]):
    """Report the length of a (possibly very long) input."""

    name = "bench_echo"
    input_model = EchoInput

    async def run(self, args: EchoInput, ctx: ToolContext) -> str:
        return f"{len(args.content)} characters for {args.path}"


def bench_registry() -> ToolRegistry:
    return ToolRegistry([SleepTool(), EchoTool()], timeout_s=30.0)

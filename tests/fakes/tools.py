"""Small tools for tests: each behaves one way a real tool can (answer, hang, fail, crash)."""

from __future__ import annotations

import asyncio

from tools.base import Tool, ToolContext, ToolFailure, ToolInput


class EchoInput(ToolInput):
    text: str
    """Text to echo back."""


class Echo(Tool[EchoInput]):
    """Echo the text back."""

    name = "echo"
    input_model = EchoInput

    async def run(self, args: EchoInput, ctx: ToolContext) -> str:
        return f"echo: {args.text}"


class SleepInput(ToolInput):
    seconds: float
    """How long to sleep."""


class Sleep(Tool[SleepInput]):
    """Sleep, then answer; records starts and cancellations."""

    name = "sleep"
    input_model = SleepInput

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def run(self, args: SleepInput, ctx: ToolContext) -> str:
        self.started += 1
        try:
            await asyncio.sleep(args.seconds)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return f"slept {args.seconds}"


class NoInput(ToolInput):
    pass


class Fail(Tool[NoInput]):
    """Fail the way a tool expects to."""

    name = "fail"
    input_model = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> str:
        raise ToolFailure("No company matches 'Acme'; try a ticker")


class Crash(Tool[NoInput]):
    """Fail with a bug."""

    name = "crash"
    input_model = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> str:
        raise RuntimeError("division by zero, somewhere")


class BigInput(ToolInput):
    size: int
    """How many characters to return."""


class Big(Tool[BigInput]):
    """Return a long text."""

    name = "big"
    input_model = BigInput

    async def run(self, args: BigInput, ctx: ToolContext) -> str:
        return "".join(chr(ord("a") + i % 26) for i in range(args.size))

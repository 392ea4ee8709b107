"""Which event loop serves: uvloop when it is installed (`GATEWAY_EVENT_LOOP=auto`, the
default), or asyncio's own (`asyncio`). `uvloop` insists on it and fails without it.

Measured in the benchmark (bench/notes.md), same run, against the reference relays on the
same loop: see the notes for the CPU per event and per run it saves.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar, cast

EventLoopChoice = Literal["auto", "uvloop", "asyncio"]
LoopFactory = Callable[[], asyncio.AbstractEventLoop]
T = TypeVar("T")


def loop_factory(choice: str = "auto") -> LoopFactory:
    """The factory for `choice`; `auto` falls back to asyncio when uvloop is missing."""
    if choice not in ("auto", "uvloop", "asyncio"):
        raise ValueError(f"event loop must be auto, uvloop or asyncio, not {choice!r}")
    if choice == "asyncio":
        return asyncio.new_event_loop
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        if choice == "uvloop":
            raise RuntimeError("GATEWAY_EVENT_LOOP=uvloop, but uvloop is not installed") from None
        return asyncio.new_event_loop
    return cast(LoopFactory, uvloop.new_event_loop)


def new_loop(choice: str = "auto") -> asyncio.AbstractEventLoop:
    """A new loop of that kind, set as the thread's current loop (for `web.run_app(loop=)`)."""
    loop = loop_factory(choice)()
    asyncio.set_event_loop(loop)
    return loop


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run(main: Coroutine[Any, Any, T], choice: str = "auto") -> T:
    """`asyncio.run` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)

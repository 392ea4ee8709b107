"""What every model call of one run shares, whichever provider answers it.

A `CallPlan` is decided once at the run's start (for the Messages API by
`providers/anthropic/request.py`'s `plan_run`); the loop reads it to build each call's
`ModelCall`. It sits below both providers so the loop needs neither of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gateway.context import ContextPlan
from gateway.days import Daily
from gateway.events import Event


@dataclass(frozen=True)
class CallPlan:
    """What every model call of one run shares, decided once at the run's start."""

    model: str
    max_tokens: int
    thinking: dict[str, Any] | None = None
    effort: str | None = None
    output_schema: dict[str, Any] | None = None
    server_tools: tuple[dict[str, Any], ...] = ()
    context_window: int | None = None
    structured: bool = False
    cache: bool = True
    context: ContextPlan | None = None
    """How the run stays inside the window; None: it ends with `context_exceeded`."""
    parallel_tools: bool = True
    """False: the model asks for at most one tool per turn."""
    notices: tuple[Event, ...] = ()
    """Warnings for the client at the run's start (a deprecated model, a skipped option)."""
    container: dict[str, Any] | None = None
    """The first call's `container` (the skills to load); later calls send its id."""
    betas: tuple[str, ...] = ()
    """Beta features every call of the run uses (`thinking.display` "updates")."""
    binds_thinking: bool = False
    """The model binds thinking blocks to the conversation (`lineup.BINDS`)."""
    block_binding: bool = True
    """Its upstream takes `thinking.block_binding`; else the run drops the blocks itself."""


_today: Daily[str] = Daily(lambda day: f"Today's date is {day.date().isoformat()}.")


def today_text() -> str:
    """Today's date for the model: read per run, placed after the cached prompt."""
    return _today(time.time())


def offered_tools(
    local: list[dict[str, Any]], server: tuple[dict[str, Any], ...]
) -> list[dict[str, Any]]:
    """The tools one model call offers: a server tool takes the place of a local tool of
    the same name (the Messages API refuses two tools of one name: "Tool names must be
    unique")."""
    if not server:
        return local
    taken = {tool["name"] for tool in server}
    return [*(tool for tool in local if tool["name"] not in taken), *server]

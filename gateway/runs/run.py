"""One run as readers see it: its log, its task, who reads it, and the disconnect rule.

When the last reader leaves, a grace timer starts; if nobody re-attaches in time the run
is cancelled (closing the upstream request and the tool tasks) and ends with the outcome
`client_disconnected`. With a shared store, readers on other processes count too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway.errors import GatewayError
from gateway.events import Outcome
from gateway.store.eventlog import EventLog

ANONYMOUS = "anonymous"
"""The caller's name when no keys are configured (the API is open)."""


@dataclass(frozen=True)
class RunRequest:
    """A validated request for one run."""

    messages: list[dict[str, Any]]
    """New messages: the user's query, or a whole history when `replace_history`."""
    session_id: str | None = None
    replace_history: bool = False
    max_turns: int | None = None
    tools: frozenset[str] | None = None
    thinking: str | int | None = None
    """"off", "adaptive", "on" or a budget; None: the configured default."""
    effort: str | None = None
    output_format: dict[str, Any] | None = None
    parallel_tools: bool = True
    """False: at most one tool call per model turn."""
    code_execution: bool = False
    """Offer the Messages API's code execution tool (skills imply it)."""
    skills: tuple[str, ...] = ()
    """Skill ids loaded into the run's container (`xlsx`, `docx`, `pptx`, `pdf`, `skill_...`)."""
    request_id: str = ""
    caller: str = ANONYMOUS
    """The name of the key that asked for the run: it owns the run."""


class Run:
    """One run: its log, its task, and who is reading it."""

    def __init__(
        self,
        run_id: str,
        session_id: str,
        log: EventLog,
        grace_s: float,
        readers_elsewhere: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self.id = run_id
        self.session_id = session_id
        self.log = log
        self.grace_s = grace_s
        self.task: asyncio.Task[None] | None = None
        self.readers = 0
        self.finished_at: float | None = None
        self.cancel_reason: Outcome | None = None
        self.owner = ANONYMOUS
        """The name of the key that started the run; other keys cannot see or cancel it."""
        self.model = ""
        """The model the run was started with ("" for a run taken over from elsewhere)."""
        self.failure: GatewayError | None = None
        """Set by `fail`: the run ends with this error event instead of `final`."""
        self._grace: asyncio.TimerHandle | None = None
        self._readers_elsewhere = readers_elsewhere
        self._check: asyncio.Task[None] | None = None

    @property
    def done(self) -> bool:
        return self.log.closed

    def attach(self) -> None:
        self.readers += 1
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None

    def detach(self) -> None:
        self.readers -= 1
        if self.readers == 0 and not self.done:
            self._start_grace()

    def left_elsewhere(self) -> None:
        """The last reader on another process left: the grace period starts now."""
        if self.readers == 0 and not self.done:
            self._start_grace()

    def cancel(self, reason: Outcome = "cancelled") -> bool:
        """Stop the run on purpose; False if it had already ended."""
        if self.done or self.task is None:
            return False
        if self.cancel_reason is None:  # once: the driver's own awaits must not be cut short
            self.cancel_reason = reason
            # Not at once: a task cancelled before its first step never runs its body, and
            # the body is what writes the terminal event and closes the log. The task's
            # first step is already scheduled, so it goes before this.
            asyncio.get_running_loop().call_soon(self.task.cancel)
        return True

    def fail(self, error: GatewayError) -> bool:
        """Stop the run with an `error` event (its key was revoked); False if it had ended."""
        if self.done or self.task is None:
            return False
        if self.failure is None and self.cancel_reason is None:
            self.failure = error
        return self.cancel("cancelled")

    def _start_grace(self) -> None:
        if self._grace is not None:
            self._grace.cancel()
        self._grace = asyncio.get_running_loop().call_later(self.grace_s, self._expire)

    def _expire(self) -> None:
        self._grace = None
        if self.readers:
            return
        if self._readers_elsewhere is None:
            self.cancel("client_disconnected")
        else:
            self._check = asyncio.create_task(self._expire_shared(self._readers_elsewhere))

    async def _expire_shared(self, readers_elsewhere: Callable[[], Awaitable[int]]) -> None:
        elsewhere = await readers_elsewhere()
        if self.readers or self.done:
            return
        if elsewhere:  # look again later, in case that reader's goodbye gets lost
            self._start_grace()
        else:
            self.cancel("client_disconnected")

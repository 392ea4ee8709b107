"""The provider interface: what the loop needs from a model backend, and nothing more.

The loop keeps one canonical history (Anthropic Messages form) and hands each model call
to a provider as a `ModelCall`. The provider translates it on the way out, makes ONE HTTP
attempt, relays the stream as gateway events and fills a `Turn` with what the history and
the run's totals need. Retries, fallback and their warnings belong to the caller.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from gateway.events import Event

Emit = Callable[[list[Event]], None]
"""Hands a non-empty list of gateway events on to the run (its log, its live streams).
Never waits: a provider may call it from its socket's callback."""


@dataclass(frozen=True)
class ModelCall:
    """One model call in canonical form (the loop's history is in Anthropic Messages form)."""

    model: str
    max_tokens: int
    messages: list[dict[str, Any]]
    """Roles user/assistant; content a string or blocks: text, tool_use{id,name,input},
    tool_result{tool_use_id,content,is_error}, thinking, redacted_thinking, server tool
    blocks. Blocks may carry `cache_control`; providers without caching ignore it."""
    system: str | None
    tools: list[dict[str, Any]]
    """Local tools: {"name", "description", "input_schema"}."""
    tool_choice: Literal["auto", "none"] = "auto"
    output_schema: dict[str, Any] | None = None
    """JSON schema the final answer must satisfy, or None for free text."""
    system_suffix: str | None = None
    """What changes between runs (today's date): after the system prompt, never cached."""
    thinking: dict[str, Any] | None = None
    """The Messages API `thinking` parameter; providers that cannot think leave it out."""
    effort: str | None = None
    server_tools: tuple[dict[str, Any], ...] = ()
    """Tools the Messages API runs itself; other providers cannot offer them."""
    cache: bool = False
    """Mark prompt-cache breakpoints (tools, system prompt, newest message)."""
    context_management: dict[str, Any] | None = None
    """The Messages API's `context_management` (compaction, context editing); other
    providers leave it out (the loop clears their history itself)."""
    betas: tuple[str, ...] = ()
    """Messages API beta features the call uses (the `anthropic-beta` header)."""
    parallel_tools: bool = True
    """False: at most one tool call per turn."""
    container: str | dict[str, Any] | None = None
    """The Messages API's `container`: the run's container id once the API named one, else
    the skills to load; other providers leave it out."""


class Turn(Protocol):
    """What one model call leaves behind, as the Messages translator's `TurnTranslator` has it."""

    turn: int
    emitted: int
    model: str | None
    stop_reason: str | None
    usage: dict[str, int]
    """Keys of `gateway.events.USAGE_KEYS`."""
    tool_uses: list[dict[str, Any]]
    """Canonical tool_use blocks, in order."""
    input_errors: dict[str, str]
    """Tool id -> why its input was not a JSON object."""
    stop_details: dict[str, Any] | None
    """The Messages API's `stop_details` (a refusal's category), when it sent one."""
    container_id: str | None
    """The code execution container the call ran in, for the next call to reuse."""

    @property
    def context_tokens(self) -> int:
        """The conversation's size after the call as the model counted it (input, cache
        and output of the answering call; compaction's own tokens are not part of it)."""
        ...

    texts: list[str]
    dropped: Counter[str]
    """What the request could not carry to this provider (thinking blocks, server tools),
    by kind, so the caller can say so."""

    @property
    def content(self) -> list[dict[str, Any]]:
        """The assistant content as canonical blocks, ready to append to the history."""
        ...

    def partial_texts(self) -> list[str]:
        """Text so far, including a block still streaming (for an interrupted turn)."""
        ...

    def reset(self) -> None:
        """Forget a failed attempt before a retry."""
        ...

    def finish(self) -> None:
        """Raise `UpstreamFailure` if the stream ended incompletely."""
        ...


class Provider(Protocol):
    """A model backend behind the loop."""

    name: str
    """"anthropic" | "openai" | "demo": the `upstream` label of events and metrics."""
    model: str
    """The model this provider is asked for."""

    def new_turn(self, turn: int) -> Turn: ...

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        """ONE HTTP attempt, no retries: stream the call, feed `turn`, `emit` its gateway
        events a list per upstream read (what comes after pays per read, not per event),
        call `turn.finish()` at the end; raise `UpstreamFailure` on any failure, after
        emitting what that read translated before it."""
        ...

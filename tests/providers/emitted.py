"""A provider attempt's events, collected through the `emit` it is given."""

from __future__ import annotations

from typing import Any

from gateway.events import Event
from gateway.providers.base import ModelCall, Provider, Turn


class Emitted(list[dict[str, Any]]):
    """The events emitted so far, as plain dicts; `emit` is what an attempt is given."""

    def emit(self, batch: list[Event]) -> None:
        assert batch, "an attempt emits non-empty lists"
        self.extend(dict(event) for event in batch)


async def attempt(provider: Provider, call: ModelCall, turn: Turn) -> list[dict[str, Any]]:
    emitted = Emitted()
    await provider.attempt(call, turn, emitted.emit)
    return emitted

"""What the gateway needs of a set of tools (the `tools` package's `Toolset` is one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tools.registry import ToolRegistry


class ToolsetLike(Protocol):
    @property
    def registry(self) -> ToolRegistry: ...
    @property
    def services(self) -> dict[str, Any]: ...
    @property
    def backends(self) -> dict[str, str]: ...


@dataclass
class StaticToolset:
    """A registry with no shared services: for tests and embedding."""

    registry: ToolRegistry
    services: dict[str, Any] = field(default_factory=dict)
    backends: dict[str, str] = field(default_factory=dict)

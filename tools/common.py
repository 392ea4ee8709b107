"""Helpers every tool uses: the compact JSON of a result, and typed access to services."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson

from tools.base import ToolContext, ToolFailure

__all__ = ["dump", "service"]

T = TypeVar("T")


def dump(result: dict[str, Any]) -> str:
    """Compact JSON, non-ASCII kept as is (company names, typographic quotes)."""
    return orjson.dumps(result).decode()


def service(ctx: ToolContext, name: str, kind: type[T]) -> T:
    """The named shared service, or a ToolFailure when the toolset was built without it."""
    found = ctx.services.get(name)
    if not isinstance(found, kind):
        raise ToolFailure(f"This tool is not available here (no {name!r} service configured).")
    return found

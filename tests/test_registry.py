"""The tool registry: names, order, the definitions cache, the result cap."""

from __future__ import annotations

import pytest

from tests.fakes.tools import Big, Echo, Fail
from tools.base import ToolContext
from tools.registry import ToolRegistry, cap_text


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry([Echo()])
    with pytest.raises(ValueError, match="duplicate tool name: echo"):
        registry.register(Echo())


def test_definitions_are_stable_and_built_once() -> None:
    registry = ToolRegistry([Echo(), Fail()])
    everything = registry.definitions()
    assert [d["name"] for d in everything] == ["echo", "fail"]
    assert registry.definitions() is everything
    only_fail = registry.definitions({"fail"})
    assert [d["name"] for d in only_fail] == ["fail"]
    assert registry.definitions(["fail"]) is only_fail
    registry.register(Big())
    assert [d["name"] for d in registry.definitions()] == ["echo", "fail", "big"]


def test_cap_keeps_head_and_tail_within_the_limit() -> None:
    text = "".join(str(i % 10) for i in range(10_000))
    capped, truncated = cap_text(text, 1_000)
    assert truncated and len(capped) <= 1_000
    assert capped.startswith(text[:100]) and capped.endswith(text[-100:])
    assert cap_text("short", 1_000) == ("short", False)


async def test_cap_is_applied_to_results() -> None:
    registry = ToolRegistry([Big()], max_result_chars=1_000)
    outcome = await registry.call("big", {"size": 5_000}, ToolContext())
    assert outcome.truncated and outcome.original_chars == 5_000 and len(outcome.content) <= 1_000

"""A tool exchange of three rounds through `OpenAIProvider`, driven by a small loop that
keeps the canonical history the way gateway/runs/loop.py does (the assistant turn's content as
returned, then one user message of `tool_result` blocks), so the fake validates the
translated history on every call: calls before answers, ids threaded, nothing left over."""

from __future__ import annotations

import json
from typing import Any

from gateway.providers.base import ModelCall, Provider
from gateway.providers.openai.provider import OpenAIProvider
from tests.fakes.openai import Call, FakeOpenAI, Reply
from tests.providers.emitted import attempt

TOOLS = [
    {
        "name": "lookup",
        "description": "Look a company up.",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]


async def run_rounds(provider: Provider, max_turns: int) -> tuple[list[dict[str, Any]], list[Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Compare three companies."}]
    relayed: list[dict[str, Any]] = []
    for number in range(1, max_turns + 1):
        call = ModelCall(
            model="gpt-test",
            max_tokens=500,
            messages=list(history),
            system="Be terse.",
            tools=TOOLS,
            tool_choice="auto" if number < max_turns else "none",
        )
        turn = provider.new_turn(number)
        relayed += await attempt(provider, call, turn)
        history.append({"role": "assistant", "content": turn.content})
        if turn.stop_reason != "tool_use":
            break
        results = [_result(use, turn.input_errors) for use in turn.tool_uses]
        history.append({"role": "user", "content": results})
    return relayed, history


def _result(use: dict[str, Any], errors: dict[str, str]) -> dict[str, Any]:
    if use["id"] in errors:
        return {"type": "tool_result", "tool_use_id": use["id"], "content": errors[use["id"]],
                "is_error": True}  # fmt: skip
    content = f"{use['input']['q']}: revenue up"
    return {"type": "tool_result", "tool_use_id": use["id"], "content": content}


async def test_three_tool_rounds_then_an_answer(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(
        Reply(text="First Apple.", calls=[Call("lookup", {"q": "AAPL"}, fragment=2)]),
        Reply(calls=[Call("lookup", {"q": "MSFT"}), Call("lookup", {"q": "NVDA"})],
              interleave=True),
        Reply(calls=[Call("lookup", raw_arguments='{"q": "GOO')]),
        Reply(text="Apple, Microsoft and Nvidia all grew."),
    )  # fmt: skip
    relayed, history = await run_rounds(provider, max_turns=5)

    assert fake_openai.rejected == []
    assert len(fake_openai.requests) == 4
    last = fake_openai.requests[-1]["messages"]
    assert [m["role"] for m in last] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "tool"
    ]  # fmt: skip
    asked = [c["id"] for m in last if m["role"] == "assistant" for c in m["tool_calls"]]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    issued = [e["tool"]["id"] for e in relayed if e.get("phase") == "tool_start"]
    assert asked == answered == issued and len(set(issued)) == 4
    assert last[3]["content"] == "AAPL: revenue up"
    assert last[8]["content"].startswith("Error: The tool input was not valid JSON")
    assert json.loads(last[7]["tool_calls"][0]["function"]["arguments"]) == {}
    assert history[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Apple, Microsoft and Nvidia all grew."}],
    }
    # Each call carried the whole canonical history so far, translated afresh.
    assert [len(r["messages"]) for r in fake_openai.requests] == [2, 4, 7, 9]


async def test_the_wrap_up_call_forbids_tools(
    provider: OpenAIProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(
        Reply(calls=[Call("lookup", {"q": "AAPL"})]),
        Reply(text="Apple grew."),
    )
    _, history = await run_rounds(provider, max_turns=2)
    assert [r.get("tool_choice") for r in fake_openai.requests] == ["auto", "none"]
    assert fake_openai.rejected == [] and history[-1]["content"][0]["text"] == "Apple grew."

"""The demo model run in-process, as the gateway runs it: the question (after the earlier
questions and answers of the session), then tool calls executed by the real offline tools
and their results sent back, until the model answers. No HTTP: fast enough for thousands
of generated questions."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import orjson

from demo_model.companies import CompanyIndex
from demo_model.conversation import read_request
from demo_model.planner import MAX_TURNS, respond
from demo_model.reply import Call
from tools import ToolContext, Toolset

TODAY = dt.date(2026, 11, 27)


@dataclass
class Answer:
    text: str
    calls: list[Call] = field(default_factory=list)
    results: list[str] = field(default_factory=list)


async def answer(
    index: CompanyIndex,
    toolset: Toolset,
    question: str,
    before: tuple[tuple[str, str], ...] = (),
    today: dt.date = TODAY,
    memo: dict[str, tuple[str, bool]] | None = None,
) -> Answer:
    """The demo's answer to `question`, after the earlier (question, answer) pairs.
    `memo`: tool results kept by call, for many questions over the same offline snapshot
    (its tools give the same result for the same call)."""
    messages: list[dict[str, Any]] = []
    for asked, said in before:
        messages += [
            {"role": "user", "content": asked},
            {"role": "assistant", "content": [{"type": "text", "text": said}]},
        ]
    messages.append({"role": "user", "content": question})
    tools = [{"name": name, "input_schema": {}} for name in toolset.registry.names()]
    done = Answer("")
    for turn in range(MAX_TURNS + 1):
        body = {"model": "demo", "max_tokens": 4096, "messages": messages, "tools": tools,
                "system": f"Today's date is {today.isoformat()}."}  # fmt: skip
        if turn == MAX_TURNS:
            body["tool_choice"] = {"type": "none"}
        reply = respond(read_request(body), index)
        if not reply.calls:
            done.text = reply.text
            return done
        uses: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
        results: list[dict[str, Any]] = []
        for n, call in enumerate(reply.calls):
            tool_id = f"toolu_{turn}_{n}"
            content, is_error = await _call(toolset, call, tool_id, memo)
            done.calls.append(call)
            done.results.append(content)
            uses.append({"type": "tool_use", "id": tool_id, "name": call.name, "input": call.input})
            results.append({"type": "tool_result", "tool_use_id": tool_id,
                            "content": content, "is_error": is_error})  # fmt: skip
        messages += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    raise AssertionError(f"no answer to {question!r} after {MAX_TURNS} turns")


async def _call(
    toolset: Toolset, call: Call, tool_id: str, memo: dict[str, tuple[str, bool]] | None
) -> tuple[str, bool]:
    key = orjson.dumps([call.name, call.input], option=orjson.OPT_SORT_KEYS).decode()
    if memo is not None and key in memo:
        return memo[key]
    ctx = ToolContext(tool_use_id=tool_id, services=toolset.services)
    outcome = await toolset.registry.call(call.name, call.input, ctx)
    if memo is not None:
        memo[key] = (outcome.content, outcome.is_error)
    return outcome.content, outcome.is_error

"""Tool results indexed as the loop adds them (`ResultParts`): the check at the run's end
merges their indexes and finds exactly what indexing every result then would find."""

from __future__ import annotations

import random
from typing import Any

from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient

from bench.figures_answers import messages, write
from bench.figures_eval import load
from gateway import figures
from gateway.figures.index import MAX_TEXT_CHARS, ResultParts, SourceIndex
from gateway.http import keys
from gateway.ops.metrics import Metrics
from gateway.runs.loop import LoopDeps
from gateway.runs.manager import RunManager
from gateway.runs.run import Run, RunRequest
from tests.conftest import stream
from tests.fakes.anthropic import FakeAnthropic

from .test_run_figures import FACTS, answer_turns, gateway_on


def by_rounds(parts: ResultParts, conversation: list[dict[str, Any]]) -> None:
    """As the loop adds them: the model's message and the results answering it."""
    for i, message in enumerate(conversation[:-1]):
        if message["role"] == "assistant":
            parts.add(conversation[i : i + 2])
    assert parts._parts  # each result indexed before the end


def shape(index: SourceIndex) -> tuple[Any, ...]:
    return (
        [(s.tool_use_id, s.value, s.concept, s.period, s.company) for s in index.sources],
        {k: v.tool_use_id for k, v in index.identifiers.items()},
        list(index.aliases.items()),
        list(index.by_year.items()),
        [(k, [(s.tool_use_id, s.value) for s in v]) for k, v in index.facts.items()],
        [(k, [(s.tool_use_id, s.value) for s in v]) for k, v in index.by_period.items()],
    )


async def test_merged_indexes_check_every_answer_the_same() -> None:
    data, rng, answers = await load(), random.Random(5), 0
    while answers < 120:
        answer = write(data, rng, rng.choice([None, "scale", "period", "invented"]))
        if answer is None:
            continue
        answers += 1
        conversation = messages(answer)
        parts = ResultParts()
        by_rounds(parts, conversation)
        whole, merged = figures.build(conversation), figures.build(conversation, parts)
        assert shape(merged) == shape(whole)
        expected = figures.check(answer.text, whole).event_fields()
        assert figures.check(answer.text, merged).event_fields() == expected


def text_results(*texts: str) -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": f"t{i}", "name": "search", "input": {}} for i in range(3)]
    results = [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": text}
        for i, text in enumerate(texts)
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def test_past_the_text_cap_the_results_are_read_in_turn() -> None:
    """Three texts of 0.4x the cap: the oldest is cut, as when each is read at the end."""
    size = int(MAX_TEXT_CHARS * 0.4)
    texts = [(f"{n} million " * size)[:size] for n in (11, 22, 33)]
    conversation = text_results(*texts)
    parts = ResultParts()
    parts.add(conversation)
    whole, merged = figures.build(conversation), figures.build(conversation, parts)
    assert shape(merged) == shape(whole)
    assert {s.value for s in merged.sources} >= {11e6, 22e6, 33e6}
    counted = [sum(s.value == n * 1e6 for s in merged.sources) for n in (11, 22, 33)]
    assert counted[0] < counted[1] == counted[2]  # the latest first: the oldest is cut


def test_a_result_changed_since_it_was_indexed_is_read_again() -> None:
    """Context clearing replaces an old result's text: its old numbers are no source."""
    conversation = text_results("Revenue was $5.2 billion.")
    parts = ResultParts()
    parts.add(conversation)
    conversation[1]["content"][0]["content"] = "[cleared to save context]"
    assert figures.build(conversation, parts).sources == []
    again = {s.value for s in figures.build(text_results("$7 billion"), parts).sources}
    assert 7e9 in again and 5.2e9 not in again


async def test_a_run_indexes_each_result_as_it_comes(
    fake: FakeAnthropic, fake_server: Any, aiohttp_client: AiohttpClient
) -> None:
    """The run's own `ResultParts` indexes the round's result as the round ends, under its
    call's name and input; the check at the end uses that index, not a new one."""
    client = await gateway_on(fake_server, aiohttp_client, Metrics(CollectorRegistry()))
    manager: RunManager = client.app[keys.RUNS]
    make, rounds = manager.factory.deps, []

    def keep(run: Run, request: RunRequest, endpoint: str, parent: Any) -> LoopDeps:
        deps = make(run, request, endpoint, parent)
        parts = deps.figures
        assert parts is not None
        add = parts.add

        def spy(messages: list[dict[str, Any]]) -> None:
            add(messages)
            rounds.append(([m["role"] for m in messages], dict(parts._parts), parts))

        parts.add = spy  # type: ignore[method-assign]
        return deps

    manager.factory.deps = keep
    answer_turns(fake, "Apple's revenue was $416.2 billion in FY2025.")
    events = await stream(client, query="Apple revenue FY2025?")
    assert events[-1]["figures"]["sourced"] == 1
    ((roles, then, parts),) = rounds
    assert roles == ["assistant", "user"]
    ((result, part),) = then.values()
    assert result[:3] == ("toolu_rev", "get_sec_company_facts", FACTS)
    assert part.sources and all(s.tool_use_id == "toolu_rev" for s in part.sources)
    assert parts._parts["toolu_rev"][1] is part  # the end merged it, made nothing new


async def test_the_check_off_makes_no_parts(
    fake: FakeAnthropic, fake_server: Any, aiohttp_client: AiohttpClient
) -> None:
    metrics = Metrics(CollectorRegistry())
    client = await gateway_on(fake_server, aiohttp_client, metrics, gateway_figure_check="off")
    manager: RunManager = client.app[keys.RUNS]
    make, made = manager.factory.deps, []

    def keep(run: Run, request: RunRequest, endpoint: str, parent: Any) -> LoopDeps:
        made.append(make(run, request, endpoint, parent))
        return made[-1]

    manager.factory.deps = keep
    answer_turns(fake, "Apple's revenue was $416.2 billion in FY2025.")
    events = await stream(client, query="Apple revenue FY2025?")
    assert events[-1]["type"] == "final" and "figures" not in events[-1]
    assert made[0].figures is None

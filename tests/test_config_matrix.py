"""Every setting that changes what is sent, pairwise, with the real toolset and the real app
against the strict fakes (tests/fakes/messages_rules.py, openai_rules.py).

Settings come from the environment, as `python -m gateway` reads them; the toolset is the
one it builds (offline SEC snapshot, offline or Exa search). Each combination runs a tool
round end to end and must end with `final`; a combination that cannot work must be refused
when the settings are read, naming the variables to change.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry
from pydantic import ValidationError
from pytest_aiohttp import AiohttpClient, AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.settings import Settings
from tests.conftest import stream, tool_results
from tests.fakes import anthropic as fa
from tests.fakes import openai as fo
from tests.procs.gateway import GatewayProcess

# Each setting's values; the first is the default. An empty string leaves the variable unset.
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "SEARCH_BACKEND": ("offline", "exa", "anthropic"),
    "ANTHROPIC_SERVER_TOOLS": ("", "web_search", "web_fetch", "web_search,web_fetch"),
    "GATEWAY_PROMPT_CACHE": ("true", "false"),
    "SDK_THINKING": ("off", "adaptive", "on:low", "on:max"),  # `on:x`: SDK_EFFORT=x too
    "output_format": ("absent", "present"),
    "tools": ("all", "tickers", "tickers,web_search"),
    "GATEWAY_UPSTREAM": ("anthropic", "openai", "anthropic>openai", "openai>anthropic"),
}
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
TICKERS = "search_sec_company_tickers"
ANSWER = json.dumps({"answer": "NVIDIA is CIK 1045810."})


def refusal(row: dict[str, str]) -> list[str] | None:
    """The variables the gateway's refusal must name, for a combination that cannot work:
    the API's own tools with no Messages API upstream; thinking by default on an `openai`
    primary (its record has no thinking, so every run would be a 400)."""
    upstreams = row["GATEWAY_UPSTREAM"].split(">")
    named = []
    if "anthropic" not in upstreams:
        if row["ANTHROPIC_SERVER_TOOLS"]:
            named.append("ANTHROPIC_SERVER_TOOLS")
        if row["SEARCH_BACKEND"] == "anthropic":
            named.append("SEARCH_BACKEND")
        if named:
            return [*named, "GATEWAY_UPSTREAM", "GATEWAY_FALLBACK_UPSTREAMS"]
    if upstreams[0] == "openai" and row["SDK_THINKING"] != "off":
        return ["SDK_THINKING", "GATEWAY_UPSTREAM"]
    return None


def all_pairs(dimensions: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Rows covering every pair of values of every two dimensions: greedy, deterministic.
    Each row starts from the first pair not yet covered and fills the other dimensions with
    the value that covers most new pairs (the first such value on a tie), keeping to rows
    that can work where the starting pair can: a pair is tried end to end where it can be."""
    names = list(dimensions)
    defaults = {name: values[0] for name, values in dimensions.items()}
    uncovered = {
        ((a, va), (b, vb))
        for a, b in itertools.combinations(names, 2)
        for va in dimensions[a]
        for vb in dimensions[b]
    }
    rows: list[dict[str, str]] = []
    while uncovered:
        (a, va), (b, vb) = min(uncovered, key=lambda p: (names.index(p[0][0]), p))
        row = {a: va, b: vb}
        keep_working = refusal(defaults | row) is None
        for name in names:
            if name in row:
                continue
            values = [
                v for v in dimensions[name]
                if not keep_working or refusal(defaults | row | {name: v}) is None
            ]  # fmt: skip
            row[name] = max(
                values, key=lambda v: sum(_pair(name, v, k, row[k]) in uncovered for k in row)
            )
        works = refusal(row) is None
        for x, y in itertools.combinations(names, 2):
            pair = _pair(x, row[x], y, row[y])
            # A pair that can work is covered only by a row that does.
            if works or refusal(defaults | dict(pair)) is not None:
                uncovered.discard(pair)
        rows.append({name: row[name] for name in names})
    return rows


def _pair(a: str, va: str, b: str, vb: str) -> tuple[tuple[str, str], tuple[str, str]]:
    names = list(DIMENSIONS)
    first, second = sorted(((a, va), (b, vb)), key=lambda p: names.index(p[0]))
    return first, second


def test_the_rows_cover_every_pair() -> None:
    rows = all_pairs(DIMENSIONS)
    defaults = {name: values[0] for name, values in DIMENSIONS.items()}
    working = [row for row in rows if refusal(row) is None]
    for a, b in itertools.combinations(DIMENSIONS, 2):
        seen = {(row[a], row[b]) for row in rows}
        assert seen == set(itertools.product(DIMENSIONS[a], DIMENSIONS[b])), (a, b)
        # A pair that can work is run end to end, not only seen in a refused row.
        run = {(row[a], row[b]) for row in working}
        for va, vb in itertools.product(DIMENSIONS[a], DIMENSIONS[b]):
            if refusal(defaults | {a: va, b: vb}) is None:
                assert (va, vb) in run, (a, va, b, vb)
    assert len(rows) < 40  # pairwise, not the 2,304 of the full product


ROWS = all_pairs(DIMENSIONS)


@dataclass
class Combination:
    row: dict[str, str]

    @property
    def upstreams(self) -> list[str]:
        return self.row["GATEWAY_UPSTREAM"].split(">")

    def env(self, anthropic_url: str, openai_url: str) -> dict[str, str]:
        row = self.row
        thinking, _, effort = row["SDK_THINKING"].partition(":")
        primary, *fallbacks = self.upstreams
        env = {
            "ANTHROPIC_API_KEY": "sk-test",
            "ANTHROPIC_BASE_URL": anthropic_url,
            "OPENAI_BASE_URL": openai_url + "/v1",
            "OPENAI_API_KEY": "sk-fake",
            "OPENAI_MODEL": "gpt-test",
            "GATEWAY_UPSTREAM": primary,
            "GATEWAY_FALLBACK_UPSTREAMS": ",".join(fallbacks),
            "GATEWAY_UPSTREAM_MAX_RETRIES": "0",  # a failed call moves on at once
            "SDK_MODEL": "claude-test-model",
            "SDK_SYSTEM_PROMPT": "You are a test.",
            "SDK_THINKING": thinking,
            "SDK_EFFORT": effort,
            "GATEWAY_PROMPT_CACHE": row["GATEWAY_PROMPT_CACHE"],
            "ANTHROPIC_SERVER_TOOLS": row["ANTHROPIC_SERVER_TOOLS"],
            "SEARCH_BACKEND": row["SEARCH_BACKEND"],
            "GATEWAY_GC_FREEZE": "false",
        }
        if row["SEARCH_BACKEND"] == "exa":  # no search is made: the round looks up a ticker
            env |= {"EXA_API_KEY": "exa-test", "EXA_BASE_URL": anthropic_url + "/exa"}
        return {k: v for k, v in env.items() if v}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"query": "What is NVIDIA's CIK?"}
        allowed = {"all": None, "tickers": [TICKERS], "tickers,web_search": [TICKERS, "web_search"]}
        if allowed[self.row["tools"]] is not None:
            body["tools"] = allowed[self.row["tools"]]
        if self.row["output_format"] == "present":
            body["output_format"] = {"type": "json_schema", "schema": SCHEMA}
        return body

    def script(self, anthropic: fa.FakeAnthropic, openai: fo.FakeOpenAI) -> None:
        """Call 1 asks for a ticker lookup, call 2 answers. With a fallback, the primary
        fails call 1 (so the fallback makes it); call 2 starts at the primary again."""
        thinking = self.row["SDK_THINKING"] != "off"
        lookup = {"search_term": "NVIDIA"}
        a_tool = fa.Reply([
            *([fa.Thinking("Look it up.")] if thinking else []), fa.ToolUse(TICKERS, lookup)
        ])  # fmt: skip
        a_text = fa.Reply([fa.Text(ANSWER)])
        o_tool = fo.Reply(calls=[fo.Call(TICKERS, lookup)])
        o_text = fo.Reply(text=ANSWER)
        primary, *fallback = self.upstreams
        if primary == "anthropic":
            if fallback:
                anthropic.add(fa.Reply(status=529, error_type="overloaded_error"))
                openai.add(o_tool)
            else:
                anthropic.add(a_tool)
            anthropic.add(a_text)
        else:
            if fallback:
                openai.add(fo.Reply(status=503))
                anthropic.add(a_tool)
            else:
                openai.add(o_tool)
            openai.add(o_text)


@pytest.fixture
async def servers(
    aiohttp_server: AiohttpServer,
) -> tuple[fa.FakeAnthropic, TestServer, fo.FakeOpenAI, TestServer]:
    anthropic, openai = fa.FakeAnthropic(), fo.FakeOpenAI()
    return (
        anthropic, await aiohttp_server(anthropic.app()), openai,
        await aiohttp_server(openai.app()),
    )  # fmt: skip


def _url(server: TestServer) -> str:
    return str(server.make_url("")).rstrip("/")


@pytest.mark.parametrize("row", ROWS, ids=lambda row: "|".join(row.values()))
async def test_the_combination_runs_or_is_refused(
    row: dict[str, str],
    servers: tuple[fa.FakeAnthropic, TestServer, fo.FakeOpenAI, TestServer],
    aiohttp_client: AiohttpClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    anthropic, anthropic_server, openai, openai_server = servers
    combination = Combination(row)
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in combination.env(_url(anthropic_server), _url(openai_server)).items():
        monkeypatch.setenv(name, value)
    named = refusal(row)
    if named is not None:
        with pytest.raises(ValidationError) as raised:
            Settings(_env_file=None)
        for name in named:
            assert name in str(raised.value), (name, str(raised.value))
        return
    settings = Settings(_env_file=None)
    app = create_app(settings, metrics=Metrics(CollectorRegistry()))
    client: TestClient[Any, Any] = await aiohttp_client(app)
    combination.script(anthropic, openai)
    events = await stream(client, **combination.body())
    assert anthropic.rejected == [] and openai.rejected == []
    assert events[-1]["type"] == "final", events[-1]
    assert events[-1]["outcome"] == "completed", events[-1]
    assert anthropic.replies == [] and openai.replies == []  # every scripted call was made
    _check_tools(combination, anthropic, openai)


def _check_tools(
    combination: Combination, anthropic: fa.FakeAnthropic, openai: fo.FakeOpenAI
) -> None:
    """The tool round ran, and each upstream was offered what it can take."""
    last = anthropic.requests[-1] if combination.upstreams[0] == "anthropic" else None
    if last is not None:
        [result] = tool_results(last["messages"][-1])
        assert "1045810" in str(result["content"]) and not result.get("is_error")
        names = [t["name"] for t in last["tools"]]
        assert len(names) == len(set(names))
        assert ("web_fetch" in names) == ("web_fetch" in combination.row["ANTHROPIC_SERVER_TOOLS"])
    for body in openai.requests:
        names = [t["function"]["name"] for t in body.get("tools", [])]
        assert TICKERS in names and "web_fetch" not in names


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SEARCH_BACKEND": "anthropic"}, ["SEARCH_BACKEND=anthropic", "GATEWAY_UPSTREAM"]),
        ({"SDK_THINKING": "adaptive", "GATEWAY_UPSTREAM": "openai", "OPENAI_MODEL": "m",
          "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
         ["SDK_THINKING=adaptive", "GATEWAY_UPSTREAM=openai"]),
        ({"SEARCH_BACKEND": "exa"}, ["SEARCH_BACKEND=exa needs EXA_API_KEY"]),
    ],
)  # fmt: skip
async def test_python_m_gateway_refuses_to_start(
    tmp_path: Path, env: dict[str, str], named: list[str]
) -> None:
    """The refusal as an operator meets it: the process exits at once and says which
    variables to change (the demo upstream: no API key in `env`)."""
    gateway = GatewayProcess(tmp_path, **env)
    await gateway.start(wait=False)
    assert gateway.process is not None
    async with asyncio.timeout(30):
        status = await gateway.process.wait()
    output = gateway.output()
    assert status != 0, output
    for name in named:
        assert name in output, output

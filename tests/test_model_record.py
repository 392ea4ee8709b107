"""The model record: read from the Models API through the SDK, it shapes every request
(thinking form, effort, max_tokens, structured output) and refuses what cannot run."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from aiohttp.test_utils import TestServer

from gateway.providers.anthropic.catalog import ModelRecord, record_from_info
from gateway.providers.anthropic.request import plan_run
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking
from tests.fakes.models import default_catalogue


async def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"  # answered before any SSE header
    body: dict[str, Any] = (await response.json())["error"]
    return body


async def test_the_fake_catalogue_is_what_the_sdk_parses(fake_server: TestServer) -> None:
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url=str(fake_server.make_url("")).rstrip("/"), max_retries=0
    )
    sonnet = record_from_info(await client.models.retrieve("claude-sonnet-5"))
    haiku = record_from_info(await client.models.retrieve("claude-haiku-4-5"))
    old = record_from_info(await client.models.retrieve("claude-sonnet-4-5-20250929"))
    with pytest.raises(anthropic.NotFoundError):
        await client.models.retrieve("claude-nonexistent")
    await client.close()
    assert sonnet.thinking_adaptive and not sonnet.thinking_budget and sonnet.source == "models_api"
    assert sonnet.efforts == {"low", "medium", "high", "max"} and sonnet.structured_outputs
    assert sonnet.server_tools == {"web_search", "web_fetch", "code_execution"}
    assert haiku.thinking_budget and not haiku.thinking_adaptive and haiku.efforts == set()
    assert haiku.max_tokens == 64_000 and haiku.max_input_tokens == 200_000
    assert old.lifecycle == "deprecated" and (old.retires_at or "").startswith("2026-11-30")


def plan(record: ModelRecord, thinking: Any = "off", effort: str | None = None) -> Any:
    return plan_run(
        record, max_tokens=64_000, thinking=thinking, effort=effort,
        effort_explicit=effort is not None, output_format=None, server_tools=(), cache=True,
    )  # fmt: skip


ADAPTIVE = ModelRecord("a", lifecycle="active", source="models_api", thinking_adaptive=True,
                       thinking_disabled=True, efforts=frozenset({"low", "high"}))  # fmt: skip
BUDGET = ModelRecord("b", lifecycle="active", source="models_api", thinking_budget=True,
                     thinking_disabled=True, max_tokens=32_000)  # fmt: skip
BOTH = ModelRecord("c", lifecycle="active", source="models_api", thinking_adaptive=True,
                   thinking_budget=True)  # fmt: skip


@pytest.mark.parametrize(
    ("record", "choice", "sent"),
    [
        (ADAPTIVE, "on", {"type": "adaptive"}),
        (ADAPTIVE, "adaptive", {"type": "adaptive"}),
        (ADAPTIVE, 4096, {"type": "adaptive"}),  # a budget means "on" to a model that decides
        (ADAPTIVE, "off", {"type": "disabled"}),
        (BUDGET, "on", {"type": "enabled", "budget_tokens": 8192}),
        (BUDGET, 2048, {"type": "enabled", "budget_tokens": 2048}),
        (BUDGET, "off", {"type": "disabled"}),
        (BOTH, "on", {"type": "adaptive"}),
        (BOTH, 3000, {"type": "enabled", "budget_tokens": 3000}),
        (ModelRecord("d", source="models_api"), "off", None),  # no thinking: leave it out
    ],
)
def test_thinking_forms_follow_the_record(record: ModelRecord, choice: Any, sent: Any) -> None:
    assert plan(record, choice).thinking == sent


def test_what_a_model_cannot_take_is_refused() -> None:
    with pytest.raises(Exception, match="only as a budget"):
        plan(BUDGET, "adaptive")
    with pytest.raises(Exception, match="does not support thinking"):
        plan(ModelRecord("d", source="models_api"), "on")
    with pytest.raises(Exception, match="below the max_tokens of 32000"):
        plan(BUDGET, 40_000)  # the cap is the model's own max_tokens
    with pytest.raises(Exception, match="effort 'max'"):
        plan(ADAPTIVE, effort="max")
    assert plan(ADAPTIVE, effort="high").effort == "high"
    assert plan(BUDGET).max_tokens == 32_000


async def test_a_model_that_thinks_adaptively_gets_adaptive_thinking_and_effort(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-5", sdk_max_tokens=500_000)
    fake.add(Reply([Thinking("Hmm."), Text("ok")], model="claude-sonnet-5"))
    events = await stream(client, query="x", thinking=True, effort="high")
    assert events[-1]["outcome"] == "completed" and events[-1]["model"] == "claude-sonnet-5"
    sent = fake.requests[0]
    assert sent["thinking"] == {"type": "adaptive"}
    assert sent["output_config"] == {"effort": "high"}
    assert sent["max_tokens"] == 128_000  # capped at the model's own


async def test_a_budget_only_model_gets_the_budget_form(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-haiku-4-5", sdk_effort="high")
    fake.add(Reply([Thinking("Hmm."), Text("ok")]), Reply([Text("plain")]))
    events = await stream(client, query="x", thinking=2048)
    assert events[-1]["outcome"] == "completed"
    assert fake.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "output_config" not in fake.requests[0]  # the default effort it has no level for
    await stream(client, query="y")
    assert fake.requests[1]["thinking"] == {"type": "disabled"}
    error = await error_of(
        await client.post("/api/stream", json={"query": "x", "thinking": "adaptive"}), 400
    )
    assert error["code"] == "VALIDATION_ERROR" and "budget" in error["message"]
    error = await error_of(
        await client.post("/api/stream", json={"query": "x", "effort": "low"}), 400
    )
    assert error["details"]["field"] == "effort"


async def test_a_deprecated_model_warns_at_every_run_and_in_health(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-4-5-20250929")
    fake.add(Reply([Text("ok")]))
    events = await stream(client, query="x")
    assert [e["type"] for e in events[:3]] == ["system_info", "system_init", "warning"]
    assert events[2]["code"] == "model_deprecated" and "2026-11-30" in events[2]["message"]
    health = await (await client.get("/health")).json()
    assert health["model_record"]["lifecycle"] == "deprecated"
    assert health["model_record"]["thinking"] == ["budget"]


@pytest.mark.parametrize("model", ["claude-3-haiku-20240307", "claude-nonexistent"])
async def test_a_retired_or_unknown_model_is_a_400_before_the_stream(
    make_gateway: GatewayFactory, fake: FakeAnthropic, model: str
) -> None:
    client = await make_gateway(sdk_model=model)
    error = await error_of(await client.post("/api/stream", json={"query": "x"}), 400)
    assert error["code"] == "VALIDATION_ERROR" and model in error["message"]
    assert fake.requests == []  # nothing reached the model


async def test_an_unreadable_models_api_means_safe_defaults(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.models_status = 500
    client = await make_gateway()
    fake.add(Reply([Text("ok")]))
    events = await stream(client, query="x", thinking=True, effort="high")
    assert events[-1]["outcome"] == "completed"
    codes = [e["code"] for e in events if e["type"] == "warning"]
    assert codes == ["thinking_skipped", "effort_skipped"]
    sent = fake.requests[0]
    assert "thinking" not in sent and "output_config" not in sent
    health = await (await client.get("/health")).json()
    assert health["model_record"]["source"] == "defaults"


async def test_the_record_is_read_once(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway()
    fake.add(Reply([Text("a")]), Reply([Text("b")]))
    await stream(client, query="x")
    await stream(client, query="y")
    assert fake.model_lookups == ["claude-test-model"]


async def test_structured_output(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway()
    schema = {"type": "object", "properties": {"revenue": {"type": "number"}}}
    fake.add(Reply([Text('{"revenue": 130.5}', chunk=4)]))
    body = {"query": "x", "output_format": {"type": "json_schema", "schema": schema}}
    events = await stream(client, **body)
    assert fake.requests[0]["output_config"] == {
        "format": {"type": "json_schema", "schema": schema}
    }
    final = events[-1]
    assert final["result"] == '{"revenue": 130.5}' and final["structured"] == {"revenue": 130.5}
    fake.add(Reply([Text('{"revenue": 1}')]))
    research = await (await client.post("/api/research", json=body)).json()
    assert research["structured"] == {"revenue": 1}


async def test_structured_output_on_a_model_without_it_is_a_400(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.models["claude-test-model"]["capabilities"]["structured_outputs"]["supported"] = False
    client = await make_gateway()
    body = {"query": "x", "output_format": {"type": "json_schema", "schema": {"type": "object"}}}
    error = await error_of(await client.post("/api/stream", json=body), 400)
    assert error["details"]["field"] == "output_format"
    bad = {"query": "x", "output_format": {"type": "json_object"}}
    await error_of(await client.post("/api/stream", json=bad), 400)


def test_every_default_catalogue_entry_has_every_capability_key() -> None:
    from anthropic.types import ModelInfo

    for info in default_catalogue().values():
        parsed = ModelInfo.model_validate(info)
        assert parsed.capabilities is not None

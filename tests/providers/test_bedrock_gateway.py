"""The gateway on Amazon Bedrock, against a fake runtime that checks each request's SigV4
signature with botocore and streams real AWS event-stream frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpServer

from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, stream, types
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.bedrock import FakeBedrock
from tests.providers.clouds_support import bare_aws, bedrock_settings, phases
from tests.test_metrics import value

Client = TestClient[Any, Any]


@pytest.fixture
def bedrock() -> FakeBedrock:
    fake = FakeBedrock(FakeAnthropic())
    fake.add_static("ASIATESTKEY", "test/secret", "test-session-token")
    return fake


@pytest.fixture
async def bedrock_server(
    bedrock: FakeBedrock,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> TestServer:
    bare_aws(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIATESTKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test/secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "test-session-token")
    return await aiohttp_server(bedrock.app())


@pytest.fixture
async def on_bedrock(make_gateway: GatewayFactory, bedrock_server: TestServer) -> Client:
    return await make_gateway(**bedrock_settings(bedrock_server, sdk_thinking="on"))


async def test_a_tool_run_with_thinking_and_streamed_tool_input(
    on_bedrock: Client, bedrock: FakeBedrock, metrics: Metrics
) -> None:
    bedrock.fake.add(
        Reply(
            [
                Thinking("I should echo."),
                Text("Checking."),
                ToolUse("echo", {"text": "hi " * 10}, fragment=4),
            ]
        ),
        Reply([Text("Echoed it.")], output_tokens=9),
    )
    events = await stream(on_bedrock, query="echo")
    assert events[0]["upstream"] == "bedrock"
    assert events[0]["model"] == "bedrock/us.anthropic.claude-sonnet-5"
    assert "thinking_start" in types(events) and "thinking_signature" in types(events)
    assert len(phases(events, "tool_input_delta")) >= 5
    [use] = phases(events, "tool_use")
    assert use["tool"]["input"] == {"text": "hi " * 10}
    final = events[-1]
    assert final["outcome"] == "completed" and final["result"] == "Checking.\n\nEchoed it."
    assert final["model"] == "bedrock/us.anthropic.claude-sonnet-5"
    # The us. profile's price: Anthropic's plus 10% (2.2 and 11 USD per million tokens).
    assert final["total_cost_usd"] == pytest.approx((20 * 2.2 + 14 * 11) / 1e6)
    assert {e["upstream"] for e in events if e["type"] == "turn_complete"} == {"bedrock"}
    first, second = (a["body"] for a in bedrock.accepted)
    assert [a["model_id"] for a in bedrock.accepted] == ["us.anthropic.claude-sonnet-5"] * 2
    assert "model" not in first and "stream" not in first
    assert first["anthropic_version"] == "2026-10-21" and first["thinking"] == {"type": "adaptive"}
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["content"][0]["signature"].startswith("sig-")  # thinking threaded back
    assert assistant["content"][2]["id"] == use["tool"]["id"]
    assert results["content"][0]["tool_use_id"] == use["tool"]["id"]
    assert not bedrock.refusals and not bedrock.fake.rejected
    name = "bedrock/us.anthropic.claude-sonnet-5"
    assert value(metrics, "claude_tokens_output_total", model=name, upstream="bedrock") == 14
    health = await (await on_bedrock.get("/health")).json()
    [upstream] = health["upstreams"]
    assert (
        upstream["name"] == "bedrock"
        and upstream["model"] == "bedrock/us.anthropic.claude-sonnet-5"
    )


async def test_a_broken_checksum_is_a_network_error(
    on_bedrock: Client, bedrock: FakeBedrock
) -> None:
    bedrock.fake.add(Reply([Text("A long enough answer that streams in pieces.")]))
    bedrock.break_checksum_at = 5  # after some text reached the client: no retry
    events = await stream(on_bedrock, query="x")
    assert "delta" in types(events)
    assert events[-1]["type"] == "error"
    error = events[-1]["error"]
    assert error["code"] == "NETWORK_ERROR"
    assert "checksum" in error["message"]


async def test_an_exception_frame_before_any_output_is_retried(
    on_bedrock: Client, bedrock: FakeBedrock
) -> None:
    bedrock.fake.add(Reply([Text("Never sent.")]), Reply([Text("Second time.")]))
    bedrock.exception_at = (0, "throttlingException")
    events = await stream(on_bedrock, query="x")
    [retry] = [e for e in events if e["type"] == "warning"]
    assert retry["code"] == "upstream_retry" and retry["error_code"] == "RATE_LIMIT_ERROR"
    assert events[-1]["outcome"] == "completed" and events[-1]["result"] == "Second time."


@pytest.mark.parametrize(
    ("status", "kind", "code", "retried"),
    [
        (429, "ThrottlingException", "RATE_LIMIT_ERROR", True),
        (429, "ModelNotReadyException", "OVERLOADED_ERROR", True),
        (503, "ServiceUnavailableException", "OVERLOADED_ERROR", True),
        (408, "ModelTimeoutException", "TIMEOUT_ERROR", True),
        (403, "AccessDeniedException", "PERMISSION_ERROR", False),
        (400, "ValidationException", "VALIDATION_ERROR", False),
        (400, "ServiceQuotaExceededException", "RATE_LIMIT_ERROR", False),
    ],
)
async def test_aws_errors_map_to_codes_and_retry_rules(
    make_gateway: GatewayFactory,
    bedrock_server: TestServer,
    bedrock: FakeBedrock,
    status: int,
    kind: str,
    code: str,
    retried: bool,
) -> None:
    client = await make_gateway(**bedrock_settings(bedrock_server, gateway_upstream_max_retries=1))
    bedrock.fake.add(Reply(status=status, error_type=kind), Reply(status=status, error_type=kind))
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    error = events[-1]["error"]
    assert error["code"] == code
    assert error["message"] == "scripted failure"
    assert len(bedrock.accepted) == (2 if retried else 1)


async def test_a_current_model_without_an_inference_profile_is_refused(
    make_gateway: GatewayFactory, bedrock_server: TestServer, bedrock: FakeBedrock
) -> None:
    settings = bedrock_settings(bedrock_server, gateway_bedrock_model="anthropic.claude-sonnet-5")
    client = await make_gateway(**settings)
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    error = events[-1]["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert "inference profile" in error["message"]
    assert bedrock.refusals[0][1] == "ValidationException"


async def test_a_request_the_model_cannot_take_is_refused_as_bedrock_refuses(
    make_gateway: GatewayFactory, bedrock_server: TestServer, bedrock: FakeBedrock
) -> None:
    settings = bedrock_settings(bedrock_server, sdk_model="claude-haiku-4-5", sdk_max_tokens=64_000)
    client = await make_gateway(**settings)
    bedrock.fake.add(Reply([Text("Haiku here.")]))
    events = await stream(client, query="x", thinking=2048)
    assert events[-1]["outcome"] == "completed"
    [accepted] = bedrock.accepted
    assert accepted["model_id"] == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert accepted["body"]["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_a_fallback_from_anthropic_to_bedrock_mid_run_threads_the_tool_ids(
    make_gateway: GatewayFactory,
    bedrock_server: TestServer,
    bedrock: FakeBedrock,
    fake: FakeAnthropic,
    metrics: Metrics,
) -> None:
    settings = bedrock_settings(bedrock_server, gateway_upstream="anthropic", sdk_thinking="on")
    client = await make_gateway(
        **settings, gateway_fallback_upstreams="bedrock", gateway_upstream_max_retries=1
    )
    fake.add(
        Reply([Thinking("I should echo."), Text("Checking."), ToolUse("echo", {"text": "1"})]),
        Reply(status=500, error_type="api_error", headers={"retry-after": "0"}),
        Reply(status=500, error_type="api_error", headers={"retry-after": "0"}),
    )
    bedrock.fake.add(Reply([Thinking("Echo done."), Text("Answered on Bedrock.")]))
    events = await stream(client, query="x")
    warnings = [e for e in events if e["type"] == "warning"]
    assert [w["code"] for w in warnings] == [
        "upstream_retry",
        "upstream_fallback",
        "history_dropped",
    ]
    assert warnings[1]["next_upstream"] == "bedrock"
    # The primary's plan has API-side context management, which Bedrock is not sent.
    assert warnings[2]["dropped"] == ["context_management"]
    assert "context_management" not in bedrock.accepted[0]["body"]
    assert [e["upstream"] for e in events if e["type"] == "turn_complete"] == [
        "anthropic",
        "bedrock",
    ]
    final = events[-1]
    assert final["outcome"] == "completed" and final["result"].endswith("Answered on Bedrock.")
    assert final["model"] == "bedrock/us.anthropic.claude-sonnet-5"
    [accepted] = bedrock.accepted
    sent = accepted["body"]["messages"]
    tool_id = next(e["tool"]["id"] for e in events if e.get("phase") == "tool_use")
    assert sent[1]["content"][0]["type"] == "thinking"  # the first upstream's, signed
    assert sent[1]["content"][2]["id"] == sent[2]["content"][0]["tool_use_id"] == tool_id
    assert not bedrock.refusals and not bedrock.fake.rejected
    assert (
        value(metrics, "sdk_upstream_fallbacks_total", upstream="anthropic", code="UNKNOWN_ERROR")
        == 1
    )


async def test_a_connection_cut_before_any_output_is_retried(
    on_bedrock: Client, bedrock: FakeBedrock
) -> None:
    bedrock.fake.add(Reply([Text("Lost.")], cut_after=2), Reply([Text("Whole.")]))
    events = await stream(on_bedrock, query="x")
    [retry] = [e for e in events if e["type"] == "warning"]
    assert retry["error_code"] == "NETWORK_ERROR"
    assert events[-1]["outcome"] == "completed" and events[-1]["result"] == "Whole."

"""Spans (GenAI conventions) collected in memory, and an OTLP/HTTP export to a local receiver."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from aiohttp import web
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pytest_aiohttp import AiohttpServer

from gateway.ops.telemetry import UnrecordedTracer, UnrecordedTracerProvider, configure_tracing
from tests.conftest import stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_spans_follow_the_genai_conventions(make_gateway: Any, fake: FakeAnthropic) -> None:
    provider, exporter = memory_provider()
    client = await make_gateway(tracer_provider=provider)
    fake.add(
        Reply([ToolUse("echo", {"text": "a"}), ToolUse("fail", {})], cache_read=7),
        Reply([Text("done")], input_tokens=20, output_tokens=9),
    )
    response = await client.post(
        "/api/stream", json={"query": "x", "sessionId": "s-1"}, headers={"traceparent": TRACEPARENT}
    )
    events = [e async for e in _events(response)]
    assert events[0]["trace_id"] == TRACE_ID == events[-1]["trace_id"]
    await asyncio.sleep(0.05)
    spans = exporter.get_finished_spans()
    [server] = by_name(spans, "POST /api/stream")
    [agent] = by_name(spans, "invoke_agent")
    chats = by_name(spans, "chat ")
    tools = by_name(spans, "execute_tool ")
    assert server.kind == SpanKind.SERVER and format(server.context.trace_id, "032x") == TRACE_ID
    assert server.attributes is not None and server.attributes["http.route"] == "/api/stream"
    assert agent.parent is not None and agent.parent.span_id == server.context.span_id
    assert agent.attributes is not None
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.conversation.id"] == "s-1"
    assert agent.attributes["gateway.run_id"] == events[0]["run_id"]
    assert agent.attributes["gateway.outcome"] == "completed"
    assert [c.name for c in chats] == ["chat claude-test-model"] * 2
    first = chats[0].attributes
    assert first is not None and first["gen_ai.provider.name"] == "anthropic"
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert (
        first["gen_ai.usage.input_tokens"] == 17
        and first["gen_ai.usage.cache_read.input_tokens"] == 7
    )
    assert str(first["gen_ai.response.id"]).startswith("msg_fake") and first["gateway.turn"] == 1
    assert all(
        s.parent is not None and s.parent.span_id == agent.context.span_id for s in chats + tools
    )
    spans_by_tool = {s.attributes["gen_ai.tool.name"]: s for s in tools if s.attributes}
    echo, fail = spans_by_tool["echo"], spans_by_tool["fail"]
    assert echo.name == "execute_tool echo" and echo.status.status_code == StatusCode.UNSET
    assert echo.attributes and echo.attributes["gen_ai.tool.type"] == "function"
    assert str(echo.attributes["gen_ai.tool.call.id"]).startswith("toolu_")
    assert "gen_ai.tool.call.arguments" not in echo.attributes  # content is opt-in
    assert fail.status.status_code == StatusCode.ERROR
    assert fail.attributes and fail.attributes["error.type"] == "tool_failure"


async def test_tool_content_is_recorded_only_when_asked(
    make_gateway: Any, fake: FakeAnthropic
) -> None:
    provider, exporter = memory_provider()
    client = await make_gateway(tracer_provider=provider, gateway_trace_content=True)
    fake.add(Reply([ToolUse("echo", {"text": "secret"})]), Reply([Text("ok")]))
    await stream(client, query="x")
    [tool] = by_name(exporter.get_finished_spans(), "execute_tool")
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"text":"secret"}'
    assert tool.attributes["gen_ai.tool.call.result"] == "echo: secret"


async def test_failed_run_and_timeout_mark_spans(make_gateway: Any, fake: FakeAnthropic) -> None:
    provider, exporter = memory_provider()
    client = await make_gateway(tracer_provider=provider)
    fake.add(
        Reply([ToolUse("sleep", {"seconds": 5})]),
        Reply(status=401, error_type="authentication_error"),
    )
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    spans = exporter.get_finished_spans()
    [tool] = by_name(spans, "execute_tool")
    assert tool.status.status_code == StatusCode.ERROR and tool.attributes
    assert tool.attributes["error.type"] == "timeout"
    [agent] = by_name(spans, "invoke_agent")
    assert agent.status.status_code == StatusCode.ERROR and agent.attributes
    assert agent.attributes["error.type"] == "AUTHENTICATION_ERROR"
    assert by_name(spans, "chat ")[-1].status.status_code == StatusCode.ERROR


async def test_otlp_http_export_reaches_a_receiver(
    make_gateway: Any, fake: FakeAnthropic, aiohttp_server: AiohttpServer
) -> None:
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        received.append(message)
        return web.Response(status=200, content_type="application/x-protobuf")

    receiver_app = web.Application()
    receiver_app.router.add_post("/v1/traces", traces)
    receiver = await aiohttp_server(receiver_app)
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": str(receiver.make_url("")).rstrip("/"),
        "OTEL_SERVICE_NAME": "gateway-under-test",
    }
    provider = configure_tracing(environ)
    assert isinstance(provider, TracerProvider)
    client = await make_gateway(tracer_provider=provider)
    fake.add(Reply([ToolUse("echo", {"text": "a"})]), Reply([Text("ok")]))
    events = await stream(client, query="x")
    await asyncio.to_thread(provider.force_flush)
    await asyncio.to_thread(provider.shutdown)
    names, services, trace_ids = set(), set(), set()
    for message in received:
        for resource_spans in message.resource_spans:
            for attr in resource_spans.resource.attributes:
                if attr.key == "service.name":
                    services.add(attr.value.string_value)
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    names.add(span.name)
                    trace_ids.add(span.trace_id.hex())
    assert {"invoke_agent research-gateway", "chat claude-test-model", "execute_tool echo"} <= names
    assert services == {"gateway-under-test"} and events[-1]["trace_id"] in trace_ids


async def test_with_nowhere_to_export_spans_keep_their_ids_only(
    make_gateway: Any, fake: FakeAnthropic
) -> None:
    provider = configure_tracing({})
    assert isinstance(provider, UnrecordedTracerProvider)
    client = await make_gateway(tracer_provider=provider)
    fake.add(Reply([Text("a")]), Reply([Text("b")]))
    response = await client.post(
        "/api/stream", json={"query": "x"}, headers={"traceparent": TRACEPARENT}
    )
    continued = [e async for e in _events(response)]
    assert continued[0]["trace_id"] == TRACE_ID == continued[-1]["trace_id"]
    fresh = (await stream(client, query="y"))[-1]["trace_id"]
    assert re.fullmatch("[0-9a-f]{32}", fresh) and fresh != TRACE_ID
    # A sampler asked for by name: the SDK's spans, for a processor added later.
    assert isinstance(configure_tracing({"OTEL_TRACES_SAMPLER": "always_on"}), TracerProvider)


def test_an_unrecorded_span_is_a_child_with_an_id_of_its_own() -> None:
    tracer = UnrecordedTracer()
    with tracer.start_as_current_span("root") as root:
        child = tracer.start_span("child")
    parent, own = root.get_span_context(), child.get_span_context()
    assert parent.is_valid and own.is_valid and not child.is_recording()
    assert own.trace_id == parent.trace_id and own.span_id != parent.span_id
    assert not own.trace_flags.sampled and not own.is_remote
    assert trace.get_current_span() is trace.INVALID_SPAN  # detached on leaving
    other = tracer.start_span("another root").get_span_context()
    assert other.trace_id != parent.trace_id


def test_an_unrecorded_current_span_lets_errors_through_and_detaches() -> None:
    tracer = UnrecordedTracer()
    with pytest.raises(KeyError), tracer.start_as_current_span("outer") as outer:
        with tracer.start_as_current_span("inner", kind=trace.SpanKind.SERVER) as inner:
            assert trace.get_current_span() is inner
            assert inner.get_span_context().trace_id == outer.get_span_context().trace_id
        assert trace.get_current_span() is outer
        raise KeyError("x")
    assert trace.get_current_span() is trace.INVALID_SPAN


async def _events(response: Any) -> Any:
    from tests.conftest import read_events

    for event in await read_events(response):
        yield event

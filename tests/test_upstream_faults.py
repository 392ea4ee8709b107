"""Upstream faults: retried while nothing reached the client, an `error` event after."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp.test_utils import TestClient

from tests.conftest import stream, types
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

Client = TestClient[Any, Any]


def warnings_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "warning"]


async def test_429_then_success_honours_retry_after(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply(status=429, error_type="rate_limit_error", headers={"retry-after": "0.2"}))
    fake.add(Reply([Text("after the limit")]))
    events = await stream(gateway, query="x")
    [warning] = warnings_of(events)
    assert warning["code"] == "upstream_retry" and warning["error_code"] == "RATE_LIMIT_ERROR"
    assert warning["delay_s"] == 0.2 and warning["attempt"] == 1
    assert events[-1]["outcome"] == "completed" and events[-1]["result"] == "after the limit"
    assert len(fake.requests) == 2


async def test_529_then_success(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply(status=529, headers={"retry-after": "0"}), Reply([Text("ok")]))
    events = await stream(gateway, query="x")
    assert [w["error_code"] for w in warnings_of(events)] == ["OVERLOADED_ERROR"]
    assert events[-1]["type"] == "final"


async def test_retries_are_bounded(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_upstream_max_retries=2)
    fake.add(*[Reply(status=529, headers={"retry-after": "0"}) for _ in range(3)])
    events = await stream(client, query="x")
    assert len(warnings_of(events)) == 2 and len(fake.requests) == 3
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "OVERLOADED_ERROR"
    assert events[-1]["error"]["details"]["upstream_status"] == 529


async def test_total_retry_wait_is_bounded(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_upstream_max_retry_wait_s=1.0)
    fake.add(Reply(status=429, error_type="rate_limit_error", headers={"retry-after": "30"}))
    events = await stream(client, query="x")
    assert events[-1]["error"]["code"] == "RATE_LIMIT_ERROR" and len(fake.requests) == 1


async def test_auth_error_is_not_retried(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply(status=401, error_type="authentication_error"))
    events = await stream(gateway, query="x")
    assert types(events) == ["system_info", "system_init", "turn_start", "error"]
    assert events[-1]["error"]["code"] == "AUTHENTICATION_ERROR" and len(fake.requests) == 1


async def test_error_event_before_output_retries_the_turn(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("never seen")], error_after=2), Reply([Text("second try")]))
    events = await stream(gateway, query="x")
    assert [w["error_code"] for w in warnings_of(events)] == ["OVERLOADED_ERROR"]
    assert "".join(e["text"] for e in events if e["type"] == "delta") == "second try"


async def test_error_event_after_output_ends_the_run(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("partial answer here")], error_after=5))
    events = await stream(gateway, query="x")
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "OVERLOADED_ERROR"
    assert [e["type"] for e in events].count("error") == 1 and len(fake.requests) == 1
    assert events[-1]["error"]["request_id"]


async def test_output_read_together_with_the_error_reaches_the_client(
    gateway: Client, fake: FakeAnthropic
) -> None:
    # One read holds the deltas and the error: the deltas go out before the error event.
    fake.add(Reply([Text("partial answer here", chunk=4)], error_after=5, one_write=True))
    events = await stream(gateway, query="x")
    assert "".join(e["text"] for e in events if e["type"] == "delta") == "partial "
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "OVERLOADED_ERROR"
    assert len(fake.requests) == 1


async def test_cut_connection_before_output_retries(gateway: Client, fake: FakeAnthropic) -> None:
    fake.add(Reply([Text("lost")], cut_after=1), Reply([Text("recovered")]))
    events = await stream(gateway, query="x")
    assert [w["error_code"] for w in warnings_of(events)] == ["NETWORK_ERROR"]
    assert events[-1]["result"] == "recovered"


async def test_cut_connection_after_output_is_network_error(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("some words then the cable")], cut_after=5))
    events = await stream(gateway, query="x")
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "NETWORK_ERROR"


async def test_stream_without_message_stop_is_an_error(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("looks complete")], no_stop=True))
    events = await stream(gateway, query="x")
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "NETWORK_ERROR"
    assert "message_stop" in events[-1]["error"]["message"]


async def test_invalid_json_from_the_upstream_is_its_failure(
    gateway: Client, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("partial answer")], garbage_after=4))
    events = await stream(gateway, query="x")
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "NETWORK_ERROR"
    assert "invalid JSON" in events[-1]["error"]["message"]


async def test_a_stalled_upstream_costs_one_deadline_in_all(
    make_gateway: Any, fake: FakeAnthropic
) -> None:
    """Stalls before any output are retried, but all of it within the call's deadline."""
    client = await make_gateway(gateway_upstream_deadline_s=1.0, gateway_upstream_timeout_s=0.6)
    fake.add(*[Reply([Text("never")], stall_after=0) for _ in range(4)])
    started = time.monotonic()
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "TIMEOUT_ERROR"
    assert time.monotonic() - started < 2.5  # not 0.6 s per attempt, four attempts


async def test_x_should_retry_false_is_obeyed_and_the_request_id_reaches_the_error(
    gateway: Client, fake: FakeAnthropic
) -> None:
    headers = {"x-should-retry": "false", "request-id": "req_from_upstream"}
    fake.add(Reply(status=529, headers=headers), Reply([Text("never asked")]))
    events = await stream(gateway, query="x")
    assert warnings_of(events) == [] and len(fake.requests) == 1
    error = events[-1]["error"]
    assert error["code"] == "OVERLOADED_ERROR"
    assert error["details"]["upstream_status"] == 529
    assert error["details"]["upstream_request_id"] == "req_from_upstream"
    assert error["request_id"] != "req_from_upstream"  # the gateway's own id stays its own


async def test_x_should_retry_true_retries_even_a_400(gateway: Client, fake: FakeAnthropic) -> None:
    headers = {"x-should-retry": "true", "retry-after": "0"}
    fake.add(Reply(status=400, error_type="invalid_request_error", headers=headers))
    fake.add(Reply([Text("second time lucky")]))
    events = await stream(gateway, query="x")
    assert [w["error_code"] for w in warnings_of(events)] == ["VALIDATION_ERROR"]
    assert events[-1]["result"] == "second time lucky"


async def test_the_connect_timeout_setting_bounds_the_model_calls_connection(
    make_gateway: Any,
) -> None:
    # TCP connects, TLS is never answered: a connect timeout, not the 600 s read timeout.
    loop = asyncio.get_running_loop()
    silent = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    base_url = f"https://127.0.0.1:{silent.sockets[0].getsockname()[1]}"
    try:
        client = await make_gateway(
            anthropic_base_url=base_url, gateway_upstream_connect_timeout_s=0.2,
            gateway_upstream_max_retries=0,
        )  # fmt: skip
        started = time.monotonic()
        events = await stream(client, query="x")
    finally:
        silent.close()
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "TIMEOUT_ERROR"
    assert "within 0.2 s" in events[-1]["error"]["message"]
    assert time.monotonic() - started < 5

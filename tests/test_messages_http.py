"""The gateway posts streaming Messages calls itself: checked against what the SDK sends
for the same call, and against how the SDK's errors map, on the same fake server."""

from __future__ import annotations

import asyncio
import resource
import socket
from collections.abc import Callable
from typing import Any

import anthropic
import orjson
import pytest
from aiohttp.test_utils import TestServer

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic import status_failure
from gateway.providers.messages_http import MessagesHTTP
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

BODY: dict[str, Any] = {
    "model": "claude-sonnet-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Apple's revenue?"}],
    "system": [{"type": "text", "text": "Be brief."}],
}
# Set per request by the SDK's retry and raw-response machinery or by the HTTP layer, not
# part of the configuration.
PER_REQUEST = {"x-stainless-retry-count", "x-stainless-read-timeout", "x-stainless-timeout",
               "x-stainless-raw-response", "content-length", "host", "accept-encoding",
               "connection"}  # fmt: skip


def sdk_client(server: TestServer, **options: Any) -> anthropic.AsyncAnthropic:
    base_url = str(server.make_url("")).rstrip("/")
    return anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=0, **options)


async def read_all(http: MessagesHTTP) -> list[bytes]:
    payloads: list[bytes] = []
    await http.stream(BODY, payloads.extend)
    return payloads


async def test_same_request_as_the_sdk(fake: FakeAnthropic, fake_server: TestServer) -> None:
    fake.add(Reply([Text("one")]), Reply([Text("one")]))
    async with sdk_client(fake_server) as client:
        async with client.messages.with_streaming_response.create(**BODY, stream=True) as r:
            await r.read()
        http = MessagesHTTP(client)
        try:
            payloads = await read_all(http)
        finally:
            await http.close()
    sdk_headers, ours = fake.headers
    assert {k: v for k, v in ours.items() if k not in PER_REQUEST} == {
        k: v for k, v in sdk_headers.items() if k not in PER_REQUEST
    }
    auth = ours.get("x-api-key") or ours.get("authorization", "")  # as this SDK sends it
    assert auth.endswith("sk-test") and ours["anthropic-version"]
    assert fake.requests[0] == fake.requests[1] == {**BODY, "stream": True}
    kinds = [orjson.loads(p)["type"] for p in payloads]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"


@pytest.mark.parametrize(
    ("status", "error_type", "headers"),
    [
        (529, "overloaded_error", {"retry-after": "2"}),
        (429, "rate_limit_error", {"retry-after-ms": "1500"}),
        (400, "invalid_request_error", {}),
        (401, "authentication_error", {}),
        (500, "api_error", {}),
    ],
)
async def test_error_answers_map_as_the_sdks_exceptions_do(
    fake: FakeAnthropic, fake_server: TestServer, status: int, error_type: str,
    headers: dict[str, str],
) -> None:  # fmt: skip
    reply = Reply(status=status, error_type=error_type, headers=headers)
    fake.add(reply, reply)
    async with sdk_client(fake_server) as client:
        with pytest.raises(anthropic.APIStatusError) as sdk_error:
            await client.messages.create(**BODY, stream=True)
        expected = status_failure(sdk_error.value)
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as ours:
                await read_all(http)
        finally:
            await http.close()
    got = ours.value
    assert (got.code, got.retryable, got.retry_after_s, got.message, got.details) == (
        expected.code, expected.retryable, expected.retry_after_s, expected.message,
        expected.details,
    )  # fmt: skip


async def test_refused_connection_is_a_retryable_network_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with anthropic.AsyncAnthropic(
        api_key="k", base_url=f"http://127.0.0.1:{port}", max_retries=0
    ) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    assert failure.value.code == "NETWORK_ERROR" and failure.value.retryable


async def test_a_stalled_stream_times_out_per_read(
    fake: FakeAnthropic, fake_server: TestServer
) -> None:
    fake.add(Reply([Text("never finished", chunk=2)], stall_after=3))
    async with sdk_client(fake_server, timeout=0.3) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    assert failure.value.code == "TIMEOUT_ERROR" and failure.value.retryable


async def test_more_live_calls_than_the_sdks_pool_all_stream(
    fake: FakeAnthropic, fake_server: TestServer
) -> None:
    """The SDK's pool holds 1,000 connections; a streaming call keeps one for its whole
    stream, so with that cap the 1,001st would wait for another stream to end."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    calls = 1_050
    if min(hard, 65_536) < 3 * calls:
        pytest.skip(f"needs {3 * calls} open files, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 3 * calls), hard))
    fake.add(*(Reply([Text("first words", chunk=4)], stall_after=3) for _ in range(calls)))
    async with sdk_client(fake_server) as client:
        http = MessagesHTTP(client)
        started = [asyncio.Event() for _ in range(calls)]

        def on_first(first: asyncio.Event) -> Callable[[list[bytes]], None]:
            return lambda payloads: first.set()

        streams = [asyncio.create_task(http.stream(BODY, on_first(first))) for first in started]
        try:
            async with asyncio.timeout(30):  # every call gets its first events, all open
                await asyncio.gather(*(first.wait() for first in started))
        finally:
            for stream in streams:
                stream.cancel()
            await asyncio.gather(*streams, return_exceptions=True)
            await http.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

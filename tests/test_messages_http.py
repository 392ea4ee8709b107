"""The gateway posts streaming Messages calls itself: checked against what the SDK sends
for the same call, and against how the SDK's errors map, on the same fake server."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import gzip
import resource
import socket
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from typing import Any

import anthropic
import orjson
import pytest
from aiohttp.test_utils import TestServer

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.provider import AnthropicProvider, status_failure
from gateway.providers.anthropic.stream import failure_from_error_body
from gateway.providers.anthropic.transport import MessagesHTTP
from tests.fakes.anthropic import FakeAnthropic, Reply, Text
from tests.test_http1 import Proxy, Server, answer_with

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
    options = {"max_retries": 0} | options
    return anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, **options)


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
    # Each answer has its own request-id, when the server sends one: compared apart.
    ours_id = got.details.pop("upstream_request_id", None)
    sdk_id = expected.details.pop("upstream_request_id", None)
    assert (got.code, got.retryable, got.retry_after_s, got.message, got.details) == (
        expected.code, expected.retryable, expected.retry_after_s, expected.message,
        expected.details,
    )  # fmt: skip
    assert sdk_id == sdk_error.value.request_id  # what the SDK's exception says
    assert (ours_id is None) == (sdk_id is None) and (ours_id is None or ours_id != sdk_id)


@pytest.mark.parametrize(
    ("status", "should_retry", "attempts"), [(500, "false", 1), (400, "true", 2)]
)
async def test_x_should_retry_decides_as_it_does_for_the_sdk(
    fake: FakeAnthropic, fake_server: TestServer, status: int, should_retry: str, attempts: int
) -> None:
    headers = {"x-should-retry": should_retry, "retry-after-ms": "1"}
    reply = Reply(status=status, error_type="api_error", headers=headers)
    fake.add(reply, reply, reply)
    async with sdk_client(fake_server, max_retries=1) as client:
        with pytest.raises(anthropic.APIStatusError):
            await client.messages.create(**BODY, stream=True)
        assert len(fake.requests) == attempts  # the SDK obeyed the header
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as ours:
                await read_all(http)
        finally:
            await http.close()
    assert ours.value.retryable is (should_retry == "true")
    assert ours.value.details["upstream_status"] == status


async def test_the_error_bodys_request_id_is_kept_without_the_header() -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "boom"}}
    async with raw_upstream(json_answer(500, {**error, "request_id": "req_in_body"})) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    assert failure.value.details["upstream_request_id"] == "req_in_body"
    assert (failure.value.code, failure.value.message) == ("UNKNOWN_ERROR", "boom")


async def test_a_retry_after_date_is_a_wait_until_then() -> None:
    then = email.utils.formatdate(time.time() + 30, usegmt=True)
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "later"}}
    answer = json_answer(529, error).replace(
        b"\r\n\r\n", f"\r\nRetry-After: {then}\r\n\r\n".encode(), 1
    )
    async with raw_upstream(answer) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    assert failure.value.retry_after_s is not None and 28 < failure.value.retry_after_s <= 30


async def test_a_mid_stream_error_keeps_the_answers_request_id() -> None:
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    sse = b"event: error\ndata: " + error + b"\n\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nRequest-Id: req_stream\r\n"
    async with raw_upstream(head + b"Content-Length: %d\r\n\r\n%b" % (len(sse), sse)) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await http.stream(BODY, raise_error)
        finally:
            await http.close()
    assert failure.value.code == "OVERLOADED_ERROR"
    assert failure.value.details["upstream_request_id"] == "req_stream"


def raise_error(payloads: list[bytes]) -> None:
    """As the turn translator does with an `error` event."""
    for payload in payloads:
        event = orjson.loads(payload)
        if event["type"] == "error":
            raise failure_from_error_body(event)


async def test_a_redirect_is_an_error_with_its_status_not_followed() -> None:
    moved = (
        b"HTTP/1.1 308 Permanent Redirect\r\nLocation: https://elsewhere.example/v1/messages\r\n"
        b"Request-Id: req_moved\r\nContent-Length: 0\r\n\r\n"
    )
    async with raw_upstream(moved) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    got = failure.value
    assert (got.code, got.retryable) == ("UNKNOWN_ERROR", False)
    assert got.details == {
        "upstream_type": None,
        "upstream_status": 308,
        "upstream_request_id": "req_moved",
    }
    assert got.message == (
        "Upstream answered HTTP 308 to https://elsewhere.example/v1/messages: not followed"
    )


async def test_an_error_body_cut_short_keeps_its_status_and_code() -> None:
    error = b'{"type":"error","error":{"type":"authentication_error","message":"bad key"}}'
    cut = (
        b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%b" % (len(error), error[:20])
    )
    async with raw_upstream(cut, close=True) as client:
        http = MessagesHTTP(client)
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
    got = failure.value
    assert (got.code, got.retryable, got.details["upstream_status"]) == (
        "AUTHENTICATION_ERROR", False, 401
    )  # fmt: skip
    assert got.message == "Upstream answered HTTP 401; its body was cut short"


async def test_no_frame_holds_the_body_while_the_answer_streams() -> None:
    """The call's parameters, and the copies made to build them, are let go once
    serialised: a stream held them, through two frames, until it ended."""
    ping = b'event: ping\ndata: {"type":"ping"}\n\n'

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        left = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
        while left:  # the whole request first: none of it waits in the client's buffer
            left -= len(await reader.read(min(left, 1 << 16)))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%b" % (len(ping), ping))
        await writer.drain()
        writer.close()

    held: list[int] = []

    def on_payloads(payloads: list[bytes]) -> None:
        held.append(tracemalloc.get_traced_memory()[0] - before)

    server = await asyncio.start_server(answer, "127.0.0.1", 0)  # it keeps no request
    base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        async with anthropic.AsyncAnthropic(api_key="k", base_url=base_url) as client:
            provider = AnthropicProvider(client, "claude-sonnet-5")
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                # Inline: the test's frame holds nothing of it either.
                await provider.stream(
                    BODY | {"messages": [{"role": "user", "content": "x" * 4_000_000}]},
                    on_payloads,
                    betas=("b-1",),
                )
            finally:
                tracemalloc.stop()
                await provider.close()
    finally:
        server.close()
    assert held and held[0] < 1_000_000  # the 4 MB message, its JSON and the request


async def test_a_streamed_answer_keeps_only_its_request_id_of_its_headers() -> None:
    """The answer's headers are read at its head; of them a stream keeps only the
    `request-id`, which a failure mid-answer still names."""
    many = b"".join(b"x-header-%03d: %b\r\n" % (i, b"v" * 100) for i in range(400))
    ping = b'event: ping\ndata: {"type":"ping"}\n\n'
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nrequest-id: req_1\r\n"
        + many
        + b"Transfer-Encoding: chunked\r\n\r\n"
    )

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(head)
        await writer.drain()
        await asyncio.sleep(0.05)  # the head read and let go before the body's read
        writer.write(b"%x\r\n%b\r\n" % (len(ping), ping))
        await writer.drain()
        writer.close()  # the answer cut short

    held: list[int] = []

    def on_payloads(payloads: list[bytes]) -> None:
        held.append(tracemalloc.get_traced_memory()[0] - before)

    async with Server(answer).running() as url:
        base_url = str(url.with_path(""))
        async with anthropic.AsyncAnthropic(api_key="k", base_url=base_url) as client:
            http = MessagesHTTP(client)
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                with pytest.raises(UpstreamFailure) as failure:
                    await http.stream(BODY, on_payloads)
            finally:
                tracemalloc.stop()
                await http.close()
    assert failure.value.code == "NETWORK_ERROR"
    assert failure.value.details["upstream_request_id"] == "req_1"
    assert held and held[0] < 20_000  # 400 headers of ~115 bytes were kept, ~100 KB


async def test_a_gzip_encoded_stream_is_refused_not_parsed() -> None:
    encoded = gzip.compress(b'event: ping\ndata: {"type":"ping"}\n\n')
    answer = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n\r\n%b" % (len(encoded), encoded)
    )
    async with raw_upstream(answer) as client:
        http = MessagesHTTP(client)
        payloads: list[bytes] = []
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await http.stream(BODY, payloads.extend)
        finally:
            await http.close()
    assert failure.value.code == "NETWORK_ERROR" and payloads == []
    assert "gzip-encoded; identity was asked for" in failure.value.message


async def test_an_api_key_with_a_newline_is_refused_at_construction() -> None:
    async with anthropic.AsyncAnthropic(api_key="sk-secret\n", base_url="http://127.0.0.1:9") as c:
        with pytest.raises(ValueError, match="CR, LF or NUL") as refused:
            MessagesHTTP(c)
    assert "secret" not in str(refused.value)


async def test_the_connect_timeout_is_the_sdk_clients() -> None:
    """The SDK's default is 5 s to connect, 600 s a read: the connect part is honoured."""
    loop = asyncio.get_running_loop()
    silent = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)  # no TLS answer
    port = silent.sockets[0].getsockname()[1]
    timeout = anthropic.Timeout(600, connect=0.3)
    async with anthropic.AsyncAnthropic(
        api_key="k", base_url=f"https://127.0.0.1:{port}", timeout=timeout
    ) as client:
        http = MessagesHTTP(client)
        started = loop.time()
        try:
            with pytest.raises(UpstreamFailure) as failure:
                await read_all(http)
        finally:
            await http.close()
            silent.close()
    assert failure.value.code == "TIMEOUT_ERROR" and failure.value.retryable
    assert "within 0.3 s" in failure.value.message and loop.time() - started < 2


async def test_a_proxy_without_a_scheme_is_an_http_one(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = Proxy()
    async with proxy.running() as proxy_url:
        monkeypatch.setenv("http_proxy", f"127.0.0.1:{proxy_url.port}")
        monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        base_url = "http://api.example:8080"
        async with anthropic.AsyncAnthropic(api_key="k", base_url=base_url) as client:
            http = MessagesHTTP(client)
            try:
                await http.stream(BODY, lambda payloads: None)
            finally:
                await http.close()
    assert proxy.lines == ["POST http://api.example:8080/v1/messages HTTP/1.1"]


@contextlib.asynccontextmanager
async def raw_upstream(
    answer: bytes, *, close: bool = False
) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """An SDK client configured for a scripted server that writes `answer` to each request."""
    server = Server(answer_with(answer, close=close))
    async with server.running() as url:
        base_url = str(url.with_path(""))
        async with anthropic.AsyncAnthropic(api_key="k", base_url=base_url) as client:
            yield client


def json_answer(status: int, body: dict[str, Any]) -> bytes:
    data = orjson.dumps(body)
    head = b"HTTP/1.1 %d Error\r\nContent-Type: application/json\r\n" % status
    return head + b"Content-Length: %d\r\n\r\n%b" % (len(data), data)


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

"""Hostile input is a 4xx JSON answer, never a 500: bytes no header should carry, JSON
nested past any use, bodies that never finish, posts from other origins. Raw sockets
where the bytes on the wire are the point."""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any
from unittest import mock

import orjson
import pytest
from aiohttp import web
from aiohttp.streams import StreamReader
from aiohttp.test_utils import TestClient, make_mocked_request

from gateway.http import keys
from gateway.http.body import read_body
from gateway.settings import Settings
from tests.conftest import GatewayFactory

Client = TestClient[Any, Any]


async def raw_exchange(client: Client, head: bytes, body: bytes = b"") -> tuple[bytes, bytes]:
    """Send one request as bytes; the status line and headers, and the body."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(head + b"Connection: close\r\n\r\n" + body)
        async with asyncio.timeout(10):
            head_out = (await reader.readuntil(b"\r\n\r\n"))[:-4]
            length = [h for h in head_out.split(b"\r\n") if h.startswith(b"Content-Length:")]
            size = int(length[0].split(b":")[1]) if length else -1
            body_out = await (reader.readexactly(size) if size >= 0 else reader.read())
    finally:
        writer.close()
    return head_out, body_out


def error_code(head: bytes, body: bytes, status: int) -> str:
    assert head.startswith(f"HTTP/1.1 {status}".encode()), head
    assert b"Content-Type: application/json" in head, head
    return str(orjson.loads(body)["error"]["code"])


@pytest.mark.parametrize("key", [b"\xff\xfe", "kéy".encode()])
async def test_unreadable_authorization_is_401(make_gateway: GatewayFactory, key: bytes) -> None:
    client = await make_gateway(gateway_api_keys="web:k")
    head, body = await raw_exchange(
        client,
        b"GET /api/tools HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " + key + b"\r\n",
    )
    assert error_code(head, body, 401) == "AUTHENTICATION_ERROR"


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [65, 300, 2_000])
async def test_deep_json_is_400(gateway: Client, depth: int) -> None:
    """Past 64 levels; past orjson's own limit too (2,000)."""
    deep = b"[" * depth + b'"x"' + b"]" * depth
    body = b'{"messages": [{"role": "user", "content": [{"type": "text", "text": "a", "x": '
    body += deep + b"}]}]}"
    response = await gateway.post(
        "/api/stream", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "VALIDATION_ERROR"


async def test_shallow_enough_json_goes_through(gateway: Client) -> None:
    data = {"query": "x", "ignored": nested(60)}
    response = await gateway.post("/api/research", json=data)
    assert response.status != 400 or "nests deeper" not in await response.text()


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_post_requires_json(gateway: Client, content_type: str) -> None:
    response = await gateway.post(
        "/api/stream", data=b'{"query": "x"}', headers={"Content-Type": content_type}
    )
    assert response.status == 415
    assert (await response.json())["error"]["code"] == "VALIDATION_ERROR"


async def test_a_body_that_never_finishes_is_408(make_gateway: GatewayFactory) -> None:
    client = await make_gateway(gateway_body_timeout_s=0.5)
    body = b'{"query": "x"}'
    started = time.monotonic()
    head, answer = await raw_exchange(
        client,
        b"POST /api/stream HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n" % len(body),
        body[:-1],  # all but the last byte
    )
    assert error_code(head, answer, 408) == "VALIDATION_ERROR"
    assert time.monotonic() - started < 5


async def test_a_body_that_came_whole_is_read_without_a_deadline(
    make_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a body still on its way gets the read deadline (a timer each): one that came
    with its head is there to read. Its errors are the same."""
    from gateway.http import body as module

    def _no_deadline(_: float) -> Any:
        raise AssertionError("a deadline was set for a body that had all arrived")

    monkeypatch.setattr(module, "asyncio", SimpleNamespace(timeout=_no_deadline))
    client = await make_gateway(gateway_body_timeout_s=0.5)
    body = b'{"query": '
    head, answer = await raw_exchange(
        client,
        b"POST /api/stream HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n" % len(body),
        body,
    )
    assert error_code(head, answer, 400) == "VALIDATION_ERROR"
    assert b"not valid JSON" in answer


async def test_posts_from_other_origins_are_refused(make_gateway: GatewayFactory) -> None:
    client = await make_gateway(gateway_cors_origins="https://app.example")
    other = await client.post(
        "/api/stream", json={"query": "x"}, headers={"Origin": "https://evil.example"}
    )
    assert other.status == 403
    assert (await other.json())["error"]["code"] == "PERMISSION_ERROR"
    same = await client.post(
        "/api/runs/run_x/cancel", headers={"Origin": f"http://{client.host}:{client.port}"}
    )
    assert same.status == 404  # this server's own page: it went through to the handler


async def test_every_response_says_nosniff(gateway: Client) -> None:
    for response in (
        await gateway.get("/health"),
        await gateway.get("/nowhere"),
        await gateway.post("/api/stream", json={}),
    ):
        assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_a_read_body_is_not_kept_on_the_request() -> None:
    """aiohttp's `request.read()` keeps its copy on the request, and a stream's request
    lives as long as the stream: the body is read so that the caller's is the only one."""
    data = b'{"query": "' + b"x" * 800_000 + b'"}'
    protocol = mock.Mock(_reading_paused=False)
    payload = StreamReader(protocol, 2**16, loop=asyncio.get_running_loop())
    payload.feed_data(data)
    payload.feed_eof()
    app = web.Application()
    app[keys.SETTINGS] = Settings(_env_file=None)
    request = make_mocked_request("POST", "/api/stream", app=app, payload=payload)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert await read_body(request) == data
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 100_000

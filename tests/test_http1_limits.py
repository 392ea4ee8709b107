"""The model call's HTTP/1.1 client at its edges, on real sockets: a head counted as on the
wire (at the cap, and one byte over), a proxy's head at the cap, what a connection may be
reused after (`Connection: close`, bytes on an idle connection, `KEEPALIVE_S`), a body
without a length ended by a reset, and proxy credentials without a password."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest
import trustme
from yarl import URL

from gateway.providers import http1
from gateway.providers.http1 import HEAD_LIMIT, HTTP1Client, ProtocolError
from tests.test_http1 import SSE, Server, answer_with, chunked, client, post
from tests.test_http1_proxy import ScriptedProxy, answers, connect_fails, through_proxy

STATUS = b"HTTP/1.1 200 OK\r\n"
CHUNKED = b"Transfer-Encoding: chunked\r\n"
TOO_LARGE = (
    f"the upstream's answer has a head of {HEAD_LIMIT + 1}+ bytes (the limit is {HEAD_LIMIT})"
)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def padded_head(size: int) -> bytes:
    """A 200's status line and headers, `size` bytes as the wire has them (the blank line
    that ends the head not counted)."""
    pad = size - len(STATUS) - len(CHUNKED) - len(b"X-Padding: \r\n")
    return STATUS + CHUNKED + b"X-Padding: " + b"p" * pad + b"\r\n"


@pytest.mark.parametrize(
    ("over", "pause"),
    [(0, False), (0, True), (1, False)],
    ids=["at the cap", "at the cap, its end read later", "one byte over"],
)
async def test_a_head_is_counted_as_on_the_wire(over: int, pause: bool) -> None:
    # Read as it comes (the end of the head held back a moment) or parsed, the head's
    # bytes are the cap's, not one more.
    body = b"%x\r\n%b\r\n0\r\n\r\n" % (len(SSE), SSE)
    parts = (padded_head(HEAD_LIMIT + over), b"\r\n" + body)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.05 if pause else 0)

    server = Server(answer if pause else answer_with(b"".join(parts)))
    async with server.running() as url:
        http = client()
        try:
            if over:
                with pytest.raises(ProtocolError) as refused:
                    await post(http, url)
                assert str(refused.value) == TOO_LARGE
            else:
                assert await post(http, url) == (None, SSE)
        finally:
            await http.close()


async def test_a_proxys_head_at_the_cap_opens_the_tunnel(ca: trustme.CA) -> None:
    # The proxy's answer is counted as read: HEAD_LIMIT bytes without the end of its head,
    # then the end of its last line and the blank line.
    head = padded_head(HEAD_LIMIT + 2)[:-2]
    seen, _ = await through_proxy(ca, "upstream.test", answers(head, b"\r\n\r\n", pause=0.05))
    assert seen == ["upstream.test"]


async def test_a_proxys_head_one_byte_over_the_cap_is_refused() -> None:
    head = padded_head(HEAD_LIMIT + 3)[:-2]
    failed, _ = await connect_fails(answers(head, b"\r\n\r\n", pause=0.05))
    assert type(failed) is ProtocolError and str(failed) == TOO_LARGE


async def test_a_long_status_line_is_cut_in_the_message() -> None:
    line = "HTTP/1.1 OK " + "x" * 200
    failed, _ = await connect_fails(answers(line.encode() + b"\r\n\r\n"))
    expected = f"the proxy's answer to CONNECT is not HTTP/1.1: {line[:80]!r}"
    assert type(failed) is ProtocolError and str(failed) == expected


async def test_proxy_credentials_without_a_password(ca: trustme.CA) -> None:
    proxy = ScriptedProxy(answers(b"HTTP/1.1 407 Who\r\n\r\n"))
    async with proxy.running() as proxy_url:
        http = client(proxy=proxy_url.with_user("me"))
        try:
            with pytest.raises(ConnectionRefusedError):
                await post(http, URL("https://upstream.test/v1/messages"))
        finally:
            await http.close()
    assert b"\r\nProxy-Authorization: Basic bWU6\r\n" in proxy.heads[0]  # "me:"


async def test_an_answer_with_connection_close_is_not_reused() -> None:
    # The server says it will close, and keeps the connection open all the same.
    close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%b"
    server = Server(answer_with(close % (len(SSE), SSE)))
    async with server.running() as url:
        http = client()
        try:
            for _ in range(2):
                assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 2


async def test_bytes_on_an_idle_connection_end_it() -> None:
    async def then_408(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(chunked(SSE))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")

    server = Server(then_408)
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            await asyncio.sleep(0.2)  # the 408 arrives while the connection is idle
            assert not any(http._idle.values())
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 2


async def test_without_a_read_timeout_a_connection_serves_one_request_after_another() -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = HTTP1Client(connect_timeout=5, read_timeout=None)
        try:
            for _ in range(3):
                assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 1


async def test_a_connection_idle_past_keepalive_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http1, "KEEPALIVE_S", 0.2)
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            assert await post(http, url) == (None, SSE)  # at once: the same connection
            await asyncio.sleep(0.3)
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 2 and len(server.requests) == 3


async def test_a_body_without_a_length_ended_by_a_reset_is_not_complete() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + SSE)
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST, not FIN

    server = Server(reset)
    async with server.running() as url:
        http = client()
        received = bytearray()
        try:
            with pytest.raises(ConnectionResetError) as cut:
                await http.post(url, b"{}", {}, received.extend)
        finally:
            await http.close()
    assert received == SSE
    assert str(cut.value).startswith("the upstream closed the connection mid-answer: [Errno")


async def test_a_head_line_that_never_ends_is_refused_with_what_was_read() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(STATUS + b"X-Endless: ")
        for _ in range(HEAD_LIMIT // 4_096 + 2):
            writer.write(b"v" * 4_096)
            await writer.drain()
            await asyncio.sleep(0)
        await reader.read()

    server = Server(endless)
    async with server.running() as url:
        http = client()
        try:
            with pytest.raises(ProtocolError) as refused:
                await post(http, url)
        finally:
            await http.close()
    size = int(str(refused.value).split("a head of ")[1].split("+")[0])
    assert HEAD_LIMIT < size <= HEAD_LIMIT + 4_096 + len(STATUS) + 11


async def test_a_server_closing_its_connections_raises_nothing_in_the_loop() -> None:
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    server = Server(answer_with(chunked(SSE), close=True))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            await asyncio.wait_for(server.disconnected.wait(), 5)
            await asyncio.sleep(0.05)  # the close reaches the idle connection
            assert not http._open and not any(http._idle.values())
        finally:
            await http.close()
            loop.set_exception_handler(None)
    assert errors == []


async def test_a_101_leaves_nothing_open_or_idle_once_answered() -> None:
    switch = (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    )
    server = Server(answer_with(switch + b"\x81\x05hello"))
    async with server.running() as url:
        http = client()
        try:
            answer, _ = await post(http, url)
            assert not http._open and not any(http._idle.values())  # at once, not later
        finally:
            await http.close()
    assert answer is not None and answer.status == 101

"""The model call's HTTP/1.1 client against an upstream (or proxy) that misbehaves, on real
sockets: informational and upgrade answers, redirects, oversized heads, an encoding it did
not ask for, an error body cut short, header injection, the connect timeout, and an
https:// proxy."""

from __future__ import annotations

import asyncio
import gzip
import ssl

import pytest
import trustme
import uvloop
from yarl import URL

from gateway.providers.http1 import HEAD_LIMIT, HTTP1Client, InvalidHeader, ProtocolError
from tests.test_http1 import SSE, Handler, Proxy, Server, answer_with, chunked, client, post

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def tls_pair(ca: trustme.CA) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1, and a client one that trusts it."""
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_tls)
    client_tls = ssl.create_default_context()
    ca.configure_trust(client_tls)
    return server_tls, client_tls


async def test_informational_answers_are_skipped_for_the_final_one() -> None:
    informational = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    )
    server = Server(answer_with(informational + chunked(SSE, SSE)))
    async with server.running() as url:
        http = client()
        try:
            received: dict[str, str] = {}
            answer = await http.post(url, b"{}", {}, bytearray().extend, received)
            assert answer is None and "link" not in received  # the 103's headers are not kept
            assert await post(http, url) == (None, SSE + SSE)  # the connection is still sound
        finally:
            await http.close()
    assert server.connections == 1 and len(server.requests) == 2


async def test_a_101_is_not_success_and_its_connection_is_dropped() -> None:
    switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    server = Server(answer_with(switch + b"\r\n\x81\x05hello"))
    async with server.running() as url:
        http = client()
        try:
            answer, body = await post(http, url)
            assert answer is not None and (answer.status, body) == (101, b"")
            assert answer.complete  # its head came whole; the bytes after it are not read
            await asyncio.wait_for(server.disconnected.wait(), 5)
            assert not any(http._idle.values())
        finally:
            await http.close()


async def test_a_redirect_is_an_answer_with_its_status_not_followed() -> None:
    moved = b'{"moved": true}'
    server = Server(
        answer_with(
            b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://elsewhere.example/v1/messages"
            b"\r\nContent-Length: %d\r\n\r\n%b" % (len(moved), moved)
        )
    )
    async with server.running() as url:
        http = client()
        try:
            answer, body = await post(http, url)
        finally:
            await http.close()
    assert answer is not None and body == b""  # nothing of it reached the stream
    assert (answer.status, answer.body, answer.complete) == (307, moved, True)
    assert answer.headers["location"] == "http://elsewhere.example/v1/messages"
    assert len(server.requests) == 1


def many_headers(total: int) -> bytes:
    line = b"X-Padding: " + b"p" * 100 + b"\r\n"
    return line * (total // len(line) + 1)


async def test_a_head_just_under_the_cap_is_read() -> None:
    body = b"%x\r\n%b\r\n0\r\n\r\n" % (len(SSE), SSE)
    server = Server(answer_with(CHUNKED_HEAD + many_headers(HEAD_LIMIT - 2_000) + b"\r\n" + body))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()


@pytest.mark.parametrize("shape", ["many headers", "one endless header", "endless reason"])
async def test_a_head_over_the_cap_is_refused_and_the_connection_closed(shape: str) -> None:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if shape == "many headers":  # a complete head, in one write
            writer.write(CHUNKED_HEAD + many_headers(HEAD_LIMIT + 1_000) + b"\r\n")
        else:  # a line that never ends, in small writes: the read timeout is not what ends it
            writer.write(b"HTTP/1.1 200 " if shape == "endless reason" else CHUNKED_HEAD + b"X: ")
            for _ in range(HEAD_LIMIT // 4_096 + 2):
                writer.write(b"v" * 4_096)
                await writer.drain()
                await asyncio.sleep(0)
        await writer.drain()
        await reader.read()  # until the client goes

    server = Server(answer)
    async with server.running() as url:
        http = client()
        try:
            with pytest.raises(ProtocolError, match="head of"):
                await post(http, url)
            await asyncio.wait_for(server.disconnected.wait(), 5)
        finally:
            await http.close()


async def test_a_body_in_an_encoding_not_asked_for_is_refused() -> None:
    encoded = gzip.compress(SSE)
    server = Server(
        answer_with(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(encoded), encoded)
        )
    )
    async with server.running() as url:
        http = client()
        received = bytearray()
        try:
            with pytest.raises(ProtocolError, match="gzip-encoded; identity was asked for"):
                await http.post(url, b"{}", {}, received.extend)
        finally:
            await http.close()
    assert received == b""  # not one byte of it was taken for SSE
    assert server.requests[0][1]["accept-encoding"] == "identity"


def cut_error(status: int, *, stall: bool) -> Handler:
    """An error answer whose body stops a third of the way: the connection closes, or
    nothing more comes."""
    error = b'{"type":"error","error":{"type":"authentication_error","message":"bad key"}}'

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 %d Error\r\nContent-Type: application/json\r\nRequest-Id: req_cut\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (status, len(error), error[: len(error) // 3])
        )
        await writer.drain()
        if stall:
            await reader.read()
        else:
            writer.close()

    return answer


@pytest.mark.parametrize("stall", [False, True], ids=["closed", "stalled"])
async def test_an_error_body_cut_short_keeps_its_status(stall: bool) -> None:
    server = Server(cut_error(401, stall=stall))
    async with server.running() as url:
        http = HTTP1Client(connect_timeout=5, read_timeout=0.3)
        try:
            answer, _ = await post(http, url)
        finally:
            await http.close()
    assert answer is not None and (answer.status, answer.complete) == (401, False)
    assert answer.headers["request-id"] == "req_cut"
    assert answer.body.startswith(b'{"type":"error"')


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Api-Key": "sk-secret\r\nX-Injected: 1"},
        {"X-Api-Key": "sk-secret\n"},
        {"X-Api-Key": "sk-\rsecret"},
        {"X-Api-Key": "sk-\x00secret"},
        {"X-Injected: 1\r\nX-Api-Key": "sk-secret"},
    ],
    ids=["crlf", "lf", "cr", "nul", "in a name"],
)
async def test_a_header_with_cr_lf_or_nul_is_refused_before_anything_is_sent(
    headers: dict[str, str],
) -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()
        try:
            with pytest.raises(InvalidHeader, match="CR, LF or NUL") as refused:
                await http.post(url, b"{}", headers, bytearray().extend)
        finally:
            await http.close()
    assert "secret" not in str(refused.value)  # the value may be a key: never in the message
    assert server.connections == 0


async def test_the_connect_timeout_is_not_the_read_timeout(ca: trustme.CA) -> None:
    # TCP connects (the kernel accepts), but the TLS handshake is never answered.
    loop = asyncio.get_running_loop()
    silent = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
    url = URL(f"https://127.0.0.1:{silent.sockets[0].getsockname()[1]}/v1/messages")
    _, client_tls = tls_pair(ca)
    http = HTTP1Client(connect_timeout=0.2, read_timeout=30, ssl_context=client_tls)
    started = loop.time()
    try:
        with pytest.raises(TimeoutError, match=r"no connection to 127\.0\.0\.1 within 0\.2 s"):
            await post(http, url)
    finally:
        await http.close()
        silent.close()
    assert loop.time() - started < 2


async def https_proxy_exchange(ca: trustme.CA, target_tls: bool) -> None:
    server_tls, client_tls = tls_pair(ca)
    server = Server(answer_with(chunked(SSE)), tls=server_tls if target_tls else None)
    proxy = Proxy(tls=server_tls)  # a TLS-only listener: a plaintext CONNECT fails there
    async with server.running() as url, proxy.running() as proxy_url:
        assert proxy_url.scheme == "https"
        http = client(
            proxy=proxy_url.with_user("me").with_password("secret"), ssl_context=client_tls
        )
        try:
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert proxy.auth == ["Basic bWU6c2VjcmV0"]  # me:secret, read inside the proxy's TLS
    if target_tls:  # CONNECT inside TLS to the proxy, then TLS to the server inside that
        assert proxy.lines == [f"CONNECT 127.0.0.1:{url.port} HTTP/1.1"]
        assert server.requests[0][0] == "POST /v1/messages HTTP/1.1"
    else:
        assert proxy.lines == [f"POST {url} HTTP/1.1"]


@pytest.mark.parametrize("target_tls", [True, False], ids=["https target", "http target"])
async def test_an_https_proxy_gets_tls_before_connect_and_credentials(
    ca: trustme.CA, target_tls: bool
) -> None:
    await https_proxy_exchange(ca, target_tls)


def test_an_https_proxy_on_uvloop(ca: trustme.CA) -> None:
    """The gateway runs on uvloop where installed: TLS inside TLS works there too."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(https_proxy_exchange(ca, target_tls=True))


async def test_a_proxy_of_another_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="socks5:// proxy is not supported"):
        HTTP1Client(connect_timeout=5, read_timeout=5, proxy=URL("socks5://127.0.0.1:1080"))


async def test_a_proxys_endless_connect_answer_is_refused() -> None:
    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 Connection established\r\n")
            for _ in range(HEAD_LIMIT // 4_000 + 2):
                writer.write(b"X-Padding: " + b"p" * 4_000 + b"\r\n")
                await writer.drain()
            await reader.read()
        finally:
            writer.close()

    proxy = await asyncio.start_server(endless, "127.0.0.1", 0)
    proxy_url = URL(f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}")
    http = client(proxy=proxy_url)
    try:
        with pytest.raises(ProtocolError, match="head of"):
            await post(http, URL("https://api.example/v1/messages"))
    finally:
        await http.close()
        proxy.close()

"""The model call's HTTP/1.1 client against real sockets: TLS (a test CA), an HTTP proxy
(CONNECT for https, the absolute form for http), keep-alive reuse, a connection the server
dropped while idle, bodies without a length, error answers, failures in the callback, and
a cancel that closes the connection."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trustme
from yarl import URL

from gateway.providers.http1 import Answer, HTTP1Client

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
SSE = b'event: ping\ndata: {"type":"ping"}\n\n'


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    pairs = (line.split(": ", 1) for line in head[1:] if line)
    headers = {name.lower(): value for name, value in pairs}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return head[0], headers, body


def chunked(*parts: bytes) -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    return head + b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


class Server:
    """A scripted HTTP/1.1 server: `answer` writes each request's response."""

    def __init__(self, answer: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.disconnected = asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while not reader.at_eof():
                try:
                    self.requests.append(await read_request(reader))
                except asyncio.IncompleteReadError:
                    break
                await self.answer(reader, writer)
                if writer.is_closing():
                    break
        except ConnectionError:
            pass
        finally:
            self.disconnected.set()
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[URL]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        port = server.sockets[0].getsockname()[1]
        try:
            yield URL(f"{'https' if self.tls else 'http'}://127.0.0.1:{port}/v1/messages")
        finally:
            server.close()


class Proxy:
    """An HTTP proxy (an https:// one with `tls`): CONNECT tunnels bytes both ways; other
    requests are answered here."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.lines: list[str] = []
        self.auth: list[str | None] = []
        self.seen = b""
        self.writers: list[asyncio.StreamWriter] = []  # every byte a client sent through a tunnel

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, headers, _ = await read_request(reader)
        self.lines.append(line)
        self.auth.append(headers.get("proxy-authorization"))
        if not line.startswith("CONNECT "):
            writer.write(chunked(SSE))
            await writer.drain()
            writer.close()
            return
        host, port = line.split()[1].rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        self.writers += [writer, up_writer]
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, seen: bool) -> None:
            # OSError: TLS to an https:// proxy may end with the other side's data crossing
            # its close_notify.
            try:
                with contextlib.suppress(OSError):
                    while data := await src.read(65536):
                        if seen:
                            self.seen += data
                        dst.write(data)
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[URL]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        scheme = "https" if self.tls else "http"
        try:
            yield URL(f"{scheme}://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        finally:
            server.close()
            for writer in self.writers:  # tunnels still open
                writer.close()
            await asyncio.sleep(0.01)


def answer_with(response: bytes, *, close: bool = False) -> Handler:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(response)
        await writer.drain()
        if close:
            writer.close()

    return answer


def client(**options: object) -> HTTP1Client:
    return HTTP1Client(connect_timeout=5, read_timeout=5, **options)  # type: ignore[arg-type]


async def post(http: HTTP1Client, url: URL, body: bytes = b"{}") -> tuple[Answer | None, bytes]:
    received = bytearray()
    answer = await http.post(url, body, {"Content-Type": "application/json"}, received.extend)
    return answer, bytes(received)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


async def test_https_through_a_connect_proxy(ca: trustme.CA) -> None:
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_tls)
    client_tls = ssl.create_default_context()
    ca.configure_trust(client_tls)
    server, proxy = Server(answer_with(chunked(SSE, SSE)), tls=server_tls), Proxy()
    async with server.running() as url, proxy.running() as proxy_url:
        http = client(
            proxy=proxy_url.with_user("me").with_password("secret"), ssl_context=client_tls
        )
        try:
            answer, body = await post(http, url, b'{"secret": "question"}')
        finally:
            await http.close()
    assert answer is None and body == SSE + SSE
    assert proxy.lines == [f"CONNECT 127.0.0.1:{url.port} HTTP/1.1"]
    assert proxy.auth == ["Basic bWU6c2VjcmV0"]  # me:secret
    assert server.requests[0][0] == "POST /v1/messages HTTP/1.1"
    assert server.requests[0][2] == b'{"secret": "question"}'
    assert proxy.seen and b"question" not in proxy.seen  # the tunnel carried TLS


async def test_https_refuses_a_certificate_it_does_not_trust(ca: trustme.CA) -> None:
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_tls)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0, ssl=server_tls)
    url = URL(f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/messages")
    http = client()  # the system's trust store: no test CA in it
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            await post(http, url)
    finally:
        await http.close()
        server.close()


async def test_plain_http_through_a_proxy_is_sent_in_the_absolute_form() -> None:
    proxy = Proxy()
    async with proxy.running() as proxy_url:
        http = client(proxy=proxy_url)
        try:
            answer, body = await post(http, URL("http://api.example:8080/v1/messages"))
        finally:
            await http.close()
    assert answer is None and body == SSE
    assert proxy.lines == ["POST http://api.example:8080/v1/messages HTTP/1.1"]


async def test_a_kept_alive_connection_is_reused() -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()
        try:
            for _ in range(3):
                assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 1 and len(server.requests) == 3


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # Keep-alive answers, but the server closes each connection after it: the next
    # request finds it closed and goes out on a new one, without an error.
    server = Server(answer_with(chunked(SSE), close=True))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            await server.disconnected.wait()
            await asyncio.sleep(0.05)  # the close reaches the client's side
            assert not any(http._idle.values())  # it left the idle list as it closed
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 2


async def test_a_body_without_a_length_ends_with_the_connection() -> None:
    response = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    server = Server(answer_with(response + SSE + SSE, close=True))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE + SSE)
        finally:
            await http.close()


async def test_an_error_answer_comes_back_whole_with_its_headers() -> None:
    error = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    response = (
        b"HTTP/1.1 529 Overloaded\r\nContent-Type: application/json\r\nRetry-After: 2\r\n"
        b"Content-Length: %d\r\n\r\n%b" % (len(error), error)
    )
    server = Server(answer_with(response))
    async with server.running() as url:
        http = client()
        try:
            answer, body = await post(http, url)
        finally:
            await http.close()
    assert answer is not None and body == b""
    assert (answer.status, answer.headers["retry-after"], answer.body) == (529, "2", error)


async def test_what_the_callback_raises_ends_the_request() -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()

        def on_body(chunk: bytes) -> None:
            raise ValueError("not JSON")

        try:
            with pytest.raises(ValueError, match="not JSON"):
                await http.post(url, b"{}", {}, on_body)
            await asyncio.wait_for(server.disconnected.wait(), 5)  # not kept for reuse
        finally:
            await http.close()


async def test_a_cancelled_request_closes_its_connection() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(chunked(SSE)[:-5])  # the first event, then nothing
        await writer.drain()
        await reader.read()  # until the client goes

    server = Server(stall)
    async with server.running() as url:
        http = client()
        received = asyncio.Event()
        task = asyncio.create_task(http.post(url, b"{}", {}, lambda chunk: received.set()))
        try:
            await asyncio.wait_for(received.wait(), 5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(server.disconnected.wait(), 5)
        finally:
            await http.close()


async def test_nothing_read_for_the_read_timeout_is_a_timeout() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    server = Server(stall)
    async with server.running() as url:
        http = HTTP1Client(connect_timeout=5, read_timeout=0.2)
        try:
            with pytest.raises(TimeoutError, match="nothing read"):
                await post(http, url)
        finally:
            await http.close()

"""The model call's HTTP/1.1 client through a CONNECT proxy, on real sockets: the server's
name checked inside the tunnel (a test CA's certificates, the name sent as SNI), and a
proxy that refuses, answers with something that is not HTTP, closes during CONNECT, splits
its answer across reads, or never answers."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import trustme
from yarl import URL

from gateway.providers.http1 import HTTP1Client, ProtocolError
from tests.test_http1 import SSE, Server, answer_with, chunked, client, post

# What the proxy does once it has read a CONNECT: its answer, or anything else.
Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class ScriptedProxy:
    """A CONNECT proxy that sends every tunnel to one upstream port, whatever name it is
    asked for (as a proxy that resolves names the client cannot), after `script`."""

    def __init__(self, script: Script, upstream_port: int = 0) -> None:
        self.script = script
        self.upstream_port = upstream_port
        self.lines: list[str] = []
        self.heads: list[bytes] = []
        self.closed = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            self.heads.append(head)
            self.lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
            await self.script(reader, writer)
            if writer.is_closing():
                return
            if self.upstream_port:
                await self._tunnel(reader, writer)
            else:  # no upstream: wait for the client to let go
                await reader.read()
        finally:
            writer.close()
            self.closed.set()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                with contextlib.suppress(OSError):
                    while data := await src.read(65536):
                        dst.write(data)
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[URL]:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        try:
            yield URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        finally:
            server.close()
            for task in self.tasks:  # tunnels still open
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)


def answers(*parts: bytes, pause: float = 0.0) -> Script:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause)

    return script


def closes_after(*parts: bytes) -> Script:
    async def script(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await answers(*parts)(reader, writer)
        writer.close()

    return script


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def named_server(ca: trustme.CA, name: str, seen: list[str | None]) -> ssl.SSLContext:
    """A server context with a certificate for `name` that records the name asked for (SNI)."""
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(tls)

    def asked(_socket: ssl.SSLObject, name: str | None, _context: ssl.SSLContext) -> None:
        seen.append(name)

    tls.sni_callback = asked
    return tls


async def through_proxy(
    ca: trustme.CA, certificate_for: str, script: Script | None = None
) -> tuple[list[str | None], ScriptedProxy]:
    """One POST to https://upstream.test through the proxy, to a server whose certificate
    names `certificate_for`: the names the server was asked for, and the proxy."""
    seen: list[str | None] = []
    server = Server(answer_with(chunked(SSE)), tls=named_server(ca, certificate_for, seen))
    async with server.running() as url:
        established = answers(b"HTTP/1.1 200 Connection established\r\n\r\n")
        proxy = ScriptedProxy(script or established, url.port or 0)
        async with proxy.running() as proxy_url:
            client_tls = ssl.create_default_context()
            ca.configure_trust(client_tls)
            http = client(proxy=proxy_url, ssl_context=client_tls)
            target = URL(f"https://upstream.test:{url.port}/v1/messages")
            try:
                assert await post(http, target) == (None, SSE)
            finally:
                await http.close()
    return seen, proxy


async def test_the_server_name_is_checked_inside_the_tunnel(ca: trustme.CA) -> None:
    seen, proxy = await through_proxy(ca, "upstream.test")
    assert proxy.lines[0].startswith("CONNECT upstream.test:")
    assert seen == ["upstream.test"]  # the name went out as SNI, inside the tunnel


async def test_a_certificate_for_another_name_inside_the_tunnel_is_refused(
    ca: trustme.CA,
) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        await through_proxy(ca, "elsewhere.test")


async def test_a_connect_answer_split_across_reads_opens_the_tunnel(ca: trustme.CA) -> None:
    # The blank line that ends the answer is itself split: only the bytes together end it.
    pieces = (b"HTTP/1.1 200 Conn", b"ection established\r\nVia: 1.1 proxy\r\n\r", b"\n")
    seen, _ = await through_proxy(ca, "upstream.test", answers(*pieces, pause=0.05))
    assert seen == ["upstream.test"]


async def test_an_http_1_0_proxy_and_any_2xx_open_the_tunnel(ca: trustme.CA) -> None:
    await through_proxy(ca, "upstream.test", answers(b"HTTP/1.0 200 OK\r\n\r\n"))
    await through_proxy(ca, "upstream.test", answers(b"HTTP/1.1 204 Tunnel\r\n\r\n"))


async def connect_fails(
    script: Script, connect_timeout: float = 5
) -> tuple[BaseException, ScriptedProxy]:
    """A POST to an https:// URL through a proxy running `script`: what it raised."""
    proxy = ScriptedProxy(script)
    loop = asyncio.get_running_loop()
    errors: list[dict[str, object]] = []  # nothing goes wrong in the loop's callbacks either
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    async with proxy.running() as proxy_url:
        http = HTTP1Client(connect_timeout=connect_timeout, read_timeout=5, proxy=proxy_url)
        try:
            with pytest.raises(ConnectionError) as failed:
                await post(http, URL("https://upstream.test/v1/messages"))
            await asyncio.wait_for(proxy.closed.wait(), 5)  # the client let go of it
            assert not http._open and not any(http._idle.values())
        finally:
            await http.close()
            loop.set_exception_handler(None)
    assert errors == []
    return failed.value, proxy


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nForbidden",
        b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n",
        b"HTTP/1.1 199 Almost\r\n\r\n",
        b"HTTP/1.1 300 Choices\r\n\r\n",
    ],
    ids=["403 with a body", "407", "199", "300"],
)
async def test_a_proxy_that_refuses_is_a_refused_connection(answer: bytes) -> None:
    failed, proxy = await connect_fails(answers(answer))
    status_line = answer.split(b"\r\n", 1)[0].decode()
    assert type(failed) is ConnectionRefusedError
    assert str(failed) == f"the proxy answered {status_line!r}"
    assert proxy.lines == ["CONNECT upstream.test:443 HTTP/1.1"]


NOT_HTTP = [
    b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    b"HTTP/2 200\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/1.1 20x OK\r\n\r\n",
    b"HTTP/1.1 200x\r\n\r\n",
    b"xHTTP/1.1 200 OK\r\n\r\n",
]


@pytest.mark.parametrize("answer", NOT_HTTP)
async def test_a_proxy_answer_that_is_not_http_is_a_protocol_error(answer: bytes) -> None:
    failed, _ = await connect_fails(answers(answer))
    assert type(failed) is ProtocolError
    assert "the proxy's answer to CONNECT is not HTTP/1.1" in str(failed)


@pytest.mark.parametrize(
    "said", [b"", b"HTTP/1.1 200 Connection est"], ids=["nothing", "half an answer"]
)
async def test_a_proxy_that_closes_during_connect_is_a_reset(said: bytes) -> None:
    failed, _ = await connect_fails(closes_after(said))
    assert type(failed) is ConnectionResetError
    assert str(failed) == "the proxy closed the connection"


async def test_a_proxy_that_never_answers_connect_is_a_connect_timeout() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    proxy = ScriptedProxy(silent)
    async with proxy.running() as proxy_url:
        http = HTTP1Client(connect_timeout=0.3, read_timeout=30, proxy=proxy_url)
        try:
            with pytest.raises(
                TimeoutError, match=r"no connection to upstream\.test within 0\.3 s"
            ):
                await post(http, URL("https://upstream.test/v1/messages"))
            await asyncio.wait_for(proxy.closed.wait(), 5)
        finally:
            await http.close()

"""A streaming HTTP/1.1 client for model calls, whose body is handed on from the socket's
callback.

aiohttp's client puts every read of a response into a `StreamReader` and wakes the task
waiting on it; the task then passes the bytes on. For a paced stream that is a task
wake-up and a chain of awaits per event, and measured against the same relay with the
body handled in the protocol's `data_received`, it was half of what relaying an event
cost (bench/notes.md). Here the body goes to `on_body` from `data_received` itself; the
caller's task only waits for the response to end.

What a model call needs and no more: POST with a body, `http` and `https` (the system's
trust store), an HTTP proxy (`CONNECT` for `https`), keep-alive connections reused for
`KEEPALIVE_S`, a connect timeout and a timeout between reads. The response is parsed by
httptools (llhttp, as in Node.js): chunked or sized bodies, the status, the headers.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import httptools
from yarl import URL

KEEPALIVE_S = 5.0
ERROR_BODY_LIMIT = 1 << 20  # an error answer's body is kept whole up to this


class Timeout(TimeoutError):
    """No connection in time, or nothing read for the read timeout."""


@dataclass
class Answer:
    """A response that was not streamed to `on_body`: its status >= 400, its whole body."""

    status: int
    headers: dict[str, str]
    body: bytes


class HTTP1Client:
    """`post(url, body, headers, on_body)`: one streaming POST on a reused or new connection."""

    def __init__(
        self, *, connect_timeout: float | None, read_timeout: float | None,
        proxy: URL | None = None, ssl_context: ssl.SSLContext | None = None,
    ) -> None:  # fmt: skip
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._proxy = proxy
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()

    async def post(
        self, url: URL, body: bytes, headers: Mapping[str, str], on_body: Callable[[bytes], None]
    ) -> Answer | None:
        """Send the request; a 2xx/3xx body goes to `on_body` as it arrives (an exception
        there ends the request with that exception); None when it has all arrived. An error
        status returns its `Answer` instead. Raises `Timeout` or `ConnectionError`."""
        request = self._request(url, body, headers)
        key = (url.scheme, url.host or "", url.port or 0)
        while True:
            conn = self._reused(key)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(url)
            try:
                answer = await conn.exchange(request, on_body)
            except _NothingReceived:
                if reused:  # the server closed it while idle: a new connection, once
                    continue
                raise ConnectionResetError("the upstream closed the connection") from None
            except BaseException:
                conn.close()
                raise
            if conn.reusable:
                conn.idle_since = asyncio.get_running_loop().time()
                conn.idle_in = self._idle.setdefault(key, [])
                conn.idle_in.append(conn)
            else:
                conn.close()
            return answer

    async def close(self) -> None:
        for conn in list(self._open):
            conn.close()
        self._idle.clear()

    def _reused(self, key: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            conn.idle_in = None
            if not conn.closed and now - conn.idle_since < KEEPALIVE_S:
                return conn
            conn.close()
        return None

    def _request(self, url: URL, body: bytes, headers: Mapping[str, str]) -> bytes:
        via_proxy = self._proxy is not None and url.scheme == "http"
        target = str(url) if via_proxy else url.raw_path_qs
        lines = [f"POST {target} HTTP/1.1", f"Host: {url.raw_authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if via_proxy:
            lines += _proxy_auth(cast(URL, self._proxy))
        lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _connect(self, url: URL) -> _Connection:
        loop = asyncio.get_running_loop()
        host, port = url.host or "", url.port or (443 if url.scheme == "https" else 80)
        tls = self._tls() if url.scheme == "https" else None
        proxy = self._proxy
        conn = _Connection(self, self._read_timeout)
        try:
            async with asyncio.timeout(self._connect_timeout):
                if proxy is None:
                    await loop.create_connection(lambda: conn, host, port, ssl=tls)
                else:
                    proxy_port = proxy.port or 80
                    await loop.create_connection(lambda: conn, proxy.host or "", proxy_port)
                    if tls is not None:  # a tunnel through the proxy, then TLS inside it
                        await conn.tunnel(f"{host}:{port}", _proxy_auth(proxy))
                        plain = conn.transport
                        assert plain is not None
                        transport = await loop.start_tls(plain, conn, tls, server_hostname=host)
                        assert transport is not None
                        conn.transport = transport
        except TimeoutError:
            conn.close()
            message = f"no connection to {url.host} within {self._connect_timeout:g} s"
            raise Timeout(message) from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _tls(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl


def _proxy_auth(proxy: URL) -> list[str]:
    if proxy.user is None:
        return []
    credentials = f"{proxy.user}:{proxy.password or ''}".encode()
    return [f"Proxy-Authorization: Basic {base64.b64encode(credentials).decode()}"]


class _NothingReceived(ConnectionError):
    """The connection ended before any byte of the answer."""


class _Connection(asyncio.Protocol):
    """One connection; one exchange at a time. httptools calls the `on_*` methods."""

    def __init__(self, client: HTTP1Client, read_timeout: float | None) -> None:
        self._client = client
        self._loop = asyncio.get_running_loop()
        self._read_timeout = read_timeout
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = False
        self.idle_since = 0.0
        self.idle_in: list[_Connection] | None = None  # the client's idle list it is in
        self._parser = httptools.HttpResponseParser(self)
        self._done: asyncio.Future[Answer | None] | None = None
        self._on_body: Callable[[bytes], None] | None = None
        self._answer: Answer | None = None  # an error answer being read
        self._headers: dict[str, str] = {}
        self._received = False
        self._until_close = False
        self._error: BaseException | None = None  # what `on_body` raised
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tunnel: asyncio.Future[None] | None = None
        self._tunnel_buffer = b""

    # -- the exchange, from the caller's task

    async def exchange(self, request: bytes, on_body: Callable[[bytes], None]) -> Answer | None:
        if self.closed or self.transport is None:
            raise _NothingReceived
        self._done = self._loop.create_future()
        self._on_body, self._answer, self._headers = on_body, None, {}
        self._received = self.reusable = self._until_close = False
        self._last_read = self._loop.time()
        if self._read_timeout is not None:
            self._timer = self._loop.call_later(self._read_timeout, self._check_read)
        try:
            self.transport.write(request)
            return await self._done
        finally:
            self._done = self._on_body = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def tunnel(self, authority: str, auth: list[str]) -> None:
        """`CONNECT` through the proxy this connection goes to."""
        assert self.transport is not None
        self._tunnel = self._loop.create_future()
        head = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}", *auth]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await self._tunnel

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()
        self._client._open.discard(self)

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self._client._open.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._client._open.discard(self)
        if self.idle_in is not None:  # closed by the server while idle: forget it now
            self.idle_in.remove(self)
            self.idle_in = None
        if exc is None and self._until_close and self._done is not None:
            self.on_message_complete()  # a body without a length ends with its connection
        if self._tunnel is not None and not self._tunnel.done():
            self._tunnel.set_exception(ConnectionResetError("the proxy closed the connection"))
        if self._done is not None and not self._done.done():
            if not self._received:
                self._done.set_exception(_NothingReceived())
            else:
                reason = f": {exc}" if exc else ""
                self._done.set_exception(
                    ConnectionResetError(f"the upstream closed the connection mid-answer{reason}")
                )

    def data_received(self, data: bytes) -> None:
        if self._tunnel is not None:
            self._tunnel_data(data)
            return
        self._received = True
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            # httptools wraps what a callback raised: `on_body` keeps it for the caller.
            error, self._error = self._error, None
            if error is None:
                error = ConnectionResetError(f"the upstream's answer is not HTTP/1.1: {exc}")
            self._fail(error)

    def _tunnel_data(self, data: bytes) -> None:
        assert self._tunnel is not None
        self._tunnel_buffer += data
        end = self._tunnel_buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        status_line = self._tunnel_buffer.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        tunnel, self._tunnel = self._tunnel, None
        if len(parts) < 2 or parts[1] != "200":
            tunnel.set_exception(ConnectionRefusedError(f"the proxy answered {status_line!r}"))
        else:
            tunnel.set_result(None)

    # -- httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        headers = self._headers
        self._until_close = "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )
        if status >= 400:
            self._answer = Answer(status, self._headers, b"")

    def on_body(self, body: bytes) -> None:
        answer = self._answer
        if answer is None:
            if self._on_body is not None:
                try:
                    self._on_body(body)
                except BaseException as exc:  # the caller's, as it raised it
                    self._error = exc
                    raise
        elif len(answer.body) < ERROR_BODY_LIMIT:
            answer.body += body

    def on_message_complete(self) -> None:
        self.reusable = not self._until_close and self._parser.should_keep_alive()
        done = self._done
        if done is not None and not done.done():
            done.set_result(self._answer)

    # -- failures

    def _fail(self, exc: BaseException) -> None:
        done = self._done
        if done is not None and not done.done():
            done.set_exception(exc)
        self.close()

    def _check_read(self) -> None:
        assert self._read_timeout is not None
        idle = self._loop.time() - self._last_read
        if idle >= self._read_timeout:
            self._timer = None
            self._fail(Timeout(f"nothing read from the upstream for {self._read_timeout:g} s"))
        else:
            self._timer = self._loop.call_later(self._read_timeout - idle, self._check_read)

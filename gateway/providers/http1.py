"""A streaming HTTP/1.1 client for model calls, whose body is handed on from the socket's
callback.

aiohttp's client puts every read of a response into a `StreamReader` and wakes the task
waiting on it; the task then passes the bytes on. For a paced stream that is a task
wake-up and a chain of awaits per event, and measured against the same relay with the
body handled in the protocol's `data_received`, it was half of what relaying an event
cost (bench/notes.md). Here the body goes to `on_body` from `data_received` itself; the
caller's task only waits for the response to end.

What a model call needs and no more: POST with a body, `http` and `https` (the system's
trust store), an `http://` or `https://` proxy (`CONNECT` for `https`; to an `https://`
proxy over TLS first, as httpx does), keep-alive connections reused for `KEEPALIVE_S`, a
connect timeout and a timeout between reads. The response is parsed by httptools (llhttp,
as in Node.js): chunked or sized bodies, the status, the headers.

Against an upstream that misbehaves: informational answers (100, 103) are skipped; a
redirect is not followed and a 101 not taken (both come back as an `Answer`); a head over
`HEAD_LIMIT` or a body in an encoding other than the `identity` asked for is a
`ProtocolError`; an error answer cut short keeps its status. A CR, LF or NUL in a header
to send is refused before anything is sent. Bytes on an idle connection (a 408 before the
server closes it) end it rather than wait there for the next request.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, cast

import httptools
from yarl import URL

KEEPALIVE_S = 5.0
ERROR_BODY_LIMIT = 1 << 20  # an error answer's body is kept whole up to this
HEAD_LIMIT = 64 << 10  # a response's status line and headers, as aiohttp and h11 cap them
PROXY_SCHEMES = ("http", "https")
_STATUS_LINE = re.compile(r"HTTP/1\.[01] ([0-9]{3})(?: .*)?")


class Timeout(TimeoutError):
    """No connection in time, or nothing read for the read timeout."""


class ProtocolError(ConnectionError):
    """The answer is not one this client takes: not HTTP/1.1, a head over `HEAD_LIMIT`,
    or a body in an encoding it did not ask for."""


class InvalidHeader(ValueError):
    """A header to send has a CR, LF or NUL: it would end the header, or the head."""


@dataclass
class Answer:
    """A response that was not streamed to `on_body` (a status >= 300, or 101): its status,
    its headers (lowercase names) and its body up to `ERROR_BODY_LIMIT`; `complete` is
    False when the body was cut short (the connection lost, the read timeout, bad framing)."""

    status: int
    headers: dict[str, str]
    body: bytes
    complete: bool = True


def header_block(headers: Mapping[str, str]) -> bytes:
    """`headers` as they go out, for `post` to send as they are (a caller with the same
    headers for every request checks and formats them once). Raises `InvalidHeader`,
    naming the header (not its value: it may be a secret), for a CR, LF or NUL in a name
    or value: it would end the header, or the head, there."""
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0"):
            raise InvalidHeader(f"the header {name!r} has a CR, LF or NUL in it")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items()).encode("latin-1")


class HTTP1Client:
    """`post(url, body, headers, on_body)`: one streaming POST on a reused or new connection."""

    def __init__(
        self,
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
        proxy: URL | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if proxy is not None and proxy.scheme not in PROXY_SCHEMES:
            raise ValueError(f"a {proxy.scheme}:// proxy is not supported (http:// or https://)")
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._proxy = proxy
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()

    def post(
        self,
        url: URL,
        body: bytes,
        headers: Mapping[str, str] | bytes,
        on_body: Callable[[bytes], None],
        received: dict[str, str] | None = None,
    ) -> Coroutine[Any, Any, Answer | None]:
        """Send the request (`headers` a mapping, or a `header_block`); a 2xx body goes to
        `on_body` as it arrives (an exception there ends the request with that
        exception); None when it has all arrived. Any other final status returns its
        `Answer` instead. `received`, when given, is filled with the answer's headers
        (lowercase names) as they arrive. Raises `Timeout`, `ConnectionError`
        (`ProtocolError` among them) or `InvalidHeader`.

        Not a coroutine itself: no frame of the call holds `body` while the answer
        streams. The request is held only until the answer's first byte (a connection
        found closed is retried before that), not for a whole stream: it was a stream's
        largest buffer, about 10 KB."""
        return self._send(url, [self._request(url, body, headers)], on_body, received)

    async def _send(
        self,
        url: URL,
        outgoing: list[bytes],
        on_body: Callable[[bytes], None],
        received: dict[str, str] | None,
    ) -> Answer | None:
        key = (url.scheme, url.host or "", url.port or 0)
        while True:
            conn = self._reused(key)
            reused = conn is not None
            if conn is None:
                conn = await self._connect(url)
            try:
                answer = await conn.exchange(outgoing, on_body, received)
            except _NothingReceived:
                if reused:  # the server closed it while idle: a new connection, once
                    continue
                raise ConnectionResetError("the upstream closed the connection") from None
            except BaseException:
                conn.close()
                raise
            if conn.reusable and not conn.closed:
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

    def _request(self, url: URL, body: bytes, headers: Mapping[str, str] | bytes) -> bytes:
        block = headers if isinstance(headers, bytes) else header_block(headers)
        via_proxy = self._proxy is not None and url.scheme == "http"
        target = str(url) if via_proxy else url.raw_path_qs  # yarl's: no CR or LF in them
        lines = [f"POST {target} HTTP/1.1", f"Host: {url.raw_authority}"]
        if via_proxy:
            lines += _proxy_auth(cast(URL, self._proxy))
        # Bodies are not decoded here: the answer comes as sent or is refused.
        lines += ["Accept-Encoding: identity", f"Content-Length: {len(body)}", ""]
        return "\r\n".join(lines).encode("latin-1") + block + b"\r\n" + body

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
                    # An https:// proxy gets TLS first: the CONNECT line and the
                    # credentials never cross the network in the clear.
                    proxy_tls = self._tls() if proxy.scheme == "https" else None
                    await loop.create_connection(
                        lambda: conn, proxy.host or "", proxy.port or 80, ssl=proxy_tls
                    )
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


def _connect_status(status_line: str) -> int | None:
    """The status of a proxy's answer to CONNECT, None for what is not an HTTP/1.x one."""
    match = _STATUS_LINE.fullmatch(status_line)
    return int(match[1]) if match else None


def _too_large(size: int) -> str:
    return f"the upstream's answer has a head of {size}+ bytes (the limit is {HEAD_LIMIT})"


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
        self._outgoing: list[bytes] | None = None  # the request, until the first byte
        self._in_head = False  # a tunnel's answer or a response's head is being read
        self._head_read = 0  # bytes read while the head was incomplete
        self._header_bytes = 0  # the status reason's and headers' bytes, 1xx answers' too
        self._informational = False  # a 1xx answer: the final one follows
        self._until_close = False
        self._error: BaseException | None = None  # what `on_body` raised
        self._last_read = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._tunnel: asyncio.Future[None] | None = None
        self._tunnel_buffer = b""

    # -- the exchange, from the caller's task

    async def exchange(
        self,
        outgoing: list[bytes],
        on_body: Callable[[bytes], None],
        received: dict[str, str] | None,
    ) -> Answer | None:
        """Send `outgoing`'s request; the list is emptied once the answer's first byte
        arrives, as a request is sent again only when nothing came back."""
        if self.closed:
            raise _NothingReceived
        assert self.transport is not None
        self._done = self._loop.create_future()
        self._on_body, self._answer = on_body, None
        self._headers = received if received is not None else {}
        self._received = self.reusable = self._until_close = self._informational = False
        self._in_head, self._head_read, self._header_bytes = True, 0, 0
        self._last_read = self._loop.time()
        if self._read_timeout is not None:
            self._timer = self._loop.call_later(self._read_timeout, self._check_read)
        try:
            self.transport.write(outgoing[0])
            self._outgoing = outgoing
            return await self._done
        finally:
            self._done = self._on_body = self._outgoing = None
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def tunnel(self, authority: str, auth: list[str]) -> None:
        """`CONNECT` through the proxy this connection goes to."""
        assert self.transport is not None
        self._tunnel = self._loop.create_future()
        self._in_head, self._tunnel_buffer = True, b""
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
            elif self._answer is not None:  # an error answer cut short keeps its status
                self._answer.complete = False
                self._done.set_result(self._answer)
            else:
                reason = f": {exc}" if exc else ""
                self._done.set_exception(
                    ConnectionResetError(f"the upstream closed the connection mid-answer{reason}")
                )

    def data_received(self, data: bytes) -> None:
        if self._done is None and self._tunnel is None:
            # Bytes nobody asked for (a 408 on an idle connection): it cannot be reused.
            self.close()
            return
        if self._in_head:  # counted against HEAD_LIMIT; the body's reads are not
            self._head_data(data)
            return
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._parse_failed(exc)

    def _head_data(self, data: bytes) -> None:
        if self._tunnel is not None:
            self._tunnel_data(data)
            return
        if not self._received and self._outgoing is not None:
            self._outgoing.clear()
        self._received = True
        self._last_read = self._loop.time()
        self._head_read += len(data)
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            self._parse_failed(exc)
            return
        # llhttp keeps an unfinished line to itself: its length shows only here.
        if self._in_head and self._head_read > HEAD_LIMIT:
            self._fail(ProtocolError(_too_large(self._head_read)))

    def _parse_failed(self, exc: Exception) -> None:
        # httptools wraps what a callback raised: `on_body` keeps it for the caller, the
        # head's checks their `ProtocolError`. A 101's pause ends up here too.
        error, self._error = self._error, None
        if error is None:
            error = ProtocolError(f"the upstream's answer is not HTTP/1.1: {exc}")
        self._fail(error)

    def _tunnel_data(self, data: bytes) -> None:
        assert self._tunnel is not None
        self._tunnel_buffer += data
        if b"\r\n\r\n" not in self._tunnel_buffer:
            if len(self._tunnel_buffer) > HEAD_LIMIT:
                tunnel, self._tunnel = self._tunnel, None
                tunnel.set_exception(ProtocolError(_too_large(len(self._tunnel_buffer))))
            return
        status_line = self._tunnel_buffer.split(b"\r\n", 1)[0].decode("latin-1")
        tunnel, self._tunnel = self._tunnel, None
        status = _connect_status(status_line)
        if status is None:
            message = f"the proxy's answer to CONNECT is not HTTP/1.1: {status_line[:80]!r}"
            tunnel.set_exception(ProtocolError(message))
        elif status // 100 != 2:  # any 2xx opens the tunnel (RFC 9110, 9.3.6)
            tunnel.set_exception(ConnectionRefusedError(f"the proxy answered {status_line!r}"))
        else:
            tunnel.set_result(None)

    # -- httptools callbacks

    def on_status(self, reason: bytes) -> None:
        self._header_bytes += len(reason) + 15  # with "HTTP/1.1 200 " and CRLF
        if self._header_bytes > HEAD_LIMIT:
            self._head_too_large()

    def on_header(self, name: bytes, value: bytes) -> None:
        # Counted here, not in a call per header: a run's answer has a dozen or more.
        self._header_bytes += len(name) + len(value) + 4  # as on the wire: ": " and CRLF
        if self._header_bytes > HEAD_LIMIT:
            self._head_too_large()
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def _head_too_large(self) -> None:
        self._error = ProtocolError(_too_large(self._header_bytes))
        raise self._error

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        headers = self._headers
        if status < 200 and status != 101:  # 100 Continue, 103 Early Hints: more to come
            self._informational = True
            headers.clear()
            return
        self._in_head = False
        self._until_close = "content-length" not in headers and "chunked" not in headers.get(
            "transfer-encoding", ""
        )
        if status >= 300 or status == 101:  # a redirect is not followed, a 101 not asked for
            self._answer = Answer(status, headers, b"")
            return
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("identity", ""):
            message = f"the upstream's answer is {encoding}-encoded; identity was asked for"
            self._error = ProtocolError(message)
            raise self._error

    def on_body(self, body: bytes) -> None:
        answer = self._answer
        if answer is None:
            if self._on_body is not None:
                try:
                    self._on_body(body)
                except BaseException as exc:  # the caller's, as it raised it
                    self._error = exc
                    raise
        else:
            answer.body += body[: ERROR_BODY_LIMIT - len(answer.body)]

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        done = self._done
        if done is None or done.done():  # a second answer to one request: out of step
            self.reusable = False
            return
        # A body that ends with the connection, or a 101 (the parser stops after it),
        # leaves the connection closed: `post` does not keep it.
        self.reusable = self._parser.should_keep_alive()
        answer, self._answer, self._on_body = self._answer, None, None
        done.set_result(answer)  # what follows in the same read is no part of it

    # -- failures

    def _fail(self, exc: BaseException) -> None:
        done = self._done
        if done is not None and not done.done():
            if self._answer is not None:  # an error answer cut short keeps its status
                self._answer.complete = False
                done.set_result(self._answer)
            else:
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

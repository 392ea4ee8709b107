"""The model call's HTTP/1.1 client reading answers on real sockets: a kept-alive connection
the server closed just as the next request went out, an error body in several reads (and
over its limit), the read timeout re-armed between reads, and answers that are not
HTTP/1.1 at all or stop halfway."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest
from yarl import URL

from gateway.providers.http1 import ERROR_BODY_LIMIT, HTTP1Client, ProtocolError
from tests.test_http1 import SSE, Handler, Server, answer_with, chunked, client, post

ERROR = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


def drops(requests: set[int]) -> Handler:
    """Answers every request but the ones numbered in `requests` (from 1), where it closes
    the connection without a byte: as a server whose idle timeout ended as they arrived."""
    count = 0

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        count += 1
        if count in requests:
            writer.close()
            return
        writer.write(chunked(SSE))
        await writer.drain()

    return answer


async def test_a_reused_connection_closed_unanswered_is_retried_on_a_new_one() -> None:
    server = Server(drops({2}))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            assert await post(http, url, b'{"n": 2}') == (None, SSE)
            assert await post(http, url) == (None, SSE)  # the new connection is kept in turn
        finally:
            await http.close()
    assert server.connections == 2
    assert [body for _, _, body in server.requests] == [b"{}", b'{"n": 2}', b'{"n": 2}', b"{}"]


@pytest.mark.parametrize("dropped", [{1}, {2, 3}], ids=["a new connection", "the retry too"])
async def test_a_new_connection_closed_unanswered_is_not_retried(dropped: set[int]) -> None:
    server = Server(drops(dropped))
    async with server.running() as url:
        http = client()
        try:
            if 1 not in dropped:
                assert await post(http, url) == (None, SSE)
            with pytest.raises(ConnectionResetError, match=r"^the upstream closed the connection$"):
                await post(http, url)
            assert not http._open  # each let go as it closed
        finally:
            await http.close()
    assert server.connections == len(dropped)  # one new connection at most per request


def error_in_reads(*parts: bytes, chunks: bool = False) -> Handler:
    """A 529 whose body comes in `parts`, one write (and read) each: sized, or chunked."""

    total = sum(map(len, parts))
    size = b"Transfer-Encoding: chunked" if chunks else b"Content-Length: %d" % total

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 529 Overloaded\r\n%b\r\n\r\n" % size)
        for part in parts:
            await writer.drain()
            await asyncio.sleep(0.02)
            writer.write(b"%x\r\n%b\r\n" % (len(part), part) if chunks else part)
        writer.write(b"0\r\n\r\n" if chunks else b"")
        await writer.drain()

    return answer


@pytest.mark.parametrize("chunks", [False, True], ids=["sized", "chunked"])
async def test_an_error_body_in_several_reads_is_kept_whole(chunks: bool) -> None:
    server = Server(error_in_reads(ERROR[:10], ERROR[10:40], ERROR[40:], chunks=chunks))
    async with server.running() as url:
        http = client()
        try:
            answer, streamed = await post(http, url)
            assert await post(http, url) == (answer, b"")  # the connection was sound after it
        finally:
            await http.close()
    assert answer is not None and streamed == b""
    assert (answer.status, answer.body, answer.complete) == (529, ERROR, True)
    assert server.connections == 1


async def test_an_error_body_over_the_limit_is_kept_to_the_limit() -> None:
    half = b"x" * (ERROR_BODY_LIMIT // 2 + 10)
    server = Server(error_in_reads(half, half, b"tail"))
    async with server.running() as url:
        http = client()
        try:
            answer, _ = await post(http, url)
        finally:
            await http.close()
    assert answer is not None and answer.complete
    assert answer.body == (half + half)[:ERROR_BODY_LIMIT]


def paced(gaps: list[float]) -> Handler:
    """A 200 stream with one event after each gap (seconds), then its end."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
        writer.write(b"Transfer-Encoding: chunked\r\n\r\n")
        for gap in gaps:
            await writer.drain()
            await asyncio.sleep(gap)
            writer.write(b"%x\r\n%b\r\n" % (len(SSE), SSE))
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    return answer


READ_TIMEOUT = 0.5


async def paced_post(gaps: list[float]) -> tuple[bytes, BaseException | None]:
    received = bytearray()
    server = Server(paced(gaps))
    async with server.running() as url:
        http = HTTP1Client(connect_timeout=5, read_timeout=READ_TIMEOUT)
        try:
            await http.post(url, b"{}", {}, received.extend)
        except TimeoutError as exc:
            return bytes(received), exc
        finally:
            await http.close()
    return bytes(received), None


async def test_reads_closer_than_the_read_timeout_keep_a_long_answer_going() -> None:
    # Six reads 0.6 of the timeout apart: 3.6 timeouts in all, never one without a read.
    received, failed = await paced_post([0.6 * READ_TIMEOUT] * 6)
    assert (received, failed) == (SSE * 6, None)


async def test_the_read_timeout_counts_from_the_last_read() -> None:
    # A read at 0.5 of the timeout, then 1.6 timeouts of silence before more: the timer
    # set at the start finds a read half a timeout old and waits out the rest from there,
    # so the silence ends the request before the next read could save it.
    received, failed = await paced_post([0.0, 0.5 * READ_TIMEOUT, 1.6 * READ_TIMEOUT, 0.0])
    assert received == SSE * 2
    assert isinstance(failed, TimeoutError)
    assert str(failed) == f"nothing read from the upstream for {READ_TIMEOUT:g} s"


GARBAGE = {  # what is sent, and what the parser says of it
    "ssh": (b"SSH-2.0-OpenSSH_9.6\r\n", "Expected HTTP/, RTSP/ or ICE/"),
    "tls": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", "Expected HTTP/, RTSP/ or ICE/"),
    "bad status": (b"HTTP/1.1 2OO OK\r\n\r\n", "Invalid status code"),
}


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
async def test_an_answer_that_is_not_http_is_a_protocol_error(garbage: tuple[bytes, str]) -> None:
    sent, said = garbage
    server = Server(answer_with(sent))
    async with server.running() as url:
        http = client()
        try:
            with pytest.raises(ProtocolError) as refused:
                await post(http, url)
            assert str(refused.value) == f"the upstream's answer is not HTTP/1.1: {said}"
            await asyncio.wait_for(server.disconnected.wait(), 5)  # dropped, not kept
        finally:
            await http.close()
    assert not http._open and not any(http._idle.values())


@pytest.mark.parametrize("later", [False, True], ids=["one read", "a read of its own"])
async def test_garbage_inside_a_chunked_body_ends_it_after_what_came_before(later: bool) -> None:
    good, bad = chunked(SSE)[: -len(b"0\r\n\r\n")], b"zz\r\nnot a chunk\r\n"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(good)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(bad)
        await writer.drain()

    server = Server(answer if later else answer_with(good + bad))
    async with server.running() as url:
        http = client()
        received = bytearray()
        try:
            with pytest.raises(
                ProtocolError, match=r"not HTTP/1\.1: Invalid character in chunk size$"
            ):
                await http.post(url, b"{}", {}, received.extend)
        finally:
            await http.close()
    assert received == SSE


async def test_a_stream_cut_short_is_a_reset_after_what_came() -> None:
    response = chunked(SSE, SSE)[: -len(b"0\r\n\r\n") - 5]
    server = Server(answer_with(response, close=True))
    async with server.running() as url:
        http = client()
        received = bytearray()
        try:
            with pytest.raises(
                ConnectionResetError, match=r"^the upstream closed the connection mid-answer$"
            ):
                await http.post(url, b"{}", {}, received.extend)
        finally:
            await http.close()
    assert received == SSE + SSE[:-3]  # what came of the second event went on as it came


async def test_a_request_is_let_go_once_its_answer_begins() -> None:
    """A stream holds no copy of its request body while the answer streams in: a long
    answer would otherwise keep it (a stream's largest buffer) for minutes."""
    release = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        left = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
        while left:  # read and drop: this server keeps none of it
            left -= len(await reader.read(min(left, 1 << 16)))
        first, rest = chunked(SSE, SSE).split(SSE, 1)
        writer.write(first + SSE)
        await release.wait()
        writer.write(rest)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/messages")
    held: list[int] = []

    def on_body(chunk: bytes) -> None:
        held.append(tracemalloc.get_traced_memory()[0] - before)
        release.set()

    http = client()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        answer = await http.post(url, b"x" * 4_000_000, {"Content-Type": "x"}, on_body)
    finally:
        tracemalloc.stop()
        await http.close()
        server.close()
    assert answer is None and held
    assert held[0] < 1_000_000  # the 4 MB body and the 4 MB request are gone

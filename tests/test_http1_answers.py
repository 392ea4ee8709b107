"""What the model call's HTTP/1.1 client makes of an answer's head, on real sockets: the
headers handed to the caller, informational answers in reads of their own, the first
status that is not success, an empty `Content-Encoding`, a second answer to one request;
and the request's headers, and connections kept per server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from yarl import URL

from gateway.providers.http1 import Answer, header_block
from tests.test_http1 import SSE, Handler, Server, answer_with, chunked, client, post, read_request


def in_reads(*parts: bytes) -> Handler:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.05)

    return answer


async def test_the_answers_headers_are_handed_over_as_they_arrive() -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()
        received: dict[str, str] = {}
        try:
            await http.post(url, b"{}", {}, bytearray().extend, received)
        finally:
            await http.close()
    assert received == {"content-type": "text/event-stream", "transfer-encoding": "chunked"}


async def test_informational_answers_in_their_own_reads_wait_for_the_final_one() -> None:
    server = Server(
        in_reads(
            b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\n\r\n", chunked(SSE)
        )
    )
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()
    assert server.connections == 1


async def test_300_is_the_first_status_that_is_not_streamed() -> None:
    choices = b"HTTP/1.1 300 Multiple Choices\r\nContent-Length: 2\r\n\r\nno"
    server = Server(answer_with(choices))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (Answer(300, {"content-length": "2"}, b"no"), b"")
        finally:
            await http.close()


async def test_an_empty_content_encoding_is_identity() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: \r\nTransfer-Encoding: chunked\r\n\r\n"
    server = Server(answer_with(head + chunked(SSE).split(b"\r\n\r\n", 1)[1]))
    async with server.running() as url:
        http = client()
        try:
            assert await post(http, url) == (None, SSE)
        finally:
            await http.close()


async def test_a_second_answer_to_one_request_is_not_taken_and_ends_the_connection() -> None:
    error = b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\noops"
    for first, second in [(chunked(SSE), chunked(b"x")), (error, chunked(b"x"))]:
        server = Server(answer_with(first + second))
        async with server.running() as url:
            http = client()
            try:
                answer, body = await post(http, url)
                await asyncio.wait_for(server.disconnected.wait(), 5)
            finally:
                await http.close()
        if answer is None:
            assert body == SSE
        else:
            assert (answer.status, answer.body, body) == (500, b"oops", b"")
        assert server.connections == 1


async def test_headers_go_out_each_on_its_own_line() -> None:
    server = Server(answer_with(chunked(SSE)))
    headers = {"X-Api-Key": "sk-XX", "Anthropic-Version": "2023-06-01"}
    async with server.running() as url:
        http = client()
        try:
            assert await http.post(url, b"{}", headers, bytearray().extend) is None
        finally:
            await http.close()
    sent = server.requests[0][1]
    assert (sent["x-api-key"], sent["anthropic-version"]) == ("sk-XX", "2023-06-01")


async def test_each_server_keeps_its_own_connections() -> None:
    first, second = Server(answer_with(chunked(b"1"))), Server(answer_with(chunked(b"2")))
    async with first.running() as one, second.running() as two:
        http = client()
        try:
            for url, body in [(one, b"1"), (two, b"2"), (one, b"1"), (two, b"2")]:
                assert await post(http, url) == (None, body)
        finally:
            await http.close()
    assert (first.connections, len(first.requests)) == (1, 2)
    assert (second.connections, len(second.requests)) == (1, 2)


async def test_headers_formatted_once_go_out_as_they_are() -> None:
    server = Server(answer_with(chunked(SSE)))
    async with server.running() as url:
        http = client()
        block = header_block({"X-Api-Key": "sk-once"})
        try:
            for _ in range(2):
                assert await http.post(url, b"{}", block, bytearray().extend) is None
        finally:
            await http.close()
    assert [sent["x-api-key"] for _, sent, _ in server.requests] == ["sk-once", "sk-once"]


async def test_two_hosts_on_one_port_keep_their_own_connections() -> None:
    counts = {"127.0.0.1": 0, "127.0.0.2": 0}
    handlers: list[asyncio.Task[None]] = []

    def serve(host: str) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            handlers.append(asyncio.current_task())  # type: ignore[arg-type]
            counts[host] += 1
            while not reader.at_eof():
                try:
                    await read_request(reader)
                except asyncio.IncompleteReadError:
                    break
                writer.write(chunked(host.encode()))
                await writer.drain()
            writer.close()
            await writer.wait_closed()

        return handle

    one = await asyncio.start_server(serve("127.0.0.1"), "127.0.0.1", 0)
    port = one.sockets[0].getsockname()[1]
    two = await asyncio.start_server(serve("127.0.0.2"), "127.0.0.2", port)
    http = client()
    try:
        for host in ["127.0.0.1", "127.0.0.2"] * 2:
            url = URL(f"http://{host}:{port}/v1/messages")
            assert await post(http, url) == (None, host.encode())
    finally:
        await http.close()
        await asyncio.wait_for(asyncio.gather(*handlers), 5)  # each saw its client go
        one.close()
        two.close()
    assert counts == {"127.0.0.1": 1, "127.0.0.2": 1}

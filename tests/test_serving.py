"""The listening site takes every waiting connection each time its socket is readable, on
either loop (libuv, under uvloop, takes one per loop iteration), and leaves nothing open."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any

import pytest

from gateway.http import serving
from gateway.ops import eventloop

WAITING = 100


MADE: list[asyncio.BaseTransport] = []


class Recorder(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        MADE.append(transport)


def _connect(port: int) -> list[socket.socket]:
    """Clients whose handshakes the kernel completed: they wait in the accept queue."""
    return [socket.create_connection(("127.0.0.1", port)) for _ in range(WAITING)]


async def _every_connection_at_once() -> None:
    loop = asyncio.get_running_loop()
    sock = serving.listening_socket("127.0.0.1", 0)
    MADE.clear()
    acceptor = serving.Acceptor(loop, sock, Recorder, backlog=serving.LISTEN_BACKLOG)
    clients = _connect(sock.getsockname()[1])
    try:
        acceptor._accept()  # one readiness callback...
        with pytest.raises(BlockingIOError):
            sock.accept()  # ...left none waiting
        for _ in range(20):
            if len(MADE) == WAITING:
                break
            await asyncio.sleep(0.01)
        assert len(MADE) == WAITING
        assert acceptor.sockets == (sock,) and acceptor.is_serving()
    finally:
        acceptor.close()
        await acceptor.wait_closed()
        for transport in MADE:
            transport.close()
        for client in clients:
            client.close()
    assert sock.fileno() == -1 and not acceptor.is_serving() and not acceptor.sockets
    assert not acceptor._opening


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_one_readiness_takes_every_waiting_connection(loop: str) -> None:
    eventloop.run(_every_connection_at_once(), loop)


class ShortOfFiles(socket.socket):
    """Fails its first accept as a process out of file descriptors does."""

    failed = False

    def accept(self) -> tuple[socket.socket, Any]:
        if not self.failed:
            self.failed = True
            raise OSError(errno.EMFILE, "Too many open files")
        return super().accept()


async def _pause_when_short_of_files() -> None:
    loop = asyncio.get_running_loop()
    sock = ShortOfFiles()
    sock.bind(("127.0.0.1", 0))
    sock.listen(serving.LISTEN_BACKLOG)
    MADE.clear()
    acceptor = serving.Acceptor(loop, sock, Recorder, backlog=serving.LISTEN_BACKLOG)
    clients = _connect(sock.getsockname()[1])
    try:
        await asyncio.sleep(serving.ACCEPT_RETRY_S / 2)
        assert MADE == []  # paused, not spinning on a readable socket
        await asyncio.sleep(serving.ACCEPT_RETRY_S)
        assert len(MADE) == WAITING  # and back once the pause is over
    finally:
        acceptor.close()
        for transport in MADE:
            transport.close()
        for client in clients:
            client.close()


def test_out_of_file_descriptors_it_pauses_then_accepts_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serving, "ACCEPT_RETRY_S", 0.2)
    eventloop.run(_pause_when_short_of_files(), "uvloop")

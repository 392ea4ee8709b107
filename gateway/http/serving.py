"""Serving the app: aiohttp's runner on one listening socket, with a site that accepts
every waiting connection each time the socket is readable (`AcceptingSite`).

Why not aiohttp's own sites: under uvloop, libuv accepts one connection per loop
iteration (libuv pull request 3696, "don't accept() connections in a loop"). Relaying a
thousand streams makes an iteration last 100 ms and more, so new streams waited in the
kernel's queue for seconds while the live ones went on (bench case 2 at 1,000 streams:
up to 120 waiting, one accept per iteration, first events 5 s late at p99). asyncio's
own loop accepts up to the backlog each time; this site does the same on either loop.

`run` is `web.run_app` for that site, with a bound on stopping (`shutdown_timeout`, the
setting GATEWAY_SHUTDOWN_TIMEOUT_S): on SIGTERM or SIGINT the site stops accepting, every
run is ended with its terminal event, and the streams get until `shutdown_timeout` after
the signal to deliver theirs. A client that reads nothing would hold its stream until the
write deadline (and aiohttp's own wait is per phase, twice its timeout: 21.6 s measured
with silent readers at 10 s), so the connections still open then are aborted. The
cleanup (the shared store's last writes, the tools) has what is left of
`shutdown_timeout + CLEANUP_S`; the process exits within `shutdown_timeout +
EXIT_MARGIN_S` whatever happens, by force if the loop does not get there.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web
from yarl import URL

from gateway.http.access_log import AccessLog

log = logging.getLogger(__name__)

LISTEN_BACKLOG = 1024
"""Connections the kernel holds for the loop to accept (aiohttp's default is 128). Past
it, a new connection's handshake is dropped and the client waits for a retransmission
(1 s, then 3 s, 7 s): a burst of stream starts (bench case 2 at 1,500 streams) overflowed
128 whenever the loop was busy for a moment. The kernel caps it at `net.core.somaxconn`."""

ACCEPT_RETRY_S = 1.0
"""Out of file descriptors or memory: stop accepting this long (as asyncio does)."""
_SHORT_OF = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

CLEANUP_S = 4.0
"""After `shutdown_timeout`: how long the cleanup may go on (the shared store's flusher
waits up to 5 s for Redis, cut short here), leaving a second of the exit margin to cancel
what is left and close the loop."""
EXIT_MARGIN_S = 5.0
"""The process is gone this long after `shutdown_timeout` at the latest (PROTOCOL)."""


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket listening on `host:port` (the first address `host` resolves to)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


class Acceptor(asyncio.AbstractServer):
    """Takes the waiting connections off a listening socket, up to `backlog` each time it
    is readable, and hands each to `factory`'s protocol on the loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sock: socket.socket,
        factory: Callable[[], asyncio.BaseProtocol],
        backlog: int,
    ) -> None:
        self._loop = loop
        self._sock = sock
        self._factory = factory
        self._backlog = backlog
        self._opening: set[asyncio.Task[Any]] = set()
        self._serving = True
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._accept)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return (self._sock,) if self._serving else ()

    def _accept(self) -> None:
        for _ in range(self._backlog):
            try:
                conn, _address = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return  # none left (or one gave up while waiting): readable again for more
            except OSError as exc:
                if exc.errno not in _SHORT_OF:
                    raise
                log.error("not accepting connections for %g s: %s", ACCEPT_RETRY_S, exc)
                self._loop.remove_reader(self._sock.fileno())
                self._loop.call_later(ACCEPT_RETRY_S, self._resume)
                return
            task = self._loop.create_task(self._open(conn))
            self._opening.add(task)
            task.add_done_callback(self._opening.discard)

    def _resume(self) -> None:
        if self._serving:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    async def _open(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn)
        except OSError:  # the client left before its transport was made
            conn.close()

    def close(self) -> None:
        if not self._serving:
            return
        self._serving = False
        self._loop.remove_reader(self._sock.fileno())
        self._sock.close()
        # Connections still being handed over finish that (within an iteration) and are
        # closed with the server's other connections: cancelling one could leave its
        # socket open, or close the descriptor its new transport already owns.

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def is_serving(self) -> bool:
        return self._serving

    async def start_serving(self) -> None:
        pass  # serving from the start

    async def serve_forever(self) -> None:
        raise NotImplementedError("run the app's runner instead")

    async def wait_closed(self) -> None:
        if self._opening:
            await asyncio.gather(*self._opening, return_exceptions=True)


class AcceptingSite(web.BaseSite):
    """An aiohttp site on a listening socket, served through an `Acceptor`."""

    __slots__ = ("_name", "_sock")

    def __init__(self, runner: web.BaseRunner, sock: socket.socket) -> None:
        super().__init__(runner, backlog=LISTEN_BACKLOG)
        self._sock = sock
        host, port = sock.getsockname()[:2]
        self._name = str(URL.build(scheme="http", host=host, port=port))

    @property
    def name(self) -> str:
        return self._name

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = Acceptor(asyncio.get_running_loop(), self._sock, server, self._backlog)


def run(
    app: web.Application,
    sock: socket.socket,
    loop: asyncio.AbstractEventLoop,
    *,
    shutdown_timeout: float,
) -> None:
    """Serve `app` on `sock` until SIGINT or SIGTERM, then stop within the bound above."""
    stop: asyncio.Future[None] = loop.create_future()
    watchdog = threading.Timer(shutdown_timeout + EXIT_MARGIN_S, _exit_late, [shutdown_timeout])
    watchdog.daemon = True

    def on_signal() -> None:
        if not stop.done():
            stop.set_result(None)
            watchdog.start()  # counts from the signal, in a thread: a stuck loop ends too

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    main = loop.create_task(_serve(app, sock, stop, shutdown_timeout))
    try:
        loop.run_until_complete(main)
    except KeyboardInterrupt:
        pass
    finally:
        try:
            if not main.done():
                main.cancel()  # its `finally` shuts the runner down gracefully
                with contextlib.suppress(asyncio.CancelledError):
                    loop.run_until_complete(main)
        finally:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            loop.close()
            watchdog.cancel()


async def _serve(
    app: web.Application, sock: socket.socket, stop: asyncio.Future[None], shutdown_timeout: float
) -> None:
    runner = web.AppRunner(
        app,
        handle_signals=False,
        handler_cancellation=True,
        shutdown_timeout=shutdown_timeout,
        access_log_class=AccessLog,
    )
    await runner.setup()
    try:
        await AcceptingSite(runner, sock).start()
        await stop
    finally:
        await _stop(runner, shutdown_timeout)


async def _stop(runner: web.AppRunner, shutdown_timeout: float) -> None:
    """aiohttp's cleanup (the runs end at its `on_shutdown`), its open connections
    aborted at `shutdown_timeout`, and all of it cut short at `+ CLEANUP_S`."""
    loop = asyncio.get_running_loop()
    closing = loop.call_later(shutdown_timeout, _abort_connections, runner, shutdown_timeout)
    try:
        async with asyncio.timeout(shutdown_timeout + CLEANUP_S):
            await runner.cleanup()
    except TimeoutError:
        log.error("shutdown: the cleanup took over %g s; stopping without it", CLEANUP_S)
    finally:
        closing.cancel()


def _abort_connections(runner: web.AppRunner, shutdown_timeout: float) -> None:
    """The streams that did not deliver their end in time (clients that read nothing):
    aborted, so their pending writes fail and their buffers go now."""
    server = runner.server
    transports = [] if server is None else [c.transport for c in server.connections]
    open_ = [transport for transport in transports if transport is not None]
    if open_:
        log.warning(
            "shutdown: closing %d connections still open after %g s", len(open_), shutdown_timeout
        )
    for transport in open_:
        transport.abort()


def _exit_late(shutdown_timeout: float) -> None:
    """The last resort: the loop did not finish stopping within the bound."""
    late = shutdown_timeout + EXIT_MARGIN_S
    os.write(2, f"research-gateway: not stopped {late:g} s after the signal; exiting\n".encode())
    os._exit(1)

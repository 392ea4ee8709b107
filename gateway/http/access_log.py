"""The access log: aiohttp's default line, with every byte a stream sent counted.

A stream's live frames are written to its transport past aiohttp's writer (see
`SSEWriter.write_now`), which then undercounts the response; the stream records what it
wrote there under `keys.SENT_DIRECTLY`, and this line adds it. The format is aiohttp's
default (`%a %t "%r" %s %b "%{Referer}i" "%{User-Agent}i"`), so what reads those lines
reads these.

While the log is as `configure_logging` leaves it, the line goes straight to its handler,
formatted as a record would be (`logs.plain_handler`): a line a request, and logging's
record and handler calls were most of its cost.

A request whose client went away mid-response is logged with what it was sent (a stream
that began is a 200) and one more field at the end of the line saying why it ended early:
`client_left` (the client closed the connection: a Stop button, a dropped network),
`client_dropped` (it read nothing within the write deadline) or `closed_at_shutdown`.
A request the client left before anything was sent is a 499, as nginx logs it. The
request-duration metric records the same status: none of these is a server error.
"""

from __future__ import annotations

import logging
import time

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from gateway.http import keys
from gateway.http.logs import plain_handler

LEFT: web.RequestKey[str | None] = web.RequestKey("left")
"""Why a response ended before it was whole (see above); None (or absent: a request no
middleware saw) when it was. Set to None first: `request.get` of a key never set raises
and catches a KeyError inside aiohttp, on every line."""
STREAM = web.RequestKey("stream", web.StreamResponse)
"""A stream's response, set by its handler: what the client was sent if it leaves."""
CLIENT_CLOSED = 499
"""nginx's status for a request its client closed before the answer began."""
LINE = '%s [%s] "%s %s HTTP/%d.%d" %d %d "%s" "%s"%s'


class AccessLog(AbstractAccessLogger):
    """Passed to aiohttp's runner as `access_log_class`."""

    _second: tuple[int, str] = (-1, "")
    """The last start time formatted, by its second: most lines share one with the last.
    Kept on the class: aiohttp makes an access logger per connection, so on the instance
    it served one request, and every line of a one-request connection paid `strftime`."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time_s: float) -> None:
        sent = (response.body_length or 0) + request.get(keys.SENT_DIRECTLY, 0)
        started = self._started(time.time() - time_s)
        version = request.version
        headers = request.headers
        left = request.get(LEFT)
        fields = (
            request.remote or "-",
            started,
            request.method,
            request.path_qs,
            version.major,
            version.minor,
            response.status,
            sent,
            headers.get("Referer", "-"),
            headers.get("User-Agent", "-"),
            "" if left is None else " " + left,
        )
        handler = plain_handler(self.logger)
        if handler is None:
            self.logger.info(LINE, *fields)
        else:
            handler.write_info(self.logger.name, LINE % fields)

    def _started(self, when: float) -> str:
        second = int(when)
        cached = self._second
        if cached[0] != second:
            text = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(second))
            cached = AccessLog._second = (second, text)
        return cached[1]

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

"""The access log: aiohttp's default line, with every byte a stream sent counted.

A stream's live frames are written to its transport past aiohttp's writer (see
`SSEWriter.write_now`), which then undercounts the response; the stream records what it
wrote there under `keys.SENT_DIRECTLY`, and this line adds it. The format is aiohttp's
default (`%a %t "%r" %s %b "%{Referer}i" "%{User-Agent}i"`), so what reads those lines
reads these.
"""

from __future__ import annotations

import logging
import time

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from gateway import keys


class AccessLog(AbstractAccessLogger):
    """Passed to aiohttp's runner as `access_log_class`."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time_s: float) -> None:
        sent = (response.body_length or 0) + request.get(keys.SENT_DIRECTLY, 0)
        started = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(time.time() - time_s))
        version = request.version
        headers = request.headers
        self.logger.info(
            '%s [%s] "%s %s HTTP/%d.%d" %d %d "%s" "%s"',
            request.remote or "-", started, request.method, request.path_qs, version.major,
            version.minor, response.status, sent, headers.get("Referer", "-"),
            headers.get("User-Agent", "-"),
        )  # fmt: skip

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

"""The process's log: INFO lines to stderr, each with the caller's name (`key`).

`configure_logging` sets it up. While the log stays as it leaves it (one handler at the
root, nothing that filters or changes records on the way), `plain_handler` hands the
access line its handler, which writes the line just as a record would come out of it,
without making the record: logging's record, filters and handler calls were most of the
line's cost, and every request writes one (bench/notes.md, nineteenth round). Any other
configuration (another handler, a filter, a record factory, a level) sends the line
through `logging` as before.
"""

from __future__ import annotations

import logging
import time

from gateway.http.auth import CALLER_VAR, install_log_key

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(key)s] %(message)s"


class SecondsFormatter(logging.Formatter):
    """logging's own format, with the time of day formatted once a second, not once a line
    (`time.strftime` was a tenth of a run's access line)."""

    _second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        return self.time_text(record.created, record.msecs)

    def time_text(self, created: float, msecs: float) -> str:
        second = int(created)
        cached = self._second
        if cached[0] != second:  # one tuple: a thread sees an old pair or a new one
            text = time.strftime(self.default_time_format, self.converter(second))
            cached = self._second = (second, text)
        msec = self.default_msec_format
        return cached[1] if not msec else msec % (cached[1], msecs)


class LineHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """`configure_logging`'s handler: a StreamHandler that can also write an INFO line
    without a record (`write_info`)."""

    def __init__(self) -> None:
        super().__init__()
        self.own_formatter = SecondsFormatter(LOG_FORMAT)
        self.setFormatter(self.own_formatter)
        self.record_factory = logging.getLogRecordFactory()
        """The factory records were made with when this handler was set up: a line
        written without a record is only the same line while it still is."""

    def line(self, name: str, message: str, created: float) -> str:
        """What `format` makes of an INFO record of `name` with this message, made at
        `created` in the current context (`key` as `install_log_key` gives records)."""
        msecs = int((created - int(created)) * 1000) + 0.0  # as LogRecord computes it
        fields = {
            "asctime": self.own_formatter.time_text(created, msecs),
            "levelname": "INFO",
            "name": name,
            "key": CALLER_VAR.get(),
            "message": message,
        }
        return LOG_FORMAT % fields

    def write_info(self, name: str, message: str) -> None:
        """As `handle` does for an INFO record: under the handler's lock, one write and a
        flush; a failure is reported as logging reports it."""
        text = self.line(name, message, time.time()) + self.terminator
        with self.lock:  # type: ignore[union-attr]  # made by Handler.__init__
            try:
                self.stream.write(text)
                self.flush()
            except RecursionError:
                raise
            except Exception:
                self.handleError(logging.makeLogRecord({"name": name, "msg": message}))


def plain_handler(logger: logging.Logger) -> LineHandler | None:
    """The handler an INFO record of `logger` would reach, if it is the only one and the
    record would reach it unchanged: `configure_logging`'s, with no filter of the logger's, no
    other handler, the same record factory and formatter. None: log through `logging`."""
    # Only the logger's own filters and state apply to its record: a parent's filters and
    # `disabled` do not stop a record propagating through it.
    if logger.filters or not logger.isEnabledFor(logging.INFO):
        return None
    node = logger
    while node.parent is not None:
        if node.handlers or not node.propagate:
            return None
        node = node.parent
    handlers = node.handlers
    if len(handlers) != 1:
        return None
    handler = handlers[0]
    if (
        type(handler) is not LineHandler
        or handler.filters
        or handler.level > logging.INFO
        or handler.formatter is not handler.own_formatter
        or logging.getLogRecordFactory() is not handler.record_factory
    ):
        return None
    return handler


def configure_logging() -> None:
    """INFO lines to stderr, each with the caller's name (`key`)."""
    install_log_key()
    logging.basicConfig(level=logging.INFO, handlers=[LineHandler()])
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per model call is noise
    # The format shows none of what a record collects by default beyond its time, level,
    # name and message: the logging HOWTO's "Optimization" switches (no caller's frame,
    # thread, process or process name) take 1.2 % off a run start's instructions, most of
    # them from its access line.
    logging._srcfile = None  # the switch the HOWTO documents for the caller's frame
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False

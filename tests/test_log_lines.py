"""The access line written without a log record is the line `logging` writes, and only
while the log is configured as `configure_logging` leaves it; any other configuration
gets the record."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from gateway.http import keys
from gateway.http.access_log import AccessLog
from gateway.http.auth import CALLER_VAR, install_log_key
from gateway.http.logs import LineHandler, plain_handler

NOW = 1_765_000_000.987654


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LineHandler, io.StringIO]]:
    """The root logger as `configure_logging` leaves it, writing to a buffer; the record
    factory put back afterwards. (pytest adds its capturing handlers once the test starts:
    each test sets them aside with `alone`.)"""
    factory = logging.getLogRecordFactory()
    install_log_key()
    handler = LineHandler()
    stream = io.StringIO()
    handler.setStream(stream)
    access = logging.getLogger("aiohttp.access")
    level = access.level
    access.setLevel(logging.INFO)  # (setLevel, not an attribute: it clears the level cache)
    try:
        yield handler, stream
    finally:
        access.setLevel(level)
        logging.setLogRecordFactory(factory)


def alone(handler: LineHandler, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging.root, "handlers", [handler])


def _access_line(stream: io.StringIO, monkeypatch: pytest.MonkeyPatch, **headers: str) -> str:
    """One access line as the gateway writes it, at a fixed time."""
    monkeypatch.setattr("time.time", lambda: NOW)
    monkeypatch.setattr("time.time_ns", lambda: int(NOW * 1e9))
    request = make_mocked_request("POST", "/api/stream?x=1", headers=headers)
    request[keys.SENT_DIRECTLY] = 120
    response: Any = type("R", (), {"body_length": 30, "status": 200})()
    token = CALLER_VAR.set("alice")
    try:
        AccessLog(logging.getLogger("aiohttp.access"), "").log(request, response, 0.25)
    finally:
        CALLER_VAR.reset(token)
    return stream.getvalue()


def test_the_plain_line_is_the_records_line(configured: tuple[LineHandler, io.StringIO]) -> None:
    handler, _ = configured
    for created in (NOW, 1_700_000_000.0, 1_700_000_000.9995, 1_700_000_001.5):
        token = CALLER_VAR.set("bob")
        try:
            record = logging.getLogRecordFactory()(
                "aiohttp.access", logging.INFO, __file__, 1, "a %s", ("line",), None
            )
            record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
            assert handler.line("aiohttp.access", "a line", created) == handler.format(record)
        finally:
            CALLER_VAR.reset(token)


def test_the_access_line_takes_the_plain_path_and_writes_what_logging_would(
    configured: tuple[LineHandler, io.StringIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler, stream = configured
    alone(handler, monkeypatch)
    assert plain_handler(logging.getLogger("aiohttp.access")) is handler
    plain = _access_line(stream, monkeypatch, Referer="https://x.example/", **{"User-Agent": "ua"})
    stream.truncate(0), stream.seek(0)
    # Another handler that writes nothing: the line now goes through a record.
    logging.root.handlers.append(logging.NullHandler())
    assert plain_handler(logging.getLogger("aiohttp.access")) is None
    recorded = _access_line(
        stream, monkeypatch, Referer="https://x.example/", **{"User-Agent": "ua"}
    )
    assert plain == recorded
    assert plain.endswith(
        ' INFO aiohttp.access [alice] - [06/Dec/2025:05:46:40 +0000] "POST '
        '/api/stream?x=1 HTTP/1.1" 200 150 "https://x.example/" "ua"\n'
    )


def _drop(record: logging.LogRecord) -> bool:
    return False


def _tag_records() -> None:
    previous = logging.getLogRecordFactory()

    def tagged(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        record.msg = "tagged " + str(record.msg)
        return record

    logging.setLogRecordFactory(tagged)


def _plain_copy(handler: LineHandler) -> logging.Handler:
    """A StreamHandler writing where `handler` does, with its formatter."""
    copy = logging.StreamHandler(handler.stream)
    copy.setFormatter(handler.formatter)
    return copy


def _change(name: str, handler: LineHandler, mp: pytest.MonkeyPatch) -> None:
    access, aiohttp_ = logging.getLogger("aiohttp.access"), logging.getLogger("aiohttp")
    changes: dict[str, Callable[[], object]] = {
        "logger_filter": lambda: mp.setattr(access, "filters", [_drop]),
        "handler_filter": lambda: mp.setattr(handler, "filters", [_drop]),
        "logger_handler": lambda: mp.setattr(aiohttp_, "handlers", [logging.NullHandler()]),
        "no_propagate": lambda: mp.setattr(aiohttp_, "propagate", False),
        "formatter": lambda: handler.setFormatter(logging.Formatter("%(levelname)s|%(message)s")),
        "factory": _tag_records,
        "level": lambda: mp.setattr(handler, "level", logging.WARNING),
        "disabled": lambda: mp.setattr(access, "disabled", True),
        "logger_level": lambda: access.setLevel(logging.WARNING),  # the fixture restores it
        "root_handler": lambda: mp.setattr(logging.root, "handlers", [_plain_copy(handler)]),
    }
    changes[name]()


DROPPED = ("logger_filter", "handler_filter", "no_propagate", "level", "disabled", "logger_level")


@pytest.mark.parametrize(
    "change", [*DROPPED, "logger_handler", "root_handler", "formatter", "factory"]
)  # fmt: skip
def test_any_other_configuration_gets_a_record(
    configured: tuple[LineHandler, io.StringIO], monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    handler, stream = configured
    alone(handler, monkeypatch)
    access = logging.getLogger("aiohttp.access")
    assert plain_handler(access) is handler
    plain_line = _access_line(stream, monkeypatch)
    stream.truncate(0), stream.seek(0)
    _change(change, handler, monkeypatch)
    assert plain_handler(access) is None
    written = _access_line(stream, monkeypatch)
    if change in DROPPED:
        assert written == ""  # dropped, as logging drops it
    elif change == "root_handler":
        assert written == plain_line  # another handler, the same format: the same line
    elif change == "logger_handler":
        assert written.count("POST /api/stream") == 1  # and once more in the null handler
    elif change == "formatter":
        assert written.startswith("INFO|- [")
    else:
        assert " [alice] tagged - [" in written

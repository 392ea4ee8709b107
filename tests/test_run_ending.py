"""Every run ends with exactly one terminal event and leaves the active set, whatever
raises while it ends: each step of the ending fails in turn, on real objects (a session
store whose save raises, the run's own observer with a failing method)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from aiohttp.test_utils import TestClient

from gateway.http import keys
from gateway.ops.observe import RunObserver
from gateway.runs.loop import LoopDeps
from gateway.runs.manager import RunManager
from gateway.runs.run import Run, RunRequest
from gateway.store.sessions import MemorySessions, Message
from tests.conftest import read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

Client = TestClient[Any, Any]
TERMINAL = ("final", "error")


class FailingSessions(MemorySessions):
    """A real in-memory store whose save raises `error` (a Redis outage, a history too
    deep to serialise, a cancel landing mid-save)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    async def save(self, session_id: str, messages: list[Message]) -> None:
        raise self.error


def _raise(*_: Any) -> Any:
    raise RuntimeError("injected")


class Overridden:
    """`inner` with its attribute `name` replaced by `value`, everything else passed on:
    the observer may be compiled (`gateway.native`), and a compiled instance takes no
    attribute it was not built with."""

    def __init__(self, inner: object, name: str, value: Any) -> None:
        self._inner, self._name, self._value = inner, name, value

    def __getattr__(self, attr: str) -> Any:
        return self._value if attr == self._name else getattr(self._inner, attr)


def _break_observer(manager: RunManager, name: str, value: Any) -> None:
    """Each run's observer gets `value` as its attribute `name`."""
    make = manager.factory.deps

    def deps(run: Run, request: RunRequest, endpoint: str, parent: Any) -> LoopDeps:
        made = make(run, request, endpoint, parent)
        made.observer = cast(RunObserver, Overridden(made.observer, name, value))
        return made

    manager.factory.deps = deps


FAULTS: dict[str, Callable[[RunManager], None]] = {
    "save raises": lambda m: setattr(m, "sessions", FailingSessions(RuntimeError("down"))),
    "save is cancelled": lambda m: setattr(
        m, "sessions", FailingSessions(asyncio.CancelledError())
    ),
    "observer.finished raises": lambda m: _break_observer(m, "finished", _raise),
    "final cannot serialise": lambda m: _break_observer(m, "trace_id", object()),
    "end callback raises": lambda m: setattr(m, "_on_end", _raise),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_one_terminal_event_whatever_fails_at_the_end(
    gateway: Client, fake: FakeAnthropic, fault: str
) -> None:
    manager = gateway.app[keys.RUNS]
    FAULTS[fault](manager)
    fake.add(Reply([Text("hello")]))
    response = await gateway.post("/api/stream", json={"query": "x"})
    async with asyncio.timeout(5):  # the stream ends: no endless pings
        events = await read_events(response)
    terminals = [e for e in events if e["type"] in TERMINAL]
    assert len(terminals) == 1 and events[-1] is terminals[0], [e["type"] for e in events]
    assert manager.active() == []
    run = manager.get(events[-1]["run_id"])
    assert run is not None and run.log.closed and run.finished_at is not None


async def test_a_failed_save_is_reported_before_final(gateway: Client, fake: FakeAnthropic) -> None:
    gateway.app[keys.RUNS].sessions = FailingSessions(RuntimeError("down"))
    fake.add(Reply([Text("hello")]))
    events = await read_events(await gateway.post("/api/stream", json={"query": "x"}))
    assert [e["type"] for e in events[-2:]] == ["warning", "final"]
    assert events[-2]["code"] == "session_not_saved"
    assert events[-1]["result"] == "hello"


async def test_failing_run_with_a_broken_final_still_ends(
    gateway: Client, fake: FakeAnthropic
) -> None:
    """The upstream fails and the error event is what ends it, even with the observer
    broken: the error path never builds `final`."""
    manager = gateway.app[keys.RUNS]
    _break_observer(manager, "finished", _raise)
    fake.add(Reply(status=400, error_type="invalid_request_error"))
    response = await gateway.post("/api/research", json={"query": "x"})
    body = await response.json()
    assert response.status == 400 and body["error"]["code"] == "VALIDATION_ERROR"
    assert manager.active() == []


@pytest.mark.parametrize("raw", [b"abc\xff\xfe", b"tab\there", b"x" * 129])
async def test_unprintable_request_ids_are_replaced(gateway: Client, raw: bytes) -> None:
    """Sent as raw bytes on the wire: aiohttp decodes them with surrogates, which no JSON
    body could carry."""
    reader, writer = await asyncio.open_connection(gateway.host, gateway.port)
    writer.write(
        b"POST /api/research HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"x-request-id: " + raw + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    )
    async with asyncio.timeout(5):
        answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert b"application/json" in head and b'"VALIDATION_ERROR"' in body
    request_id = [h for h in head.split(b"\r\n") if h.lower().startswith(b"x-request-id:")]
    assert len(request_id) == 1 and len(request_id[0].split(b": ")[1]) == 32


async def test_an_idle_server_frees_expired_runs(make_gateway: Any, fake: FakeAnthropic) -> None:
    client = await make_gateway(gateway_run_ttl_s=0.2)
    fake.add(Reply([Text("hello")]))
    events = await read_events(await client.post("/api/stream", json={"query": "x"}))
    manager = client.app[keys.RUNS]
    assert manager._runs  # kept for re-attach a while
    await asyncio.sleep(0.5)  # no request meanwhile
    assert manager._runs == {}
    assert events[-1]["type"] == "final"

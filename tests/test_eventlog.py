"""The event log's buffer: frames by seq, one copy per read, the oldest dropped past the cap."""

from __future__ import annotations

import asyncio

from gateway import events
from gateway.eventlog import EventLog
from gateway.sse import frame, parse_frames


def _filled(count: int, max_events: int = 200_000) -> EventLog:
    log = EventLog("run_1", max_events)
    for index in range(count):
        log.append(events.delta(f"text {index}"))
    return log


def test_since_and_read_give_the_same_frames() -> None:
    log = _filled(5)
    assert log.first_seq == 1
    assert log.last_seq == 5
    frames = log.since(2)
    assert [parse_frames(f)[0]["seq"] for f in frames] == [3, 4, 5]
    assert log.read(2) == b"".join(frames)
    assert frames[0] == frame(3, {**events.delta("text 2"), "run_id": "run_1", "seq": 3})
    assert log.read(0) == b"".join(log.since(0))
    assert log.since(5) == [] and log.read(5) == b""
    assert log.since(-7) == log.since(0)


def test_past_the_cap_the_oldest_tenth_goes() -> None:
    log = _filled(21, max_events=20)
    assert log.first_seq == 3  # 21 > 20: two dropped
    assert log.last_seq == 21
    seqs = [event["seq"] for event in parse_frames(log.read(0))]
    assert seqs == list(range(3, 22))
    assert [parse_frames(f)[0]["text"] for f in log.since(19)] == ["text 19", "text 20"]


async def test_a_waiting_reader_wakes_on_append_and_close() -> None:
    log = EventLog("run_1")
    waiting = asyncio.create_task(log.wait(5.0))
    await asyncio.sleep(0)
    log.append(events.delta("hi"))
    assert await waiting is True
    assert await log.wait(0.01) is False
    waiting = asyncio.create_task(log.wait(5.0))
    await asyncio.sleep(0)
    log.close()
    assert await waiting is True


async def test_a_batch_is_framed_like_appends_and_wakes_a_reader_once() -> None:
    one_by_one = _filled(3)
    batched = EventLog("run_1")
    woken: list[bool] = []
    batched.listener = lambda: woken.append(True)
    reader = asyncio.ensure_future(batched.wait(5.0))
    await asyncio.sleep(0)
    batched.extend([events.delta(f"text {index}") for index in range(3)])
    assert await reader is True
    assert woken == [True]  # one notice for the whole batch
    assert batched.read(0) == one_by_one.read(0) and batched.last_seq == 3


def test_a_batch_larger_than_the_cap_keeps_the_newest() -> None:
    log = EventLog("run_1", max_events=10)
    log.extend([events.delta(f"text {index}") for index in range(25)])
    assert (log.first_seq, log.last_seq) == (16, 25)
    assert [event["seq"] for event in parse_frames(log.read(0))] == list(range(16, 26))

"""One batch's journal writes (`batches.writer`): in order, each tried until the store
answers, the first refused one stopping them all (`JournalLost`), a bug reaching only its
own waiter."""

from __future__ import annotations

import asyncio
import logging
import types

import pytest

from gateway.batches import writer as writer_module
from gateway.batches.writer import RETRY_S, JournalLost, Write, Writer


class Flaky(Exception):
    """What the store raises when it fails (the writer's `errors`)."""


def recording(done: list[str], name: str, answer: bool = True) -> Write:
    async def write() -> bool:
        done.append(name)
        return answer

    return write


def held(done: list[str], name: str, gate: asyncio.Event) -> Write:
    """A write that waits for `gate` before the store answers."""

    async def write() -> bool:
        await gate.wait()
        done.append(name)
        return True

    return write


def failing(times: int, done: list[str], name: str) -> Write:
    """A write the store fails `times` times, then answers."""
    tries = 0

    async def write() -> bool:
        nonlocal tries
        tries += 1
        if tries <= times:
            raise Flaky(f"try {tries}")
        done.append(name)
        return True

    return write


def writer_of(lost: list[str] | None = None, batch_id: str = "b1") -> Writer:
    return Writer(batch_id, (Flaky,), (lost if lost is not None else []).append)


def waited(writer: Writer, write: Write) -> asyncio.Future[None]:
    """Put a write whose end is awaited."""
    done = writer.put(write, wait=True)
    assert done is not None
    return done


def failed_with_lost(future: asyncio.Future[None] | None, batch_id: str = "b1") -> bool:
    assert future is not None and future.done()
    error = future.exception()
    return isinstance(error, JournalLost) and error.args == (batch_id,)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The writer's waits between tries, recorded (each waits no time)."""
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:
        waits.append(delay)
        await real_sleep(0)

    names = {name: getattr(asyncio, name) for name in dir(asyncio) if not name.startswith("_")}
    clock = types.SimpleNamespace(**{**names, "sleep": sleep})
    monkeypatch.setattr(writer_module, "asyncio", clock)
    return waits


async def test_writes_go_in_order_and_their_waiters_hear_when_each_is_in() -> None:
    done: list[str] = []
    heard: list[bool] = []
    writer = writer_of()
    assert writer.put(recording(done, "a")) is None  # not waited for: no future
    second = waited(writer, recording(done, "b"))

    async def third() -> bool:
        heard.append(second.done())  # the waiter of "b" is told before "c" goes
        done.append("c")
        return True

    writer.put(third)
    last = waited(writer, recording(done, "d"))
    assert not second.done()
    await second
    assert second.result() is None
    await last
    assert done == ["a", "b", "c", "d"] and heard == [True]
    await writer.close()


async def test_drained_waits_for_every_write_put() -> None:
    done: list[str] = []
    gate = asyncio.Event()
    writer = writer_of()
    writer.put(held(done, "a", gate))
    writer.put(recording(done, "b"))
    drained = asyncio.create_task(writer.drained())
    await asyncio.sleep(0.01)
    assert not drained.done() and done == []
    gate.set()
    async with asyncio.timeout(2):
        await drained
    assert done == ["a", "b"]
    await writer.close()


async def test_a_write_the_store_fails_is_tried_again_backing_off_to_five_seconds(
    sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    done: list[str] = []
    writer = writer_of(batch_id="b7")
    with caplog.at_level(logging.WARNING, logger=writer_module.__name__):
        first = waited(writer, failing(8, done, "a"))
        after = waited(writer, recording(done, "b"))
        async with asyncio.timeout(2):
            await first
            await after
    assert done == ["a", "b"]  # the later write waited for the failing one
    assert RETRY_S == (0.1, 5.0)
    assert sleeps == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings[0] == "batches: cannot write b7 (try 1); trying again"
    assert len(warnings) == 8 and warnings[-1].endswith("(try 8); trying again")
    await writer.close()


async def test_what_is_not_a_store_failure_is_not_tried_again() -> None:
    tries: list[int] = []

    async def broken() -> bool:
        tries.append(1)
        raise ValueError("a bug")

    writer = writer_of()
    first = waited(writer, broken)
    with pytest.raises(ValueError, match="a bug"):
        await first
    assert tries == [1]
    await writer.close()


async def test_a_bug_in_a_write_reaches_its_waiter_and_the_next_write_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []
    lost: list[str] = []

    async def broken() -> bool:
        raise ValueError("a bug")

    writer = writer_of(lost, batch_id="b3")
    with caplog.at_level(logging.ERROR, logger=writer_module.__name__):
        unwaited = writer.put(broken)
        first = waited(writer, broken)
        second = waited(writer, recording(done, "after"))
        assert unwaited is None
        with pytest.raises(ValueError, match="a bug"):
            await first
        await second
    assert done == ["after"] and lost == []
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == ["batches: a write of b3 failed"] * 2
    assert all(r.exc_info is not None for r in errors)
    await writer.close()


class Encoding(Flaky):
    """What the store raises for a value it cannot take: one of its `errors`, and a fault."""


async def test_a_write_the_store_can_never_take_is_not_tried_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []
    lost: list[str] = []
    tries: list[str] = []

    async def unencodable() -> bool:
        tries.append("tried")
        raise Encoding("a None value")

    writer = Writer("b4", (Flaky,), lost.append, faults=(Encoding,))
    with caplog.at_level(logging.WARNING, logger=writer_module.__name__):
        bad = waited(writer, unencodable)
        flaky = waited(writer, failing(1, done, "flaky"))
        with pytest.raises(Encoding, match="a None value"):
            async with asyncio.timeout(1):
                await bad
        await flaky
    assert tries == ["tried"] and done == ["flaky"] and lost == []
    assert [r.getMessage() for r in caplog.records] == [
        "batches: a write of b4 failed",
        "batches: cannot write b4 (try 1); trying again",
    ]
    await writer.close()


async def test_a_refused_write_stops_the_writes_and_says_the_batch_is_lost() -> None:
    done: list[str] = []
    lost: list[str] = []
    writer = writer_of(lost, batch_id="b2")
    before = waited(writer, recording(done, "before"))
    refused = waited(writer, recording(done, "refused", answer=False))
    queued = waited(writer, recording(done, "queued"))
    writer.put(recording(done, "queued unwaited"))
    await before
    with pytest.raises(JournalLost) as caught:
        await refused
    assert caught.value.args == ("b2",)
    with pytest.raises(JournalLost):
        await queued
    await writer.drained()
    assert done == ["before", "refused"]  # nothing after the refusal was tried
    assert lost == ["b2"]  # told once
    later = waited(writer, recording(done, "later"))
    assert failed_with_lost(later, "b2")  # refused at once, never queued
    assert writer.put(recording(done, "later unwaited")) is None
    await asyncio.sleep(0.01)
    assert done == ["before", "refused"] and lost == ["b2"]
    await writer.close()


async def test_a_refused_write_nobody_waits_for_still_loses_the_batch() -> None:
    done: list[str] = []
    lost: list[str] = []
    writer = writer_of(lost)
    writer.put(recording(done, "refused", answer=False))
    after = waited(writer, recording(done, "after"))
    with pytest.raises(JournalLost):
        await after
    assert done == ["refused"] and lost == ["b1"]
    await writer.close()


async def test_abandon_fails_every_waiting_write_and_the_one_in_flight() -> None:
    done: list[str] = []
    lost: list[str] = []
    gate = asyncio.Event()
    writer = writer_of(lost)
    in_flight = waited(writer, held(done, "in flight", gate))
    waiting = waited(writer, recording(done, "waiting"))
    writer.put(recording(done, "unwaited"))
    await asyncio.sleep(0.01)  # the first write is with the store
    writer.abandon()
    async with asyncio.timeout(2):
        await writer.drained()  # every write put is accounted for
    await asyncio.sleep(0)
    assert failed_with_lost(in_flight) and failed_with_lost(waiting)
    gate.set()
    await asyncio.sleep(0.01)
    assert done == [] and lost == []  # abandoned, not refused: nobody is told again
    assert failed_with_lost(waited(writer, recording(done, "late")))
    await writer.close()


async def test_close_ends_the_writer_task() -> None:
    done: list[str] = []
    writer = writer_of()
    first = waited(writer, recording(done, "a"))
    await first
    await writer.close()
    assert writer._task.done() and writer._task.cancelled()
    assert failed_with_lost(waited(writer, recording(done, "b")))
    assert done == ["a"]


async def test_a_waiter_that_gave_up_does_not_stop_the_writes() -> None:
    done: list[str] = []
    gate = asyncio.Event()
    writer = writer_of()
    gave_up = waited(writer, held(done, "a", gate))
    gave_up.cancel()
    gate.set()
    after = waited(writer, recording(done, "b"))
    async with asyncio.timeout(2):
        await after
    assert done == ["a", "b"]
    await writer.close()


async def test_a_waiter_that_gave_up_on_a_broken_write_does_not_stop_the_writes() -> None:
    done: list[str] = []
    gate = asyncio.Event()

    async def broken() -> bool:
        await gate.wait()
        raise ValueError("a bug")

    writer = writer_of()
    gave_up = waited(writer, broken)
    gave_up.cancel()
    gate.set()
    after = waited(writer, recording(done, "b"))
    async with asyncio.timeout(2):
        await after
    assert done == ["b"]
    await writer.close()


async def test_a_waiter_that_gave_up_on_a_refused_write_does_not_stop_the_loss() -> None:
    done: list[str] = []
    lost: list[str] = []
    gate = asyncio.Event()

    async def refused() -> bool:
        await gate.wait()
        return False

    writer = writer_of(lost)
    gave_up = waited(writer, refused)
    gave_up.cancel()
    gate.set()
    after = waited(writer, recording(done, "b"))
    async with asyncio.timeout(2):
        with pytest.raises(JournalLost):
            await after
    assert done == [] and lost == ["b1"]
    await writer.close()

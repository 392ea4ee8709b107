"""The event log's buffer: frames by seq, one copy per read, the oldest dropped past the cap."""

from __future__ import annotations

import asyncio
import tracemalloc

import pytest

from gateway import events
from gateway.sse import frame, parse_frames
from gateway.store.eventlog import BLOCK, HOT_SLACK, EventLog


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


async def test_a_follower_wakes_on_append_and_close_and_pings_after_a_quiet_wait() -> None:
    log = EventLog("run_1")
    follower = log.follow(0.2)
    loop = asyncio.get_running_loop()
    waiting = follower.wait(0)
    log.append(events.delta("hi"))
    assert await waiting is True
    # Busy for most of a heartbeat, then quiet: the ping comes a full heartbeat after the
    # quiet wait began, not when the stream's timer was first armed.
    await asyncio.sleep(0.15)
    began = loop.time()
    assert await follower.wait(1) is False
    assert loop.time() - began >= 0.19
    began = loop.time()
    assert await follower.wait(1) is False  # and again, a heartbeat later
    assert 0.19 <= loop.time() - began < 1.0
    waiting = follower.wait(1)
    log.close()
    assert await waiting is True
    follower.close()


async def test_a_follower_leaves_nothing_behind() -> None:
    log = EventLog("run_1")
    follower = log.follow(0.05)
    waiting = asyncio.ensure_future(follower.wait(0))
    await asyncio.sleep(0)
    waiting.cancel()  # the stream's task was cancelled mid-wait
    follower.close()
    assert not log._waiters  # no cancelled future left for the next append to find


class Client:
    """A `push` target: takes frames until told it is full."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.full = False

    def push(self, data: bytes) -> bool:
        if self.full:
            return False
        self.frames.append(data)
        return True


async def test_a_pushing_follower_is_written_from_the_run_and_not_woken() -> None:
    log, client = _filled(2), Client()
    follower = log.follow(5.0)
    waiting = follower.wait(2, client.push)
    for index in range(3):  # as the run's relay does: a batch, pushed as it is appended
        log.extend([events.delta(f"live {index}")], push=True)
    assert not waiting.done() and follower.after == 5
    assert b"".join(client.frames) == log.read(2) and len(client.frames) == 3
    # A full client: nothing is written, `after` stays, and the stream's task takes over.
    client.full = True
    log.extend([events.delta("held")], push=True)
    assert await waiting is True and follower.after == 5 and len(client.frames) == 3
    assert not log._pushing
    follower.close()


async def test_a_pushing_follower_wakes_for_other_appends_and_close() -> None:
    log, client = EventLog("run_1"), Client()
    follower = log.follow(5.0)
    waiting = follower.wait(0, client.push)
    log.append(events.warning("w", "not from the relay", 0))  # no push follows it
    assert await waiting is True and client.frames == [] and not log._pushing
    waiting = follower.wait(1, client.push)
    log.close()
    assert await waiting is True
    follower.close()


async def test_pushes_count_as_activity_for_the_heartbeat() -> None:
    log, client = EventLog("run_1"), Client()
    follower = log.follow(0.2)
    waiting = follower.wait(0, client.push)
    for index in range(6):  # 0.3 s of pushes every 0.05 s: no ping among them
        await asyncio.sleep(0.05)
        log.extend([events.delta(f"{index}")], push=True)
    assert not waiting.done() and len(client.frames) == 6
    assert await waiting is False  # then quiet: a ping
    follower.close()


async def test_a_batch_is_framed_like_appends_and_wakes_a_reader_once() -> None:
    one_by_one = _filled(3)
    batched = EventLog("run_1")
    woken: list[bool] = []
    batched.listener = lambda: woken.append(True)
    follower = batched.follow(5.0)
    reader = follower.wait(0)
    batched.extend([events.delta(f"text {index}") for index in range(3)])
    assert await reader is True
    follower.close()
    assert woken == [True]  # one notice for the whole batch
    assert batched.read(0) == one_by_one.read(0) and batched.last_seq == 3


def test_a_batch_larger_than_the_cap_keeps_the_newest() -> None:
    log = EventLog("run_1", max_events=10)
    log.extend([events.delta(f"text {index}") for index in range(25)])
    assert (log.first_seq, log.last_seq) == (16, 25)
    assert [event["seq"] for event in parse_frames(log.read(0))] == list(range(16, 26))


def _reference(count: int, first: int = 1) -> dict[int, bytes]:
    """The frame each seq must read as, built one by one as `sse.frame` would."""
    return {
        seq: frame(seq, {**events.delta(f"text {seq - first}"), "run_id": "run_1", "seq": seq})
        for seq in range(first, first + count)
    }


def test_older_frames_read_the_same_once_compressed() -> None:
    count = 5 * BLOCK + HOT_SLACK + 7  # several compressed blocks, then the newest
    log, want = _filled(count), _reference(count)
    assert log._cold, "the oldest frames are kept compressed"
    for after in [*range(-1, BLOCK + 3), *range(count - BLOCK - HOT_SLACK - 2, count + 1)]:
        expected = [want[seq] for seq in range(max(after, 0) + 1, count + 1)]
        assert log.since(after) == expected, after
        assert log.read(after) == b"".join(expected), after


def test_the_cap_drops_compressed_frames_too() -> None:
    cap = 3 * BLOCK
    log = _filled(cap + BLOCK // 2 + 1, max_events=cap)  # a drop cuts across a block
    want = _reference(cap + BLOCK // 2 + 1)
    assert log.first_seq == 1 + 2 * (cap // 10)  # a tenth went, twice
    assert log.last_seq - log.first_seq < cap and (log.first_seq - 1) % BLOCK
    assert log.since(0) == [want[seq] for seq in range(log.first_seq, log.last_seq + 1)]
    assert log.read(log.first_seq) == b"".join(log.since(log.first_seq))
    for _ in range(4 * cap):  # and keeps dropping as the run goes on
        log.append(events.delta("more"))
    frames = parse_frames(log.read(0))
    assert [f["seq"] for f in frames] == list(range(log.first_seq, log.last_seq + 1))
    assert log.last_seq - log.first_seq < cap


def test_a_resumed_log_starts_at_its_seq_and_compresses_from_there() -> None:
    log = EventLog("run_1")
    log.first_seq = 41
    for index in range(2 * BLOCK + HOT_SLACK):
        log.append(events.delta(f"text {index}"))
    assert log._cold and log.first_seq == 41
    assert log.since(40) == list(_reference(2 * BLOCK + HOT_SLACK, first=41).values())
    with pytest.raises(RuntimeError):
        log.first_seq = 7  # only an empty log may be told where it starts


def test_a_long_log_holds_a_fraction_of_what_it_streamed() -> None:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        log = _filled(2_000)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    streamed = len(log.read(0))
    assert held < streamed / 3, (held, streamed)


async def test_a_follower_behind_the_compressed_frames_reads_them() -> None:
    log, client = _filled(3), Client()
    follower = log.follow(5.0)
    waiting = follower.wait(3)
    log.extend([events.delta(f"text {index}") for index in range(3, 3 * BLOCK)])
    assert await waiting is True  # the stream's own task reads from where it was
    assert log.read(3) == b"".join(_reference(3 * BLOCK)[seq] for seq in range(4, 3 * BLOCK + 1))
    follower.wait(log.last_seq, client.push)
    log.extend([events.delta("live")], push=True)  # compresses older frames first
    assert parse_frames(b"".join(client.frames))[0]["seq"] == 3 * BLOCK + 1
    follower.close()


def _windows(log: EventLog, after: int, limit: int) -> list[bytes]:
    """Every window from `after` to the end, checking each ends where it says."""
    taken: list[bytes] = []
    while after < log.last_seq:
        data, last = log.window(after, limit)
        seqs = [event["seq"] for event in parse_frames(data)]
        assert seqs == list(range(max(after, log.first_seq - 1) + 1, last + 1)), after
        taken.append(data)
        after = last
    return taken


def test_windows_read_a_backlog_in_bounded_pieces() -> None:
    count = 9 * BLOCK + HOT_SLACK + 5
    log, want = _filled(count), _reference(count)
    blocks = range(1, count - BLOCK + 2)
    block_bytes = max(len(b"".join(want[s] for s in range(n, n + BLOCK))) for n in blocks)
    limit = 2 * block_bytes
    for after in (0, 1, BLOCK - 1, BLOCK, 3 * BLOCK + 7, count - BLOCK - 3, count - 1):
        taken = _windows(log, after, limit)
        assert b"".join(taken) == log.read(after), after
        # At most the limit and one block more: never the rest of the log in one piece.
        assert all(len(piece) < limit + block_bytes for piece in taken), after
        assert after >= count - 3 * BLOCK or len(taken) > 1, after
    assert log.window(count, limit) == (b"", count)


def test_windows_skip_what_the_cap_dropped() -> None:
    cap = 3 * BLOCK
    log = _filled(cap + BLOCK // 2 + 1, max_events=cap)  # a drop cuts across a block
    taken = _windows(log, 0, 1)  # a tiny limit: one block a window
    assert b"".join(taken) == log.read(0)
    assert parse_frames(taken[0])[0]["seq"] == log.first_seq

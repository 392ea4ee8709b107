"""The audit log: one JSON line per run start, tool call and run end, in a file and (with
REDIS_URL) a Redis stream; never the key itself; inputs hashed with a keyed hash unless
content is asked for; nothing lost when the app stops; SIGHUP reopens the file after a
rotation; a bounded queue that drops (and counts) rather than waits; a writer that
outlives any failed write."""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.asyncio as redis

from gateway.http import keys
from gateway.ops.audit import AuditLog, keyed_digest
from gateway.ops.metrics import Metrics
from gateway.store.redis.audit import RedisAudit
from tests.access_support import REDIS_URL, redis_prefix
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

__all__ = ["redis_prefix"]  # a fixture

KEY = {"Authorization": "Bearer sk-very-secret"}
HASH_KEY = "k" * 16 + "e" * 16


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def tool_replies() -> list[Reply]:
    return [Reply([ToolUse("echo", {"text": "hello"}), ToolUse("fail", {})]), Reply([Text("ok")])]


async def test_a_run_in_the_audit_file(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "audit.jsonl"
    client = await make_gateway(
        gateway_audit_log=str(path), gateway_api_keys="analyst:sk-very-secret",
        gateway_audit_hash_key=HASH_KEY,
    )  # fmt: skip
    fake.add(*tool_replies())
    body = {"query": "x", "sessionId": "s-9"}
    events = await read_events(await client.post("/api/stream", json=body, headers=KEY))
    run_id = events[0]["run_id"]
    await client.close()  # the writer drains at cleanup: nothing may be lost
    found = lines(path)
    assert [line["event"] for line in found] == ["run_start", "tool_call", "tool_call", "run_end"]
    assert all(line["key"] == "analyst" and line["run_id"] == run_id for line in found)
    assert all(line["session_id"] == "s-9" and line["ts"].endswith("Z") for line in found)
    assert b"sk-very-secret" not in path.read_bytes()
    calls = {line["tool"]: line for line in found if line["event"] == "tool_call"}
    echo, fail = calls["echo"], calls["fail"]
    raw = orjson.dumps({"text": "hello"}, option=orjson.OPT_SORT_KEYS)
    assert echo["input_hmac_sha256"] == hmac.new(HASH_KEY.encode(), raw, "sha256").hexdigest()
    assert echo["input_bytes"] == len(raw) and "input" not in echo
    assert echo["is_error"] is False and echo["outcome"] == "success"
    [result] = [e for e in events if e["type"] == "tool_call" and e["phase"] == "tool_result"]
    assert echo["result_bytes"] == result["bytes"] == len(b"echo: hello")
    assert echo["duration_ms"] == result["duration_ms"]
    assert fail["is_error"] is True and fail["outcome"] == "error"
    end = found[-1]
    assert end["outcome"] == "completed" and end["is_error"] is False
    assert end["duration_ms"] == events[-1]["duration_ms"]


async def test_content_on_request_and_the_redis_stream(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path, redis_prefix: str
) -> None:
    path = tmp_path / "audit.jsonl"
    client = await make_gateway(
        gateway_audit_log=str(path), gateway_audit_content=True,
        redis_url=REDIS_URL, redis_key_prefix=redis_prefix,
    )  # fmt: skip
    fake.add(*tool_replies())
    await read_events(await client.post("/api/stream", json={"query": "x"}))
    await client.close()
    in_file = lines(path)
    echo = next(line for line in in_file if line.get("tool") == "echo")
    assert echo["input"] == {"text": "hello"} and "input_hmac_sha256" not in echo
    assert echo["key"] == "anonymous"
    reader = redis.Redis.from_url(REDIS_URL)
    entries: Any = await reader.xrange(f"{redis_prefix}audit")
    await reader.aclose()
    assert [orjson.loads(fields[b"line"]) for _, fields in entries] == in_file


async def test_sighup_reopens_the_file_after_a_rotation(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "audit.jsonl"
    client = await make_gateway(gateway_audit_log=str(path))
    fake.add(Reply([Text("one")]), Reply([Text("two")]))
    await read_events(await client.post("/api/stream", json={"query": "x"}))
    audit = client.app[keys.AUDIT]
    while not path.exists() or len(lines(path)) < 2:  # the writer is a task: wait for it
        await asyncio.sleep(0.01)
    path.rename(tmp_path / "audit.jsonl.1")  # what logrotate does, then its postrotate:
    assert signal.getsignal(signal.SIGHUP) not in (signal.SIG_DFL, signal.SIG_IGN, None)
    os.kill(os.getpid(), signal.SIGHUP)
    while not path.exists():  # reopened: a new, empty file
        await asyncio.sleep(0.01)
    await read_events(await client.post("/api/stream", json={"query": "x"}))
    await client.close()
    assert audit.path == str(path)
    assert [line["event"] for line in lines(tmp_path / "audit.jsonl.1")] == ["run_start", "run_end"]
    assert [line["event"] for line in lines(path)] == ["run_start", "run_end"]


async def test_audit_lines_on_stdout(
    make_gateway: GatewayFactory, fake: FakeAnthropic, capfd: pytest.CaptureFixture[str]
) -> None:
    client = await make_gateway(gateway_audit_log="-")
    fake.add(Reply([Text("ok")]), Reply(status=400, error_type="invalid_request_error"))
    for _ in range(2):
        await read_events(await client.post("/api/stream", json={"query": "x"}))
    await client.close()
    out = [orjson.loads(line) for line in capfd.readouterr().out.splitlines() if line]
    assert [line["event"] for line in out] == ["run_start", "run_end"] * 2
    assert (out[1]["outcome"], out[1]["is_error"]) == ("completed", False)
    assert (out[3]["outcome"], out[3]["is_error"]) == ("VALIDATION_ERROR", True)


async def test_runs_ended_by_shutdown_are_in_the_file(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "audit.jsonl"
    client = await make_gateway(gateway_audit_log=str(path), gateway_resume_grace_s=5.0)
    fake.add(Reply([Text("word " * 200, chunk=5)], delay_s=0.01))
    response = await client.post("/api/stream", json={"query": "x"})
    run_id = (await anext(iter_events(response)))["run_id"]
    await client.close()  # shutdown ends the run; its last line must still be written
    found = lines(path)
    assert [(line["event"], line["run_id"]) for line in found] == [
        ("run_start", run_id),
        ("run_end", run_id),
    ]
    assert found[-1]["outcome"] == "cancelled"


async def test_server_tools_are_audited_too(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    from tests.fakes.anthropic import ServerToolUse
    from tests.test_wire import SEARCH_RESULTS

    path = tmp_path / "audit.jsonl"
    client = await make_gateway(gateway_audit_log=str(path), search_backend="anthropic")
    failed = {"type": "web_search_tool_result_error", "error_code": "too_many_requests"}
    fake.add(
        Reply([
            ServerToolUse("web_search", {"query": "nvidia"}, SEARCH_RESULTS, id="srvtoolu_1"),
            ServerToolUse("web_search", {"query": "amd"}, failed, id="srvtoolu_2"),
            Text("Found it."),
        ])
    )  # fmt: skip
    await read_events(await client.post("/api/stream", json={"query": "x"}))
    await client.close()
    calls = [line for line in lines(path) if line["event"] == "tool_call"]
    assert [(c["tool"], c["is_error"]) for c in calls] == [
        ("web_search", False), ("web_search", True)
    ]  # fmt: skip
    assert calls[0]["result_bytes"] == len(orjson.dumps(SEARCH_RESULTS))


async def test_the_input_hash_is_hmac_sha256(tmp_path: Path) -> None:
    # RFC 4231, test case 2, by the function and by an audit log's prepared key.
    key, data = b"Jefe", b"what do ya want for nothing?"
    expected = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert keyed_digest(key, data) == expected
    audit = AuditLog(str(tmp_path / "audit.jsonl"), hash_key=key)
    assert audit.digest(data) == audit.digest(data) == expected  # the prepared key is intact


async def test_the_same_input_under_two_keys(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    hashes = []
    for n, key in enumerate((HASH_KEY, HASH_KEY[::-1])):
        path = tmp_path / f"audit{n}.jsonl"
        client = await make_gateway(gateway_audit_log=str(path), gateway_audit_hash_key=key)
        fake.add(*tool_replies())
        await read_events(await client.post("/api/stream", json={"query": "x"}))
        await client.close()
        echo = next(line for line in lines(path) if line.get("tool") == "echo")
        hashes.append(echo["input_hmac_sha256"])
    raw = orjson.dumps({"text": "hello"}, option=orjson.OPT_SORT_KEYS)
    assert hashes == [
        keyed_digest(HASH_KEY.encode(), raw),
        keyed_digest(HASH_KEY[::-1].encode(), raw),
    ]
    assert hashes[0] != hashes[1]


async def test_without_a_hash_key_each_process_has_its_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = (AuditLog(str(tmp_path / "audit.jsonl")) for _ in range(2))
    assert first.digest(b"{}") != second.digest(b"{}")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "cannot be compared across restarts" in warnings[0]
    caplog.clear()
    AuditLog(str(tmp_path / "audit.jsonl"), content=True)  # no hashes written: nothing to say
    assert not caplog.records


async def test_a_full_queue_drops_counts_and_warns_once(
    tmp_path: Path, metrics: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(
        str(path), hash_key=HASH_KEY.encode(), queue_max=5, dropped=metrics.audit_dropped
    )
    audit.start()
    for n in range(20):  # one loop step: the writer has no turn, so the queue fills
        audit.write("run_start", {"n": n})
    dropped = metrics.registry.get_sample_value("gateway_audit_dropped_total")
    assert dropped == 15
    warnings = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(warnings) == 1  # rate-limited: not one per line
    await audit.close()
    assert [line["n"] for line in lines(path)] == [0, 1, 2, 3, 4]


class FailsOnce(AuditLog):
    """A writer whose first file write fails with an error no one planned for."""

    failed = False

    def _to_file(self, batch: list[bytes], reopen: bool) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("a bug in the file writer")
        super()._to_file(batch, reopen)


def written(path: Path) -> int:
    return len(lines(path)) if path.exists() else 0


async def wait_for_lines(path: Path, count: int) -> None:
    while written(path) < count:
        await asyncio.sleep(0.01)


async def test_the_writer_outlives_any_file_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "audit.jsonl"
    audit = FailsOnce(str(path), hash_key=HASH_KEY.encode())
    audit.start()
    audit.write("run_start", {"n": 0})
    while not audit.failed:
        await asyncio.sleep(0.01)
    audit.write("run_start", {"n": 1})
    await wait_for_lines(path, 1)  # written: the writer is still there
    audit.write("run_end", {"n": 2})
    await audit.close()  # and close() still flushes
    assert [line["n"] for line in lines(path)] == [1, 2]
    [failure] = [r for r in caplog.records if r.exc_info]
    assert "cannot write 1 lines" in failure.getMessage()
    assert "a bug in the file writer" in caplog.text  # the traceback is in the log


async def test_the_writer_outlives_a_failed_stream_write(
    tmp_path: Path, redis_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    path, stream = tmp_path / "audit.jsonl", f"{redis_prefix}audit"
    reader = redis.Redis.from_url(REDIS_URL)
    await reader.set(stream, "not a stream")  # XADD now fails with WRONGTYPE
    audit = AuditLog(str(path), hash_key=HASH_KEY.encode(), sink=RedisAudit(REDIS_URL, stream))
    audit.start()
    audit.write("run_start", {"n": 0})
    await wait_for_lines(path, 1)
    while "cannot add 1 lines to the Redis stream" not in caplog.text:
        await asyncio.sleep(0.01)
    await reader.delete(stream)
    audit.write("run_end", {"n": 1})
    await audit.close()
    entries: Any = await reader.xrange(stream)
    await reader.aclose()
    assert [orjson.loads(fields[b"line"])["n"] for _, fields in entries] == [1]
    assert [line["n"] for line in lines(path)] == [0, 1]  # the file had both all along


class StreamFailsOnce(RedisAudit):
    """A stream whose first write fails with an error that is not Redis's."""

    failed = False

    async def add(self, lines: list[bytes]) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("a bug in the stream writer")
        await super().add(lines)


async def test_the_writer_outlives_any_stream_error(
    tmp_path: Path, redis_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    path, stream = tmp_path / "audit.jsonl", f"{redis_prefix}audit"
    sink = StreamFailsOnce(REDIS_URL, stream)
    audit = AuditLog(str(path), hash_key=HASH_KEY.encode(), sink=sink)
    audit.start()
    audit.write("run_start", {"n": 0})
    while not sink.failed:
        await asyncio.sleep(0.01)
    audit.write("run_end", {"n": 1})
    await audit.close()
    reader = redis.Redis.from_url(REDIS_URL)
    entries: Any = await reader.xrange(stream)
    await reader.aclose()
    assert [orjson.loads(fields[b"line"])["n"] for _, fields in entries] == [1]
    assert [line["n"] for line in lines(path)] == [0, 1]
    [failure] = [r for r in caplog.records if r.exc_info]
    assert "cannot add 1 lines to the Redis stream" in failure.getMessage()
    assert "a bug in the stream writer" in caplog.text

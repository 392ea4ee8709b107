"""The audit log: one JSON line per run start, tool call and run end, in a file and (with
REDIS_URL) a Redis stream; never the key itself; inputs hashed unless content is asked
for; nothing lost when the app stops; SIGHUP reopens the file after a rotation."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis.asyncio as redis

from gateway import keys
from tests.access_support import REDIS_URL, redis_prefix
from tests.conftest import GatewayFactory, iter_events, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

__all__ = ["redis_prefix"]  # a fixture

KEY = {"Authorization": "Bearer sk-very-secret"}


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def tool_replies() -> list[Reply]:
    return [Reply([ToolUse("echo", {"text": "hello"}), ToolUse("fail", {})]), Reply([Text("ok")])]


async def test_a_run_in_the_audit_file(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    path = tmp_path / "audit.jsonl"
    client = await make_gateway(
        gateway_audit_log=str(path), gateway_api_keys="analyst:sk-very-secret"
    )
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
    assert echo["input_sha256"] == hashlib.sha256(raw).hexdigest()
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
    assert echo["input"] == {"text": "hello"} and "input_sha256" not in echo
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

"""Code execution and skills through the gateway: the tool and the container on the first
call, the container's id on every later one, the result blocks relayed as server tool
phases and sent back verbatim, each file announced with a `file` event, and downloaded at
`/api/files/{file_id}` by the run's key only (any other key: 404), audited."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import GatewayFactory, read_events, stream, unmarked
from tests.fakes.anthropic import CodeExecution, FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.code_execution import MadeFile
from tests.procs.redis import redis_server

ALICE = {"Authorization": "Bearer key-alice"}
BOB = {"Authorization": "Bearer key-bob"}
KEYS = "alice:key-alice,bob:key-bob"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
SHEET = bytes(range(256)) * 200  # 51,200 bytes: several chunks each way


def sheet() -> MadeFile:
    return MadeFile("NVIDIA quarterly revenue.xlsx", SHEET, XLSX)


def code_turns() -> list[Reply]:
    """The model makes a spreadsheet, then asks for a local tool; then it answers."""
    made = CodeExecution("python make_sheet.py", files=[sheet()], stdout="saved")
    return [
        Reply([Text("Building it."), made, ToolUse("echo", {"text": "check"})]),
        Reply([Text("Here is the spreadsheet.")]),
    ]


async def run(client: TestClient[Any, Any], **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/api/stream", json={"query": "revenue", **body}, headers=ALICE)
    assert response.status == 200, await response.text()
    return await read_events(response)


async def test_a_spreadsheet_made_streamed_resent_and_downloaded(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    client = await make_gateway(gateway_api_keys=KEYS, gateway_audit_log=str(audit))
    fake.add(*code_turns())
    events = await run(client, skills=["xlsx"])
    assert events[-1]["type"] == "final" and events[-1]["outcome"] == "completed", events[-1]
    assert fake.rejected == []
    first, second = fake.requests
    assert {"type": "code_execution_20250825", "name": "code_execution"} in unmarked(first["tools"])
    assert first["container"] == {
        "skills": [{"type": "anthropic", "skill_id": "xlsx", "version": "latest"}]
    }
    [container_id] = fake.containers.issued
    assert second["container"] == container_id  # the same container, its files and skills
    # The code's call and result: server tool phases, and back to the API verbatim.
    [start] = [e for e in events if e["type"] == "tool_call" and e["phase"] == "tool_start"
               and e["tool"]["name"] == "bash_code_execution"]  # fmt: skip
    calls = [
        e for e in events if e["type"] == "tool_call" and e["tool"]["id"] == start["tool"]["id"]
    ]
    assert {e["phase"] for e in calls} == {
        "tool_start",
        "tool_input_delta",
        "tool_use",
        "tool_result",
    }
    assert all(e["server"] is True for e in calls)
    resent = unmarked(second["messages"][1]["content"])
    assert [b["type"] for b in resent] == [
        "text", "server_tool_use", "bash_code_execution_tool_result", "tool_use"
    ]  # fmt: skip
    [made] = fake.files.files.values()
    assert resent[2]["content"]["content"] == [
        {"type": "bash_code_execution_output", "file_id": made.id}
    ]
    # The file event, before the turn's end.
    [file] = [e for e in events if e["type"] == "file"]
    assert {k: file[k] for k in ("file_id", "filename", "mime_type", "size_bytes", "turn")} == {
        "file_id": made.id, "filename": made.filename, "mime_type": XLSX,
        "size_bytes": len(SHEET), "turn": 1,
    }  # fmt: skip
    complete = next(e for e in events if e["type"] == "turn_complete")
    assert file["seq"] < complete["seq"]
    # The run's key downloads it, byte for byte; another key and an unknown id get 404.
    response = await client.get(f"/api/files/{made.id}", headers=ALICE)
    assert response.status == 200
    assert await response.read() == SHEET
    assert response.headers["Content-Type"] == XLSX
    assert response.headers["Content-Length"] == str(len(SHEET))
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="NVIDIA quarterly revenue.xlsx"')
    assert "filename*=UTF-8''NVIDIA%20quarterly%20revenue.xlsx" in disposition
    for headers, file_id in ((BOB, made.id), (ALICE, "file_unknown")):
        refused = await client.get(f"/api/files/{file_id}", headers=headers)
        assert refused.status == 404
        assert (await refused.json())["error"]["code"] == "NOT_FOUND"
    assert (await client.get(f"/api/files/{made.id}")).status == 401
    # The Files API was read with the gateway's key (metadata once, content once).
    assert fake.files.requests == [
        (f"/v1/files/{made.id}", "sk-test"),
        (f"/v1/files/{made.id}/content", "sk-test"),
    ]
    await client.close()  # the audit writer drains
    downloads = [line for line in _lines(audit) if line["event"] == "file_download"]
    assert [(d["key"], d["outcome"], d["bytes"]) for d in downloads] == [
        ("alice", "success", len(SHEET)),
        ("bob", "not_found", 0),
        ("alice", "not_found", 0),
    ]
    assert downloads[0]["run_id"] == events[0]["run_id"] and "run_id" not in downloads[1]


async def test_research_lists_the_files(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway()
    fake.add(*code_turns())
    response = await client.post("/api/research", json={"query": "x", "code_execution": True})
    body = await response.json()
    [made] = fake.files.files.values()
    assert body["files"] == [{"file_id": made.id, "filename": made.filename, "mime_type": XLSX,
                              "size_bytes": len(SHEET), "turn": 1}]  # fmt: skip
    assert "container" not in fake.requests[0]  # no skills: the API makes a bare container
    assert fake.requests[1]["container"] == next(iter(fake.containers.issued))


async def test_a_failed_metadata_read_warns_and_the_file_stays_downloadable(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    fake.files.fail_metadata = True
    fake.add(*code_turns())
    events = await stream(client, query="x", code_execution=True)
    assert events[-1]["type"] == "final"
    [file] = [e for e in events if e["type"] == "file"]
    assert file["filename"] is None and file["size_bytes"] is None
    [warning] = [e for e in events if e["type"] == "warning"]
    assert warning["code"] == "file_metadata_failed" and warning["file_id"] == file["file_id"]
    response = await client.get(f"/api/files/{file['file_id']}")
    assert response.status == 200 and await response.read() == SHEET
    assert response.headers["Content-Type"] == XLSX  # the Files API's own, on the download
    assert 'filename="download"' in response.headers["Content-Disposition"]


async def test_runs_without_code_execution_send_none_of_it(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    fake.add(Reply([Text("plain")]))
    events = await stream(client, query="x")
    assert events[-1]["type"] == "final"
    request = fake.requests[0]
    assert "container" not in request
    assert all(t.get("name") != "code_execution" for t in request["tools"])


@pytest.mark.parametrize(
    ("body", "settings", "words"),
    [
        ({"code_execution": True}, {"gateway_code_execution": False}, "GATEWAY_CODE_EXECUTION"),
        ({"skills": ["xlsx"]}, {"gateway_code_execution": False}, "GATEWAY_CODE_EXECUTION"),
        ({"skills": ["xlsx", "xlsx"]}, {}, "twice"),
        ({"skills": ["spreadsheet"]}, {}, "unknown skill"),
        ({"skills": [f"skill_{i}" for i in range(9)]}, {}, "at most 8"),
        ({"skills": ["xlsx"], "code_execution": False}, {}, "code_execution: false"),
        ({"skills": "xlsx"}, {}, "skills"),
        ({"code_execution": True}, {"gateway_upstream": "demo"}, "Messages API"),
    ],
)
async def test_refused_before_the_stream(
    make_gateway: GatewayFactory, fake: FakeAnthropic, body: dict[str, Any],
    settings: dict[str, Any], words: str,
) -> None:  # fmt: skip
    client = await make_gateway(**settings)
    response = await client.post("/api/stream", json={"query": "x", **body})
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "VALIDATION_ERROR" and words in error["message"], error
    assert fake.requests == []


async def test_a_model_without_the_tool_is_refused(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.models["claude-test-model"]["capabilities"]["server_tools"]["code_execution"] = {
        "supported": False
    }
    client = await make_gateway()
    response = await client.get("/api/stream", params={"query": "x", "code_execution": "true"})
    assert response.status == 400
    error = (await response.json())["error"]
    assert (
        "code execution tool" in error["message"] and error["details"]["field"] == "code_execution"
    )


async def test_a_history_with_code_execution_results_is_taken(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """A client sends a run's history back (as `messages`): the result blocks pass."""
    client = await make_gateway()
    fake.add(*code_turns(), Reply([Text("again")]))
    await stream(client, query="x", code_execution=True)
    history = [*fake.requests[1]["messages"], {"role": "assistant", "content": "done"},
               {"role": "user", "content": "once more"}]  # fmt: skip
    events = await stream(client, messages=unmarked(history), code_execution=True)
    assert events[-1]["type"] == "final", events[-1]
    assert unmarked(fake.requests[2]["messages"][1]) == unmarked(history[1])


@pytest.fixture
async def redis_url(tmp_path: Path) -> AsyncIterator[str]:
    async with redis_server(tmp_path) as server:
        yield server.url


@pytest.mark.redis
async def test_another_worker_serves_the_download(
    make_gateway: GatewayFactory, fake: FakeAnthropic, redis_url: str
) -> None:
    shared = {"redis_url": redis_url, "redis_key_prefix": "rgfiles:", "gateway_api_keys": KEYS}
    one, two = await make_gateway(**shared), await make_gateway(**shared)
    fake.add(*code_turns())
    events = await run(one, code_execution=True)
    [file] = [e for e in events if e["type"] == "file"]
    response = await two.get(f"/api/files/{file['file_id']}", headers=ALICE)
    assert response.status == 200 and await response.read() == SHEET
    assert (await two.get(f"/api/files/{file['file_id']}", headers=BOB)).status == 404


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


async def test_a_download_nobody_reads_is_dropped(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """A client that asks for a file and reads none of it is dropped after the write
    deadline, as a stream's silent reader is: it holds no handler nor Files API
    connection open. Read afterwards, the body stops short of the file."""
    client = await make_gateway(gateway_write_timeout_s=0.5)
    size = 64 << 20  # more than loopback's socket buffers hold
    big = MadeFile("big.bin", b"x" * size)
    fake.add(Reply([Text("Making it."), CodeExecution("python big.py", files=[big])]),
             Reply([Text("Done.")]))  # fmt: skip
    events = await stream(client, query="x", code_execution=True)
    [file] = [e for e in events if e["type"] == "file"]
    reader, writer = await asyncio.open_connection(client.host, client.port)
    try:
        writer.write(
            f"GET /api/files/{file['file_id']} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()
        )
        await writer.drain()
        await asyncio.sleep(3)  # reading nothing, well past the deadline
        received = 0
        async with asyncio.timeout(30):
            with contextlib.suppress(ConnectionResetError):
                while chunk := await reader.read(1 << 20):
                    received += len(chunk)
        assert 0 < received < size
    finally:
        writer.close()

"""The fake's code execution, skills and Files API, held to the real API: its rules
checked directly, its answers parsed by the SDK (the oracle for their shapes)."""

from __future__ import annotations

from typing import Any

import aiohttp
import anthropic
import pytest
from aiohttp.test_utils import TestServer

from tests.fakes.anthropic import CodeExecution, FakeAnthropic, Reply, Text
from tests.fakes.code_execution import Containers, MadeFile
from tests.fakes.messages_rules import request_problem
from tests.fakes.models import model_info

TOOL = {"type": "code_execution_20250825", "name": "code_execution"}
MODEL = model_info("claude-test-model")


def body(container: Any = None, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "claude-test-model", "max_tokens": 1_000, "stream": True,
        "messages": [{"role": "user", "content": "a spreadsheet"}],
        "tools": [TOOL] if tools is None else tools,
    }  # fmt: skip
    if container is not None:
        request["container"] = container
    return request


def skills(*ids: str, kind: str = "anthropic") -> dict[str, Any]:
    return {"skills": [{"type": kind, "skill_id": i, "version": "latest"} for i in ids]}


def problem(request: dict[str, Any], containers: Containers | None = None) -> str | None:
    """What the fake answers: the shape first, then the code execution rules."""
    shape = request_problem(request)
    return shape or (containers or Containers()).problem(request, MODEL)


@pytest.mark.parametrize(
    ("request_body", "words"),
    [
        (body(skills("xlsx"), tools=[]), "require the code execution tool"),
        (body(skills("xlsx", "pdf", "docx", "pptx", *(f"skill_{i}" for i in range(5)))),
         "at most 8 items"),
        (body(skills("csv")), "skill 'csv' of type 'anthropic' not found"),
        (body(skills("xlsx", kind="custom")), "skill 'xlsx' of type 'custom' not found"),
        (body(skills("xlsx", "xlsx")), "duplicate skill_id 'xlsx'"),
        (body({"skills": [{"type": "builtin", "skill_id": "xlsx"}]}), "container"),
        (body("container_never_issued"), "not found"),
        (body({"id": "container_never_issued"}), "not found"),
        (body(tools=[{"type": "code_execution_20990101", "name": "code_execution"}]), "tools.0"),
        (body(tools=[{"type": "code_execution_20250825", "name": "python"}]), "tools.0"),
    ],
)  # fmt: skip
def test_refused_as_the_api_refuses(request_body: dict[str, Any], words: str) -> None:
    found = problem(request_body)
    assert found is not None and words in found, found


def test_taken_as_the_api_takes() -> None:
    containers = Containers()
    mixed = [*skills("xlsx")["skills"], *skills("skill_01AbCd", kind="custom")["skills"]]
    first = body({"skills": mixed})
    assert problem(first, containers) is None
    opened = containers.open(first)
    assert opened is not None and opened["skills"][1]["type"] == "custom"
    assert problem(body(opened["id"]), containers) is None  # the id it issued
    assert containers.open(body(opened["id"])) == opened
    assert containers.open(body(tools=[])) is None  # no tool, no container


def test_a_model_without_the_tool() -> None:
    without = model_info("old", web_search=False)
    found = Containers().problem(body(), without)
    assert found is not None and "code_execution_20250825 is not supported" in found


async def test_the_sdk_reads_the_container_and_the_files(
    fake: FakeAnthropic, fake_server: TestServer
) -> None:
    made = MadeFile("q.csv", b"quarter,revenue\nQ1,1\n", "text/csv")
    fake.add(Reply([CodeExecution("python q.py", files=[made]), Text("done")]))
    url = str(fake_server.make_url("")).rstrip("/")
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=url) as client:
        async with client.messages.stream(
            model="claude-test-model", max_tokens=1_000, tools=[TOOL],  # type: ignore[list-item]
            container=skills("xlsx"),  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "a table"}],
        ) as stream:  # fmt: skip
            message = await stream.get_final_message()
        assert message.container is not None and message.container.id in fake.containers.issued
        assert [s.skill_id for s in message.container.skills or ()] == ["xlsx"]
        call, result, _ = message.content
        assert call.type == "server_tool_use" and call.name == "bash_code_execution"
        assert result.type == "bash_code_execution_tool_result"
        assert result.content.type == "bash_code_execution_result"
        [output] = result.content.content
        meta = await client.files.retrieve_metadata(output.file_id)
        assert (meta.filename, meta.mime_type, meta.size_bytes) == (
            "q.csv",
            "text/csv",
            len(made.data),
        )
        download = await client.files.download(output.file_id)
        assert await download.read() == made.data
        with pytest.raises(anthropic.NotFoundError) as missing:
            await client.files.retrieve_metadata("file_nope")
        assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    async with aiohttp.ClientSession() as session:  # no key at all: the SDK always sends one
        keyless = await session.get(f"{url}/v1/files/{output.file_id}")
        assert keyless.status == 401
        assert (await keyless.json())["error"]["type"] == "authentication_error"


async def test_a_refused_request_is_a_400_over_http(
    fake: FakeAnthropic, fake_server: TestServer
) -> None:
    url = str(fake_server.make_url("")).rstrip("/")
    async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=url) as client:
        with pytest.raises(anthropic.BadRequestError) as refused:
            await client.messages.create(
                model="claude-test-model", max_tokens=1_000, tools=[TOOL],  # type: ignore[list-item]
                container="container_from_elsewhere", stream=True,
                messages=[{"role": "user", "content": "x"}],
            )  # fmt: skip
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert fake.rejected == ["container: 'container_from_elsewhere' not found"]

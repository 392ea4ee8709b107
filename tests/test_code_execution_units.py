"""The code execution pieces on their own: the skills a request may name, the container
the first call sends (held to the fake's copy of the API's rules), the file ids read from
result blocks of every shape the API sends, and a run's file bookkeeping against the
fake Files API through the real SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest
from aiohttp.test_utils import TestServer

from gateway.providers.anthropic.code_execution import (
    ANTHROPIC_SKILLS,
    MAX_SKILLS,
    container_param,
    file_ids,
    skills_problem,
)
from gateway.providers.anthropic.files import FilesAPI
from gateway.runs.files import RunFiles
from gateway.store.files import FileRecord, MemoryFileOwners
from tests.fakes.anthropic import FakeAnthropic
from tests.fakes.code_execution import MadeFile
from tests.test_code_execution_fake import body, problem

CUSTOM = ("skill_01AbCd", "skill_02EfGh", "skill_03IjKl", "skill_04MnOp")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def test_as_many_skills_as_the_api_takes_and_both_kinds_go_out_as_it_takes_them() -> None:
    eight = (*sorted(ANTHROPIC_SKILLS), *CUSTOM)
    assert len(eight) == MAX_SKILLS
    assert skills_problem(eight) is None
    container = container_param(eight)
    assert container is not None
    assert [(s["type"], s["skill_id"]) for s in container["skills"]] == [
        *(("anthropic", s) for s in sorted(ANTHROPIC_SKILLS)), *(("custom", s) for s in CUSTOM)
    ]  # fmt: skip
    assert problem(body(container)) is None  # the API's rules, as the fake holds them
    assert container_param(()) is None
    nine = (*eight, "skill_05QrSt")
    assert skills_problem(nine) == f"at most {MAX_SKILLS} skills per run, not 9"
    assert problem(body(container_param(nine))) is not None


def test_an_unknown_skill_is_named_with_the_ones_there_are() -> None:
    message = skills_problem(("xlsx", "spreadsheet"))
    assert message == (
        "unknown skill 'spreadsheet' (Anthropic's: docx, pdf, pptx, xlsx; custom: skill_...)"
    )


def _result(kind: str, content: Any) -> dict[str, Any]:
    return {"type": kind, "tool_use_id": "srvtoolu_1", "content": content}


def _outputs(kind: str, *ids: str) -> dict[str, Any]:
    outputs = [{"type": f"{kind}_output", "file_id": i} for i in ids]
    return {"type": f"{kind}_result", "content": outputs, "stdout": "", "stderr": "",
            "return_code": 0}  # fmt: skip


def test_file_ids_come_from_every_result_shape_and_nothing_else() -> None:
    content = [
        {"type": "text", "text": "made two"},
        _result("bash_code_execution_tool_result", _outputs("bash_code_execution", "f1", "f2")),
        # Results without outputs: an error, a file the editor viewed (its text), a create.
        _result("bash_code_execution_tool_result",
                {"type": "bash_code_execution_tool_result_error", "error_code": "unavailable"}),
        _result("text_editor_code_execution_tool_result",
                {"type": "text_editor_code_execution_view_result", "content": "a,b\n1,2",
                 "file_type": "text"}),
        _result("text_editor_code_execution_tool_result",
                {"type": "text_editor_code_execution_create_result", "is_file_update": False}),
        _result("code_execution_tool_result", _outputs("code_execution", "f3")),
        _result("code_execution_tool_result",
                {**_outputs("code_execution", "f4"), "type": "encrypted_code_execution_result",
                 "encrypted_stdout": "…"}),
        # Another tool's result that happens to carry a file id is not code execution's.
        _result("web_fetch_tool_result", {"content": [{"file_id": "not-ours"}]}),
    ]  # fmt: skip
    assert list(file_ids(content)) == ["f1", "f2", "f3", "f4"]


def test_file_ids_skip_shapes_they_do_not_know_rather_than_fail_the_turn() -> None:
    """Result variants the gateway does not know yet (the API adds some) cost no run."""
    content = [
        _result("bash_code_execution_tool_result", "a newer result as text"),
        _result("bash_code_execution_tool_result", [{"file_id": "in-a-list"}]),
        _result("bash_code_execution_tool_result", {"type": "bash_code_execution_result",
                                                    "content": ["plain", {"type": "x"},
                                                                {"file_id": 7}]}),
        _result("code_execution_tool_result", _outputs("code_execution", "kept")),
    ]  # fmt: skip
    assert list(file_ids(content)) == ["kept"]


@pytest.fixture
async def files_api(fake_server: TestServer) -> AsyncIterator[FilesAPI]:
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", base_url=str(fake_server.make_url("")).rstrip("/"), max_retries=0
    )
    yield FilesAPI(client)
    await client.close()


def _turn(*ids: str) -> list[dict[str, Any]]:
    return [_result("bash_code_execution_tool_result", _outputs("bash_code_execution", *ids))]


async def test_a_turns_files_are_recorded_for_the_key_and_announced_once(
    fake: FakeAnthropic, files_api: FilesAPI
) -> None:
    sheet = fake.files.make(MadeFile("q3.xlsx", b"x" * 300, XLSX))
    note = fake.files.make(MadeFile("notes.txt", b"hello", "text/plain"))
    owners = MemoryFileOwners(ttl_s=60)
    files = RunFiles(files_api, owners, "alice", "run_1")
    said: list[list[Any]] = []
    await files.announce(_turn(sheet, note, sheet), 2, said.append)
    assert said == [[
        {"type": "file", "file_id": sheet, "filename": "q3.xlsx", "mime_type": XLSX,
         "size_bytes": 300, "turn": 2},
        {"type": "file", "file_id": note, "filename": "notes.txt", "mime_type": "text/plain",
         "size_bytes": 5, "turn": 2},
    ]]  # fmt: skip
    assert await owners.get(sheet) == FileRecord("alice", "run_1", "q3.xlsx", XLSX, 300)
    assert await owners.get(note) == FileRecord("alice", "run_1", "notes.txt", "text/plain", 5)
    # The turn sent back verbatim names the same files: nothing new, nothing said.
    await files.announce(_turn(note, sheet), 3, said.append)
    await files.announce([{"type": "text", "text": "no code"}], 4, said.append)
    assert len(said) == 1
    assert [path for path, _ in fake.files.requests] == [f"/v1/files/{sheet}", f"/v1/files/{note}"]


async def test_a_file_the_api_does_not_describe_is_still_the_runs_with_a_warning(
    fake: FakeAnthropic, files_api: FilesAPI
) -> None:
    made = fake.files.make(MadeFile("q3.xlsx", b"x" * 300, XLSX))
    fake.files.fail_metadata = True
    owners = MemoryFileOwners(ttl_s=60)
    said: list[list[Any]] = []
    await RunFiles(files_api, owners, "bob", "run_2").announce(_turn(made), 4, said.append)
    [[file, warning]] = said
    assert file == {"type": "file", "file_id": made, "filename": None, "mime_type": None,
                    "size_bytes": None, "turn": 4}  # fmt: skip
    assert warning["type"] == "warning" and warning["code"] == "file_metadata_failed"
    assert warning["turns"] == 4 and warning["file_id"] == made
    # The code and the words of the API's 500, as the Messages provider would map them.
    assert warning["message"] == (
        f"The Files API did not describe file {made} (UNKNOWN_ERROR: fake: metadata unavailable)"
    )
    assert await owners.get(made) == FileRecord("bob", "run_2")

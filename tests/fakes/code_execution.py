"""Code execution, skills and the Files API as the fake Messages API does them.

Requests are held to the rules the SDK's types cannot say (the shapes themselves, the
tool's `type` and `name`, `container` as an id or `{id, skills}` and each skill's
`{skill_id, type, version}`, are the strict type check's, in messages_rules):

- skills only with the code execution tool in `tools` ("Agent Skills > Prerequisites":
  skills run in the code execution container);
- at most 8 skills, each once ("You can include up to 8 Skills per request");
- an `anthropic` skill is one of Anthropic's (`pptx`, `xlsx`, `docx`, `pdf`), a `custom`
  one a Skills API id (`skill_...`);
- a container id is one this fake issued (a container of another workspace, or an
  expired one, is not found);
- the model record has the tool (`capabilities.server_tools.code_execution`).

A request with the tool gets a container: a new one (with the skills asked for), or the
one it named. The answer's `message_delta.delta.container` says which (`Container`:
id, expires_at, skills). Files the scripted code makes are served by the Files API routes:
`GET /v1/files/{id}` (`FileMetadata`) and `GET /v1/files/{id}/content`, both needing the
API key (`x-api-key`, or `Authorization: Bearer`, which is what SDK 2.14 sends), and 404
`not_found_error` for an id the fake never made.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ANTHROPIC_SKILLS = frozenset({"pptx", "xlsx", "docx", "pdf"})
CUSTOM_SKILL = re.compile(r"^skill_[A-Za-z0-9]+$")
MAX_SKILLS = 8
CODE_EXECUTION_TYPES = frozenset({
    "code_execution_20250522", "code_execution_20250825", "code_execution_20260120",
    "code_execution_20260521",
})  # fmt: skip
CREATED_AT = "2026-06-01T12:00:00Z"
EXPIRES_AT = "2026-06-01T13:00:00Z"


@dataclass
class MadeFile:
    """A file the scripted code writes: its name, bytes and type."""

    filename: str
    data: bytes
    mime_type: str = "application/octet-stream"
    id: str = ""


@dataclass
class Containers:
    """The containers the fake issued, with the skills loaded in each."""

    issued: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def problem(self, body: dict[str, Any], model: dict[str, Any]) -> str | None:
        """The `invalid_request_error` message for `body`'s tool and container, or None."""
        tools = body.get("tools") or ()
        offered = [i for i, t in enumerate(tools) if t.get("type") in CODE_EXECUTION_TYPES]
        if offered and not model["capabilities"]["server_tools"]["code_execution"]["supported"]:
            kind = tools[offered[0]]["type"]
            return f"tools.{offered[0]}: {kind} is not supported by {model['id']}"
        container = body.get("container")
        if isinstance(container, str):
            return None if container in self.issued else f"container: {container!r} not found"
        if not isinstance(container, dict):
            return None
        if container.get("id") is not None and container["id"] not in self.issued:
            return f"container.id: {container['id']!r} not found"
        skills = container.get("skills") or []
        if skills and not offered:
            return "container.skills: skills require the code execution tool in `tools`"
        return _skills_problem(skills)

    def open(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The container that serves an accepted request (None: it offers no tool)."""
        if not any(t.get("type") in CODE_EXECUTION_TYPES for t in body.get("tools") or ()):
            return None
        container = body.get("container")
        if isinstance(container, dict) and container.get("id") is not None:
            container = container["id"]
        if isinstance(container, str):
            container_id = container
        else:
            container_id = f"container_fake{next(self._ids):08d}"
            skills = (container or {}).get("skills") or []
            self.issued[container_id] = [
                {"type": s["type"], "skill_id": s["skill_id"],
                 "version": s.get("version", "latest")} for s in skills
            ]  # fmt: skip
        skills = self.issued[container_id]
        return {"id": container_id, "expires_at": EXPIRES_AT, "skills": skills}


def _skills_problem(skills: list[dict[str, Any]]) -> str | None:
    if len(skills) > MAX_SKILLS:
        return (
            f"container.skills: List should have at most {MAX_SKILLS} items after "
            f"validation, not {len(skills)}"
        )
    seen: set[str] = set()
    for i, skill in enumerate(skills):
        skill_id, kind = skill["skill_id"], skill["type"]
        known = skill_id in ANTHROPIC_SKILLS if kind == "anthropic" else bool(
            CUSTOM_SKILL.match(skill_id)
        )  # fmt: skip
        if not known:
            return f"container.skills.{i}: skill {skill_id!r} of type {kind!r} not found"
        if skill_id in seen:
            return f"container.skills.{i}: duplicate skill_id {skill_id!r}"
        seen.add(skill_id)
    return None


class FakeFiles:
    """The Files API's reads over the files scripted code made. `requests` records each
    read as (path, the API key it carried)."""

    def __init__(self) -> None:
        self.files: dict[str, MadeFile] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.fail_metadata = False  # answer every metadata read with a 500
        self._ids = itertools.count(1)

    def make(self, made: MadeFile) -> str:
        made.id = made.id or f"file_fake{next(self._ids):020d}"
        self.files[made.id] = made
        return made.id

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/files/{file_id}", self._metadata)
        app.router.add_get("/v1/files/{file_id}/content", self._content)

    def _find(self, request: web.Request) -> MadeFile | web.Response:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        key = request.headers.get("x-api-key") or (token if scheme == "Bearer" else None)
        self.requests.append((request.path, key))
        if not key:
            return _error(401, "authentication_error", "x-api-key header is required")
        made = self.files.get(request.match_info["file_id"])
        if made is None:
            return _error(
                404, "not_found_error", f"File not found: {request.match_info['file_id']}"
            )
        return made

    async def _metadata(self, request: web.Request) -> web.Response:
        made = self._find(request)
        if isinstance(made, web.Response):
            return made
        if self.fail_metadata:
            return _error(500, "api_error", "fake: metadata unavailable")
        return web.json_response({
            "type": "file", "id": made.id, "filename": made.filename,
            "mime_type": made.mime_type, "size_bytes": len(made.data),
            "created_at": CREATED_AT, "downloadable": True,
        })  # fmt: skip

    async def _content(self, request: web.Request) -> web.StreamResponse:
        made = self._find(request)
        if isinstance(made, web.Response):
            return made
        response = web.StreamResponse(headers={"Content-Type": made.mime_type})
        response.content_length = len(made.data)
        await response.prepare(request)
        for start in range(0, len(made.data), 16_384):  # in pieces, as a large file comes
            await response.write(made.data[start : start + 16_384])
        await response.write_eof()
        return response


def _error(status: int, error_type: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return web.json_response(body, status=status)

"""The Messages API's code execution tool and skills, as the request and the answer carry
them (shapes from the SDK's `CodeExecutionTool20250825Param`, `ContainerParams`,
`SkillParams` and the `*_code_execution_*` result blocks).

Version `code_execution_20250825` is the one skills run on: it gives the model bash and a
file editor in the container (`bash_code_execution`, `text_editor_code_execution`), which
is how a skill's scripts make a spreadsheet or a document. The later versions
(`_20260120`, `_20260521`) add REPL state kept across requests for programmatic tool
calling, which the gateway does not use.

The first call of a run sends `container: {"skills": [...]}` (or nothing, without skills);
the API answers with the container's id (`message_delta.delta.container`), and every later
call sends that id, so the files and the loaded skills stay the model's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

CODE_EXECUTION_TOOL: dict[str, Any] = {"type": "code_execution_20250825", "name": "code_execution"}
ANTHROPIC_SKILLS = frozenset({"xlsx", "docx", "pptx", "pdf"})
"""Anthropic's own skills (their ids are short names; docs: "Agent Skills > Using Skills")."""
CUSTOM_SKILL = re.compile(r"^skill_[A-Za-z0-9]{1,64}$")
"""A custom skill's generated id, as the Skills API makes them (`skill_01AbCd...`)."""
MAX_SKILLS = 8
"""Skills per request, the API's limit ("You can include up to 8 Skills per request")."""
RESULT_TYPES = frozenset(
    {
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
    }
)


def skills_problem(skills: tuple[str, ...]) -> str | None:
    """What is wrong with a request's skill ids, or None."""
    if len(skills) > MAX_SKILLS:
        return f"at most {MAX_SKILLS} skills per run, not {len(skills)}"
    seen: set[str] = set()
    for skill in skills:
        if skill not in ANTHROPIC_SKILLS and not CUSTOM_SKILL.match(skill):
            known = ", ".join(sorted(ANTHROPIC_SKILLS))
            return f"unknown skill {skill!r} (Anthropic's: {known}; custom: skill_...)"
        if skill in seen:
            return f"{skill!r} is listed twice"
        seen.add(skill)
    return None


def container_param(skills: tuple[str, ...]) -> dict[str, Any] | None:
    """The first call's `container`: the skills to load (None: the API makes a bare one)."""
    if not skills:
        return None
    return {
        "skills": [
            {
                "type": "anthropic" if s in ANTHROPIC_SKILLS else "custom",
                "skill_id": s,
                "version": "latest",
            }
            for s in skills
        ]
    }


def file_ids(content: list[dict[str, Any]]) -> Iterator[str]:
    """The ids of the files code execution made in one assistant turn (the `file_id` of
    each `*_code_execution_output` in a result block), in order."""
    for block in content:
        if block.get("type") not in RESULT_TYPES:
            continue
        result = block.get("content")
        outputs = result.get("content") if isinstance(result, dict) else None
        for output in outputs if isinstance(outputs, list) else ():
            if isinstance(output, dict) and isinstance(output.get("file_id"), str):
                yield output["file_id"]

"""What a tool is: an input model, a description, and `async def run(args, ctx) -> str`.

Two kinds of failure exist. A `ToolFailure` is expected (a company that does not exist,
an upstream that refused): its message goes to the model as an `is_error` result so the
model can react. Anything else a tool raises is a bug; the registry still turns it into an
`is_error` result, naming the exception type, so one broken tool never breaks a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["RichResult", "Tool", "ToolContext", "ToolFailure", "ToolInput"]


class ToolFailure(Exception):
    """An expected tool failure; `str(exc)` is what the model reads."""


@dataclass(frozen=True)
class RichResult:
    """A result with more than text: the Messages API's `tool_result` content blocks (text
    and image), as a tool served by an MCP server may answer."""

    blocks: list[dict[str, Any]]

    def text(self) -> str:
        """The text blocks, for previews, caps and logs."""
        return "\n\n".join(b["text"] for b in self.blocks if b.get("type") == "text")


class ToolInput(BaseModel):
    """Base of every tool's input model; field docstrings become schema descriptions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


InputT = TypeVar("InputT", bound=ToolInput)


@dataclass
class ToolContext:
    """What a running tool may use besides its arguments.

    `services` holds shared clients (HTTP session, SEC client, search index) keyed by name;
    the process that builds the registry decides what is in it.
    """

    tool_use_id: str = ""
    run_id: str = ""
    services: dict[str, Any] = field(default_factory=dict)


class Tool(Generic[InputT]):
    """One tool. Subclasses set `name`, `input_model`, a class docstring, and `run`.

    `name` is a class attribute of the gateway's own tools; a tool another process serves
    (tools/mcp) sets it, its description and its schema per instance.
    """

    name: str
    input_model: ClassVar[type[ToolInput]]

    def description(self) -> str:
        return " ".join((type(self).__doc__ or self.name).split())

    def input_schema(self) -> dict[str, Any]:
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            # Multi-line field docstrings keep their line breaks; the model needs none.
            if isinstance(prop.get("description"), str):
                prop["description"] = " ".join(prop["description"].split())
        return schema

    async def run(self, args: InputT, ctx: ToolContext) -> str | RichResult:
        raise NotImplementedError

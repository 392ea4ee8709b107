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

__all__ = ["Tool", "ToolContext", "ToolFailure", "ToolInput"]


class ToolFailure(Exception):
    """An expected tool failure; `str(exc)` is what the model reads."""


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
    """One tool. Subclasses set `name`, `input_model`, a class docstring, and `run`."""

    name: ClassVar[str]
    input_model: ClassVar[type[ToolInput]]

    @classmethod
    def description(cls) -> str:
        return " ".join((cls.__doc__ or cls.name).split())

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        schema = cls.input_model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            # Multi-line field docstrings keep their line breaks; the model needs none.
            if isinstance(prop.get("description"), str):
                prop["description"] = " ".join(prop["description"].split())
        return schema

    async def run(self, args: InputT, ctx: ToolContext) -> str:
        raise NotImplementedError

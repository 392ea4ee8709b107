"""The installed SDKs' own request types as strict validators of a request body.

The SDKs' `TypedDict` request types are the published wire format, but as Python types they
are lenient where the API is not: pydantic ignores unknown keys of a `TypedDict`, reads an
`Iterable` lazily (its items are never checked), coerces `"10"` to an int, and the SDKs also
accept their own response objects (pydantic models) where a block goes, for convenience.
The validator built here from the SDK's schema refuses unknown keys everywhere, checks every
item, coerces nothing and takes only the request (`...Param`) shapes, as the API does.

Building one costs about two seconds for the Messages API: each is built once per process.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import CoreConfig, SchemaValidator


def strict_validator(request_type: Any) -> SchemaValidator:
    """A validator of `request_type` (an SDK `TypedDict`) that holds a body to the wire rules."""
    schema: Any = TypeAdapter(request_type).core_schema
    nodes = _nodes(schema)
    refs = {node["ref"]: node for node in nodes if isinstance(node.get("ref"), str)}
    responses = {id(node) for node in nodes if _is_response(node, refs, set())}
    for node in nodes:
        kind = node.get("type")
        if kind == "typed-dict":
            if "extras_schema" not in node:  # a type that declares its extra items keeps them
                node["extra_behavior"] = "forbid"
            node["config"] = {**node.get("config", {}), "strict": True}
        elif kind == "generator":  # `Iterable[X]`: validated lazily otherwise, i.e. never
            node["type"] = "list"
        elif kind == "union":
            params = [c for c in node["choices"] if id(_schema(c)) not in responses]
            node["choices"] = params or node["choices"]  # inside the models themselves
    return SchemaValidator(schema, CoreConfig(strict=True))


@cache
def cached_validator(request_type: Any) -> SchemaValidator:
    return strict_validator(request_type)


def type_problem(validator: SchemaValidator, body: Any) -> str | None:
    """None for a body of the right shape, else one line naming where it is wrong, in the
    API's own `path.to.field: message` form."""
    try:
        validator.validate_python(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # A union reports every branch. The branch meant is one whose `type` (or other
        # fixed value) matched; of its errors, the deepest says most.
        wrong = {_branch(e["loc"]) for e in errors if e["type"] == "literal_error"}
        meant = [e for e in errors if _branch(e["loc"]) not in wrong] or errors
        best = max(meant, key=lambda e: len(_path(e["loc"])))
        return f"{'.'.join(_path(best['loc']))}: {best['msg']}"
    return None


def _branch(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The location up to the last union branch named in it."""
    named = [i for i, p in enumerate(loc) if isinstance(p, str) and not _is_field(p)]
    return loc[: named[-1] + 1] if named else ()


def _path(loc: tuple[int | str, ...]) -> list[str]:
    # Union branches appear in the location by class name (`TextBlockParam`); the API's
    # paths name only fields and indexes.
    return [str(p) for p in loc if not isinstance(p, str) or _is_field(p)]


def _is_field(part: str) -> bool:
    return not (part[:1].isupper() or "[" in part)


def _schema(choice: Any) -> Any:
    return choice[0] if isinstance(choice, tuple) else choice


def _is_response(node: Any, refs: dict[str, Any], seen: set[int]) -> bool:
    """A response object (a pydantic model), or a union of nothing else."""
    if not isinstance(node, dict) or id(node) in seen:
        return False
    seen = seen | {id(node)}
    kind = node.get("type")
    if kind == "model":
        return True
    if kind == "definition-ref":
        return _is_response(refs.get(node["schema_ref"]), refs, seen)
    if kind == "tagged-union":
        return all(_is_response(c, refs, seen) for c in node["choices"].values())
    if kind == "union":
        return all(_is_response(_schema(c), refs, seen) for c in node["choices"])
    if kind in ("function-wrap", "function-after", "function-before", "nullable"):
        return _is_response(node.get("schema"), refs, seen)
    return False


def _nodes(root: Any) -> list[dict[str, Any]]:
    """Every schema dict under `root`, once each."""
    seen: set[int] = set()
    out: list[dict[str, Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if id(node) in seen:
                continue
            seen.add(id(node))
            out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return out

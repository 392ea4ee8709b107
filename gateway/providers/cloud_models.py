"""Claude's model ids on Amazon Bedrock and Google Cloud Vertex AI, and what each model
takes there: the clouds have no Models API for Claude, so the records ship here (pure).

Source: Anthropic's "Claude on Amazon Bedrock" and "Claude on Vertex AI" pages and the
anthropic SDK 2.14.0 (`lib/bedrock`, `lib/vertex`), as read on 2026-12-05. Bedrock names
current models only through a cross-region inference profile (`global.`, `us.`, `eu.`,
`apac.`, `jp.`, `au.` before `anthropic.<model>`); Vertex names them by the model id, a
dated one with `@`. A capability this table is not sure of is left off (its request is
refused with a 400 naming the upstream rather than sent to fail): no server tools, code
execution or skills, no API-side context management (the gateway clears old tool results
itself), which the clouds do not offer to every model or region alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from gateway.providers.anthropic.catalog import ModelRecord

SOURCE = "Claude on Amazon Bedrock / Vertex AI model pages and anthropic SDK 2.14.0"
RETRIEVED = "2026-12-05"
EFFORTS = frozenset({"low", "medium", "high", "max"})


@dataclass(frozen=True)
class CloudModel:
    bedrock: str
    """Bedrock's model id, without an inference profile prefix."""
    vertex: str
    record: ModelRecord
    """The record by the Messages API's id; the cloud's own id replaces it."""


def _model(anthropic_id: str, bedrock: str, vertex: str, **caps: object) -> CloudModel:
    record = ModelRecord(
        id=anthropic_id,
        display_name=anthropic_id,
        lifecycle="active",
        source="provider",
        citations=True,
        thinking_disabled=True,
    )
    return CloudModel(bedrock, vertex, replace(record, **caps))  # type: ignore[arg-type]


MODELS: dict[str, CloudModel] = {
    m.record.id: m
    for m in (
        _model(
            "claude-opus-5",
            "anthropic.claude-opus-5",
            "claude-opus-5",
            max_tokens=128_000,
            max_input_tokens=1_000_000,
            thinking_adaptive=True,
            efforts=EFFORTS,
            structured_outputs=True,
        ),
        _model(
            "claude-sonnet-5",
            "anthropic.claude-sonnet-5",
            "claude-sonnet-5",
            max_tokens=128_000,
            max_input_tokens=1_000_000,
            thinking_adaptive=True,
            efforts=EFFORTS,
            structured_outputs=True,
        ),
        _model(
            "claude-haiku-4-5",
            "anthropic.claude-haiku-4-5-20251001-v1:0",
            "claude-haiku-4-5@20251001",
            max_tokens=64_000,
            max_input_tokens=200_000,
            thinking_budget=True,
            structured_outputs=True,
        ),
        _model(
            "claude-sonnet-4-5-20250929",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-sonnet-4-5@20250929",
            max_tokens=64_000,
            max_input_tokens=200_000,
            thinking_budget=True,
            structured_outputs=True,
            lifecycle="deprecated",
            retires_at="2026-11-30T00:00:00+00:00",
        ),
    )
}
_PROFILE = re.compile(r"^(?:global|us|eu|apac|jp|au|us-gov)\.")


def bedrock_profile(region: str) -> str:
    """The cross-region inference profile a region's runtime endpoint offers."""
    for prefix, profile in (
        ("us-gov-", "us-gov"),
        ("us-", "us"),
        ("ca-", "us"),
        ("eu-", "eu"),
        ("ap-northeast-1", "jp"),
        ("ap-southeast-2", "au"),
        ("ap-", "apac"),
    ):
        if region.startswith(prefix):
            return profile
    return "global"


def bedrock_model_id(model: str, region: str) -> str:
    """Bedrock's id for `model`: a Messages API id through the region's profile; an id
    that already is Bedrock's (a profile, `anthropic.…`, an ARN) as it is."""
    known = MODELS.get(model)
    if known is None:
        return model
    return f"{bedrock_profile(region)}.{known.bedrock}"


def vertex_model_id(model: str) -> str:
    known = MODELS.get(model)
    return known.vertex if known is not None else model


def bedrock_name(model_id: str) -> str:
    """The gateway's name of a Bedrock model (runs, prices, metrics): the cloud, its id."""
    return f"bedrock/{model_id}"


def vertex_name(model_id: str, region: str) -> str:
    """The region is part of it: Vertex prices its regional endpoints apart."""
    return f"vertex/{region}/{model_id}"


def cloud_id(name: str) -> str:
    """The id the cloud knows, from the gateway's name of its model."""
    if name.startswith("bedrock/"):
        return name.removeprefix("bedrock/")
    if name.startswith("vertex/"):
        return name.split("/", 2)[-1]
    return name


def _anthropic_id(cloud_id: str) -> str | None:
    """The Messages API id behind a cloud's id, if the table knows it."""
    for model in MODELS.values():
        bare = _PROFILE.sub("", cloud_id.rsplit("/", 1)[-1])  # an ARN ends in the profile
        if cloud_id in (model.vertex, model.record.id) or bare == model.bedrock:
            return model.record.id
    return None


def cloud_record(name: str) -> ModelRecord:
    """The record of a cloud's model under the gateway's name of it; a model this table
    does not know gets the safe defaults (nothing optional is sent to it)."""
    anthropic_id = _anthropic_id(cloud_id(name))
    if anthropic_id is None:
        return ModelRecord(id=name, display_name=name)
    record = MODELS[anthropic_id].record
    return replace(record, id=name, display_name=f"{anthropic_id} on {name.split('/')[0]}")

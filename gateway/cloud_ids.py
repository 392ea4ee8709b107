"""Claude's model ids on Amazon Bedrock and Google Cloud Vertex AI, and the gateway's names
for a cloud's model (pure; settings read them, providers/cloud_models.py has the records).

Source: Anthropic's "Claude on Amazon Bedrock" and "Claude on Vertex AI" pages and the
anthropic SDK 2.14.0 (`lib/bedrock`, `lib/vertex`), as read on 2026-12-05. Bedrock names
current models only through a cross-region inference profile (`global.`, `us.`, `eu.`,
`apac.`, `jp.`, `au.` before `anthropic.<model>`); Vertex by the model id, a dated one
with `@`.

The 5.5 lineup: Bedrock's `anthropic.claude-sonnet-5-5` and `anthropic.claude-haiku-5-5`,
Vertex's `claude-sonnet-5-5` and `claude-haiku-5-5` (undated), as the Vercel AI SDK's
Bedrock and Vertex packages name them (their release notes for Sonnet and Haiku 5.5,
read on 2026-12-05). Opus 5.5 has an Amazon Bedrock model card, but its id was not in
what could be read; it follows the same pattern, as do Fable and Mythos 5.1 and 5.2, of
which no cloud page could be read: those are to be checked against the clouds'
model catalogs.
"""

from __future__ import annotations

import re

IDS: dict[str, tuple[str, str]] = {
    "claude-sonnet-5-5": ("anthropic.claude-sonnet-5-5", "claude-sonnet-5-5"),
    "claude-opus-5-5": ("anthropic.claude-opus-5-5", "claude-opus-5-5"),
    "claude-haiku-5-5": ("anthropic.claude-haiku-5-5", "claude-haiku-5-5"),
    "claude-fable-5-2": ("anthropic.claude-fable-5-2", "claude-fable-5-2"),
    "claude-mythos-5-2": ("anthropic.claude-mythos-5-2", "claude-mythos-5-2"),
    "claude-fable-5-1": ("anthropic.claude-fable-5-1", "claude-fable-5-1"),
    "claude-mythos-5-1": ("anthropic.claude-mythos-5-1", "claude-mythos-5-1"),
    "claude-opus-5": ("anthropic.claude-opus-5", "claude-opus-5"),
    "claude-sonnet-5": ("anthropic.claude-sonnet-5", "claude-sonnet-5"),
    "claude-haiku-4-5": ("anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5@20251001"),
    "claude-sonnet-4-5-20250929": (
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-sonnet-4-5@20250929",
    ),
}
"""The Messages API's id -> (Bedrock's id without a profile, Vertex's id)."""
_PROFILE = re.compile(r"^(?:global|us|eu|apac|jp|au|us-gov)\.")
_PROFILES = (
    ("us-gov-", "us-gov"),
    ("us-", "us"),
    ("ca-", "us"),
    ("eu-", "eu"),
    ("ap-northeast-1", "jp"),
    ("ap-southeast-2", "au"),
    ("ap-", "apac"),
)


def bedrock_profile(region: str) -> str:
    """The cross-region inference profile a region's runtime endpoint offers."""
    for prefix, profile in _PROFILES:
        if region.startswith(prefix):
            return profile
    return "global"


def bedrock_model_id(model: str, region: str) -> str:
    """Bedrock's id for `model`: a Messages API id through the region's profile; an id
    that already is Bedrock's (a profile, `anthropic.…`, an ARN) as it is."""
    known = IDS.get(model)
    return f"{bedrock_profile(region)}.{known[0]}" if known is not None else model


def vertex_model_id(model: str) -> str:
    known = IDS.get(model)
    return known[1] if known is not None else model


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


def anthropic_id(name: str) -> str | None:
    """The Messages API id behind the gateway's name of a cloud's model, if known."""
    model_id = cloud_id(name)
    bare = _PROFILE.sub("", model_id.rsplit("/", 1)[-1])  # an ARN ends in the profile
    for known, (bedrock, vertex) in IDS.items():
        if model_id in (vertex, known) or bare == bedrock:
            return known
    return None

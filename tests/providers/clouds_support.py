"""What the cloud tests share: an environment where botocore's standard chain finds only
what a test puts there, and the gateway's settings for a fake cloud."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


def bare_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS credentials anywhere botocore looks, until the test adds some."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def bedrock_settings(server: TestServer, **overrides: Any) -> dict[str, Any]:
    return {
        "gateway_upstream": "bedrock",
        "aws_region": "us-east-1",
        "gateway_bedrock_url": str(server.make_url("")).rstrip("/"),
        "sdk_model": "claude-sonnet-5",
        **overrides,
    }


def phases(events: list[dict[str, Any]], phase: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "tool_call" and e["phase"] == phase]


def bare_google(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Application Default Credentials but what the test points at (no gcloud config,
    no metadata server)."""
    for name in (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GCLOUD_PROJECT",
        "CLOUD_ML_REGION",
        "ANTHROPIC_VERTEX_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("NO_GCE_CHECK", "True")


def vertex_settings(server: TestServer, **overrides: Any) -> dict[str, Any]:
    return {
        "gateway_upstream": "vertex",
        "gateway_vertex_region": "us-east5",
        "gateway_vertex_url": str(server.make_url("/v1")),
        "sdk_model": "claude-sonnet-5",
        **overrides,
    }

"""SigV4 and AWS credentials: the gateway's signer against botocore's (in the fake), the
fake's refusals as AWS words them, and keys that expire during a long run."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from botocore.eventstream import EventStreamBuffer
from pytest_aiohttp import AiohttpServer
from yarl import URL

from gateway.providers.bedrock.sigv4 import Keys, sign
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.bedrock import MISMATCH, FakeBedrock
from tests.providers.clouds_support import bare_aws, bedrock_settings

BODY = {
    "anthropic_version": "bedrock-2023-05-31",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
}
TEMPORARY = Keys("ASIATESTKEY", "test/secret", "test-session-token")


@pytest.fixture
def bedrock() -> FakeBedrock:
    fake = FakeBedrock(FakeAnthropic())
    fake.add_static(TEMPORARY.access_key, TEMPORARY.secret_key, TEMPORARY.token)
    fake.add_static("AKIALONGTERM", "long/term/secret")
    return fake


@pytest.fixture
async def server(
    bedrock: FakeBedrock,
    aiohttp_server: AiohttpServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> TestServer:
    bare_aws(monkeypatch, tmp_path)
    return await aiohttp_server(bedrock.app())


async def post(
    server: TestServer,
    keys: Keys,
    *,
    now: datetime | None = None,
    region: str = "us-east-1",
    model: str = "us.anthropic.claude-sonnet-5",
) -> tuple[int, dict[str, Any], str]:
    url = URL(str(server.make_url(""))) / "model" / model / "invoke-with-response-stream"
    data = json.dumps(BODY).encode()
    headers = {"content-type": "application/json"}
    headers |= sign(url, data, headers, keys, region, "bedrock", now or datetime.now(UTC))
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=data, headers=headers) as response,
    ):
        raw = await response.read()
        body = json.loads(raw) if response.status != 200 else {"frames": frames(raw)}
        return response.status, body, response.headers.get("x-amzn-ErrorType", "")


def frames(raw: bytes) -> list[dict[str, Any]]:
    """The stream's Messages API events, as botocore's own event-stream parser reads them."""
    buffer = EventStreamBuffer()
    buffer.add_data(raw)
    events = []
    for message in buffer:
        assert message.headers[":event-type"] == "chunk"
        events.append(json.loads(base64.b64decode(json.loads(message.payload)["bytes"])))
    return events


async def test_the_signature_is_the_one_botocore_computes(
    server: TestServer, bedrock: FakeBedrock
) -> None:
    bedrock.fake.add(Reply([Text("ok")]), Reply([Text("ok")]))
    assert (await post(server, TEMPORARY))[0] == 200
    model = "us.anthropic.claude-haiku-4-5-20251001-v1:0"  # a `:` in the path: encoded twice
    assert (await post(server, Keys("AKIALONGTERM", "long/term/secret", None), model=model))[
        0
    ] == 200
    assert [a["key"] for a in bedrock.accepted] == ["ASIATESTKEY", "AKIALONGTERM"]


@pytest.mark.parametrize(
    ("keys", "shift", "kind", "message"),
    [
        (
            Keys("ASIATESTKEY", "wrong", "test-session-token"),
            0,
            "InvalidSignatureException",
            MISMATCH,
        ),
        (TEMPORARY, -10, "InvalidSignatureException", "Signature expired: "),
        (TEMPORARY, 10, "InvalidSignatureException", "Signature expired: "),
        (
            Keys("ASIATESTKEY", "test/secret", None),
            0,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ),
        (
            Keys("AKIANOBODY", "x", None),
            0,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        ),
    ],
)
async def test_the_fake_refuses_as_aws_does(
    server: TestServer, keys: Keys, shift: int, kind: str, message: str
) -> None:
    now = datetime.now(UTC) + timedelta(minutes=shift)
    status, body, error_type = await post(server, keys, now=now)
    assert status == 403 and error_type.startswith(kind + ":")
    assert body["message"].startswith(message)


async def test_a_signature_for_another_region_is_refused(server: TestServer) -> None:
    status, body, error_type = await post(server, TEMPORARY, region="eu-west-1")
    assert status == 403 and error_type.startswith("InvalidSignatureException")
    assert body["message"] == "Credential should be scoped to a valid region."


async def test_keys_from_the_container_endpoint_renewed_during_a_long_run(
    make_gateway: GatewayFactory,
    server: TestServer,
    bedrock: FakeBedrock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each set the endpoint issues expires within botocore's 15-minute window, and the
    fake refuses a set once the next is out: every call must sign with fresh keys."""
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", str(server.make_url("/creds")))
    client = await make_gateway(**bedrock_settings(server))
    bedrock.fake.add(
        Reply([ToolUse("echo", {"text": "1"})]),
        Reply([ToolUse("echo", {"text": "2"})]),
        Reply([Text("Done after three calls.")]),
    )
    events = await stream(client, query="x")
    assert events[-1]["outcome"] == "completed", events[-1]
    keys = [a["key"] for a in bedrock.accepted]
    assert len(keys) == 3 and len(set(keys)) == 3 and bedrock.issued >= 4
    assert not bedrock.refusals


async def test_keys_the_service_calls_expired_are_read_again_and_the_call_retried(
    make_gateway: GatewayFactory,
    server: TestServer,
    bedrock: FakeBedrock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", str(server.make_url("/creds")))
    bedrock.issued_for_s = 3600  # botocore keeps them: only the service says they expired
    client = await make_gateway(**bedrock_settings(server))
    bedrock.fake.add(Reply([Text("First.")]), Reply([Text("Second.")]))
    assert (await stream(client, query="x"))[-1]["outcome"] == "completed"
    for keys in bedrock.keys.values():
        keys.expired = True  # revoked early, as a session ends
    events = await stream(client, query="y")
    assert events[-1]["outcome"] == "completed", events[-1]
    [retry] = [e for e in events if e["type"] == "warning"]
    assert retry["error_code"] == "AUTHENTICATION_ERROR"
    assert [r[1] for r in bedrock.refusals] == ["ExpiredTokenException"]
    assert bedrock.accepted[0]["key"] != bedrock.accepted[1]["key"]


async def test_static_keys_that_expired_end_the_run_with_an_authentication_error(
    make_gateway: GatewayFactory,
    server: TestServer,
    bedrock: FakeBedrock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEMPORARY.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEMPORARY.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", str(TEMPORARY.token))
    bedrock.keys[TEMPORARY.access_key].expired = True
    client = await make_gateway(**bedrock_settings(server, gateway_upstream_max_retries=1))
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "AUTHENTICATION_ERROR"
    assert [r[1] for r in bedrock.refusals] == ["ExpiredTokenException"] * 2


async def test_no_credentials_anywhere_is_an_authentication_error(
    make_gateway: GatewayFactory, server: TestServer
) -> None:
    client = await make_gateway(**bedrock_settings(server))
    events = await stream(client, query="x")
    assert events[-1]["type"] == "error"
    error = events[-1]["error"]
    assert error["code"] == "AUTHENTICATION_ERROR" and "AWS standard chain" in error["message"]


async def test_a_session_token_with_a_newline_is_not_sent(
    make_gateway: GatewayFactory,
    server: TestServer,
    bedrock: FakeBedrock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEMPORARY.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEMPORARY.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", "test-session-token\r\nX-Injected: 1")
    client = await make_gateway(**bedrock_settings(server))
    events = await stream(client, query="x")
    error = events[-1]["error"]
    assert error["code"] == "AUTHENTICATION_ERROR" and "x-amz-security-token" in error["message"]
    assert bedrock.accepted == [] and bedrock.refusals == []

"""The playground's download of a code execution file (playground/files.js), run in Node
against a real gateway: it sends the page's key, saves the bytes under the file's name,
and turns another key's 404 into the gateway's error object."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GatewayFactory, read_events
from tests.fakes.anthropic import FakeAnthropic
from tests.test_code_execution import ALICE, KEYS, SHEET, code_turns

NODE = shutil.which("node")
FILES_JS = Path(__file__).resolve().parents[1] / "playground" / "files.js"
pytestmark = pytest.mark.skipif(NODE is None, reason="needs node")

# Runs files.js's downloadFile with the fetch of Node (>= 18) against the gateway, and
# prints what it saved, or the error it threw.
SCRIPT = """
const { downloadFile, fileLabel } = await import(process.argv[1]);
const [base, file, headers] = JSON.parse(process.argv[2]);
const saved = [];
const fetchImpl = (path, init) => fetch(base + path, init);
const save = async (blob, name) => {
  saved.push([name, Buffer.from(await blob.arrayBuffer()).toString('base64')]);
};
try {
  const size = await downloadFile(file, headers, { fetchImpl, save });
  await new Promise((resolve) => setTimeout(resolve, 10));
  console.log(JSON.stringify({ size, saved, label: fileLabel(file) }));
} catch (error) {
  console.log(JSON.stringify({ error }));
}
"""


async def node(base: str, file: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    assert NODE is not None
    process = await asyncio.create_subprocess_exec(
        NODE, "--input-type=module", "-e", SCRIPT, FILES_JS.as_uri(),
        json.dumps([base, file, headers]), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 30)
    result: dict[str, Any] = json.loads(out)
    return result


async def test_the_playground_downloads_with_the_pages_key(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_api_keys=KEYS)
    fake.add(*code_turns())
    response = await client.post(
        "/api/stream", json={"query": "x", "skills": ["xlsx"]}, headers=ALICE
    )
    [file] = [e for e in await read_events(response) if e["type"] == "file"]
    base = str(client.make_url("")).rstrip("/")
    got = await node(base, file, ALICE)
    assert got["size"] == len(SHEET) and got["label"] == f"{file['filename']} (50.0 KB)"
    [[name, data]] = got["saved"]
    assert name == file["filename"]
    assert base64.b64decode(data) == SHEET
    refused = await node(base, file, {"Authorization": "Bearer key-bob"})
    assert refused["error"]["code"] == "NOT_FOUND" and refused["error"]["status"] == 404

"""The playground runs a full research run through each cloud, offline: the cloud fakes in
front of the demo model, the gateway configured as a newcomer would (one variable)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from aiohttp.test_utils import TestServer

from gateway.providers.configured import open_upstreams
from gateway.settings import Settings
from tests.browser.harness import (
    browser_test,
    final_event,
    open_playground,
    screenshot,
    start_demo_gateway,
    wait_for_outcome,
)
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.vertex import FakeVertex
from tests.providers.clouds_support import bare_aws, bare_google, bedrock_settings, vertex_settings

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test


async def ask_tesla(page: Page) -> dict[str, object]:
    await page.click("#examples .example:has-text('Tesla')")
    assert await wait_for_outcome(page) == "completed"
    assert "10-K" in await page.inner_text(".msg-assistant .msg-body")
    return await final_event(page)


@pytest.mark.parametrize("cloud", ["bedrock", "vertex"])
async def test_the_playground_researches_through_a_cloud(
    page: Page, cloud: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare_aws(monkeypatch, tmp_path)
    bare_google(monkeypatch, tmp_path)
    async with open_upstreams(Settings(_env_file=None, gateway_upstream="demo")) as demo:
        model_server = demo.urls["demo"].rstrip("/")
        fake: FakeBedrock | FakeVertex
        if cloud == "bedrock":
            fake = FakeBedrock(model_server=model_server)
        else:
            fake = FakeVertex(model_server=model_server, region="us-east5")
        server = TestServer(fake.app(), host="127.0.0.1")
        await server.start_server()
        if isinstance(fake, FakeBedrock):
            monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", str(server.make_url("/creds")))
            settings = bedrock_settings(server)
        else:
            key = fake.write_key(tmp_path, str(server.make_url("/token")))
            monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
            settings = vertex_settings(server)
        gateway = await start_demo_gateway(**settings)
        try:
            await open_playground(page, gateway)
            assert await page.inner_text("#upstream-badge") == cloud
            assert (await page.inner_text("#upstream-note")).startswith("Claude on ")
            final = await ask_tesla(page)
            assert str(final["model"]).startswith(f"{cloud}/")
            assert len(fake.accepted) >= 2 and not fake.refusals
            await screenshot(page, f"desktop-{cloud}-tesla")
        finally:
            await gateway.close()
            await server.close()

"""The toolset as the gateway sees it: configuration, schemas offered to the model, backends."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest

from tests.tools.conftest import FakeSecHosts, call
from tools import ToolsConfig, Toolset, open_toolset
from tools.search.corpus import load_corpus
from tools.search.web import ExaSearch, OfflineWebSearch
from tools.sec.fulltext import EftsSearch
from tools.sec.live import LiveSec
from tools.sec.offline import OfflineSec

TOOL_NAMES = [
    "search_sec_company_tickers",
    "search_sec_filings",
    "get_sec_filing",
    "get_sec_company_facts",
    "get_sec_xbrl_frames",
    "search_sec_full_text",
    "web_search",
]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"sec_source": "live"}, "SEC_SOURCE=live needs SEC_USER_AGENT"),
        ({"sec_source": "live", "sec_user_agent": "  "}, "SEC_USER_AGENT"),
        ({"search_backend": "exa"}, "SEARCH_BACKEND=exa needs EXA_API_KEY"),
        ({"sec_source": "remote"}, "SEC_SOURCE must be 'offline' or 'live'"),
        ({"search_backend": "google"}, "SEARCH_BACKEND must be"),
        ({"sec_data_url": "data.sec.gov"}, "SEC_DATA_URL must be an http(s) URL"),
    ],
)
async def test_config_check_names_the_setting(overrides: dict[str, Any], message: str) -> None:
    config = ToolsConfig(**overrides)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config.check()
    with pytest.raises(ValueError):
        async with open_toolset(config):
            pass


def test_default_config_needs_nothing() -> None:
    ToolsConfig().check()
    ToolsConfig(sec_source="live", sec_user_agent="Example admin@example.com").check()


async def test_schemas_offered_to_the_model(offline: Toolset) -> None:
    definitions = offline.registry.definitions()
    assert [d["name"] for d in definitions] == TOOL_NAMES
    for definition in definitions:
        assert len(definition["description"]) > 80, definition["name"]
        schema = definition["input_schema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description", "").strip(), f"{definition['name']}.{name}"
    # Stable: the same bytes every time, fields in declaration order.
    assert orjson.dumps(definitions) == orjson.dumps(offline.registry.definitions())
    filings = definitions[1]["input_schema"]
    assert list(filings["properties"]) == [
        "company_identifier",
        "filing_type",
        "include_amendments",
        "date_after",
        "date_before",
        "limit",
    ]
    assert filings["required"] == ["company_identifier"]


async def test_unexpected_input_is_refused(offline: Toolset) -> None:
    outcome = await call(offline, "get_sec_filing", url="x", colour="blue")
    assert outcome.error_type == "invalid_input" and "colour" in outcome.content
    outcome = await call(offline, "get_sec_filing", section="Item 1A")
    assert outcome.error_type == "invalid_input" and "cik and accession_number" in outcome.content


async def test_offline_backends(offline: Toolset) -> None:
    assert offline.backends == {"sec": "offline", "search": "offline"}
    assert isinstance(offline.services["sec"].source, OfflineSec)
    assert isinstance(offline.services["web_search"], OfflineWebSearch)


async def test_live_backends_share_one_session(fake_sec: FakeSecHosts) -> None:
    config = fake_sec.config(
        search_backend="exa", exa_api_key="k", exa_base_url=fake_sec.urls["www"]
    )
    async with open_toolset(config) as toolset:
        source = toolset.services["sec"].source
        web = toolset.services["web_search"]
        assert isinstance(source, LiveSec) and isinstance(web, ExaSearch)
        assert isinstance(toolset.services["sec_full_text"], EftsSearch)
        assert source._session is web._session
        assert toolset.backends == {"sec": "live", "search": "exa"}
    assert source._session.closed


async def test_offline_startup_is_fast() -> None:
    load_corpus.cache_clear()
    # CPU time, not wall time: a busy CI machine must not fail this, a slow start must.
    started = time.process_time()
    async with open_toolset(ToolsConfig()) as toolset:
        elapsed = time.process_time() - started
        assert toolset.registry.names() == TOOL_NAMES
    assert elapsed < 2.0

"""Schemathesis against the demo-mode gateway's own `/openapi.json`: requests generated from
the document, sent over real HTTP, every response checked against it (no 5xx, status,
content type, headers and body as documented). Bounded: a few hundred requests in all.

The gateway runs in a thread with its own event loop, because schemathesis sends its
requests synchronously."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import random
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from aiohttp import web
from hypothesis import HealthCheck
from hypothesis.internal.conjecture.engine import BUFFER_SIZE
from schemathesis import CheckFunction, GenerationMode
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import positive_data_acceptance

from gateway.http.app import create_app
from tests.demo.conftest import demo_settings

# An invalid body that is also over GATEWAY_MAX_BODY_BYTES is refused with 413 (documented):
# a rejection as good as a 400.
REJECTED = ["400", "401", "404", "405", "413", "415"]
CONFIG = schemathesis.Config.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": REJECTED}}}
)
EXAMPLES = 12  # per operation and mode: 9 operations x 12 x 3 modes, about 300 requests
KEY = "fuzz-key"


@contextlib.contextmanager
def gateway_in_thread(**settings: Any) -> Iterator[str]:
    """A demo gateway served on 127.0.0.1 from another thread; its base URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(create_app(demo_settings(**settings)), access_log=None)

    async def start() -> str:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}"

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def fuzz(
    base_url: str, headers: dict[str, str], paths: tuple[str, ...] = ("/",)
) -> collections.Counter[int]:
    """Every operation of the document (on a path starting with one of `paths`), EXAMPLES
    generated cases each; statuses seen."""
    with urllib.request.urlopen(f"{base_url}/openapi.json", timeout=30) as answer:
        document = json.load(answer)
    schema = schemathesis.openapi.from_dict(buildable(document), config=CONFIG)
    statuses: collections.Counter[int] = collections.Counter()
    # schemathesis draws some values with the global `random`, so derandomize alone does not
    # make a run repeat: without this seed, what the tests before left in it decides.
    random.seed(20261125)
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result  # the document must load, every operation
        operation = result.ok()
        if not operation.path.startswith(paths):
            continue
        _fuzz_operation(operation.as_strategy(), base_url, headers, statuses)
        # Invalid inputs too; an operation without parameters or body has none to send.
        with contextlib.suppress(hypothesis.errors.Unsatisfiable):
            negative = operation.as_strategy(GenerationMode.NEGATIVE)
            _fuzz_operation(negative, base_url, headers, statuses)
    return statuses


def buildable(node: Any) -> Any:
    """The document without the string bounds hypothesis cannot draw past: a negative case
    for `maxLength: 200000` asks it for a longer string than it builds (InvalidArgument,
    depending on what the generator drew before). That bound is held by its own test
    (`test_the_query_length_bound`)."""
    if isinstance(node, list):
        return [buildable(item) for item in node]
    if not isinstance(node, dict):
        return node
    limit = node.get("maxLength")
    return {
        key: buildable(value) for key, value in node.items()
        if not (key == "maxLength" and isinstance(limit, int) and limit >= BUFFER_SIZE)
    }  # fmt: skip


def _fuzz_operation(
    strategy: Any, base_url: str, headers: dict[str, str], statuses: collections.Counter[int]
) -> None:
    @hypothesis.settings(
        max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
        suppress_health_check=list(HealthCheck), phases=[hypothesis.Phase.generate],
    )  # fmt: skip
    @hypothesis.given(case=strategy)
    def check(case: schemathesis.Case[Any]) -> None:
        response = case.call_and_validate(
            base_url=base_url, headers=headers, timeout=30, excluded_checks=unstated(case)
        )
        statuses[response.status_code] += 1

    check()


def unstated(case: schemathesis.Case[Any]) -> list[CheckFunction]:
    """A history whose roles do not alternate is a 400 that JSON Schema cannot state, and
    `thinking`, `effort` and `output_format` are refused where the model's record says it
    cannot take them (the demo has no structured output): such a body (or a batch
    question) may be refused although the document accepts it. So may any JSON-RPC message
    to /mcp: its method, params and session are MCP's to state, not the document's. And a
    key's body on the admin API: a name already taken, an `expires_at` in the past and
    metadata over 4 KiB are refused, which the document cannot state either."""
    if case.path == "/mcp" or case.path.startswith("/api/admin/keys"):
        return [positive_data_acceptance]
    body = case.body if isinstance(case.body, dict) else {}
    fields = set(body) | set(case.query or {})
    questions = body.get("questions")
    for question in questions if isinstance(questions, list) else ():  # run bodies too
        if isinstance(question, dict):
            fields |= set(question)
    if CAPABILITY_FIELDS & fields:
        return [positive_data_acceptance]
    return []


CAPABILITY_FIELDS = frozenset({"messages", "thinking", "effort", "output_format"})


# schemathesis draws free-form JSON (the `schema` of `output_format`) with `random` inside
# a strategy, which hypothesis deprecates; that is the fuzzer's business, not ours.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@pytest.mark.parametrize(
    ("keys", "headers"),
    [("", {}), (f"fuzz:{KEY}", {"Authorization": f"Bearer {KEY}"}), (f"fuzz:{KEY}", {})],
    ids=["open", "with-key", "without-key"],
)
def test_the_api_keeps_to_its_document(keys: str, headers: dict[str, str]) -> None:
    # With a key, a per-minute limit low enough to be reached: 429s must keep to the document.
    limit = 10 if headers else 0
    with gateway_in_thread(
        gateway_api_keys=keys, gateway_demo_pacing_ms=0, sdk_max_turns=3,
        gateway_rate_limit_per_min=limit,
    ) as base_url:  # fmt: skip
        statuses = fuzz(base_url, headers)
    print(f"schemathesis: {sum(statuses.values())} requests, statuses {dict(statuses)}")
    assert not [status for status in statuses if status >= 500 and status != 503]
    if keys and not headers:
        assert statuses[401] > 0
    else:
        assert statuses[200] > 0
    if limit:
        assert statuses[429] > 0


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_the_admin_api_keeps_to_its_document(tmp_path: Path) -> None:
    """The admin routes and /api/keys/self, with the admin key (every other /api/* route
    answers it 401, which the document says too)."""
    admin = "fuzz-admin-key-0123456789"
    with gateway_in_thread(
        gateway_admin_key=admin,
        gateway_keys_db=str(tmp_path / "keys.db"),
        gateway_demo_pacing_ms=0,
        sdk_max_turns=3,
    ) as base_url:
        headers = {"Authorization": f"Bearer {admin}"}
        statuses = fuzz(base_url, headers, ("/api/admin/", "/api/keys/"))
    print(f"schemathesis: {sum(statuses.values())} requests, statuses {dict(statuses)}")
    assert not [status for status in statuses if status >= 500]
    assert statuses[201] > 0 and statuses[200] > 0 and statuses[400] > 0


@pytest.mark.parametrize(("length", "status"), [(200_000, 200), (200_001, 400)])
def test_the_query_length_bound(length: int, status: int) -> None:
    """The document's `maxLength` of `query`, which the fuzzer cannot reach: held here."""
    body = json.dumps({"query": "q" * length}).encode()
    with gateway_in_thread(gateway_demo_pacing_ms=0, sdk_max_turns=1) as base_url:
        request = urllib.request.Request(
            f"{base_url}/api/research", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                got, answer_body = answer.status, json.load(answer)
        except urllib.error.HTTPError as refused:
            got, answer_body = refused.code, json.load(refused)
    assert got == status, answer_body
    if status == 400:
        assert answer_body["error"]["code"] == "VALIDATION_ERROR"
        assert "query" in answer_body["error"]["message"]

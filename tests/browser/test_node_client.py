"""The Node server's own page, as its client code behaves, against the gateway: it streams
over EventSource (GET) and over POST (fetch, read as a stream), stops by aborting the
request, continues a conversation with the session id it read from `system_init` (a
stopped question has no `final`) or from `final`, asks without streaming, and reads
`/health`. The client below is written from that behaviour; it switches on `type` and
joins `delta` texts, as that page does."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import aiohttp

from tests.browser.harness import StartGateway, browser_test
from tests.fakes.anthropic import Reply, Text, ToolUse

if TYPE_CHECKING:
    from playwright.async_api import Page

pytestmark = browser_test

NODE_CLIENT = """
() => {
  const take = (state, data) => {
    state.events.push(data);
    switch (data.type) {
      case 'system_init': state.sessionId = data.session_id; break;
      case 'delta': state.text += data.text; break;
      case 'final': state.sessionId = data.session_id; state.final = data; break;
      case 'error': state.error = data.error; break;
    }
  };
  window.nodeClient = {
    eventSource(query, sessionId) {
      const params = new URLSearchParams({ query });
      if (sessionId) params.set('sessionId', sessionId);
      const state = { sessionId: null, text: '', events: [] };
      return new Promise((resolve) => {
        const source = new EventSource('/api/stream?' + params);
        source.onmessage = (message) => {
          const data = JSON.parse(message.data);
          take(state, data);
          if (data.type === 'final' || data.type === 'error') { source.close(); resolve(state); }
        };
        source.onerror = () => { source.close(); resolve(state); };
      });
    },
    async post(body, stopAfterFirstDelta) {
      const state = { sessionId: null, text: '', events: [], stopped: false };
      const controller = new AbortController();
      const response = await fetch('/api/stream', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body), signal: controller.signal,
      });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffer.indexOf('\\n\\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of frame.split('\\n')) {
              if (line.startsWith('data: ')) take(state, JSON.parse(line.slice(6)));
            }
            if (stopAfterFirstDelta && state.text) {  // Stop: the page aborts its request
              state.stopped = true;
              controller.abort();
              return state;
            }
          }
        }
      } catch (error) {
        if (!state.stopped) throw error;
      }
      return state;
    },
    async research(body) {
      const response = await fetch('/api/research', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      return await response.json();
    },
    async health() { return await (await fetch('/health')).json(); },
  };
}
"""


async def node_page(page: Page, url: str) -> None:
    await page.goto(url)
    await page.evaluate(NODE_CLIENT)


async def client_call(page: Page, call: str, *args: Any) -> dict[str, Any]:
    result: dict[str, Any] = await page.evaluate(
        f"(args) => window.nodeClient.{call}(...args)", list(args)
    )
    return result


async def run_end(base_url: str, run_id: str) -> dict[str, Any]:
    """Wait (as the test, not the client) for a run to end: re-attach and read to its end."""
    last: dict[str, Any] = {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{base_url}api/stream/{run_id}?after=0") as response,
    ):
        async for line in response.content:
            if line.startswith(b"data: "):
                last = json.loads(line[6:])
    return last


def user_texts(request: dict[str, Any]) -> list[str]:
    texts = []
    for message in request["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [b.get("text", "") for b in blocks if b.get("type") == "text"]
    return texts


async def test_event_source_then_follow_up_with_the_session_of_final(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(
        Reply([Text("Revenue rose in both quarters."), ToolUse("echo", {"text": "NVDA"})]),
        Reply([Text("**NVIDIA CORP** reported $81.6 billion.")]),
        Reply([Text("The follow-up answer.")]),
        sdk_model="claude-sonnet-5",
    )
    await node_page(page, gateway.page_url("/api/tools"))
    first = await client_call(page, "eventSource", "nvidia revenue")
    assert [e["type"] for e in first["events"][:3]] == ["system_info", "system_init", "turn_start"]
    final = first["final"]
    # What the page shows is what final.result says, byte for byte.
    assert first["text"] == final["result"]
    assert "quarters.\n\n**NVIDIA CORP**" in first["text"]
    assert final["subtype"] == "success" and final["is_error"] is False
    assert final["num_turns"] == 2 and isinstance(final["total_cost_usd"], float)
    follow = await client_call(page, "eventSource", "and the quarter before?", first["sessionId"])
    assert follow["final"]["session_id"] == first["sessionId"]
    assert follow["text"] == follow["final"]["result"] == "The follow-up answer."
    assert "nvidia revenue" in user_texts(gateway.fake.requests[2])


async def test_stop_then_continue_with_the_session_of_system_init(
    page: Page, gateway_factory: StartGateway
) -> None:
    gateway = await gateway_factory(
        Reply([Text("Waiting on the gate."), ToolUse("wait_for_gate", {"label": "stop"})]),
        Reply([Text("The gate opened.")]),
        Reply([Text("Continued from where we were.")]),
    )
    await node_page(page, gateway.page_url("/api/tools"))
    stopped = await client_call(page, "post", {"query": "wait for the gate"}, True)
    assert stopped["stopped"] and "final" not in stopped
    assert "Waiting on the gate.".startswith(stopped["text"])
    session_id = stopped["sessionId"]  # from system_init: the only place a stopped run has it
    assert session_id
    # The run goes on without its reader (the grace period); let it end.
    await gateway.gate.entered.wait()
    gateway.gate.opened.set()
    run_id = stopped["events"][0]["run_id"]
    ended = await run_end(gateway.url, run_id)
    assert (
        ended["type"] == "final" and ended["result"] == "Waiting on the gate.\n\nThe gate opened."
    )
    follow = await client_call(page, "post", {"query": "go on", "sessionId": session_id}, False)
    assert follow["final"]["session_id"] == session_id
    assert follow["text"] == follow["final"]["result"] == "Continued from where we were."
    history = user_texts(gateway.fake.requests[2])
    assert "wait for the gate" in history and "The gate opened." in history


async def test_non_streaming_and_health(page: Page, gateway_factory: StartGateway) -> None:
    gateway = await gateway_factory(
        Reply([Text("Looking."), ToolUse("echo", {"text": "x"})]),
        Reply([Text("Answered.")]),
        sdk_model="claude-sonnet-5",
        build_sha="0123abcd",
        gateway_env="staging",
    )
    await node_page(page, gateway.page_url("/api/tools"))
    answer = await client_call(page, "research", {"query": "once"})
    assert answer["text"] == "Looking.\n\nAnswered."
    assert answer["subtype"] == "success" and answer["num_turns"] == 2
    assert answer["total_cost_usd"] > 0 and answer["session_id"]
    health = await client_call(page, "health")
    assert health["status"] == "healthy" and health["environment"] == "staging"
    assert health["build"]["commit"] == "0123abcd" and health["build"]["version"]
    assert health["sdk_version"]
    assert health["dependencies"]["circuit_breaker"]["anthropic"]["state"] == "closed"
    assert health["dependencies"]["rate_limiter"]["kind"] == "per_key"
    assert isinstance(health["feature_flags"], dict)

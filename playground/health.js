// The gateway's health and which upstream answers: shown in the header.

import { h, plural } from './dom.js';
import { $, log, state } from './page.js';

const UPSTREAM_NOTES = {
  demo: 'offline demo model, rule-based',
  anthropic: 'Anthropic Messages API',
  bedrock: 'Claude on Amazon Bedrock',
  vertex: 'Claude on Google Cloud Vertex AI',
};

// ------------------------------------------------------------------ health

export function showUpstream(upstream) {
  const badge = $('upstream-badge');
  badge.hidden = false;
  badge.textContent = upstream;
  badge.dataset.upstream = upstream;
  $('upstream-note').textContent = UPSTREAM_NOTES[upstream] ?? '';
}

function backendsOf(health) {
  const tools = health.tools && typeof health.tools === 'object' ? health.tools : {};
  const found = health.tool_backends ?? health.backends ?? tools.backends;
  return found && typeof found === 'object' && !Array.isArray(found) ? found : {};
}

export async function loadHealth() {
  const box = $('health');
  try {
    const response = await fetch('/health', { cache: 'no-store' });
    const body = await response.json();
    state.health = body;
    state.healthStatus = response.status;
    box.dataset.status = body.status ?? (response.ok ? 'healthy' : 'degraded');
    $('health-status').textContent = body.status ?? (response.ok ? 'healthy' : `HTTP ${response.status}`);
    if (body.upstream) showUpstream(body.upstream);
    const toolCount = body.tools?.count ?? (Number.isInteger(body.tools) ? body.tools : null);
    $('health-model').textContent = [body.model, body.version && `v${body.version}`, toolCount !== null && plural(toolCount, 'tool')]
      .filter(Boolean)
      .join(' · ');
    const chips = Object.entries(backendsOf(body)).map(([name, mode]) =>
      h('span', { class: 'chip', dataset: { mode: String(mode) } }, `${name}: ${typeof mode === 'object' ? JSON.stringify(mode) : mode}`),
    );
    // Each MCP server whose tools runs may use: its state, its tools on hover.
    const servers = Array.isArray(body.mcp_servers) ? body.mcp_servers : [];
    const mcpChips = servers.map((server) =>
      h(
        'span',
        { class: 'chip', dataset: { mode: server.state === 'up' ? 'mcp' : 'down' }, title: (server.tools ?? []).join(', ') || (server.last_error ?? '') },
        `mcp ${server.name}: ${server.state} (${plural((server.tools ?? []).length, 'tool')})`,
      ),
    );
    $('health-backends').replaceChildren(...chips, ...mcpChips);
  } catch (err) {
    state.health = null;
    box.dataset.status = 'unreachable';
    $('health-status').textContent = 'gateway unreachable';
    log.meta(`/health failed: ${err?.message ?? err}`);
  }
}

// Which key the page uses and what it spent today, from GET /api/keys/self: shown in the
// header, read again when the key changes and after each run.

import { $, authHeaders } from './page.js';

function dollars(usd) {
  return `$${Number(usd ?? 0).toFixed(usd >= 1 ? 2 : 4)}`;
}

export async function loadKey() {
  const box = $('key-info');
  try {
    const response = await fetch('/api/keys/self', { cache: 'no-store', headers: authHeaders() });
    const body = await response.json();
    if (!response.ok) {
      box.dataset.state = 'refused';
      box.textContent = `key: ${body?.error?.code === 'AUTHENTICATION_ERROR' ? 'none or not accepted' : `HTTP ${response.status}`}`;
      return;
    }
    const today = body.spend?.today ?? {};
    const tokens = (today.input_tokens ?? 0) + (today.output_tokens ?? 0);
    box.dataset.state = 'ok';
    box.textContent = `key: ${body.name} · today ${dollars(today.usd)}, ${today.runs ?? 0} runs, ${tokens} tokens`;
    box.title = `source: ${body.source}; this month ${dollars(body.spend?.month?.usd)}`;
  } catch (err) {
    box.dataset.state = 'unknown';
    box.textContent = `key: unknown (${err?.message ?? err})`;
  }
}

// What every part of the page shares: its elements, its state, the side panels, and a
// few helpers for talking to the gateway.

import { EventLog, RunStatus, Timeline } from './panels.js';

export const $ = (id) => document.getElementById(id);
export const ui = {
  form: $('composer'),
  query: $('query'),
  maxTurns: $('max-turns'),
  thinking: $('thinking'),
  thinkingBudget: $('thinking-budget'),
  continueSession: $('continue-session'),
  apiKey: $('api-key'),
  stream: $('btn-stream'),
  stops: [$('btn-stop'), $('runbar-stop')],
  research: $('btn-research'),
  clear: $('btn-clear'),
  transcript: $('transcript'),
  empty: $('transcript-empty'),
};
export const status = new RunStatus({ bar: $('runbar'), details: $('run-details') });
export const timeline = new Timeline($('timeline'));
export const log = new EventLog($('log'), $('log-count'));

export const state = {
  health: null,
  healthStatus: null,
  sessionId: null,
  runs: [], // every run of this page, for the debug export
  current: null,
  autoScroll: true,
};

// ------------------------------------------------------------------ small helpers

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export function authHeaders(extra = {}) {
  const key = ui.apiKey.value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

export function nearBottom() {
  const doc = document.documentElement;
  return window.innerHeight + window.scrollY >= doc.scrollHeight - 120;
}

let scrollFrame = null;
export function followBottom() {
  if (!state.autoScroll || scrollFrame !== null) return;
  scrollFrame = requestAnimationFrame(() => {
    scrollFrame = null;
    window.scrollTo({ top: document.documentElement.scrollHeight });
  });
}

export function setBusy(busy) {
  ui.stream.disabled = busy;
  ui.research.disabled = busy;
  ui.clear.disabled = busy;
  for (const button of ui.stops) button.disabled = !busy;
}

const LIMITS = { per_minute: 'run starts per minute', concurrent: 'runs at once', daily_tokens: 'tokens per day' };

/** A 429 in words: which limit of the key, and when to try again (Retry-After). */
function rateLimited(error, response) {
  const retry = Number(response.headers.get('Retry-After')) || error.details?.retry_after_s;
  const limit = LIMITS[error.details?.limit] ?? 'a limit';
  const when = retry ? `; try again in ${retry} s` : '';
  return { ...error, message: `Rate limited: this key is over its ${limit}${when}. ${error.message}` };
}

/** Read an error body: the gateway's {"error":{code,message,...}} or anything else. */
export async function readError(response) {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === 'object') {
      return response.status === 429 ? rateLimited(body.error, response) : body.error;
    }
  } catch {
    // Not JSON: show the status and the start of the text.
  }
  return { code: `HTTP ${response.status}`, message: text.slice(0, 500) || response.statusText };
}

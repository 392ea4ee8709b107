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
  codeExecution: $('code-execution'),
  skills: $('skills'),
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

// Following the answer. On a phone the side panels sit below the transcript, so the
// bottom of the page is not where the answer grows: follow the end of the transcript.
// And never scroll a tool that is still working under the sticky run bar: its name is
// what the reader is watching.
const FOLLOW_SLACK_PX = 120;
const BELOW_BAR_PX = 6;

function answerEnd() {
  return ui.transcript.getBoundingClientRect().bottom;
}

/** The header of the newest tool card that has not finished, if any. */
function workingToolHead() {
  const cards = ui.transcript.querySelectorAll('.tool');
  const last = cards[cards.length - 1];
  if (!last || ['ok', 'error', 'interrupted'].includes(last.dataset.status)) return null;
  return last.querySelector('.tool-head');
}

/** How far the page may scroll down before the working tool's name goes under the bar. */
function headroom() {
  const head = workingToolHead();
  if (!head) return Infinity;
  const barBottom = status.bar.getBoundingClientRect().bottom;
  return head.getBoundingClientRect().top - Math.max(barBottom, 0) - BELOW_BAR_PX;
}

/** Is the reader following the answer: its end on (or just below) the screen, or the
 * page held where the working tool's name shows just below the run bar? */
export function followingAnswer() {
  const end = answerEnd();
  if (end >= 0 && end <= window.innerHeight + FOLLOW_SLACK_PX) return true;
  const room = headroom();
  return room >= -BELOW_BAR_PX && room <= FOLLOW_SLACK_PX;
}

let scrollFrame = null;
let ownScrollY = null; // where the page last scrolled itself; a scroll there is not the reader

export function followAnswer() {
  if (!state.autoScroll || scrollFrame !== null) return;
  scrollFrame = requestAnimationFrame(() => {
    scrollFrame = null;
    const overflow = answerEnd() - window.innerHeight + BELOW_BAR_PX;
    const step = Math.min(overflow, Math.max(headroom(), 0));
    if (step <= 0) return;
    window.scrollBy({ top: step });
    ownScrollY = window.scrollY;
  });
}

/** On scroll: the reader keeps following only while the answer's end stays in view. */
export function noteScroll() {
  if (ownScrollY !== null && Math.abs(window.scrollY - ownScrollY) < 2) return;
  ownScrollY = null;
  state.autoScroll = followingAnswer();
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

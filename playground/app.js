// The playground: ask the gateway a question and watch the tool loop run.
//
// A run is one question. Streaming runs read SSE from POST /api/stream; when the
// connection drops they re-attach with GET /api/stream/{run_id} and Last-Event-ID, and
// events are de-duplicated by `seq`. Stop asks the server to cancel and then waits for the
// run's real end (a `final` with outcome "cancelled"). Every event goes through one
// handler map keyed by `type`.

import { startResearch, startStream, stop } from './connection.js';
import { h } from './dom.js';
import { clearAll, debugSnapshot, exportDebug, exportHtml } from './exports.js';
import { loadHealth } from './health.js';
import { loadKey } from './key.js';
import { renderMarkdown } from './markdown.js';
import { $, noteScroll, state, ui } from './page.js';

const EXAMPLES = [
  "Find Tesla's 10-K filings since 2020",
  "How has NVIDIA's revenue grown?",
  "What are Apple's main risk factors?",
  'Compare revenue of Apple, NVIDIA and Alphabet in 2024',
  "Who left NVIDIA's leadership recently? (8-K Item 5.02)",
];

function lastRun() {
  return state.current ?? state.runs[state.runs.length - 1] ?? null;
}

/** Hooks for tests and for debugging from the console. */
window.__playground = {
  /** Abort the current connection as if the network dropped; the page re-attaches. */
  dropConnection() {
    const run = state.current;
    if (!run?.controller) return false;
    run.controller.abort();
    return true;
  },
  /** The raw text streamed into the last answer, exactly as received. */
  transcriptText: () => lastRun()?.view.rawText() ?? '',
  events: () => lastRun()?.events ?? [],
  finalEvent: () => lastRun()?.terminal ?? null,
  runId: () => lastRun()?.runId ?? null,
  lastSeq: () => lastRun()?.lastSeq ?? 0,
  stats: () => {
    const run = lastRun();
    return run && { reconnects: run.reconnects, duplicates: run.duplicates, lastSeq: run.lastSeq, busy: state.current === run };
  },
  debugSnapshot,
  renderMarkdown,
  state,
};

function wire() {
  ui.form.addEventListener('submit', (event) => {
    event.preventDefault();
    startStream();
  });
  ui.query.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      startStream();
    }
  });
  for (const button of ui.stops) button.addEventListener('click', stop);
  ui.research.addEventListener('click', startResearch);
  ui.clear.addEventListener('click', clearAll);
  $('btn-export-html').addEventListener('click', exportHtml);
  $('btn-export-debug').addEventListener('click', exportDebug);
  $('health-refresh').addEventListener('click', loadHealth);
  ui.apiKey.addEventListener('change', loadKey);
  window.addEventListener('scroll', noteScroll, { passive: true });
  const examples = $('examples');
  for (const question of EXAMPLES) {
    const chip = h('button', { type: 'button', class: 'example' }, question);
    chip.addEventListener('click', () => {
      ui.query.value = question;
      if (!state.current) startStream();
    });
    examples.append(chip);
  }
}

wire();
loadHealth();
loadKey();
document.documentElement.dataset.ready = 'true';

// A run is one question: its request, its answer in the transcript, what the page knows
// about it so far, and the ticker that keeps its elapsed time moving.

import { formatMs } from './dom.js';
import { followAnswer, setBusy, state, status, timeline, ui } from './page.js';
import { loadKey } from './key.js';
import { AssistantMessage, userMessage } from './transcript.js';

// ------------------------------------------------------------------ the request

export function buildRequest() {
  const query = ui.query.value.trim();
  if (!query) {
    ui.query.focus();
    return null;
  }
  const request = { query };
  const maxTurns = parseInt(ui.maxTurns.value, 10);
  if (maxTurns > 0) request.max_turns = maxTurns;
  if (ui.thinking.checked) request.thinking = Math.max(1024, parseInt(ui.thinkingBudget.value, 10) || 4096);
  const skills = ui.skills.value.split(/[\s,]+/).filter(Boolean);
  if (skills.length) request.skills = skills;
  if (ui.codeExecution.checked || skills.length) request.code_execution = true;
  if (ui.continueSession.checked && state.sessionId) request.sessionId = state.sessionId;
  return request;
}

export function newRun(mode, request) {
  ui.empty.hidden = true;
  const view = new AssistantMessage();
  ui.transcript.append(userMessage(request.query, { ...request, mode }), view.el);
  const run = {
    mode,
    request,
    view,
    events: [],
    runId: null,
    lastSeq: 0,
    duplicates: 0,
    reconnects: 0,
    failures: 0,
    terminal: null,
    stopRequested: false,
    cancelSent: false,
    abandoned: false,
    controller: null,
    lastActivity: Date.now(),
    startedAt: performance.now(),
    startedIso: new Date().toISOString(),
    turn: 0,
    maxTurns: request.max_turns ?? null,
    usage: { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    toolCalls: 0,
    traceId: null,
    response: null,
    error: null,
  };
  state.runs.push(run);
  state.current = run;
  state.autoScroll = true;
  status.reset();
  status.set({ state: 'connecting…', turn: run.maxTurns ? `0 / ${run.maxTurns}` : '0' });
  timeline.startRun(`${mode === 'research' ? 'Non-streaming' : 'Stream'}: ${request.query.slice(0, 60)}`);
  setBusy(true);
  startTicker(run);
  followAnswer();
  return run;
}

export function endRun(run) {
  setTimeout(loadKey, 500); // the run's spend is charged as its task ends: read it after
  if (state.current === run) {
    state.current = null;
    setBusy(false);
  }
  clearTimeout(run.stopTimer);
  status.set({ elapsed: formatMs(run.durationMs ?? performance.now() - run.startedAt) });
  if (!run.view.el.dataset.outcome && !run.terminal) {
    run.view.finish({ state: 'failed', facts: [formatMs(performance.now() - run.startedAt)] });
  }
}

let ticker = null;
function startTicker(run) {
  clearInterval(ticker);
  ticker = setInterval(() => {
    if (state.current !== run) {
      clearInterval(ticker);
      return;
    }
    run.view.tick();
    status.set({ elapsed: formatMs(performance.now() - run.startedAt) });
  }, 250);
}

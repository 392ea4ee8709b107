// The playground: ask the gateway a question and watch the tool loop run.
//
// A run is one question. Streaming runs read SSE from POST /api/stream; when the
// connection drops they re-attach with GET /api/stream/{run_id} and Last-Event-ID, and
// events are de-duplicated by `seq`. Stop asks the server to cancel and then waits for the
// run's real end (a `final` with outcome "cancelled"). Every event goes through one
// handler map keyed by `type`.

import { download, formatMs, h, prettyJson } from './dom.js';
import { renderMarkdown } from './markdown.js';
import { EventLog, RunStatus, Timeline, tokensText } from './panels.js';
import { readSse } from './sse.js';
import { AssistantMessage, renderResearch, userMessage } from './transcript.js';

const EXAMPLES = [
  "Find Tesla's 10-K filings since 2020",
  "How has NVIDIA's revenue grown?",
  "What are Apple's main risk factors?",
  'Compare revenue of Apple, NVIDIA and Alphabet in 2024',
  "Who left NVIDIA's leadership recently? (8-K Item 5.02)",
];
const UPSTREAM_NOTES = { demo: 'offline demo model, rule-based', anthropic: 'Anthropic Messages API' };
const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000, 4000];
const STALL_MS = 45000; // three missed heartbeats
const STOP_CONFIRM_MS = 15000;

const $ = (id) => document.getElementById(id);
const ui = {
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
const status = new RunStatus({ bar: $('runbar'), details: $('run-details') });
const timeline = new Timeline($('timeline'));
const log = new EventLog($('log'), $('log-count'));

const state = {
  health: null,
  healthStatus: null,
  sessionId: null,
  runs: [], // every run of this page, for the debug export
  current: null,
  autoScroll: true,
};

// ------------------------------------------------------------------ small helpers

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function authHeaders(extra = {}) {
  const key = ui.apiKey.value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

function nearBottom() {
  const doc = document.documentElement;
  return window.innerHeight + window.scrollY >= doc.scrollHeight - 120;
}

let scrollFrame = null;
function followBottom() {
  if (!state.autoScroll || scrollFrame !== null) return;
  scrollFrame = requestAnimationFrame(() => {
    scrollFrame = null;
    window.scrollTo({ top: document.documentElement.scrollHeight });
  });
}

function setBusy(busy) {
  ui.stream.disabled = busy;
  ui.research.disabled = busy;
  ui.clear.disabled = busy;
  for (const button of ui.stops) button.disabled = !busy;
}

/** Read an error body: the gateway's {"error":{code,message,...}} or anything else. */
async function readError(response) {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === 'object') return body.error;
  } catch {
    // Not JSON: show the status and the start of the text.
  }
  return { code: `HTTP ${response.status}`, message: text.slice(0, 500) || response.statusText };
}

// ------------------------------------------------------------------ the request

function buildRequest() {
  const query = ui.query.value.trim();
  if (!query) {
    ui.query.focus();
    return null;
  }
  const request = { query };
  const maxTurns = parseInt(ui.maxTurns.value, 10);
  if (maxTurns > 0) request.max_turns = maxTurns;
  if (ui.thinking.checked) request.thinking = Math.max(1024, parseInt(ui.thinkingBudget.value, 10) || 4096);
  if (ui.continueSession.checked && state.sessionId) request.sessionId = state.sessionId;
  return request;
}

function newRun(mode, request) {
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
  followBottom();
  return run;
}

function endRun(run) {
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

// ------------------------------------------------------------------ event handlers

function turnText(run) {
  return run.maxTurns ? `${run.turn} / ${run.maxTurns}` : String(run.turn);
}

function addUsage(run, usage) {
  for (const key of Object.keys(run.usage)) run.usage[key] += usage?.[key] ?? 0;
  status.set({ tokens: tokensText(run.usage) });
}

function setTrace(run, traceId) {
  if (!traceId || traceId === run.traceId) return;
  run.traceId = traceId;
  status.setTrace(traceId);
}

/** Tool calls, by phase; `tool.id` ties the phases of one call together. */
const toolPhases = {
  tool_start(run, ev, card) {
    run.toolCalls += 1;
    status.set({ tool_calls: run.toolCalls });
    timeline.add('tool', card.name, 'started', { key: ev.tool.id, target: card.el, status: 'started' });
  },
  tool_input_delta(run, ev, card) {
    card.inputDelta(ev.partial_json);
  },
  tool_use(run, ev, card) {
    card.use(ev.tool);
  },
  tool_executing(run, ev, card) {
    card.executing(ev.tool);
    run.view.setWaiting('running tools…');
    timeline.update(ev.tool.id, { detail: 'running', status: 'running' });
  },
  tool_result(run, ev, card) {
    card.result(ev);
    timeline.update(ev.tool.id, { detail: `ok · ${formatMs(ev.duration_ms)}`, status: 'ok' });
  },
  tool_error(run, ev, card) {
    card.error(ev);
    timeline.update(ev.tool.id, { detail: `error · ${String(ev.error ?? '').slice(0, 80)}`, status: 'error' });
  },
};

const handlers = {
  system_info(run, ev) {
    run.runId = ev.run_id;
    if (ev.session_id) state.sessionId = ev.session_id;
    if (ev.upstream) showUpstream(ev.upstream);
    setTrace(run, ev.trace_id);
    status.set({ state: 'streaming', run_id: ev.run_id, session_id: ev.session_id });
    run.view.setWaiting('the model is working…');
    timeline.add('info', 'Started', [ev.model, ev.upstream, `${ev.tools ?? '?'} tools`].filter(Boolean).join(' · '));
  },
  turn_start(run, ev) {
    run.view.endText();
    run.turn = ev.turn;
    run.maxTurns = ev.max_turns ?? run.maxTurns;
    status.set({ turn: turnText(run) });
    run.view.setWaiting('the model is working…');
    timeline.add('turn', `Turn ${turnText(run)}`, 'model call');
  },
  thinking_start(run, ev) {
    const block = run.view.startThinking(ev.turn);
    timeline.add('thinking', 'Thinking', 'live…', { key: `thinking-${ev.seq}`, target: block.el });
    run.thinkingKey = `thinking-${ev.seq}`;
  },
  thinking(run, ev) {
    run.view.appendThinking(ev.text ?? '');
  },
  thinking_signature(run) {
    run.view.signThinking();
  },
  thinking_complete(run) {
    run.view.endThinking();
    timeline.update(run.thinkingKey, { detail: 'done', status: 'ok' });
  },
  delta(run, ev) {
    run.view.appendText(ev.text ?? '');
  },
  tool_call(run, ev) {
    const card = run.view.tool(ev.tool ?? { id: `unknown-${ev.seq}` });
    const phase = toolPhases[ev.phase];
    if (phase) phase(run, ev, card);
    else timeline.add('warning', 'Unknown tool phase', String(ev.phase));
  },
  turn_complete(run, ev) {
    run.view.endText();
    addUsage(run, ev.usage);
    const detail = [ev.stop_reason, `${ev.tool_count ?? 0} tools`, tokensText(ev.usage)].join(' · ');
    timeline.add('turn-done', `Turn ${ev.turn} done`, detail);
  },
  warning(run, ev) {
    timeline.add('warning', `Warning: ${ev.code}`, ev.message ?? '', { status: 'warning' });
    run.view.notice('warning', ev.code ?? 'warning', ev.message ?? '');
  },
  final(run, ev) {
    run.terminal = ev;
    run.durationMs = ev.duration_ms ?? performance.now() - run.startedAt;
    if (ev.session_id) state.sessionId = ev.session_id;
    setTrace(run, ev.trace_id);
    if (!run.view.rawText() && ev.result) run.view.appendText(ev.result);
    const usage = ev.usage ?? run.usage;
    run.view.finish({
      state: 'done',
      outcome: ev.outcome,
      traceId: run.traceId,
      facts: [formatMs(run.durationMs), `${ev.turns ?? run.turn} turns`, `${ev.tool_calls ?? run.toolCalls} tool calls`, tokensText(usage)],
    });
    status.set({
      state: 'done',
      outcome: ev.outcome,
      stop_reason: ev.stop_reason,
      tokens: tokensText(usage),
      tool_calls: ev.tool_calls ?? run.toolCalls,
      elapsed: formatMs(run.durationMs),
    });
    timeline.add('final', `Finished: ${ev.outcome}`, `${formatMs(run.durationMs)} · ${ev.turns ?? run.turn} turns`, { status: ev.outcome === 'completed' ? 'ok' : 'warning' });
  },
  error(run, ev) {
    run.terminal = ev;
    run.error = ev.error;
    fail(run, ev.error);
  },
};

/** Show a failure in the message, the status and the timeline, and end the run's view. */
function fail(run, error) {
  run.error = error;
  run.view.showError(error);
  run.view.finish({ state: 'error', outcome: 'error', traceId: run.traceId, facts: [error?.code, formatMs(performance.now() - run.startedAt)] });
  status.set({ state: 'error', outcome: error?.code ?? 'error' });
  timeline.add('error', `Error: ${error?.code ?? 'error'}`, error?.message ?? '', { status: 'error' });
}

function dispatch(run, ev) {
  if (typeof ev.seq === 'number') {
    if (ev.seq <= run.lastSeq) {
      run.duplicates += 1;
      log.meta(`skipped duplicate seq ${ev.seq}`);
      return;
    }
    if (run.lastSeq && ev.seq !== run.lastSeq + 1) {
      timeline.add('warning', 'Gap in the event stream', `seq ${run.lastSeq} → ${ev.seq}`, { status: 'warning' });
    }
    run.lastSeq = ev.seq;
  }
  run.failures = 0;
  run.runId ??= ev.run_id ?? null;
  run.events.push(ev);
  log.event(ev);
  const handler = handlers[ev.type];
  if (handler) handler(run, ev);
  else timeline.add('warning', 'Unknown event', String(ev.type));
  if (run.stopRequested && !run.cancelSent && run.runId && !run.terminal) sendCancel(run);
  followBottom();
}

function onSseEvent(run, message) {
  let ev;
  try {
    ev = JSON.parse(message.data);
  } catch {
    log.meta(`unparseable event data: ${message.data.slice(0, 200)}`);
    return;
  }
  if (ev && typeof ev === 'object' && !run.abandoned) dispatch(run, ev);
}

// ------------------------------------------------------------------ streaming

/** fetch with a fresh AbortController held by the run (dropConnection aborts it). */
function connect(run, url, init) {
  run.controller = new AbortController();
  return fetch(url, { ...init, signal: run.controller.signal, cache: 'no-store' });
}

/** Read one connection until it closes or drops. */
async function consume(run, response) {
  run.lastActivity = Date.now();
  const watchdog = setInterval(() => {
    if (Date.now() - run.lastActivity > STALL_MS) {
      log.meta('no data or heartbeat for a while: reconnecting');
      run.controller?.abort();
    }
  }, 5000);
  try {
    await readSse(response, {
      onEvent: (message) => onSseEvent(run, message),
      onComment: (text) => log.meta(`: ${text}`),
      onChunk: () => {
        run.lastActivity = Date.now();
      },
    });
    log.meta('connection closed by the server');
  } catch (err) {
    log.meta(`connection dropped (${err?.name ?? 'error'})`);
  } finally {
    clearInterval(watchdog);
  }
}

/** Re-attach to the run after a drop, with a short backoff. Returns a Response or null. */
async function reattach(run) {
  if (!run.runId) {
    fail(run, { code: 'NETWORK_ERROR', message: 'The connection dropped before the run started; there is nothing to re-attach to.' });
    return null;
  }
  while (run.failures < RECONNECT_DELAYS_MS.length && !run.abandoned) {
    const attempt = (run.failures += 1);
    status.set({ state: `reconnecting… (${attempt}/${RECONNECT_DELAYS_MS.length})` });
    run.view.setWaiting('reconnecting…');
    run.view.el.dataset.reconnecting = 'true';
    await sleep(RECONNECT_DELAYS_MS[attempt - 1]);
    if (run.abandoned) return null;
    const url = `/api/stream/${encodeURIComponent(run.runId)}?after=${run.lastSeq}`;
    const headers = authHeaders({ Accept: 'text/event-stream', 'Last-Event-ID': String(run.lastSeq) });
    try {
      const response = await connect(run, url, { headers });
      if (response.ok) {
        run.reconnects += 1;
        delete run.view.el.dataset.reconnecting;
        run.view.setWaiting('the model is working…');
        status.set({ state: run.stopRequested ? 'stopping…' : 'streaming' });
        log.meta(`re-attached after seq ${run.lastSeq}`);
        timeline.add('info', 'Re-attached', `after seq ${run.lastSeq}`);
        return response;
      }
      const error = await readError(response);
      log.meta(`re-attach failed: ${response.status} ${error.code}`);
      if (response.status === 404 || (response.status >= 400 && response.status < 500 && response.status !== 429)) {
        fail(run, response.status === 404 ? { ...error, message: `The run is no longer available: ${error.message}` } : error);
        return null;
      }
    } catch (err) {
      log.meta(`re-attach attempt ${attempt} failed (${err?.name ?? 'error'})`);
    }
  }
  delete run.view.el.dataset.reconnecting;
  if (!run.abandoned) fail(run, { code: 'NETWORK_ERROR', message: `Lost the connection and could not re-attach after ${RECONNECT_DELAYS_MS.length} attempts.` });
  return null;
}

async function startStream() {
  const request = buildRequest();
  if (!request || state.current) return;
  const run = newRun('stream', request);
  let response;
  try {
    response = await connect(run, '/api/stream', {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify(request),
    });
  } catch (err) {
    fail(run, { code: 'NETWORK_ERROR', message: `Could not reach the gateway (${err?.message ?? err}).` });
    endRun(run);
    return;
  }
  if (!response.ok) {
    fail(run, await readError(response));
    endRun(run);
    return;
  }
  status.set({ state: run.stopRequested ? 'stopping…' : 'streaming' });
  while (response && !run.terminal && !run.abandoned) {
    await consume(run, response);
    if (run.terminal || run.abandoned) break;
    response = await reattach(run);
  }
  endRun(run);
}

// ------------------------------------------------------------------ stop

async function sendCancel(run) {
  run.cancelSent = true;
  timeline.add('info', 'Stop requested', 'asked the server to cancel');
  try {
    const response = await fetch(`/api/runs/${encodeURIComponent(run.runId)}/cancel`, { method: 'POST', headers: authHeaders() });
    if (!response.ok) {
      const error = await readError(response);
      timeline.add('warning', `Cancel: ${error.code}`, error.message ?? '', { status: 'warning' });
    }
  } catch (err) {
    timeline.add('warning', 'Cancel failed', String(err?.message ?? err), { status: 'warning' });
  }
}

/** Stop the current run. Streaming: ask the server and wait for its `final`. */
function stop() {
  const run = state.current;
  if (!run || run.terminal || run.stopRequested) return;
  run.stopRequested = true;
  status.set({ state: 'stopping…' });
  run.view.setWaiting('stopping…');
  if (run.mode === 'research') {
    run.controller?.abort();
    return;
  }
  if (run.runId) sendCancel(run);
  run.stopTimer = setTimeout(() => {
    if (run.terminal) return;
    run.abandoned = true;
    run.controller?.abort();
    fail(run, { code: 'STOP_UNCONFIRMED', message: 'The server did not confirm the stop; stopped listening.' });
  }, STOP_CONFIRM_MS);
}

// ------------------------------------------------------------------ non-streaming

async function startResearch() {
  const request = buildRequest();
  if (!request || state.current) return;
  const run = newRun('research', request);
  status.set({ state: 'waiting for the answer…' });
  run.view.setWaiting('waiting for the whole answer (non-streaming)…');
  try {
    const response = await connect(run, '/api/research', {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify(request),
    });
    if (!response.ok) {
      fail(run, await readError(response));
    } else {
      showResearch(run, await response.json());
    }
  } catch (err) {
    const message = err?.name === 'AbortError' ? 'Stopped: the request was aborted in the browser.' : `Request failed (${err?.message ?? err}).`;
    fail(run, { code: err?.name === 'AbortError' ? 'ABORTED' : 'NETWORK_ERROR', message });
  }
  endRun(run);
}

function showResearch(run, body) {
  run.response = body;
  run.terminal = body;
  run.runId = body.run_id ?? null;
  run.durationMs = body.duration_ms ?? performance.now() - run.startedAt;
  if (body.session_id) state.sessionId = body.session_id;
  setTrace(run, body.trace_id);
  renderResearch(run.view, body);
  const calls = body.toolCalls?.length ?? 0;
  const facts = [formatMs(run.durationMs), `${body.turns ?? '?'} turns`, `${calls} tool calls`, tokensText(body.usage)];
  run.view.finish({ state: 'done', outcome: body.outcome ?? body.stop_reason, traceId: run.traceId, facts });
  status.set({
    state: 'done',
    outcome: body.outcome,
    stop_reason: body.stop_reason,
    turn: body.turns,
    tokens: tokensText(body.usage),
    tool_calls: calls,
    run_id: body.run_id,
    session_id: body.session_id,
  });
  timeline.add('final', `Finished: ${body.outcome ?? body.stop_reason}`, `${formatMs(run.durationMs)} · ${calls} tool calls`, { status: 'ok' });
}

// ------------------------------------------------------------------ health

function showUpstream(upstream) {
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

async function loadHealth() {
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
    $('health-model').textContent = [body.model, body.version && `v${body.version}`, toolCount !== null && `${toolCount} tools`]
      .filter(Boolean)
      .join(' · ');
    const chips = Object.entries(backendsOf(body)).map(([name, mode]) =>
      h('span', { class: 'chip', dataset: { mode: String(mode) } }, `${name}: ${typeof mode === 'object' ? JSON.stringify(mode) : mode}`),
    );
    $('health-backends').replaceChildren(...chips);
  } catch (err) {
    state.health = null;
    box.dataset.status = 'unreachable';
    $('health-status').textContent = 'gateway unreachable';
    log.meta(`/health failed: ${err?.message ?? err}`);
  }
}

// ------------------------------------------------------------------ clear, export

function clearAll() {
  if (state.current) return;
  for (const node of [...ui.transcript.children]) if (node !== ui.empty) node.remove();
  ui.empty.hidden = false;
  timeline.clear();
  log.clear();
  status.reset();
  state.runs = [];
  state.sessionId = null;
}

async function exportHtml() {
  const css = await fetch('/playground/style.css').then((r) => (r.ok ? r.text() : ''), () => '');
  const doc = document.implementation.createHTMLDocument('Research transcript');
  const meta = (attrs) => {
    const el = doc.createElement('meta');
    for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
    doc.head.append(el);
  };
  doc.documentElement.lang = 'en';
  meta({ charset: 'utf-8' });
  meta({ 'http-equiv': 'Content-Security-Policy', content: "default-src 'none'; style-src 'unsafe-inline'" });
  meta({ name: 'viewport', content: 'width=device-width, initial-scale=1' });
  doc.head.append(Object.assign(doc.createElement('style'), { textContent: css }));
  const clone = ui.transcript.cloneNode(true);
  clone.querySelector('#transcript-empty')?.remove();
  for (const copy of clone.querySelectorAll('.copyable')) copy.replaceWith(copy.querySelector('input')?.value ?? '');
  const heading = doc.createElement('h1');
  heading.textContent = `Research transcript · ${new Date().toLocaleString()}`;
  doc.body.className = 'export';
  doc.body.append(heading, doc.importNode(clone, true));
  download(`transcript-${Date.now()}.html`, 'text/html', `<!doctype html>\n${doc.documentElement.outerHTML}`);
}

function debugSnapshot() {
  return {
    exported_at: new Date().toISOString(),
    page: location.href,
    user_agent: navigator.userAgent,
    health: state.health,
    health_status: state.healthStatus,
    session_id: state.sessionId,
    runs: state.runs.map((run) => ({
      mode: run.mode,
      endpoint: run.mode === 'research' ? '/api/research' : '/api/stream',
      request: run.request,
      started_at: run.startedIso,
      run_id: run.runId,
      last_seq: run.lastSeq,
      reconnects: run.reconnects,
      duplicates_skipped: run.duplicates,
      trace_id: run.traceId,
      streamed_text: run.view.rawText(),
      error: run.error,
      response: run.response,
      events: run.events,
    })),
  };
}

function exportDebug() {
  download(`playground-debug-${Date.now()}.json`, 'application/json', prettyJson(debugSnapshot()));
}

// ------------------------------------------------------------------ wiring

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
  window.addEventListener('scroll', () => {
    state.autoScroll = nearBottom();
  }, { passive: true });
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
document.documentElement.dataset.ready = 'true';

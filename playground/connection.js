// Talking to the gateway about a run: stream it, re-attach after a drop, stop it, or ask
// for the whole answer at once.

import { formatMs, plural } from './dom.js';
import { dispatch, fail, setTrace, showFile } from './handlers.js';
import { tokensText } from './panels.js';
import { authHeaders, log, readError, sleep, state, status, timeline } from './page.js';
import { buildRequest, endRun, newRun } from './runs.js';
import { readSse } from './sse.js';
import { renderResearch } from './transcript.js';

const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000, 4000];
const STALL_MS = 45000; // three missed heartbeats
const STOP_CONFIRM_MS = 15000;

/** Parse one SSE message and dispatch it; a Stop pressed before the run id was known
 * is sent as soon as the first event brings it. */
function onSseEvent(run, message) {
  let ev;
  try {
    ev = JSON.parse(message.data);
  } catch {
    log.meta(`unparseable event data: ${message.data.slice(0, 200)}`);
    return;
  }
  if (!ev || typeof ev !== 'object' || run.abandoned) return;
  dispatch(run, ev);
  if (run.stopRequested && !run.cancelSent && run.runId && !run.terminal) sendCancel(run);
}

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

export async function startStream() {
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
export function stop() {
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

export async function startResearch() {
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
  for (const file of body.files ?? []) showFile(run, file);
  const calls = body.toolCalls?.length ?? 0;
  const facts = [formatMs(run.durationMs), plural(body.turns, 'turn'), plural(calls, 'tool call'), tokensText(body.usage)];
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
  timeline.add('final', `Finished: ${body.outcome ?? body.stop_reason}`, `${formatMs(run.durationMs)} · ${plural(calls, 'tool call')}`, { status: 'ok' });
}

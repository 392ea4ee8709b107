// One handler per event `type` (and one per tool-call phase). `dispatch` de-duplicates by
// `seq`, records the event, and hands it to its handler.

import { formatMs, plural } from './dom.js';
import { showFigures, noteResult } from './figures.js';
import { downloadFile } from './files.js';
import { showUpstream } from './health.js';
import { tokensText } from './panels.js';
import { authHeaders, followAnswer, log, state, status, timeline } from './page.js';

// max_turns counts tool rounds; the answer takes one more model call than that.
function turnText(run) {
  return run.maxTurns ? `${run.turn} / ${run.maxTurns + 1}` : String(run.turn);
}

function addUsage(run, usage) {
  for (const key of Object.keys(run.usage)) run.usage[key] += usage?.[key] ?? 0;
  status.set({ tokens: tokensText(run.usage) });
}

export function setTrace(run, traceId) {
  if (!traceId || traceId === run.traceId) return;
  run.traceId = traceId;
  status.setTrace(traceId);
}

/** Tool calls, by phase; `tool.id` ties the phases of one call together. */
const toolPhases = {
  tool_start(run, ev, card) {
    run.toolCalls += 1;
    status.set({ tool_calls: run.toolCalls });
    const where = ev.server ? 'started · run by the API' : 'started';
    timeline.add('tool', card.name, where, { key: ev.tool.id, target: card.el, status: 'started' });
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
    noteResult(run, ev);
    const took = card.server ? 'run by the API' : formatMs(ev.duration_ms);
    timeline.update(ev.tool.id, { detail: `ok · ${took}`, status: 'ok' });
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
    timeline.add('info', 'Started', [ev.model, ev.upstream, plural(ev.tools, 'tool')].filter(Boolean).join(' · '));
  },
  /** Node's own start event: the session id again (system_info had it). */
  system_init(run, ev) {
    if (ev.session_id) state.sessionId = ev.session_id;
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
    // A progress note (the model's words before a tool call) shows open, above its card.
    const progress = ev.kind === 'progress';
    const block = run.view.startThinking(ev.turn, progress);
    timeline.add('thinking', progress ? 'Note' : 'Thinking', 'live…', { key: `thinking-${ev.seq}`, target: block.el });
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
    if (ev.server && !card.server) card.markServer();
    const phase = toolPhases[ev.phase];
    if (phase) phase(run, ev, card);
    else timeline.add('warning', 'Unknown tool phase', String(ev.phase));
  },
  citation(run, ev) {
    run.view.cite(ev.citation);
  },
  /** The figure check of the answer: marked in it when `final` has rendered it. */
  figures(run, ev) {
    run.figures = ev;
  },
  /** A file the model made (code execution): a download button under the answer. */
  file(run, ev) {
    showFile(run, ev);
    timeline.add('file', `File: ${ev.filename ?? ev.file_id}`, `turn ${ev.turn}`);
  },
  turn_complete(run, ev) {
    run.view.endText();
    addUsage(run, ev.usage);
    const detail = [ev.stop_reason, plural(ev.tool_count ?? 0, 'tool'), tokensText(ev.usage)].join(' · ');
    timeline.add('turn-done', `Turn ${ev.turn} done`, detail);
  },
  context_edited(run, ev) {
    const what = ev.strategy === 'compact'
      ? 'older conversation summarised'
      : [ev.cleared_tool_uses != null ? plural(ev.cleared_tool_uses, 'tool result') : null,
         ev.cleared_thinking_turns != null ? plural(ev.cleared_thinking_turns, 'thinking turn') : null,
         ev.cleared_input_tokens != null ? `${ev.cleared_input_tokens.toLocaleString()} tokens` : null]
          .filter(Boolean).join(' · ') + ' cleared';
    timeline.add('context', `Context: ${ev.strategy}`, `turn ${ev.turn} · ${what}`);
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
      facts: [formatMs(run.durationMs), plural(ev.turns ?? run.turn, 'turn'), plural(ev.tool_calls ?? run.toolCalls, 'tool call'), tokensText(usage)],
    });
    if (run.figures) showFigures(run.view, run.figures, run.ciks);
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

export function showFile(run, file) {
  run.view.file(file, (f) => downloadFile(f, authHeaders()));
}

/** Show a failure in the message, the status and the timeline, and end the run's view. */
export function fail(run, error) {
  run.error = error;
  run.view.showError(error);
  run.view.finish({ state: 'error', outcome: 'error', traceId: run.traceId, facts: [error?.code, formatMs(performance.now() - run.startedAt)] });
  status.set({ state: 'error', outcome: error?.code ?? 'error' });
  timeline.add('error', `Error: ${error?.code ?? 'error'}`, error?.message ?? '', { status: 'error' });
}

export function dispatch(run, ev) {
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
  followAnswer();
}

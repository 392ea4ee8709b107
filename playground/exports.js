// Clearing the page, and taking its contents away: the transcript as a standalone HTML
// file and everything the page saw as debug JSON.

import { download, prettyJson } from './dom.js';
import { log, state, status, timeline, ui } from './page.js';

// ------------------------------------------------------------------ clear, export

export function clearAll() {
  if (state.current) return;
  for (const node of [...ui.transcript.children]) if (node !== ui.empty) node.remove();
  ui.empty.hidden = false;
  timeline.clear();
  log.clear();
  status.reset();
  state.runs = [];
  state.sessionId = null;
}

export async function exportHtml() {
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

export function debugSnapshot() {
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

export function exportDebug() {
  download(`playground-debug-${Date.now()}.json`, 'application/json', prettyJson(debugSnapshot()));
}

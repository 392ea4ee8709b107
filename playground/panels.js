// Side panels: the run status (and its sticky bar), the thinking & tools timeline and
// the raw event log.

import { copyable, formatCount, formatMs, h } from './dom.js';

const MAX_LOG_LINES = 4000;

/** Run state shown twice: a compact sticky bar above the transcript and a detail list. */
export class RunStatus {
  constructor({ bar, details }) {
    this.bar = bar;
    this.details = details;
    this.fields = {};
    for (const el of details.querySelectorAll('[data-field]')) this.fields[el.dataset.field] = el;
    this.barFields = {};
    for (const el of bar.querySelectorAll('[data-bar]')) this.barFields[el.dataset.bar] = el;
    this.reset();
  }

  reset() {
    this.set({ state: 'idle', turn: '–', tokens: '–', elapsed: '–', outcome: '–', stop_reason: '–', tool_calls: '–', run_id: '–', session_id: '–' });
    this.setTrace(null);
  }

  set(values) {
    for (const [key, value] of Object.entries(values)) {
      const text = value === null || value === undefined || value === '' ? '–' : String(value);
      if (this.fields[key]) this.fields[key].textContent = text;
      if (this.barFields[key]) this.barFields[key].textContent = text;
    }
    if (values.state) this.bar.dataset.state = values.state.split(/[\s…]/)[0];
  }

  setTrace(traceId) {
    const slot = this.fields.trace_id;
    if (!slot) return;
    slot.replaceChildren(traceId ? copyable(traceId, 'trace id') : '–');
  }
}

export function tokensText(usage) {
  if (!usage) return '–';
  const parts = [`${formatCount(usage.input_tokens)} in`, `${formatCount(usage.output_tokens)} out`];
  if (usage.cache_read_input_tokens) parts.push(`${formatCount(usage.cache_read_input_tokens)} cache read`);
  if (usage.cache_creation_input_tokens) parts.push(`${formatCount(usage.cache_creation_input_tokens)} cache write`);
  return parts.join(' · ');
}

/** The thinking & tools timeline: one entry per step, tool entries updated in place. */
export class Timeline {
  constructor(list) {
    this.list = list;
    this.entries = new Map();
    this.t0 = performance.now();
  }

  clear() {
    this.list.replaceChildren();
    this.entries.clear();
  }

  startRun(label) {
    this.t0 = performance.now();
    this.list.append(h('li', { class: 'tl tl-run' }, h('span', { class: 'tl-label' }, label)));
  }

  /** Add an entry; `key` lets a later call update it; `target` is scrolled to on click. */
  add(kind, label, detail = '', { key, target, status } = {}) {
    const time = h('span', { class: 'tl-time' }, `+${formatMs(performance.now() - this.t0)}`);
    const detailEl = h('span', { class: 'tl-detail' }, detail);
    const labelEl = h('span', { class: 'tl-label' }, label);
    const item = h('li', { class: `tl tl-${kind}`, dataset: { kind } }, time, labelEl, detailEl);
    if (status) item.dataset.status = status;
    if (target) {
      item.classList.add('tl-link');
      item.tabIndex = 0;
      const jump = () => target.scrollIntoView({ behavior: 'smooth', block: 'center' });
      item.addEventListener('click', jump);
      item.addEventListener('keydown', (event) => event.key === 'Enter' && jump());
    }
    this.list.append(item);
    if (key) this.entries.set(key, { item, labelEl, detailEl });
    this.list.parentElement?.scrollTo?.({ top: this.list.parentElement.scrollHeight });
    return item;
  }

  update(key, { label, detail, status }) {
    const entry = this.entries.get(key);
    if (!entry) return;
    if (label !== undefined) entry.labelEl.textContent = label;
    if (detail !== undefined) entry.detailEl.textContent = detail;
    if (status !== undefined) entry.item.dataset.status = status;
  }
}

function eventSummary(ev) {
  const { type, seq, run_id: _runId, ...rest } = ev;
  const head = `#${seq ?? '?'} ${type}${ev.phase ? `.${ev.phase}` : ''}`;
  delete rest.phase;
  const body = JSON.stringify(rest);
  return `${head} ${body.length > 220 ? `${body.slice(0, 219)}…` : body}`;
}

/** Every event as received, one line each; click a line for its full JSON. */
export class EventLog {
  constructor(list, counter) {
    this.list = list;
    this.counter = counter;
    this.count = 0;
  }

  clear() {
    this.list.replaceChildren();
    this.count = 0;
    this.counter.textContent = '0';
  }

  push(line) {
    this.list.append(line);
    if (this.list.childElementCount > MAX_LOG_LINES) this.list.firstElementChild.remove();
  }

  event(ev) {
    const line = h('div', { class: `log-line log-${ev.type}` }, eventSummary(ev));
    line.addEventListener('click', () => {
      const expanded = line.classList.toggle('expanded');
      line.textContent = expanded ? JSON.stringify(ev, null, 2) : eventSummary(ev);
    });
    this.push(line);
    this.count += 1;
    this.counter.textContent = formatCount(this.count);
  }

  meta(text) {
    this.push(h('div', { class: 'log-line log-meta' }, text));
  }
}

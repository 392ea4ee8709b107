// The transcript: user questions and assistant answers. An answer is a sequence of
// segments in the order they happened: thinking blocks, text, tool calls, notices.

import { copyable, formatBytes, formatCount, formatMs, h, prettyJson, throttle } from './dom.js';
import { fileLabel } from './files.js';
import { renderMarkdown } from './markdown.js';

export function userMessage(query, options) {
  const meta = [];
  if (options.max_turns) meta.push(`max ${options.max_turns} turns`);
  if (options.thinking) meta.push(`thinking ${options.thinking === true ? 'on' : options.thinking}`);
  if (options.sessionId) meta.push('continues session');
  if (options.mode === 'research') meta.push('non-streaming');
  return h(
    'article',
    { class: 'msg msg-user' },
    h('div', { class: 'msg-role' }, 'You', meta.length ? h('span', { class: 'msg-meta' }, ` · ${meta.join(' · ')}`) : null),
    h('div', { class: 'msg-body' }, query),
  );
}

/** Where streamed text not yet re-rendered goes: inside the last paragraph-like block. */
function tailParent(root) {
  let node = root.lastElementChild;
  if (!node) return root;
  for (;;) {
    const tag = node.tagName;
    if (tag === 'PRE') return node.querySelector('code') ?? node;
    if (tag === 'UL' || tag === 'OL' || tag === 'BLOCKQUOTE' || tag === 'LI') {
      const last = node.lastElementChild;
      if (!last) return node;
      if (tag === 'LI' && !['P', 'UL', 'OL', 'PRE', 'BLOCKQUOTE'].includes(last.tagName)) return node;
      node = last;
      continue;
    }
    return tag === 'P' || /^H[1-6]$/.test(tag) ? node : root;
  }
}

/** One run of model text. Deltas go into a text node at once; Markdown re-renders ≤10/s. */
class TextSegment {
  constructor() {
    this.raw = '';
    this.el = h('div', { class: 'md' });
    this.tail = null;
    this.renderer = throttle(() => this.render(), 100);
  }

  append(text) {
    this.raw += text;
    if (!this.tail) {
      this.tail = document.createTextNode('');
      tailParent(this.el).append(this.tail);
    }
    this.tail.appendData(text);
    this.renderer.schedule();
  }

  render() {
    this.el.replaceChildren(renderMarkdown(this.raw));
    this.tail = null;
  }

  end() {
    this.renderer.flush();
  }
}

class ThinkingBlock {
  constructor(turn, progress = false) {
    this.startedAt = performance.now();
    this.progress = progress;
    this.text = document.createTextNode('');
    this.label = h('span', { class: 'thinking-label' }, progress ? 'Note' : 'Thinking…');
    this.signed = h('span', { class: 'pill pill-muted', hidden: true }, 'signed');
    this.el = h(
      'details',
      { class: progress ? 'thinking progress live' : 'thinking live', open: true, dataset: { turn: turn ?? '' } },
      h('summary', {}, this.label, ' ', this.signed),
      h('div', { class: 'thinking-text' }, this.text),
    );
  }

  append(text) {
    this.text.appendData(text);
  }

  sign() {
    this.signed.hidden = false;
  }

  end() {
    this.el.classList.remove('live');
    if (this.progress) return; // a note stays open: it says why the next tool runs
    const seconds = formatMs(performance.now() - this.startedAt);
    this.label.textContent = `Thought for ${seconds} · ${formatCount(this.text.length)} chars`;
    this.el.open = false;
  }
}

function inputText(input) {
  const compact = JSON.stringify(input ?? {});
  return compact.length <= 100 ? compact : prettyJson(input);
}

function inputSummary(input) {
  if (!input || typeof input !== 'object') return '';
  const parts = Object.entries(input).map(([key, value]) => `${key}: ${JSON.stringify(value)}`);
  const text = parts.join(', ');
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

/** A tool call shown where it happened: name, input, status, duration, result preview. */
export class ToolCard {
  constructor(tool) {
    this.id = tool.id;
    this.name = tool.name ?? 'tool';
    this.partial = '';
    this.startedAt = null;
    this.status = null;
    this.statusEl = h('span', { class: 'tool-status' });
    this.durationEl = h('span', { class: 'tool-duration' });
    this.summaryEl = h('span', { class: 'tool-summary' });
    this.whereEl = h('span', { class: 'tool-where', hidden: true }, 'run by the API');
    this.inputEl = document.createTextNode('');
    this.resultEl = h('div', { class: 'tool-result-slot' });
    this.el = h(
      'div',
      { class: 'tool', dataset: { toolId: this.id ?? '', toolName: this.name } },
      h(
        'div',
        { class: 'tool-head' },
        h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
        h('span', { class: 'tool-name' }, this.name),
        this.whereEl,
        this.summaryEl,
        this.statusEl,
        this.durationEl,
      ),
      h('pre', { class: 'tool-input', 'aria-label': 'tool input' }, this.inputEl),
      this.resultEl,
    );
    this.setStatus('started');
  }

  setStatus(status) {
    this.status = status;
    this.el.dataset.status = status;
    this.statusEl.textContent = status;
  }

  /** A call the API runs itself (web search, code execution): marked as such, and timed
   * by nobody here, so it shows no duration. */
  markServer() {
    this.server = true;
    this.el.dataset.server = 'true';
    this.whereEl.hidden = false;
  }

  inputDelta(fragment) {
    this.partial += fragment ?? '';
    this.inputEl.data = this.partial;
  }

  use(tool) {
    if (tool.name) this.name = tool.name;
    if (tool.input !== undefined) {
      this.input = tool.input;
      this.inputEl.data = inputText(tool.input);
      this.summaryEl.textContent = inputSummary(tool.input);
    }
  }

  executing(tool) {
    this.use(tool);
    this.startedAt = performance.now();
    this.setStatus('running');
  }

  /** Called on a timer while running, so the duration visibly moves. */
  tick() {
    if (this.status === 'running' && this.startedAt !== null) {
      this.durationEl.textContent = formatMs(performance.now() - this.startedAt);
    }
  }

  result(ev) {
    this.setStatus('ok');
    this.durationEl.textContent = this.server ? '' : formatMs(ev.duration_ms);
    const facts = [formatBytes(ev.bytes), ev.truncated ? 'preview truncated' : null];
    const label = `Result${facts.some(Boolean) ? ` · ${facts.filter(Boolean).join(' · ')}` : ''}`;
    this.resultEl.replaceChildren(
      h('details', { class: 'tool-result' }, h('summary', {}, label), h('pre', {}, ev.preview ?? '')),
    );
  }

  error(ev) {
    this.setStatus('error');
    this.durationEl.textContent = this.server ? '' : formatMs(ev.duration_ms);
    this.resultEl.replaceChildren(h('div', { class: 'tool-error', role: 'alert' }, String(ev.error ?? 'Tool failed')));
  }

  /** The run ended while this call was unfinished. */
  interrupt() {
    if (this.status === 'started' || this.status === 'running') this.setStatus('interrupted');
  }
}

function usageText(usage) {
  if (!usage) return '';
  const parts = [`${formatCount(usage.input_tokens)} in`, `${formatCount(usage.output_tokens)} out`];
  if (usage.cache_read_input_tokens) parts.push(`${formatCount(usage.cache_read_input_tokens)} cache read`);
  if (usage.cache_creation_input_tokens) parts.push(`${formatCount(usage.cache_creation_input_tokens)} cache write`);
  return parts.join(' · ');
}

export { usageText };

/** The assistant's answer to one question, built from events as they arrive. */
export class AssistantMessage {
  constructor() {
    this.segments = [];
    this.text = null;
    this.thinking = null;
    this.tools = new Map();
    this.body = h('div', { class: 'msg-body' });
    this.waiting = h('div', { class: 'msg-waiting' }, h('span', { class: 'dots', 'aria-hidden': 'true' }), ' waiting for the gateway…');
    this.footer = h('div', { class: 'msg-footer', hidden: true });
    this.el = h(
      'article',
      { class: 'msg msg-assistant', dataset: { state: 'running' } },
      h('div', { class: 'msg-role' }, 'Assistant'),
      this.body,
      this.waiting,
      this.footer,
    );
  }

  setWaiting(text) {
    this.waiting.lastChild.data = ` ${text}`;
  }

  add(node) {
    this.body.append(node);
    return node;
  }

  appendText(text) {
    if (!this.text) {
      this.endThinking();
      this.text = new TextSegment();
      this.segments.push(this.text);
      this.add(this.text.el);
    }
    this.text.append(text);
  }

  endText() {
    this.text?.end();
    this.text = null;
  }

  startThinking(turn, progress = false) {
    this.endText();
    this.endThinking();
    this.thinking = new ThinkingBlock(turn, progress);
    this.add(this.thinking.el);
    return this.thinking;
  }

  appendThinking(text) {
    (this.thinking ?? this.startThinking()).append(text);
  }

  signThinking() {
    this.thinking?.sign();
  }

  endThinking() {
    this.thinking?.end();
    this.thinking = null;
  }

  /** The card for a tool id, created where the stream is now if it is new. */
  tool(tool) {
    let card = this.tools.get(tool.id);
    if (!card) {
      this.endText();
      this.endThinking();
      card = new ToolCard(tool);
      this.tools.set(tool.id, card);
      this.add(card.el);
    }
    return card;
  }

  tick() {
    for (const card of this.tools.values()) card.tick();
  }

  /** A source the model cited: listed under the answer, a link only for http(s). */
  cite(citation) {
    if (!this.sources) {
      this.sources = h('ol', { class: 'sources' });
      this.footer.before(h('div', { class: 'msg-sources' }, h('strong', {}, 'Sources'), this.sources));
    }
    const url = String(citation?.url ?? '');
    const title = String(citation?.title || url || citation?.document_title || 'source');
    const safe = /^https?:\/\//i.test(url);
    const label = safe ? h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, title) : title;
    const quote = citation?.cited_text ? h('span', { class: 'muted small' }, ` “${String(citation.cited_text).slice(0, 200)}”`) : '';
    this.sources.append(h('li', {}, label, quote));
  }

  /** A file code execution made: listed under the answer, with a download button that
   * calls `onDownload` (which fetches it with the page's key). */
  file(file, onDownload) {
    if (!this.files) {
      this.files = h('ul', { class: 'files' });
      this.footer.before(h('div', { class: 'msg-files' }, h('strong', {}, 'Files'), this.files));
    }
    const label = fileLabel(file);
    const button = h('button', { type: 'button', class: 'btn btn-small file-download', dataset: { fileId: file.file_id } }, `Download ${label}`);
    button.addEventListener('click', async () => {
      button.disabled = true;
      button.textContent = `Downloading ${label}…`;
      try {
        await onDownload(file);
        button.textContent = `Download ${label}`;
      } catch (error) {
        const why = [error?.status, error?.code ?? 'error'].filter(Boolean).join(' ');
        button.textContent = `Download ${label} (failed: ${why})`;
        this.notice('error', error?.code ?? 'ERROR', error?.message ?? 'The download failed');
      } finally {
        button.disabled = false;
      }
    });
    this.files.append(h('li', {}, button));
  }

  /** A notice is not a model block, so an open text segment stays open. */
  notice(kind, label, message) {
    this.add(h('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : null }, h('strong', {}, label), ' ', message));
  }

  showError(error) {
    const err = error ?? {};
    const message = err.message ?? 'Unknown error';
    this.notice('error', err.code ?? 'ERROR', message);
    if (err.request_id) this.add(h('div', { class: 'muted small' }, `request id ${err.request_id}`));
  }

  /** The answer as streamed: the text segments' deltas joined as they came, which is
   * `final.result` (the gateway streams the blank line between turns itself). */
  rawText() {
    return this.segments.map((segment) => segment.raw).join('');
  }

  /** The run ended: close open blocks, mark unfinished tools, show the outcome. */
  finish({ state, outcome, facts = [], traceId }) {
    this.endText();
    this.endThinking();
    for (const card of this.tools.values()) card.interrupt();
    this.waiting.remove();
    this.el.dataset.state = state;
    if (outcome) this.el.dataset.outcome = outcome;
    const items = facts.filter(Boolean).map((fact) => h('span', { class: 'fact' }, fact));
    this.footer.replaceChildren(
      outcome ? h('span', { class: `pill outcome outcome-${outcome}` }, outcome) : null,
      ...items,
      traceId ? h('span', { class: 'fact trace' }, 'trace ', copyable(traceId, 'trace id')) : null,
    );
    this.footer.hidden = false;
  }
}

/** Render an /api/research JSON answer into a message. Tool calls come first: the JSON
 * does not say where in the text they happened. */
export function renderResearch(message, body) {
  for (const block of body.thinkingBlocks ?? []) {
    const thinking = message.startThinking(undefined, block?.kind === 'progress');
    thinking.append(typeof block === 'string' ? block : (block.thinking ?? block.text ?? prettyJson(block)));
    message.endThinking();
  }
  for (const call of body.toolCalls ?? []) {
    const card = message.tool({ id: call.id, name: call.name });
    card.use(call);
    const content = call.result?.content;
    const preview = typeof content === 'string' ? content : prettyJson(content ?? '');
    if (call.result?.is_error) card.error({ error: preview, duration_ms: call.duration_ms });
    else card.result({ preview, duration_ms: call.duration_ms, bytes: new Blob([preview]).size });
  }
  if (body.text) message.appendText(body.text);
  message.endText();
}

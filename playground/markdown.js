// A small Markdown renderer that builds DOM nodes. Raw HTML in the source is shown as
// text, links and autolinks are kept only for http(s) URLs, images become links, so
// nothing the model or a tool writes can run or load anything by itself.
//
// Blocks: ATX headings, paragraphs (single newlines become line breaks), fenced code,
// block quotes, rules, ordered/unordered (nested) lists, GFM tables.
// Inline: code spans, **strong**, *em*, ***both***, ~~del~~, [links](url), <autolinks>,
// bare http(s) URLs, backslash escapes.

import { h } from './dom.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^( *)([-*+]|\d{1,9}[.)])([ \t]+|$)/;
const TABLE_SEPARATOR = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;
const PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/;
const BARE_URL = /^https?:\/\/[^\s<>"'`]+/i;
const LANG = /^[\w+#.-]{1,24}$/;

/** Only absolute http(s) URLs survive; everything else (javascript:, data:, ...) is null. */
export function safeUrl(raw) {
  const text = String(raw ?? '').trim();
  if (!/^https?:\/\//i.test(text)) return null;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Render Markdown source to a DocumentFragment. */
export function renderMarkdown(source) {
  const lines = String(source ?? '').replace(/\r\n?/g, '\n').replace(/\t/g, '    ').split('\n');
  const fragment = document.createDocumentFragment();
  fragment.append(...parseBlocks(lines));
  return fragment;
}

// ---------------------------------------------------------------------------- blocks

const isBlank = (line) => line.trim() === '';
const indentOf = (line) => line.length - line.trimStart().length;

function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    LIST_ITEM.test(line) ||
    isTableStart(lines, i)
  );
}

function parseBlocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    if (isBlank(lines[i])) i += 1;
    else i = parseBlock(lines, i, out);
  }
  return out;
}

function parseBlock(lines, i, out) {
  const line = lines[i];
  let match;
  if ((match = line.match(FENCE))) return codeBlock(lines, i, match, out);
  if ((match = line.match(HEADING))) {
    out.push(h(`h${match[1].length}`, {}, ...parseInline(match[2] ?? '')));
    return i + 1;
  }
  if (RULE.test(line)) {
    out.push(h('hr'));
    return i + 1;
  }
  if (QUOTE.test(line)) return blockQuote(lines, i, out);
  if (isTableStart(lines, i)) return table(lines, i, out);
  if (LIST_ITEM.test(line)) return list(lines, i, out);
  return paragraph(lines, i, out);
}

function codeBlock(lines, i, match, out) {
  const fence = match[1];
  const lang = LANG.test(match[2]) ? match[2] : '';
  const body = [];
  let j = i + 1;
  for (; j < lines.length; j++) {
    const close = lines[j].match(/^ {0,3}(`{3,}|~{3,})[ \t]*$/);
    if (close && close[1][0] === fence[0] && close[1].length >= fence.length) break;
    body.push(lines[j]);
  }
  const code = h('code', lang ? { class: `lang-${lang}` } : {}, body.join('\n'));
  out.push(h('pre', lang ? { class: 'code', dataset: { lang } } : { class: 'code' }, code));
  return j + 1; // past the closing fence (or the end, while it is still streaming)
}

function blockQuote(lines, i, out) {
  const inner = [];
  let j = i;
  while (j < lines.length && !isBlank(lines[j])) {
    const line = lines[j];
    if (QUOTE.test(line)) inner.push(line.replace(QUOTE, ''));
    else if (startsBlock(lines, j)) break;
    else inner.push(line); // lazy continuation
    j += 1;
  }
  out.push(h('blockquote', {}, ...parseBlocks(inner)));
  return j;
}

function paragraph(lines, i, out) {
  const text = [lines[i].trim()];
  let j = i + 1;
  while (j < lines.length && !isBlank(lines[j]) && !startsBlock(lines, j)) {
    text.push(lines[j].trim());
    j += 1;
  }
  out.push(h('p', {}, ...parseInline(text.join('\n'))));
  return j;
}

// ---------------------------------------------------------------------------- tables

function splitRow(line) {
  let row = line.trim();
  if (row.startsWith('|')) row = row.slice(1);
  if (row.endsWith('|') && !row.endsWith('\\|')) row = row.slice(0, -1);
  const cells = [];
  let cell = '';
  for (let k = 0; k < row.length; k++) {
    if (row[k] === '\\' && row[k + 1] === '|') {
      cell += '|';
      k += 1;
    } else if (row[k] === '|') {
      cells.push(cell.trim());
      cell = '';
    } else {
      cell += row[k];
    }
  }
  cells.push(cell.trim());
  return cells;
}

function isTableStart(lines, i) {
  const header = lines[i];
  const separator = lines[i + 1];
  if (separator === undefined || !header.includes('|') || !separator.includes('-')) return false;
  if (!TABLE_SEPARATOR.test(separator) || !separator.includes('|')) return false;
  return splitRow(header).length === splitRow(separator).length;
}

function alignOf(spec) {
  const left = spec.startsWith(':');
  const right = spec.endsWith(':');
  if (left && right) return 'center';
  if (right) return 'right';
  return left ? 'left' : '';
}

function tableRow(tag, cells, aligns) {
  return h(
    'tr',
    {},
    aligns.map((align, k) => {
      const cell = h(tag, {}, ...parseInline(cells[k] ?? ''));
      if (align) cell.style.textAlign = align;
      return cell;
    }),
  );
}

function table(lines, i, out) {
  const header = splitRow(lines[i]);
  const aligns = splitRow(lines[i + 1]).map(alignOf);
  const body = [];
  let j = i + 2;
  while (j < lines.length && !isBlank(lines[j]) && lines[j].includes('|')) {
    body.push(tableRow('td', splitRow(lines[j]), aligns));
    j += 1;
  }
  const tableEl = h(
    'table',
    {},
    h('thead', {}, tableRow('th', header, aligns)),
    body.length ? h('tbody', {}, body) : null,
  );
  out.push(h('div', { class: 'table-wrap' }, tableEl));
  return j;
}

// ---------------------------------------------------------------------------- lists

const isOrdered = (match) => /\d/.test(match[2]);

function contentIndentOf(match) {
  const marker = match[1].length + match[2].length;
  const gap = match[3].length;
  return gap >= 1 && gap <= 4 ? marker + gap : marker + 1;
}

/** Collect one item's lines (marker stripped); returns [lines, next index, blank-inside]. */
function listItem(lines, i, match, baseIndent) {
  const contentIndent = contentIndentOf(match);
  const itemLines = [lines[i].slice(match[0].length)];
  let j = i + 1;
  let pendingBlank = false;
  let blankInside = false;
  while (j < lines.length) {
    const line = lines[j];
    if (isBlank(line)) {
      pendingBlank = true;
      j += 1;
      continue;
    }
    const indent = indentOf(line);
    const nested = LIST_ITEM.test(line) && indent > baseIndent + 1;
    if (indent >= contentIndent || nested) {
      if (pendingBlank) itemLines.push('');
      blankInside ||= pendingBlank;
      pendingBlank = false;
      itemLines.push(line.slice(Math.min(indent, contentIndent)));
    } else if (pendingBlank || startsBlock(lines, j)) {
      break;
    } else {
      itemLines.push(line.trim()); // lazy paragraph continuation
    }
    j += 1;
  }
  return [itemLines, j, blankInside, pendingBlank];
}

/** Tight list items show their paragraphs inline, without <p> margins. */
function unwrapParagraphs(nodes) {
  const out = [];
  for (const node of nodes) {
    if (node.tagName === 'P') {
      if (out.length && out[out.length - 1].tagName !== 'UL' && out[out.length - 1].tagName !== 'OL') {
        out.push(h('br'));
      }
      out.push(...node.childNodes);
    } else {
      out.push(node);
    }
  }
  return out;
}

function list(lines, i, out) {
  const first = lines[i].match(LIST_ITEM);
  const ordered = isOrdered(first);
  const baseIndent = first[1].length;
  const items = [];
  let loose = false;
  let j = i;
  while (j < lines.length) {
    const match = lines[j].match(LIST_ITEM);
    if (!match || RULE.test(lines[j]) || isOrdered(match) !== ordered) break;
    if (match[1].length > baseIndent + 1) break;
    const [itemLines, next, blankInside, blankAfter] = listItem(lines, j, match, baseIndent);
    const following = lines[next]?.match(LIST_ITEM);
    loose ||= blankInside || (blankAfter && Boolean(following));
    items.push(itemLines);
    j = next;
  }
  const listEl = h(ordered ? 'ol' : 'ul');
  const start = ordered ? parseInt(first[2], 10) : 1;
  if (ordered && start !== 1) listEl.setAttribute('start', String(start));
  for (const itemLines of items) {
    const blocks = parseBlocks(itemLines);
    listEl.append(h('li', {}, ...(loose ? blocks : unwrapParagraphs(blocks))));
  }
  out.push(listEl);
  return j;
}

// ---------------------------------------------------------------------------- inline

/** Parse inline Markdown to an array of nodes. */
export function parseInline(text) {
  const out = [];
  let buffer = '';
  const flush = () => {
    if (buffer) out.push(document.createTextNode(buffer));
    buffer = '';
  };
  let i = 0;
  while (i < text.length) {
    const found = inlineAt(text, i);
    if (found) {
      flush();
      out.push(...found.nodes);
      i = found.end;
    } else {
      buffer += text[i];
      i += 1;
    }
  }
  flush();
  return out;
}

/** The inline construct starting at `i`, as {nodes, end}, or null for a plain character. */
function inlineAt(text, i) {
  const c = text[i];
  switch (c) {
    case '\\':
      if (PUNCTUATION.test(text[i + 1] ?? '')) return literal(text[i + 1], i + 2);
      return null;
    case '\n':
      return { nodes: [h('br')], end: i + 1 };
    case '`':
      return codeSpan(text, i);
    case '!':
      return text[i + 1] === '[' ? link(text, i + 1, true) : null;
    case '[':
      return link(text, i, false);
    case '<':
      return autolink(text, i);
    case 'h':
    case 'H':
      return bareUrl(text, i);
    case '*':
    case '_':
    case '~':
      return emphasis(text, i);
    default:
      return null;
  }
}

const literal = (value, end) => ({ nodes: [document.createTextNode(value)], end });

function runLength(text, i, char) {
  let n = 0;
  while (text[i + n] === char) n += 1;
  return n;
}

function codeSpan(text, i) {
  const n = runLength(text, i, '`');
  const fence = '`'.repeat(n);
  let j = text.indexOf(fence, i + n);
  while (j !== -1 && runLength(text, j, '`') !== n) j = text.indexOf(fence, j + runLength(text, j, '`'));
  if (j === -1) return literal(fence, i + n); // unmatched: the backticks are plain text
  let code = text.slice(i + n, j).replace(/\n/g, ' ');
  if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ') && code.trim()) code = code.slice(1, -1);
  return { nodes: [h('code', {}, code)], end: j + n };
}

/** Index of the bracket closing the one at `i`, skipping escapes and nesting. */
function matching(text, i, open, close) {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    if (text[j] === '\\') j += 1;
    else if (text[j] === open) depth += 1;
    else if (text[j] === close && --depth === 0) return j;
    else if (text[j] === '\n' && text[j + 1] === '\n') return -1;
  }
  return -1;
}

function link(text, i, isImage) {
  const labelEnd = matching(text, i, '[', ']');
  if (labelEnd === -1 || text[labelEnd + 1] !== '(') return null;
  const targetEnd = matching(text, labelEnd + 1, '(', ')');
  if (targetEnd === -1) return null;
  const label = text.slice(i + 1, labelEnd);
  const target = text.slice(labelEnd + 2, targetEnd).trim();
  const titleMatch = target.match(/^(\S+)\s+["'(](.*)["')]$/);
  const rawUrl = (titleMatch ? titleMatch[1] : target).replace(/^<(.*)>$/, '$1');
  const url = safeUrl(rawUrl);
  const end = targetEnd + 1;
  const children = isImage ? [label ? `[image: ${label}]` : '[image]'] : parseInline(label);
  if (!url) {
    // Not http(s): keep the words, drop the target.
    const attrs = { class: 'link-removed', title: 'link removed (not http/https)' };
    return { nodes: [h('span', attrs, ...children)], end };
  }
  const attrs = { href: url, target: '_blank', rel: 'noopener noreferrer nofollow' };
  if (titleMatch) attrs.title = titleMatch[2];
  return { nodes: [h('a', attrs, ...children)], end };
}

function autolink(text, i) {
  const match = text.slice(i).match(/^<(https?:\/\/[^\s<>]+)>/i);
  const url = match && safeUrl(match[1]);
  if (!url) return null;
  return { nodes: [externalLink(url, match[1])], end: i + match[0].length };
}

function bareUrl(text, i) {
  if (i > 0 && /[\w/]/.test(text[i - 1])) return null;
  const match = text.slice(i).match(BARE_URL);
  if (!match) return null;
  let raw = match[0].replace(/[.,;:!?'"*_~]+$/, '');
  while (raw.endsWith(')') && raw.split('(').length < raw.split(')').length) raw = raw.slice(0, -1);
  const url = safeUrl(raw);
  if (!url) return null;
  return { nodes: [externalLink(url, raw)], end: i + raw.length };
}

function externalLink(url, label) {
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer nofollow' }, label);
}

const isSpace = (ch) => ch === undefined || /\s/.test(ch);
const isWordChar = (ch) => ch !== undefined && /[\p{L}\p{N}]/u.test(ch);

function canOpen(text, i, char, n) {
  if (isSpace(text[i + n])) return false;
  return char !== '_' || !isWordChar(text[i - 1]);
}

function canClose(text, j, char, n) {
  if (isSpace(text[j - 1]) || text[j - 1] === char || text[j + n] === char) return false;
  return char !== '_' || !isWordChar(text[j + n]);
}

function emphasis(text, i) {
  const char = text[i];
  const run = runLength(text, i, char);
  if (char === '~' && run !== 2) return null;
  if (run > 3 || !canOpen(text, i, char, run)) return null;
  const delimiter = char.repeat(run);
  for (let j = text.indexOf(delimiter, i + run + 1); j !== -1; j = text.indexOf(delimiter, j + 1)) {
    if (!canClose(text, j, char, run)) continue;
    const inner = parseInline(text.slice(i + run, j));
    let node;
    if (char === '~') node = h('del', {}, ...inner);
    else if (run === 1) node = h('em', {}, ...inner);
    else if (run === 2) node = h('strong', {}, ...inner);
    else node = h('strong', {}, h('em', {}, ...inner));
    return { nodes: [node], end: j + run };
  }
  return null;
}

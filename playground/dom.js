// DOM helpers. Every piece of text reaches the page through a text node or a form
// value, never through innerHTML, so nothing from the model or a tool can run.

/**
 * Build an element. attrs: plain attributes, plus `class`, `text`, `on*` handlers,
 * and `dataset`. children: nodes, strings (become text nodes), null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return parent;
}

export function formatMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60000);
  return `${minutes} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function formatCount(n) {
  return (n ?? 0).toLocaleString('en-US');
}

/** "1 tool", "3 tools", "? turns" when the count is unknown. */
export function plural(n, noun, many = `${noun}s`) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return `? ${many}`;
  return `${formatCount(Number(n))} ${Number(n) === 1 ? noun : many}`;
}

export function formatBytes(n) {
  if (n === null || n === undefined) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function prettyJson(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** Copy text; falls back to selecting a field when the Clipboard API is unavailable. */
export async function copyText(text, fallbackField) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (!fallbackField) return false;
    fallbackField.focus();
    fallbackField.select();
    try {
      return document.execCommand('copy');
    } catch {
      return false;
    }
  }
}

/** A read-only field plus a Copy button: select-able by hand, copy-able by click. */
export function copyable(value, label = 'Copy') {
  const field = h('input', { class: 'copy-field', readonly: true, value, 'aria-label': label });
  field.value = value;
  const button = h('button', { type: 'button', class: 'btn btn-small', text: 'Copy' });
  button.addEventListener('click', async () => {
    const ok = await copyText(field.value, field);
    button.textContent = ok ? 'Copied' : 'Select & copy';
    setTimeout(() => { button.textContent = 'Copy'; }, 1500);
  });
  return h('span', { class: 'copyable' }, field, button);
}

export function download(filename, mime, text) {
  const url = URL.createObjectURL(new Blob([text], { type: mime }));
  const link = h('a', { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** Run `fn` at most once per `ms`, on an animation frame; `flush` runs it now. */
export function throttle(fn, ms = 100) {
  let timer = null;
  let frame = null;
  const cancel = () => {
    if (timer !== null) clearTimeout(timer);
    if (frame !== null) cancelAnimationFrame(frame);
    timer = null;
    frame = null;
  };
  const run = () => {
    cancel();
    fn();
  };
  return {
    schedule() {
      if (timer !== null || frame !== null) return;
      timer = setTimeout(() => {
        timer = null;
        frame = requestAnimationFrame(run);
      }, ms);
    },
    flush: run,
    cancel,
  };
}

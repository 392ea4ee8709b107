// Figure marks: each figure of an answer as the gateway's figure check (the `figures`
// event, just before `final`) classified it. Sourced and derived figures link to the
// filing they came from, and their hover says concept, period, form and formula;
// unsourced and other-period figures are marked as such. The rendered Markdown has lost
// its syntax, so each figure's text is looked for, in order, in the answer's text nodes
// rather than at its offsets in `final.result`; one not found there is left unmarked.

import { h } from './dom.js';

const STATUS = {
  sourced: 'Sourced from a tool result',
  derived: 'Derived from two sourced figures',
  unsourced: 'Unsourced: no tool result of this run holds this figure',
  other_period: 'Other period: a tool result holds it, for another period than the one stated',
};
const ACCESSION = /^\d{10}-\d{2}-\d{6}$/;

/** Keep the company a tool result is about (its CIK, near the start of the preview), so a
 * filing links to the company's folder even when an agent filed it. */
export function noteResult(run, ev) {
  const cik = /"cik":\s*"?(\d{1,10})/.exec(String(ev.preview ?? ''));
  if (cik && ev.tool?.id) (run.ciks ??= {})[ev.tool.id] = cik[1];
}

/** The EDGAR index page of a source's filing, or null without an accession number. */
export function filingUrl(source, ciks = {}) {
  const accession = String(source?.accession ?? '');
  if (!ACCESSION.test(accession)) return null;
  const cik = Number(ciks[source.tool_use_id] ?? accession.slice(0, 10));
  return `https://www.sec.gov/Archives/edgar/data/${cik}/${accession.replaceAll('-', '')}/${accession}-index.html`;
}

/** The hover text: the status, the formula, then one line per source. */
export function describe(figure) {
  const lines = [STATUS[figure.status] ?? String(figure.status)];
  if (figure.formula) lines.push(`= ${figure.formula}`);
  for (const s of figure.sources ?? []) {
    lines.push([s.concept, s.period, s.form, s.accession, `${s.tool} ${s.tool_use_id}`].filter(Boolean).join(' · '));
  }
  return lines.join('\n');
}

function textNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) nodes.push(node);
  return nodes;
}

function markOf(figure, ciks, inLink) {
  const url = inLink ? null : (figure.sources ?? []).map((s) => filingUrl(s, ciks)).find(Boolean);
  const linked = url && (figure.status === 'sourced' || figure.status === 'derived');
  const attrs = { class: `fig fig-${figure.status}`, title: describe(figure), dataset: { status: figure.status } };
  return linked
    ? h('a', { ...attrs, href: url, target: '_blank', rel: 'noopener noreferrer' })
    : h('mark', attrs);
}

/** Mark `figures` (in answer order) in the text under `root`; returns how many it found. */
export function markFigures(root, figures, ciks = {}) {
  const nodes = textNodes(root);
  let index = 0;
  let from = 0;
  let marked = 0;
  for (const figure of figures ?? []) {
    const text = String(figure.text ?? '');
    if (!text) continue;
    for (let n = index, start = from; n < nodes.length; n += 1, start = 0) {
      const at = nodes[n].data.indexOf(text, start);
      if (at < 0) continue;
      const middle = nodes[n].splitText(at);
      const rest = middle.splitText(text.length);
      const mark = markOf(figure, ciks, Boolean(middle.parentElement?.closest('a')));
      middle.replaceWith(mark);
      mark.append(middle);
      nodes[n] = rest;
      [index, from, marked] = [n, 0, marked + 1];
      break;
    }
  }
  return marked;
}

/** The counts, as a line under the answer. */
export function figureSummary(counts) {
  const parts = [['sourced', 'sourced'], ['derived', 'derived'], ['unsourced', 'unsourced'], ['other_period', 'other period']]
    .filter(([key]) => counts?.[key])
    .map(([key, label]) => h('span', { class: `fig-count fig-${key}` }, `${counts[key]} ${label}`));
  if (!parts.length) return null;
  return h('span', { class: 'fact figures-summary', title: 'The gateway checked each figure of the answer against the tool results of this run' }, 'figures: ', ...parts);
}

/** After `final`: mark the answer's figures and add the counts to its footer. */
export function showFigures(view, event, ciks) {
  const roots = view.segments.map((segment) => segment.el);
  let figures = event.figures ?? [];
  for (const root of roots) {
    const found = markFigures(root, figures, ciks);
    figures = figures.slice(found);
  }
  const summary = figureSummary(event.counts);
  if (summary) view.footer.append(summary);
}

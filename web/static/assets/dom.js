// Small DOM and formatting helpers shared by the pages. Everything the
// inspector shows is built with these, never with innerHTML, so text from a
// session (which a model wrote) can never become markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    else if (name === 'text') el.textContent = value;
    else if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
    else if (name === 'value' && 'value' in el) el.value = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

// append adds children: nodes, strings (as text), arrays; null and false skip.
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h creates an HTML element: h('a', {href, class}, 'text', child…).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s creates an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

const intFmt = new Intl.NumberFormat('en-US');

export function fmtInt(n) {
  return n === undefined || n === null ? '—' : intFmt.format(n);
}

// fmtBytes is short and human: 812 B, 14.2 KiB, 3.1 MiB.
export function fmtBytes(n) {
  if (n === undefined || n === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n, i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  // Trailing zeros say nothing: 2 KiB, not 2.00 KiB.
  return i === 0 ? `${intFmt.format(v)} B` : `${v.toFixed(v < 10 ? 2 : 1).replace(/\.?0+$/, '')} ${units[i]}`;
}

// plural counts things: 1 blob, 3 blobs.
export function plural(n, one, many = `${one}s`) {
  return `${fmtInt(n)} ${n === 1 ? one : many}`;
}

export function fmtPercent(f) {
  return f === undefined || f === null ? '—' : `${(f * 100).toFixed(f === 1 || f === 0 ? 0 : 1)}%`;
}

function pad2(n) { return String(n).padStart(2, '0'); }

// fmtTime is the local date and time, to the second.
export function fmtTime(ms) {
  if (!ms) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

export function fmtClock(ms) {
  const d = new Date(ms);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

export function fmtAgo(ms, now = Date.now()) {
  if (!ms) return '—';
  const sec = Math.round((now - ms) / 1000);
  if (sec < 45) return 'just now';
  const min = Math.round(sec / 60);
  if (min < 60) return `${min} min ago`;
  const hr = Math.round(min / 60);
  if (hr < 36) return `${hr} h ago`;
  const days = Math.round(hr / 24);
  if (days < 60) return `${days} days ago`;
  return fmtTime(ms).slice(0, 10);
}

// shortRef keeps a digest recognisable in little space: sha256:1a2b3c4d…9f8e.
export function shortRef(ref) {
  if (!ref) return '';
  const [algo, hex] = ref.includes(':') ? ref.split(':', 2) : ['', ref];
  if (!hex || hex.length <= 14) return ref;
  return `${algo ? algo + ':' : ''}${hex.slice(0, 8)}…${hex.slice(-4)}`;
}

// blobHref links to the blob page; the media type travels in the query so
// the page need not guess it.
export function blobHref(ref, mediaType) {
  const q = mediaType ? `?type=${encodeURIComponent(mediaType)}` : '';
  return `/blobs/${encodeURIComponent(ref)}${q}`;
}

export function refLink(ref, mediaType, label) {
  return h('a', { class: 'ref', href: blobHref(ref, mediaType), title: `${ref}\n${mediaType || ''}` }, label || shortRef(ref));
}

// statusBadge shows a run or session status with a colour that means the same everywhere.
export function statusBadge(status) {
  const tone = {
    running: 'active', active: 'active', queued: 'pending', awaiting_tools: 'pending', awaiting_approval: 'pending', open: 'ok', completed: 'ok',
    failed: 'bad', cancelled: 'muted', closed: 'muted', cancelling: 'pending',
  }[status] || 'muted';
  return h('span', { class: ['badge', `tone-${tone}`] }, status || 'unknown');
}

export function errorBox(err, prefix) {
  const kind = err && err.kind ? `${err.kind}: ` : '';
  return h('div', { class: 'error', role: 'alert' }, prefix ? `${prefix} — ` : '', kind, err && err.message ? err.message : String(err));
}

export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); }, { once: true });
  });
}

// jsonTree renders a parsed JSON value as nested, foldable details. Levels
// below openDepth start folded; long arrays and objects show their first
// items and a button for the rest, so a huge document stays responsive.
export function jsonTree(value, openDepth = 2, depth = 0) {
  if (value === null || typeof value !== 'object') return scalar(value);
  const isArr = Array.isArray(value);
  const keys = isArr ? null : Object.keys(value);
  const n = isArr ? value.length : keys.length;
  if (n === 0) return h('span', { class: 'j-punct' }, isArr ? '[]' : '{}');
  const summary = h('summary', {},
    h('span', { class: 'j-punct' }, isArr ? '[' : '{'),
    h('span', { class: 'j-count' }, `${fmtInt(n)} ${isArr ? (n === 1 ? 'item' : 'items') : (n === 1 ? 'key' : 'keys')}`),
    h('span', { class: 'j-punct j-close-inline' }, isArr ? ']' : '}'));
  const details = h('details', { class: 'j-node' }, summary);
  if (depth < openDepth) details.open = true;
  let rendered = false;
  const body = h('div', { class: 'j-body' });
  const CHUNK = 200;
  const renderFrom = (start) => {
    const end = Math.min(n, start + CHUNK);
    for (let i = start; i < end; i++) {
      const k = isArr ? i : keys[i];
      const label = isArr ? h('span', { class: 'j-index' }, `${i}`) : h('span', { class: 'j-key' }, JSON.stringify(k));
      body.append(h('div', { class: 'j-row' }, label, h('span', { class: 'j-punct' }, ': '), jsonTree(value[k], openDepth, depth + 1)));
    }
    if (end < n) {
      const more = h('button', { class: 'link', type: 'button' }, `show ${fmtInt(Math.min(CHUNK, n - end))} more of ${fmtInt(n - end)}`);
      more.addEventListener('click', () => { more.remove(); renderFrom(end); });
      body.append(more);
    }
  };
  // Folded nodes render their children on first open: big documents stay cheap.
  const render = () => { if (!rendered && details.open) { rendered = true; renderFrom(0); } };
  details.addEventListener('toggle', render);
  details.append(body, h('span', { class: 'j-punct j-close' }, isArr ? ']' : '}'));
  render();
  return details;
}

function scalar(v) {
  const t = v === null ? 'null' : typeof v;
  return h('span', { class: `j-${t}` }, JSON.stringify(v));
}

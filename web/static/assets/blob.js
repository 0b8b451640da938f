// The blob page: the exact bytes of one content-addressed blob, shown by
// media type (from ?type=, which the inspector's links carry; sniffed from
// the bytes otherwise) and always downloadable as they are.
//
// The bytes may come from a model, and the link from any web page. A blob:
// URL made here belongs to the inspector's origin, and a user can open it as
// a document ("open image in new tab"): a script in it would run as the
// inspector. So the page makes blob: URLs only of the inert types below;
// anything else (SVG, HTML, XML, any +xml) is shown as text, never drawn.

import { call, isAbort, METHOD_NOT_FOUND } from './rpc.js';
import { h, clear, append, fmtBytes, fmtInt, fmtTime, shortRef, refLink, errorBox, jsonTree } from './dom.js';

const HEX_LIMIT = 4096;

// INERT_MEDIA are the types whose documents cannot run script: a browser
// shows them as a picture or a player. The list is explicit, never a
// prefix: image/svg+xml is an image type, and XML types can carry script.
const INERT_MEDIA = new Map([
  ...['png', 'jpeg', 'gif', 'webp', 'avif', 'bmp'].map((t) => [`image/${t}`, 'img']),
  ...['mpeg', 'wav', 'x-wav', 'wave', 'ogg', 'flac', 'mp4', 'aac', 'webm'].map((t) => [`audio/${t}`, 'audio']),
  ...['mp4', 'webm', 'ogg'].map((t) => [`video/${t}`, 'video']),
]);

export function blobPage(ctx, ref) {
  ctx.setCrumbs([{ label: 'Sessions', href: '/' }, { label: `blob ${shortRef(ref)}`, mono: true }]);
  const given = ctx.query.get('type') || '';
  const facts = h('dl', { class: 'chips' });
  const actions = h('div', { class: 'blob-actions' });
  const view = h('div', { class: 'blob-view', id: 'blob-view' }, h('p', { class: 'quiet' }, 'Loading…'));
  const holders = h('section', { class: 'blob-holders', id: 'blob-holders' }, h('h2', {}, 'Held by'), h('p', { class: 'quiet' }, 'Loading…'));
  ctx.root.append(h('section', { class: 'page blob-page' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Blob'), h('span', { class: 'spacer' }), actions),
    h('p', { class: 'mono ref-full', id: 'blob-ref' }, ref),
    facts, holders, view));
  showHolders(holders, ref, ctx.signal);

  const urls = [];
  ctx.signal.addEventListener('abort', () => urls.forEach((u) => URL.revokeObjectURL(u)));
  const objectURL = (bytes, type) => {
    if (type !== 'application/octet-stream' && !INERT_MEDIA.has(type)) throw new Error(`no blob: URL for ${type}`);
    const u = URL.createObjectURL(new Blob([bytes], { type }));
    urls.push(u);
    return u;
  };

  (async () => {
    let bytes;
    try {
      bytes = await readBlob(ref, ctx.signal);
    } catch (err) {
      if (!isAbort(err)) clear(view).append(errorBox(err, 'Could not read the blob'));
      return;
    }
    const sniffed = sniff(bytes);
    const mediaType = given || sniffed;
    const chip = (label, value, attrs) => h('div', { class: 'chip', ...attrs }, h('dt', {}, label), h('dd', {}, value));
    facts.append(
      chip('media type', h('span', { class: 'mono', id: 'blob-type' }, mediaType), { title: given ? 'from the link that opened this page' : 'sniffed from the bytes' }),
      chip('source', given ? 'link' : 'sniffed'),
      chip('size', h('span', { class: 'num', id: 'blob-size', title: `${fmtInt(bytes.length)} bytes` }, fmtBytes(bytes.length))));
    // The download is untyped: the bytes can never render as a page of
    // this origin, whatever they contain.
    actions.append(h('a', { class: 'button primary', id: 'download', href: objectURL(bytes, 'application/octet-stream'), download: ref }, `Download ${fmtBytes(bytes.length)}`));
    append(clear(view), [render(bytes, mediaType, objectURL)]);
  })();
}

// showHolders lists what keeps the blob from the collector (blobs/holders),
// each session and parent blob a link, so a blob reached from anywhere
// leads back to what uses it.
async function showHolders(section, ref, signal) {
  let res;
  try {
    res = await call('blobs/holders', { ref }, { signal });
  } catch (err) {
    if (isAbort(err)) return;
    const body = err.code === METHOD_NOT_FOUND || err.kind === 'unsupported'
      ? h('p', { class: 'quiet' }, 'This server does not report what holds a blob.')
      : errorBox(err, 'Could not read what holds the blob');
    section.replaceChildren(section.firstChild, body);
    return;
  }
  section.dataset.held = String(res.held);
  const rows = [];
  const more = (truncated) => (truncated ? [h('span', { class: 'quiet' }, ' and more')] : []);
  const row = (label, id, items, truncated) => {
    if (items.length) rows.push(h('div', { class: 'holder-row', id }, h('dt', {}, label), h('dd', {}, ...items.flatMap((it, i) => (i ? [', ', it] : [it])), ...more(truncated))));
  };
  row('sessions', 'held-sessions', (res.sessions || []).map((id) => h('a', { href: `/sessions/${encodeURIComponent(id)}`, class: 'mono' }, id)), res.sessionsTruncated);
  row('checkpoints', 'held-checkpoints', (res.checkpoints || []).map((c) => h('a', { href: `/sessions/${encodeURIComponent(c.sessionId)}`, class: 'mono' }, `${c.sessionId} @ ${c.seq}`)), res.checkpointsTruncated);
  row('workspaces', 'held-workspaces', (res.workspaces || []).map((w) => h('span', { class: 'mono' }, w)), res.workspacesTruncated);
  row('inside', 'held-parents', (res.parents || []).map((p) => refLink(p.digest, p.mediaType)), res.parentsTruncated);
  if (res.snapshot) rows.push(h('div', { class: 'holder-row', id: 'held-snapshot' }, h('dt', {}, 'snapshot'), h('dd', {}, 'a session links it as a snapshot')));
  if (res.constant) rows.push(h('div', { class: 'holder-row' }, h('dt', {}, 'constant'), h('dd', {}, 'one of the fixed blobs every server keeps')));
  const fate = res.held || res.constant
    ? 'Kept while anything above holds it.'
    : res.collectable
      ? 'Nothing holds it and its grace has passed: the next collection deletes it.'
      : `Nothing holds it; it may be collected after ${fmtTime(res.eligibleAtMs)}.`;
  section.replaceChildren(section.firstChild,
    rows.length ? h('dl', { class: 'holders' }, ...rows) : h('p', { class: 'quiet', id: 'held-nothing' }, 'Nothing holds this blob.'),
    h('p', { class: 'quiet small', id: 'blob-fate' }, fate, ` Stored ${res.storage}, last used ${fmtTime(res.touchedAtMs)}.`));
}

// readBlob reads a blob in parts, so a large one stays within the
// server's response limit.
async function readBlob(ref, signal) {
  const PART = 8 << 20;
  const parts = [];
  let offset = 0;
  for (;;) {
    const res = await call('blobs/read', { ref, offset, length: PART }, { signal });
    const part = decodeBase64(res.data || '');
    parts.push(part);
    offset += part.length;
    if (offset >= res.size || part.length === 0) break;
  }
  if (parts.length === 1) return parts[0];
  const all = new Uint8Array(offset);
  let at = 0;
  for (const p of parts) { all.set(p, at); at += p.length; }
  return all;
}

function render(bytes, mediaType, objectURL) {
  const base = mediaType.split(';')[0].trim().toLowerCase();
  if (base === 'application/json' || base.endsWith('+json')) {
    const text = decodeText(bytes);
    try {
      return jsonView(JSON.parse(text), text);
    } catch (err) {
      return [h('p', { class: 'error' }, `Not valid JSON (${err.message}); shown as text.`), h('pre', { class: 'text-view' }, text)];
    }
  }
  // Here base is exactly one of the list's keys: no parameters, no other type.
  const player = INERT_MEDIA.get(base);
  if (player === 'img') return h('figure', { class: 'media-view' }, h('img', { src: objectURL(bytes, base), alt: `blob of type ${base}`, id: 'blob-image' }));
  if (player) return h('figure', { class: 'media-view' }, h(player, { controls: true, preload: 'metadata', src: objectURL(bytes, base), id: `blob-${player}` }));
  const media = /^(image|audio|video)\//.test(base);
  const note = media && h('p', { class: 'quiet small', id: 'blob-not-drawn' },
    `Only types that cannot carry script are drawn here; ${base} is shown as it is stored. Download it to open it elsewhere.`);
  const lenient = base.startsWith('text/') || base.endsWith('+xml') || base === 'application/xml' || base === 'application/yaml';
  const text = lenient ? decodeText(bytes) : strictText(bytes);
  if (text !== null) return [note, h('pre', { class: 'text-view', id: 'blob-text' }, text)];
  return [note, hexView(bytes)];
}

function jsonView(value, text) {
  const tree = h('div', { class: 'json-tree', id: 'blob-json' }, jsonTree(value, 3));
  const raw = h('pre', { class: 'text-view', hidden: true }, JSON.stringify(value, null, 2));
  const asTree = h('button', { type: 'button', 'aria-pressed': 'true' }, 'Folded');
  const asText = h('button', { type: 'button', 'aria-pressed': 'false' }, 'Pretty text');
  const pick = (treeOn) => {
    tree.hidden = !treeOn;
    raw.hidden = treeOn;
    asTree.setAttribute('aria-pressed', String(treeOn));
    asText.setAttribute('aria-pressed', String(!treeOn));
  };
  asTree.addEventListener('click', () => pick(true));
  asText.addEventListener('click', () => pick(false));
  return [h('div', { class: 'segmented small' }, asTree, asText,
    h('span', { class: 'quiet small' }, ` ${fmtInt(text.length)} characters`)), tree, raw];
}

function hexView(bytes) {
  const n = Math.min(bytes.length, HEX_LIMIT);
  const lines = [];
  for (let off = 0; off < n; off += 16) {
    const row = bytes.subarray(off, Math.min(off + 16, n));
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '·')).join('');
    lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return [h('p', { class: 'quiet small' }, bytes.length > n ? `Binary: the first ${fmtInt(n)} of ${fmtInt(bytes.length)} bytes.` : 'Binary.'),
    h('pre', { class: 'hex-view', id: 'blob-hex' }, lines.join('\n'))];
}

function decodeBase64(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function decodeText(bytes) {
  return new TextDecoder('utf-8').decode(bytes);
}

// strictText returns the bytes as text when they are valid UTF-8 without
// control characters other than whitespace; null otherwise.
function strictText(bytes) {
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  return /[\u0000-\u0008\u000e-\u001f\u007f]/.test(text) ? null : text;
}

// sniff names the media type of bytes that came without one.
export function sniff(b) {
  const ascii = (from, to) => String.fromCharCode(...b.subarray(from, to));
  const starts = (...sig) => b.length >= sig.length && sig.every((v, i) => b[i] === v);
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'audio/wav';
  if (ascii(0, 4) === 'OggS') return 'audio/ogg';
  if (ascii(0, 4) === 'fLaC') return 'audio/flac';
  if (ascii(0, 3) === 'ID3' || (b.length > 1 && b[0] === 0xff && (b[1] & 0xe0) === 0xe0)) return 'audio/mpeg';
  if (ascii(4, 8) === 'ftyp') return ascii(8, 11) === 'M4A' ? 'audio/mp4' : 'video/mp4';
  if (starts(0x1a, 0x45, 0xdf, 0xa3)) return 'video/webm';
  if (ascii(0, 5) === '%PDF-') return 'application/pdf';
  const text = strictText(b);
  if (text === null) return 'application/octet-stream';
  const t = text.trim();
  if ((t.startsWith('{') || t.startsWith('[')) && isJSON(t)) return 'application/json';
  return 'text/plain; charset=utf-8';
}

function isJSON(t) {
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

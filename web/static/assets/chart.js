// The per-generation cache chart: for each generation a bar of request
// bytes with the reused prefix bytes inside it, and the provider-cached
// tokens as a line on a second axis (tokens are not bytes, so they get
// their own scale). Every mark carries its figures in data attributes and a
// title, so the numbers are readable without the picture.

import { s, fmtBytes, fmtInt, fmtPercent } from './dom.js';

const W = 560;
const H = 230;
const M = { top: 14, right: 54, bottom: 26, left: 62 };

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
function niceCeil(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// niceBytes rounds up the same way in the unit the axis will print
// (B, KiB, MiB), so its labels are round numbers.
function niceBytes(v) {
  let unit = 1;
  while (v >= unit * 1024) unit *= 1024;
  return niceCeil(v / unit) * unit;
}

export function cacheChart(turns) {
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const maxBytes = niceBytes(Math.max(1, ...turns.map((t) => Math.max(t.requestBytes || 0, t.prefixBytes || 0))));
  const cached = turns.map((t) => t.providerCachedTokens);
  const hasTokens = cached.some((v) => v !== undefined && v !== null);
  // Tokens are whole: four steps of a whole, round size keep every tick
  // label whole and distinct (a step under one token printed 0, 1, 1, 2, 2).
  const maxTokens = 4 * Math.max(1, niceCeil(Math.max(1, ...cached.filter((v) => v !== undefined && v !== null)) / 4));
  const band = pw / turns.length;
  const barW = Math.max(2, Math.min(36, band * 0.64));
  const x = (i) => M.left + band * i + band / 2;
  const yB = (v) => M.top + ph - (v / maxBytes) * ph;
  const yT = (v) => M.top + ph - (v / maxTokens) * ph;

  const svg = s('svg', { class: 'chart', id: 'cache-chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': `Request bytes, reused prefix bytes and provider-cached tokens for ${turns.length} generations` });
  svg.append(s('title', {}, 'Prompt cache per generation'));

  // Grid and axes: three steps on each scale.
  const grid = s('g', { class: 'axis' });
  for (let k = 0; k <= 4; k++) {
    const y = M.top + ph - (k / 4) * ph;
    grid.append(s('line', { x1: M.left, x2: M.left + pw, y1: y, y2: y, class: k ? 'grid' : 'baseline' }));
    grid.append(s('text', { x: M.left - 8, y: y + 4, 'text-anchor': 'end' }, fmtBytes((maxBytes * k) / 4)));
    if (hasTokens) grid.append(s('text', { x: M.left + pw + 8, y: y + 4, 'text-anchor': 'start', class: 'tok' }, fmtInt((maxTokens * k) / 4)));
  }
  const every = Math.max(1, Math.ceil(turns.length / 14));
  turns.forEach((t, i) => {
    if (i % every === 0 || i === turns.length - 1) grid.append(s('text', { x: x(i), y: H - 8, 'text-anchor': 'middle' }, `#${t.seq}`));
  });
  svg.append(grid);

  const bars = s('g', { class: 'bars' });
  turns.forEach((t, i) => {
    const req = t.requestBytes || 0;
    const pre = t.prefixBytes || 0;
    const tok = t.providerCachedTokens;
    const label = `seq ${t.seq} · ${t.runId} turn ${t.turn}\nrequest ${fmtInt(req)} B\nreused prefix ${fmtInt(pre)} B (${fmtPercent(t.prefixFraction)})` +
      `\nprovider-cached ${tok === undefined ? '—' : fmtInt(tok) + ' tokens'}` +
      (t.brokenBy ? `\nprefix broken${t.brokenBy.kind ? ' by ' + t.brokenBy.kind + ' #' + t.brokenBy.seq : ''}` : '');
    const g = s('g', { class: 'turn', 'data-seq': t.seq, 'data-request-bytes': req, 'data-prefix-bytes': pre, 'data-cached-tokens': tok ?? '' },
      s('title', {}, label),
      // A full-height hit area makes small bars easy to hover.
      s('rect', { class: 'hit', x: x(i) - band / 2, y: M.top, width: band, height: ph }),
      s('rect', { class: 'bar-request', x: x(i) - barW / 2, y: yB(req), width: barW, height: Math.max(0, M.top + ph - yB(req)) }),
      s('rect', { class: 'bar-prefix', x: x(i) - barW / 2, y: yB(pre), width: barW, height: Math.max(0, M.top + ph - yB(pre)) }));
    if (t.brokenBy) g.append(s('path', { class: 'broken-mark', d: `M${x(i) - 4} ${yB(req) - 9} h8 l-4 6 z` }));
    bars.append(g);
  });
  svg.append(bars);

  if (hasTokens) {
    const pts = turns.map((t, i) => (t.providerCachedTokens === undefined || t.providerCachedTokens === null ? null : [x(i), yT(t.providerCachedTokens)]));
    const line = pts.filter(Boolean).map((p, i) => `${i ? 'L' : 'M'}${p[0].toFixed(1)} ${p[1].toFixed(1)}`).join(' ');
    const g = s('g', { class: 'tokens' }, s('path', { class: 'line-cached', d: line }));
    pts.forEach((p) => { if (p) g.append(s('circle', { class: 'pt-cached', cx: p[0], cy: p[1], r: 3 })); });
    svg.append(g);
  }
  return svg;
}

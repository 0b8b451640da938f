// The session page's side panels: runs with their outputs, the active
// context (now, at an earlier seq, and the diff between two seqs), the
// prompt-cache report with its chart, and the storage report. A panel reads
// when first shown and again when live events concern it.

import { call, callMany, isAbort, METHOD_NOT_FOUND } from './rpc.js';
import { h, clear, append, plural, fmtInt, fmtBytes, fmtPercent, refLink, blobHref, statusBadge, errorBox } from './dom.js';
import { cacheChart } from './chart.js';

const TABS = [
  ['runs', 'Runs'],
  ['context', 'Context'],
  ['cache', 'Cache'],
  ['storage', 'Storage'],
];

export function createPanels(page, mount) {
  const tabBar = h('div', { class: 'tabs', role: 'tablist' });
  const body = h('div', { class: 'panel-scroll' });
  mount.append(tabBar, body);
  const panels = {
    runs: runsPanel(page),
    context: contextPanel(page),
    cache: cachePanel(page),
    storage: storagePanel(page),
  };
  const buttons = {};
  for (const [name, label] of TABS) {
    const b = h('button', { type: 'button', role: 'tab', id: `tab-${name}`, 'aria-controls': `panel-${name}`, 'data-tab': name }, label);
    b.addEventListener('click', () => show(name, true));
    buttons[name] = b;
    tabBar.append(b);
    panels[name].el.id = `panel-${name}`;
    panels[name].el.setAttribute('role', 'tabpanel');
    panels[name].el.hidden = true;
    body.append(panels[name].el);
  }

  let current = null;
  function show(name, remember) {
    if (!panels[name]) name = 'runs';
    if (current === name) return;
    current = name;
    for (const [n] of TABS) {
      buttons[n].setAttribute('aria-selected', String(n === name));
      panels[n].el.hidden = n !== name;
    }
    panels[name].shown();
    if (remember) {
      // The open panel is part of the address, so a reload or a shared
      // link lands on it; replaceState keeps Back for real navigations.
      const url = new URL(location.href);
      url.searchParams.set('panel', name);
      history.replaceState(null, '', url.pathname + url.search);
    }
  }

  page.onEvents((events) => {
    for (const [name, p] of Object.entries(panels)) p.events?.(events, name === current);
  });

  // A seq in the address opens the context after it (before the panel is
  // shown, so the panel does not also read the context now).
  const at = Number(page.query.get('at'));
  if (at > 0) panels.context.showAt(at);
  show(at > 0 ? 'context' : page.query.get('panel') || 'runs', false);

  return {
    showContextAt(seq) {
      panels.context.showAt(seq);
      show('context', true);
      const url = new URL(location.href);
      url.searchParams.set('at', String(seq));
      history.replaceState(null, '', url.pathname + url.search);
    },
  };
}

// lazy runs a panel's loader once when first shown, and marks it
// stale for a reload when events concern it while it is hidden.
function lazy(load) {
  let loaded = false;
  let stale = false;
  let timer = 0;
  return {
    shown() {
      if (!loaded || stale) { loaded = true; stale = false; load(); }
    },
    touch(visible) {
      if (!loaded) return;
      if (!visible) { stale = true; return; }
      clearTimeout(timer);
      timer = setTimeout(load, 250);
    },
  };
}

const hasRunEvent = (events) => events.some((e) => e.kind.startsWith('run.') || e.kind === 'turn.completed');

function runsPanel(page) {
  const el = h('section', { class: 'panel' });
  const list = h('div', { class: 'runs', id: 'runs' });
  const more = h('div', { class: 'pager' });
  el.append(h('div', { class: 'panel-head' }, h('h3', {}, 'Runs'), h('span', { class: 'quiet small' }, 'newest first; open one for its output')), list, more);
  const open = new Set();
  let firstLoad = true;

  async function loadOutput(run, box) {
    try {
      const r = await call('session/runs/read', { sessionId: page.id, runId: run.runId }, { signal: page.signal });
      clear(box);
      if (r.output) {
        const out = r.output;
        box.append(h('div', { class: 'content-head' }, h('span', { class: 'label' }, 'output'),
          out.refusal ? h('span', { class: 'label refusal', title: 'The model refused: this text is its refusal' }, 'refusal') : null,
          h('span', { class: 'spacer' }), refLink(out.ref.digest, out.ref.mediaType)),
          out.text !== undefined
            ? h('div', { class: 'text run-output' }, out.text || '(no text)')
            : h('div', { class: 'media' }, h('a', { href: blobHref(out.ref.digest, out.ref.mediaType) }, `${out.ref.mediaType} · open`)));
      } else if (!r.error) {
        box.append(h('p', { class: 'quiet small' }, r.status === 'completed' ? 'No output.' : `No output yet (${r.status}).`));
      }
      if (r.error) box.append(h('div', { class: 'failure' }, h('strong', {}, r.error.kind), ': ', r.error.message));
    } catch (err) {
      if (!isAbort(err)) clear(box).append(errorBox(err));
    }
  }

  function runItem(run) {
    const box = h('div', { class: 'run-body' }, h('p', { class: 'quiet small' }, 'Loading…'));
    const seqs = h('button', { type: 'button', class: 'link small num', title: 'Show in the transcript' }, `seq ${fmtInt(run.acceptedSeq)}${run.endedSeq ? '–' + fmtInt(run.endedSeq) : ''}`);
    seqs.addEventListener('click', (e) => { e.preventDefault(); page.jumpTo(run.acceptedSeq); });
    const active = ['running', 'queued', 'awaiting_tools', 'awaiting_approval'].includes(run.status);
    const cancel = active ? h('button', { type: 'button', class: 'danger small' }, 'Cancel') : null;
    cancel?.addEventListener('click', async (e) => {
      e.preventDefault();
      cancel.disabled = true;
      try {
        await call('session/runs/cancel', { sessionId: page.id, runId: run.runId }, { signal: page.signal });
      } catch (err) {
        if (!isAbort(err)) box.prepend(errorBox(err, 'Cancel failed'));
      }
      page.refreshInfo();
    });
    const d = h('details', { class: 'run', 'data-run': run.runId, 'data-status': run.status },
      h('summary', {},
        h('span', { class: 'mono run-id' }, run.runId), statusBadge(run.status),
        h('span', { class: 'quiet small num' }, `${fmtInt(run.turns)} ${run.turns === 1 ? 'turn' : 'turns'}`),
        h('span', { class: 'spacer' }), seqs, cancel),
      box);
    let fetched = false;
    d.addEventListener('toggle', () => {
      if (d.open) open.add(run.runId); else open.delete(run.runId);
      if (d.open && !fetched) { fetched = true; loadOutput(run, box); }
    });
    if (open.has(run.runId)) d.open = true;
    return d;
  }

  let latest = 0;
  async function load(before) {
    const mine = before ? latest : ++latest;
    try {
      const res = await call('session/runs/list', { sessionId: page.id, before: before || undefined, limit: 20 }, { signal: page.signal });
      if (mine !== latest) return; // a newer listing is on its way
      if (!before) clear(list);
      if (firstLoad && res.runs.length) open.add(res.runs[0].runId); // the newest run starts open
      firstLoad = false;
      for (const r of res.runs) list.append(runItem(r));
      if (!before && !res.runs.length) list.append(h('p', { class: 'quiet' }, 'No runs yet. Start one below the transcript.'));
      clear(more);
      if (res.cursor) {
        const b = h('button', { type: 'button', class: 'ghost small' }, 'Older runs');
        b.addEventListener('click', () => { b.remove(); load(res.cursor); });
        more.append(b);
      }
    } catch (err) {
      if (!isAbort(err)) clear(list).append(errorBox(err, 'Could not list runs'));
    }
  }
  const l = lazy(() => load());
  return { el, shown: l.shown, events: (evs, visible) => { if (hasRunEvent(evs)) l.touch(visible); } };
}

function contextPanel(page) {
  const el = h('section', { class: 'panel' });
  const atInput = h('input', { type: 'number', min: '1', step: '1', name: 'at', id: 'ctx-at', placeholder: 'seq', 'aria-label': 'Event seq' });
  const fromInput = h('input', { type: 'number', min: '0', step: '1', name: 'from', id: 'diff-from', placeholder: 'from', 'aria-label': 'From seq' });
  const toInput = h('input', { type: 'number', min: '0', step: '1', name: 'to', id: 'diff-to', placeholder: 'to', 'aria-label': 'To seq' });
  const atForm = h('form', { class: 'inline-form', id: 'ctx-form' },
    h('label', { for: 'ctx-at' }, 'After event'), atInput,
    h('button', { type: 'submit' }, 'Show'),
    h('button', { type: 'button', class: 'ghost', id: 'ctx-now', onclick: () => { atInput.value = ''; showNow(); } }, 'Now'));
  const diffForm = h('form', { class: 'inline-form', id: 'diff-form' },
    h('label', { for: 'diff-from' }, 'Diff'), fromInput, h('span', { class: 'quiet' }, '→'), toInput,
    h('button', { type: 'submit' }, 'Diff'));
  const result = h('div', { class: 'ctx-result', id: 'ctx-result' });
  el.append(h('div', { class: 'panel-head' }, h('h3', {}, 'Active context'), h('span', { class: 'quiet small' }, 'what the next request sees, in request order')),
    atForm, diffForm, result);

  let mode = 'now';
  // Only the latest request may draw: a slow read must not replace a newer one.
  let latest = 0;
  atForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const seq = Number(atInput.value);
    if (seq > 0) showAt(seq); else showNow();
  });
  diffForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const from = Number(fromInput.value || 0);
    const to = Number(toInput.value || page.info?.head || 0);
    showDiff(from, to);
  });

  // The whole context, page after page, at one revision: a page at another
  // revision, or a cursor whose entry has left, means the context changed
  // meanwhile, and the read starts again (twice at most).
  async function readWhole(params) {
    for (let attempt = 1; ; attempt++) {
      let all = null;
      let after;
      try {
        for (;;) {
          const res = await call('session/context/read', { sessionId: page.id, ...params, after, limit: 1000 }, { signal: page.signal });
          if (all && res.revision !== all.revision) break;
          all = all || { revision: res.revision, entries: [] };
          all.entries.push(...res.entries);
          if (!res.cursor) return all;
          after = res.cursor;
        }
      } catch (err) {
        if (!(after && err.kind === 'invalid_params')) throw err;
      }
      if (attempt === 3) throw new Error('The context kept changing while it was read; try again.');
    }
  }

  async function read(params, heading) {
    const mine = ++latest;
    result.dataset.state = 'loading';
    try {
      const res = await readWhole(params);
      if (mine === latest) renderContext(res, heading);
    } catch (err) {
      if (!isAbort(err) && mine === latest) clear(result).append(errorBox(err, 'Could not read the context'));
    } finally {
      if (mine === latest) result.dataset.state = 'ready';
    }
  }

  function renderContext(res, heading) {
    const tokens = res.entries.reduce((n, e) => n + (e.tokenEstimate?.tokens || 0), 0);
    clear(result).append(
      h('p', { class: 'ctx-summary', id: 'ctx-summary' }, h('strong', {}, heading), ` · revision ${fmtInt(res.revision)} · ${fmtInt(res.entries.length)} entries · ≈${fmtInt(tokens)} tokens`),
      h('ol', { class: 'ctx-entries' }, res.entries.map((e, i) => h('li', { 'data-entry': e.entryId },
        h('div', { class: 'content-head' },
          h('span', { class: 'num quiet small ctx-index' }, String(i + 1)),
          h('span', { class: 'label' }, e.kind === 'message' ? e.role : e.kind.replace(/_/g, ' ')),
          e.toolName ? h('span', { class: 'tag mono' }, e.toolName) : null,
          e.key ? h('span', { class: 'tag mono' }, e.key) : null,
          h('span', { class: 'tag mono quiet' }, e.entryId),
          h('span', { class: 'spacer' }),
          h('span', { class: 'quiet small num', title: `token estimate (${e.tokenEstimate?.quality || 'unknown'})` }, `≈${fmtInt(e.tokenEstimate?.tokens || 0)} tok`),
          refLink(e.content.digest, e.content.mediaType)),
        e.preview ? h('div', { class: 'text preview' }, e.preview) : h('div', { class: 'media small' }, e.content.mediaType)))));
  }

  function showNow() {
    mode = 'now';
    return read({}, 'Now');
  }
  function showAt(seq) {
    mode = 'at';
    atInput.value = String(seq);
    if (!toInput.value) toInput.value = String(seq);
    return read({ atSeq: seq }, `After event ${fmtInt(seq)}`);
  }

  async function showDiff(from, to) {
    mode = 'diff';
    const mine = ++latest;
    result.dataset.state = 'loading';
    try {
      const d = await call('session/context/diff', { sessionId: page.id, fromSeq: from, toSeq: to }, { signal: page.signal });
      if (mine !== latest) return;
      const group = (name, sign, items) => h('section', { class: `diff-group diff-${name}`, 'data-diff': name },
        h('h4', {}, `${name} `, h('span', { class: 'quiet num' }, fmtInt(items.length))),
        items.length ? h('ul', {}, items.map((c) => h('li', { 'data-entry': c.entry.entryId },
          h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, sign),
          h('button', { type: 'button', class: 'link small num', title: 'Show this event in the transcript', onclick: () => page.jumpTo(c.seq) }, `#${c.seq}`), ' ',
          h('span', { class: 'label' }, c.entry.kind === 'message' ? c.entry.role : c.entry.kind.replace(/_/g, ' ')), ' ',
          c.entry.key ? h('span', { class: 'tag mono' }, c.entry.key) : null,
          h('span', { class: 'tag mono quiet' }, c.entry.entryId),
          c.by ? h('span', { class: 'quiet small' }, ` by ${c.by}`) : null,
          c.entry.preview ? h('div', { class: 'text preview' }, c.entry.preview) : null))) : h('p', { class: 'quiet small' }, 'none'));
      clear(result).append(
        h('p', { class: 'ctx-summary', id: 'ctx-summary' }, h('strong', {}, `Changes after event ${fmtInt(d.fromSeq)} through ${fmtInt(d.toSeq)}`)),
        group('added', '+', d.added), group('removed', '−', d.removed), group('superseded', '~', d.superseded));
    } catch (err) {
      if (!isAbort(err) && mine === latest) clear(result).append(errorBox(err, 'Could not diff the context'));
    } finally {
      if (mine === latest) result.dataset.state = 'ready';
    }
  }

  let started = false;
  let timer = 0;
  return {
    el,
    shown() { if (!started) { started = true; if (mode === 'now') showNow(); } },
    showAt(seq) { started = true; return showAt(seq); },
    events(evs, visible) {
      // Only "now" changes; a past seq or a diff is fixed history.
      if (!started || mode !== 'now' || !visible) return;
      if (!evs.some((e) => e.kind.startsWith('context.'))) return;
      clearTimeout(timer);
      timer = setTimeout(showNow, 250);
    },
  };
}

function cachePanel(page) {
  const el = h('section', { class: 'panel' });
  const content = h('div', { id: 'cache' });
  const pager = h('div', { class: 'pager' });
  el.append(h('div', { class: 'panel-head' }, h('h3', {}, 'Prompt cache'),
    h('span', { class: 'quiet small' }, 'per generation: what each request repeated from the previous one')), content, pager);
  let before = 0;
  let latest = 0;

  async function load() {
    const mine = ++latest;
    try {
      const r = await call('session/cache/report', { sessionId: page.id, before: before || undefined, limit: 40 }, { signal: page.signal });
      if (mine === latest) render(r);
    } catch (err) {
      if (!isAbort(err)) clear(content).append(errorBox(err, 'Could not read the cache report'));
    }
  }

  function render(r) {
    clear(content);
    clear(pager);
    if (!r.turns.length) {
      content.append(h('p', { class: 'quiet' }, 'No generations with request facts yet.'));
      return;
    }
    const broken = r.turns.some((t) => t.brokenBy);
    content.append(
      h('div', { class: 'legend small' },
        h('span', { class: 'key key-request' }, 'request bytes'),
        h('span', { class: 'key key-prefix' }, 'reused prefix bytes'),
        h('span', { class: 'key key-cached' }, 'provider-cached tokens (right axis)'),
        broken ? h('span', { class: 'key key-broken' }, 'prefix broken') : null),
      cacheChart(r.turns),
      h('div', { class: 'table-wrap' }, h('table', { class: 'table compact', id: 'cache-table' },
        h('thead', {}, h('tr', {},
          h('th', {}, 'Seq'), h('th', {}, 'Run · turn'), h('th', { class: 'num' }, 'Request'), h('th', { class: 'num' }, 'Prefix'),
          h('th', { class: 'num' }, 'Reused'), h('th', { class: 'num' }, 'Cached tok'))),
        h('tbody', {}, r.turns.map((t) => [h('tr', {
          'data-seq': t.seq, 'data-request-bytes': t.requestBytes, 'data-prefix-bytes': t.prefixBytes,
          'data-cached-tokens': t.providerCachedTokens ?? '',
        },
        h('td', { class: 'num' }, h('button', { type: 'button', class: 'link num', onclick: () => page.jumpTo(t.seq) }, String(t.seq))),
        h('td', { class: 'nowrap' }, h('span', { class: 'mono small', title: t.runId }, t.runId.slice(-6)), ` · ${t.turn}`),
        h('td', { class: 'num', title: `${fmtInt(t.requestBytes)} bytes` }, fmtInt(t.requestBytes)),
        h('td', { class: 'num', title: `${fmtInt(t.prefixBytes)} bytes in ${t.prefixSegments} segments` }, fmtInt(t.prefixBytes)),
        h('td', { class: 'num' }, fmtPercent(t.prefixFraction)),
        h('td', { class: 'num' }, t.providerCachedTokens === undefined ? '—' : fmtInt(t.providerCachedTokens))),
        // What broke the prefix gets a line of its own under its row.
        t.brokenBy ? h('tr', { class: 'broken-row' }, h('td', { colspan: 6 }, brokenBy(t.brokenBy, page))) : null])))),
      h('p', { class: 'quiet small' }, 'Request and prefix in bytes; reused is the prefix over the previous request’s segment bytes.'));
    if (r.cursor) pager.append(h('button', { type: 'button', class: 'ghost small', onclick: () => { before = r.cursor; load(); } }, '← Earlier generations'));
    if (before) pager.append(h('button', { type: 'button', class: 'ghost small', onclick: () => { before = 0; load(); } }, 'Latest'));
  }

  const l = lazy(load);
  return {
    el, shown: l.shown,
    events(evs, visible) { if (!before && evs.some((e) => e.kind === 'turn.generation_completed')) l.touch(visible); },
  };
}

function brokenBy(b, page) {
  const seg = b.segment || {};
  const what = [seg.previous ? 'the previous request’s' : null, seg.kind || 'segment', `#${seg.index ?? '?'}`, seg.key || seg.ref || null].filter(Boolean).join(' ');
  return h('span', { class: 'broken small' },
    h('span', { class: 'broken-sign', 'aria-hidden': 'true' }, '▼ '),
    `prefix broken at ${what}`,
    b.seq ? [' by ', h('button', { type: 'button', class: 'link num', onclick: () => page.jumpTo(b.seq) }, `#${b.seq}`), ' ', h('span', { class: 'mono' }, b.kind)]
      : h('span', { class: 'quiet' }, ': no event in the log explains it'));
}

function storagePanel(page) {
  const el = h('section', { class: 'panel' });
  const content = h('div', { id: 'storage' });
  el.append(h('div', { class: 'panel-head' }, h('h3', {}, 'Storage'),
    h('span', { class: 'quiet small' }, 'logical bytes (what sessions reference) against physical bytes (what is stored, each blob once)')), content);

  async function load() {
    // The universe's totals come with a listing only; one row is enough.
    const [mine, all] = await callMany([['storage/report', { sessionId: page.id }], ['storage/report', { limit: 1 }]], { signal: page.signal })
      .catch((err) => [{ error: err }, { error: err }]);
    if (page.signal.aborted) return;
    const err = mine.error;
    if (err && (err.code === METHOD_NOT_FOUND || err.kind === 'method_not_found')) {
      clear(content).append(h('p', { class: 'quiet', id: 'storage-unavailable' }, 'The storage report is not available on this server.'));
      content.dataset.state = 'unavailable';
      return;
    }
    if (err) {
      clear(content).append(errorBox(err, 'Could not read the storage report'));
      content.dataset.state = 'error';
      return;
    }
    const session = mine.result.sessions?.[0];
    const universe = all.result?.universe;
    append(clear(content), session ? [sessionUsage(session), universe ? universeUsage(universe, session) : null] : facts(mine.result, 0));
    content.dataset.state = 'ready';
  }
  const l = lazy(load);
  return { el, shown: l.shown };
}

function storageNote(u, saved) {
  if (saved !== null && saved > 0) return `Content addressing stores ${fmtPercent(saved)} fewer bytes than the sessions reference.`;
  if (u.physicalBytes > u.logicalBytes) {
    return `The store holds ${fmtBytes(u.physicalBytes - u.logicalBytes)} more than the sessions reference: checkpoints, workspaces, and blobs no session roots (the collector’s to judge).`;
  }
  return 'The store holds exactly what the sessions reference.';
}

function fact(key, label, value, note) {
  return h('div', { class: 'fact', 'data-fact': key, 'data-value': value },
    h('dt', {}, label),
    h('dd', { title: `${fmtInt(value)}${/bytes/i.test(key) ? ' bytes' : ''}` }, /bytes/i.test(key) ? fmtBytes(value) : fmtInt(value)),
    note ? h('dd', { class: 'quiet small' }, note) : null);
}

function sessionUsage(u) {
  const own = (u.logicalBytes || 0) - (u.sharedBytes || 0);
  return h('section', { class: 'facts-block' },
    h('h4', {}, 'This session'),
    h('dl', { class: 'facts' },
      fact('logicalBytes', 'logical', u.logicalBytes, plural(u.roots, 'distinct blob')),
      fact('ownBytes', 'only here', own, 'deleting the session could free at most this'),
      fact('sharedBytes', 'shared', u.sharedBytes, `${plural(u.sharedRoots, 'blob')} other sessions root too`),
      fact('checkpointBytes', 'checkpoints', u.checkpointBytes, plural(u.checkpoints, 'reducer checkpoint')),
      fact('eventBytes', 'events', u.eventBytes, `${plural(u.events, 'event')} of its own log`)));
}

function universeUsage(u, session) {
  const saved = u.logicalBytes > 0 ? 1 - u.physicalBytes / u.logicalBytes : null;
  const max = Math.max(u.logicalBytes, u.physicalBytes, 1);
  const bar = (cls, label, v) => h('div', { class: 'ubar' },
    h('span', { class: 'ubar-label small' }, label),
    h('span', { class: 'ubar-track' }, h('span', { class: `ubar-fill ${cls}`, 'data-width': (v / max).toFixed(4) })),
    h('span', { class: 'num small' }, fmtBytes(v)));
  const block = h('section', { class: 'facts-block universe' },
    h('h4', {}, 'The whole universe'),
    bar('fill-logical', 'logical', u.logicalBytes),
    bar('fill-physical', 'physical', u.physicalBytes),
    bar('fill-session', 'this session', session.logicalBytes),
    h('p', { class: 'quiet small' }, storageNote(u, saved)),
    h('dl', { class: 'facts' },
      fact('sessions', 'sessions', u.sessions),
      fact('blobs', 'blobs', u.blobs),
      fact('inlineBytes', 'inline', u.inlineBytes, `${plural(u.inlineBlobs, 'blob')} in the catalog`),
      fact('objectBytes', 'object storage', u.objectBytes, plural(u.objectBlobs, 'blob')),
      fact('checkpointBytes', 'checkpoints', u.checkpointBytes, plural(u.checkpoints, 'checkpoint')),
      fact('eventBytes', 'events', u.eventBytes, plural(u.events, 'event'))));
  // Widths go through CSSOM: the page's policy forbids style attributes.
  for (const f of block.querySelectorAll('.ubar-fill')) f.style.width = `${Number(f.dataset.width) * 100}%`;
  return block;
}

const isBytesKey = (k) => /bytes$/i.test(k) || /^bytes/i.test(k) || /size$/i.test(k);

// facts renders a report whose exact shape this page does not assume:
// numbers (bytes humanised, with the exact figure), nested objects as
// sections, lists of objects as tables.
function facts(value, depth) {
  if (value === null || typeof value !== 'object') return h('span', { class: 'mono' }, String(value));
  if (Array.isArray(value)) {
    if (!value.length) return h('span', { class: 'quiet' }, 'none');
    if (value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const cols = [...new Set(value.flatMap((v) => Object.keys(v)))];
      return h('div', { class: 'table-wrap' }, h('table', { class: 'table compact' },
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', {}, c)))),
        h('tbody', {}, value.map((v) => h('tr', {}, cols.map((c) => h('td', { class: typeof v[c] === 'number' ? 'num' : '' }, cell(c, v[c]))))))));
    }
    return h('span', { class: 'mono' }, value.map(String).join(', '));
  }
  const dl = h('dl', { class: 'facts' });
  const nested = [];
  for (const [k, v] of Object.entries(value)) {
    if (v && typeof v === 'object') nested.push([k, v]);
    else dl.append(h('div', { class: 'fact', 'data-fact': k }, h('dt', {}, k), h('dd', {}, cell(k, v))));
  }
  const ratio = physicalShare(value);
  return h('div', { class: 'facts-block' }, dl,
    ratio !== null ? h('p', { class: 'quiet small' }, `physical is ${fmtPercent(ratio)} of logical`) : null,
    nested.map(([k, v]) => h('section', { class: 'facts-nested' }, h(depth ? 'h5' : 'h4', {}, k), facts(v, depth + 1))));
}

function cell(key, v) {
  if (typeof v === 'number' && isBytesKey(key)) return h('span', { class: 'num', title: `${fmtInt(v)} bytes` }, fmtBytes(v));
  if (typeof v === 'number') return h('span', { class: 'num' }, fmtInt(v));
  if (v && typeof v === 'object') return h('span', { class: 'mono small' }, JSON.stringify(v));
  return String(v ?? '—');
}

function physicalShare(obj) {
  const find = (re) => Object.entries(obj).find(([k, v]) => re.test(k) && typeof v === 'number');
  const logical = find(/^logical/i);
  const physical = find(/^physical/i);
  return logical && physical && logical[1] > 0 ? physical[1] / logical[1] : null;
}

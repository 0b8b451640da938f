// The transcript pane: the latest page of session/transcript/read, older
// pages on demand (button or keys), and a live follow that long-polls
// session/events/read and appends what it finds.
//
// By default it reads as a conversation: one block per message as it
// entered context, each tool call with its result folded under it, and
// the bookkeeping (run and turn events, the run's input and output, which
// repeat what context shows) hidden. "All events" shows every event.
// Both are the same rows, shown or hidden, so paging and the live follow
// work alike.
//
// Nothing above the newest row moves while following: rows are only
// appended below, or prepended with the scroll position compensated; the
// slots above and below the rows have fixed heights; the "new events" pill
// floats over the pane instead of taking space in it.

import { call, isAbort, streamDeltas } from './rpc.js';
import { h, fmtInt, fmtBytes, fmtClock, fmtTime, refLink, blobHref, statusBadge, errorBox, jsonTree, sleep } from './dom.js';

const PAGE_SIZE = 50;
const CATCH_UP_SIZE = 200;
const WAIT_MS = 20000;

const kbd = (k) => h('kbd', {}, k);

export function createTranscript(page, mount) {
  const signal = page.signal;
  const followBox = h('input', { type: 'checkbox', id: 'follow', checked: true });
  const allBox = h('input', { type: 'checkbox', id: 'all-events', checked: page.query?.get('events') === 'all' });
  const count = h('span', { class: 'quiet small num', id: 'transcript-count' });
  mount.append(
    h('div', { class: 'pane-head' },
      h('h2', {}, 'Transcript'), count, h('span', { class: 'spacer' }),
      h('label', { class: 'toggle small', title: 'Show every event, bookkeeping too, instead of the conversation' }, allBox, 'All events'),
      h('label', { class: 'toggle small', title: 'Long-poll for new events (f)' }, followBox, 'Follow live')),
    h('p', { class: 'keys small quiet', id: 'transcript-keys' },
      kbd('k'), ' or ', kbd('PgUp'), ' older · ', kbd('j'), ' or ', kbd('PgDn'), ' newer · ',
      kbd('End'), ' latest · ', kbd('f'), ' follow on/off · click a seq for the context after it'));
  const olderBtn = h('button', { type: 'button', class: 'ghost small', id: 'older' }, 'Load older events');
  const olderSlot = h('div', { class: 'older-slot' }); // filled once the first page says whether there is more
  const list = h('ol', { class: ['events', !allBox.checked && 'conversation'], id: 'events' });
  allBox.addEventListener('change', () => {
    list.classList.toggle('conversation', !allBox.checked);
    const url = new URL(location.href);
    if (allBox.checked) url.searchParams.set('events', 'all'); else url.searchParams.delete('events');
    history.replaceState(null, '', url.pathname + url.search);
  });
  const liveText = h('span', { class: 'live-text' }, 'Loading…');
  const live = h('div', { class: 'live-slot', id: 'live', 'data-state': 'idle' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), liveText);
  const scroller = h('div', { class: 'transcript-scroll', id: 'transcript', tabindex: '0', 'aria-label': 'Transcript events' }, olderSlot, list, live);
  const pill = h('button', { type: 'button', class: 'new-pill', id: 'new-events', hidden: true });
  mount.append(h('div', { class: 'scroll-wrap' }, scroller, pill));

  const payloads = new Map(); // seq → payload, for the raw view
  let cursor = 0; // before of the next older page; 0 once seq 1 is shown
  let last = 0; // the newest seq shown
  let first = 0; // the oldest seq shown
  let pages = 0;
  let unseen = 0;
  let older = null; // the older page being read
  let followCtl = null;

  function setLive(state, text) {
    live.dataset.state = state;
    liveText.textContent = text;
  }

  function updateCount() {
    count.textContent = first ? `events ${fmtInt(first)}–${fmtInt(last)} of ${fmtInt(last)}` : '';
    list.dataset.pages = String(pages);
  }

  function updateOlder() {
    olderSlot.replaceChildren(cursor
      ? olderBtn
      : h('span', { class: 'quiet small', id: 'transcript-start' }, 'Start of session'));
    olderBtn.disabled = !!older;
    olderBtn.textContent = older ? 'Loading…' : 'Load older events';
  }

  const atBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 32;
  const toBottom = () => { scroller.scrollTop = scroller.scrollHeight; };

  function rows(events) {
    const frag = document.createDocumentFragment();
    for (const ev of events) {
      payloads.set(ev.seq, ev.payload);
      frag.append(renderEvent(ev, page));
    }
    return frag;
  }

  // foldResults puts each tool result shown so far under its call, once
  // the call is on the page too (an older page may bring it later).
  function foldResults() {
    // A sub-agent's session, linked from its call's event, is linked from
    // the call's entry too, which is what the conversation shows.
    for (const a of list.querySelectorAll('a.child-session:not([data-copied])')) {
      const callBlock = list.querySelector(`.content[data-entry-kind="tool_call"][data-call-id="${CSS.escape(a.dataset.callId || '')}"] .content-head`);
      if (!callBlock) continue;
      a.dataset.copied = '1';
      const copy = a.cloneNode(true);
      copy.removeAttribute('data-copied');
      copy.classList.replace('child-session', 'child-session-link');
      callBlock.append(copy);
    }
    for (const res of list.querySelectorAll('.content[data-entry-kind="tool_result"]:not(.folded)')) {
      const id = res.dataset.callId;
      const callBlock = id && list.querySelector(`.content[data-entry-kind="tool_call"][data-call-id="${CSS.escape(id)}"]`);
      if (!callBlock) continue;
      const copy = res.cloneNode(true);
      copy.removeAttribute('data-entry-kind');
      callBlock.append(h('details', { class: 'folded-result', 'data-call-id': id },
        h('summary', {}, 'result', h('span', { class: 'quiet' }, ` · ${firstLine(res.querySelector('.text')?.textContent || '')}`)), copy));
      res.classList.add('folded');
      const li = res.closest('li.ev');
      if (li && !li.querySelector('.content[data-entry-kind]:not(.folded):not([data-empty]):not([data-entry-kind="catalog"])')) li.removeAttribute('data-conv');
    }
  }

  let markReady;
  const ready = new Promise((resolve) => { markReady = resolve; });

  async function init() {
    try {
      const res = await call('session/transcript/read', { sessionId: page.id, limit: PAGE_SIZE }, { signal });
      performance.mark('cairn:transcript-response');
      list.append(rows(res.events));
      foldResults();
      performance.mark('cairn:transcript-rows');
      pages = 1;
      cursor = res.cursor || 0;
      first = res.events.length ? res.events[0].seq : 0;
      last = Math.max(res.head || 0, res.events.length ? res.events[res.events.length - 1].seq : 0);
      updateOlder();
      updateCount();
      toBottom();
      list.dataset.ready = '1';
      performance.mark('cairn:transcript-first-page');
      setFollow(!document.hidden, 'Paused while the tab is hidden');
    } catch (err) {
      if (isAbort(err)) return;
      setLive('error', 'Not following');
      list.append(h('li', { class: 'ev-error' }, errorBox(err, 'Could not read the transcript')));
    } finally {
      markReady();
    }
  }

  function loadOlder() {
    if (!cursor || older) return older;
    older = (async () => {
      try {
        const res = await call('session/transcript/read', { sessionId: page.id, before: cursor, limit: PAGE_SIZE }, { signal });
        const height = scroller.scrollHeight;
        const top = scroller.scrollTop;
        list.prepend(rows(res.events));
        foldResults();
        // Keep the rows the reader was looking at where they were.
        scroller.scrollTop = top + (scroller.scrollHeight - height);
        cursor = res.cursor || 0;
        if (res.events.length) first = res.events[0].seq;
        pages++;
      } catch (err) {
        if (!isAbort(err)) olderSlot.replaceChildren(errorBox(err, 'Could not read older events'));
        throw err;
      } finally {
        older = null;
        if (!signal.aborted) { updateOlder(); updateCount(); }
      }
    })();
    older.catch(() => {});
    olderBtn.disabled = true;
    olderBtn.textContent = 'Loading…';
    return older;
  }
  olderBtn.addEventListener('click', () => loadOlder());

  function addLive(events) {
    const fresh = events.filter((ev) => ev.seq > last);
    if (!fresh.length) return;
    // The answer being streamed is committed now (or its run ended).
    const ends = ['turn.generation_completed', 'run.completed', 'run.failed', 'run.cancelled'];
    if (streamingRow && fresh.some((ev) => ends.includes(ev.kind))) {
      streamingRow.remove();
      streamingRow = null;
    }
    const stick = atBottom();
    list.append(rows(fresh));
    foldResults();
    last = fresh[fresh.length - 1].seq;
    if (!first) first = fresh[0].seq;
    updateCount();
    if (stick) {
      toBottom();
    } else {
      unseen += fresh.length;
      pill.textContent = `${fmtInt(unseen)} new ${unseen === 1 ? 'event' : 'events'} ↓`;
      pill.hidden = false;
    }
    page.emit(fresh);
  }

  function seen() {
    unseen = 0;
    pill.hidden = true;
  }
  pill.addEventListener('click', () => { toBottom(); seen(); });
  scroller.addEventListener('scroll', () => { if (!pill.hidden && atBottom()) seen(); }, { passive: true });

  // catchUp reads, with displays, everything after the newest row.
  async function catchUp(fsig) {
    for (;;) {
      const res = await call('session/transcript/read', { sessionId: page.id, after: last, limit: CATCH_UP_SIZE }, { signal: fsig });
      addLive(res.events);
      if (res.events.length < CATCH_UP_SIZE || last >= (res.head || 0)) return;
    }
  }

  // The follow waits on session/events/read (cheap, no displays) and then
  // reads the new events through the transcript, so live rows look exactly
  // like paged ones.
  async function followLoop(fsig) {
    let failures = 0;
    while (!fsig.aborted) {
      try {
        setLive('live', `Following · up to date at event ${fmtInt(last)}`);
        const r = await call('session/events/read', { sessionId: page.id, after: last, limit: 1, waitMs: WAIT_MS }, { signal: fsig });
        if (r.head > last) await catchUp(fsig);
        failures = 0;
      } catch (err) {
        if (isAbort(err) || fsig.aborted) return;
        failures++;
        setLive('error', `Connection problem: ${err.message}. Retrying…`);
        try { await sleep(Math.min(8000, 250 * 2 ** failures), fsig); } catch { return; }
      }
    }
  }

  // The answer being streamed, shown in place below the newest row as its
  // pieces arrive; it goes once its answer is committed.
  let streamingRow = null;
  function showDelta(d) {
    if (d.kind !== 'text') return;
    if (!streamingRow || streamingRow.dataset.run !== d.runId || streamingRow.dataset.turn !== String(d.turn)) {
      streamingRow?.remove();
      streamingRow = h('li', { class: 'ev streaming', 'data-run': d.runId, 'data-turn': String(d.turn) },
        h('div', { class: 'content' }, h('span', { class: 'label' }, 'answer, streaming'), h('pre', { class: 'text' }, '')));
      list.append(streamingRow);
    }
    const stick = atBottom();
    streamingRow.querySelector('pre').textContent += d.text;
    if (stick) toBottom();
  }
  async function deltaLoop(fsig) {
    while (!fsig.aborted) {
      try {
        await streamDeltas(page.id, last, showDelta, { signal: fsig });
      } catch (err) {
        if (isAbort(err) || fsig.aborted) return;
      }
      try { await sleep(2000, fsig); } catch { return; }
    }
  }

  function setFollow(on, note = 'Paused: new events are not fetched') {
    if (on && !followCtl) {
      followCtl = new AbortController();
      followLoop(followCtl.signal);
      deltaLoop(followCtl.signal);
    } else if (!on && followCtl) {
      followCtl.abort();
      followCtl = null;
      setLive('paused', note);
    }
  }
  followBox.addEventListener('change', () => setFollow(followBox.checked && !document.hidden));
  signal.addEventListener('abort', () => followCtl?.abort());
  // A hidden tab stops polling and catches up when shown again: each poll
  // holds one of the few connections a browser opens to a server.
  const onVisibility = () => {
    if (!list.dataset.ready) return;
    setFollow(followBox.checked && !document.hidden, 'Paused while the tab is hidden');
  };
  document.addEventListener('visibilitychange', onVisibility);
  signal.addEventListener('abort', () => document.removeEventListener('visibilitychange', onVisibility));

  function pageUp() {
    if (scroller.scrollTop <= 1) loadOlder();
    else scroller.scrollTop -= Math.max(40, scroller.clientHeight * 0.85);
  }
  function pageDown() {
    scroller.scrollTop += Math.max(40, scroller.clientHeight * 0.85);
  }

  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t instanceof Element && t.closest('input, textarea, select, [contenteditable], dialog')) return;
    const inSide = t instanceof Element && t.closest('.side-pane');
    switch (e.key) {
      case 'k': pageUp(); break;
      case 'j': pageDown(); break;
      case 'PageUp': if (inSide) return; pageUp(); break;
      case 'PageDown': if (inSide) return; pageDown(); break;
      case 'End': if (inSide) return; toBottom(); seen(); break;
      case 'Home': if (inSide) return; scroller.scrollTop = 0; break;
      case 'f': followBox.checked = !followBox.checked; setFollow(followBox.checked && !document.hidden); break;
      default: return;
    }
    e.preventDefault();
  }
  document.addEventListener('keydown', onKey);
  signal.addEventListener('abort', () => document.removeEventListener('keydown', onKey));

  // The raw payload opens under its row on demand.
  list.addEventListener('click', (e) => {
    const btn = e.target.closest('button.raw-toggle');
    if (!btn) return;
    const li = btn.closest('li.ev');
    let raw = li.querySelector(':scope .raw');
    if (!raw) {
      raw = h('div', { class: 'raw' }, jsonTree(payloads.get(Number(li.dataset.seq)), 1));
      li.querySelector('.ev-main').append(raw);
    } else {
      raw.hidden = !raw.hidden;
    }
    btn.setAttribute('aria-expanded', String(!raw.hidden));
  });

  init();

  return {
    // ready settles once the first page is shown (or could not be read).
    ready,
    // jumpTo shows the row of seq, reading older pages until it is loaded.
    async jumpTo(seq) {
      try {
        for (let i = 0; i < 1000 && first > seq && cursor; i++) await loadOlder();
      } catch {
        return; // the older page's slot shows the error
      }
      const li = list.querySelector(`li[data-seq="${seq}"]`);
      if (!li) return;
      li.scrollIntoView({ block: 'center' });
      li.classList.remove('flash');
      void li.offsetWidth; // restart the highlight
      li.classList.add('flash');
    },
  };
}

const CATEGORY = { run: 'run', turn: 'turn', tools: 'tool', context: 'ctx', compaction: 'ctx', session: 'session' };

// CONVERSATION are the displays the conversation shows: what entered
// context, and what happened to the conversation (failures, approvals,
// cancellation, warnings, compaction). The others repeat context (a run's
// input and output, a call and its result as tool events) or are
// bookkeeping.
const CONVERSATION = new Set(['entries', 'compacted', 'removed', 'failure', 'warning', 'approval_requested', 'approval_decided', 'tool_awaiting', 'cancelled']);

function firstLine(s) {
  const line = s.trim().split('\n')[0];
  return line.length > 80 ? line.slice(0, 79) + '…' : line;
}

// inConversation says whether an event's row shows in the conversation:
// entries only when one is more than a catalog or an empty message.
function inConversation(ev) {
  const d = ev.display;
  if (!d || !CONVERSATION.has(d.kind)) return false;
  if (d.kind === 'entries') return (d.entries || []).some((e) => e.kind !== 'catalog' && e.text !== '');
  return true;
}

function joinTags(joins) {
  const out = [];
  for (const j of joins || []) {
    const [kind, rest] = j.split(/:(.*)/s);
    if (kind === 'run') out.push(h('span', { class: 'tag mono', title: j }, rest));
    else if (kind === 'turn') out.push(h('span', { class: 'tag', title: j }, `turn ${rest.split('/').pop()}`));
    else if (kind === 'call') out.push(h('span', { class: 'tag mono', title: j }, rest));
  }
  return out;
}

export function renderEvent(ev, page) {
  const category = CATEGORY[ev.kind.split('.')[0]] || 'other';
  const body = ev.display ? displayBody(ev.display) : quietSummary(ev);
  const seq = h('button', { type: 'button', class: 'seq num', title: `Event ${ev.seq}: show the context after it` }, String(ev.seq));
  seq.addEventListener('click', () => page.showContextAt(ev.seq));
  return h('li', { class: ['ev', `cat-${category}`, !ev.display && 'ev-quiet'], 'data-seq': ev.seq, 'data-kind': ev.kind, 'data-conv': inConversation(ev) ? '1' : null },
    h('div', { class: 'ev-gutter' }, seq),
    h('div', { class: 'ev-main' },
      h('div', { class: 'ev-meta' },
        h('span', { class: 'ev-kind' }, ev.kind),
        joinTags(ev.joins),
        ev.display ? null : body,
        h('span', { class: 'spacer' }),
        h('time', { class: 'num', datetime: new Date(ev.observedAtMs).toISOString(), title: fmtTime(ev.observedAtMs) }, fmtClock(ev.observedAtMs)),
        h('button', { type: 'button', class: 'raw-toggle', title: 'Show the stored payload', 'aria-expanded': 'false' }, '{ }')),
      ev.display ? h('div', { class: 'ev-body' }, body) : null));
}

// quietSummary is the one line shown for bookkeeping events.
function quietSummary(ev) {
  const p = ev.payload || {};
  const parts = [];
  switch (ev.kind) {
    case 'session.opened':
      parts.push(`model ${p.config?.model?.model || '?'}`);
      break;
    case 'session.closed':
      if (p.reason) parts.push(p.reason);
      break;
    case 'turn.planned':
      if (p.contextRevision !== undefined) parts.push(`context revision ${fmtInt(p.contextRevision)}`);
      break;
    case 'turn.generation_completed': {
      if (p.finish) parts.push(`finish ${p.finish}`);
      if (p.cache?.requestBytes) parts.push(`request ${fmtBytes(p.cache.requestBytes)}`);
      const u = p.usage || {};
      if (u.inputTokens) parts.push(`in ${fmtInt(u.inputTokens)} tok`);
      if (u.outputTokens) parts.push(`out ${fmtInt(u.outputTokens)} tok`);
      if (u.cachedInputTokens) parts.push(`cached ${fmtInt(u.cachedInputTokens)} tok`);
      break;
    }
  }
  return parts.length ? h('span', { class: 'ev-facts' }, parts.join(' · ')) : null;
}

function mediaName(mt) {
  return (mt || 'application/octet-stream').split(';')[0];
}

// contentBlock shows stored content: its full text, a bounded preview, or,
// for media, a link; always with the ref of the exact bytes.
function contentBlock(c, label, extras) {
  let body;
  if (c.text !== undefined && c.text !== null) {
    body = c.text === '' ? h('div', { class: 'text quiet' }, '(no text)') : h('div', { class: 'text' }, c.text);
  } else if (c.preview) {
    body = h('div', { class: 'text preview' }, c.preview, h('a', { class: 'cut', href: blobHref(c.ref.digest, c.ref.mediaType), title: 'A bounded preview: open the full bytes' }, ' …full'));
  } else {
    body = h('div', { class: 'media' }, h('a', { href: blobHref(c.ref.digest, c.ref.mediaType) }, `${mediaName(c.ref.mediaType)} · open`));
  }
  return h('div', { class: 'content', 'data-role': label || '' },
    h('div', { class: 'content-head' },
      label ? h('span', { class: 'label' }, label) : null,
      c.refusal ? h('span', { class: 'label refusal', title: 'The model refused: this text is its refusal' }, 'refusal') : null,
      extras,
      h('span', { class: 'spacer' }),
      refLink(c.ref.digest, c.ref.mediaType)),
    body);
}

function entryLabel(e) {
  if (e.kind === 'message') return e.role || 'message';
  return e.kind.replace(/_/g, ' ');
}

function entryBlock(e) {
  const extras = [
    e.toolName ? h('span', { class: 'tag mono' }, e.toolName) : null,
    e.key ? h('span', { class: 'tag mono', title: 'key' }, e.key) : null,
    h('span', { class: 'tag mono quiet', title: `entry ${e.entryId}${e.source ? ' · source ' + e.source : ''}` }, e.entryId),
  ];
  const block = contentBlock(e, entryLabel(e), extras);
  block.dataset.entryKind = e.kind;
  // An assistant message with no text (a turn that only called tools) is
  // nothing to read in a conversation.
  if (e.text === '') block.dataset.empty = '1';
  if (e.callId) block.dataset.callId = e.callId;
  return block;
}

function displayBody(d) {
  switch (d.kind) {
    case 'entries':
      return (d.entries || []).map(entryBlock);
    case 'input':
      return (d.input || []).map((c) => contentBlock(c, 'run input'));
    case 'steering':
      return (d.input || []).map((c) => contentBlock(c, 'steering', [h('span', { class: 'tag mono' }, d.steeringId)]));
    case 'tool_call': {
      const child = d.childSessionId ? h('a', { class: 'tag mono child-session', 'data-call-id': d.callId, href: `/sessions/${encodeURIComponent(d.childSessionId)}`, title: 'the sub-agent\'s session' }, 'sub-agent session') : null;
      return d.content ? contentBlock(d.content, 'tool call', [h('span', { class: 'tag mono' }, d.name), h('span', { class: 'tag mono quiet' }, d.callId), child]) : h('span', {}, d.name, child ? [' ', child] : null);
    }
    case 'approval_requested':
      return h('div', {}, 'Waiting for approval to run ', h('span', { class: 'tag mono' }, d.name), ' ', h('span', { class: 'tag mono quiet' }, d.callId), '.');
    case 'approval_decided':
      return h('div', {}, d.status === 'approved' ? 'Approved ' : 'Denied ', h('span', { class: 'tag mono quiet' }, d.callId), d.reason ? `: ${d.reason}` : '.');
    case 'tool_awaiting':
      return h('div', {}, 'Waiting for the client to run ', h('span', { class: 'tag mono' }, d.name), ' ', h('span', { class: 'tag mono quiet' }, d.callId), '.');
    case 'tool_result':
      return d.content ? contentBlock(d.content, 'tool result', [statusBadge(d.status), h('span', { class: 'tag mono quiet' }, d.callId)]) : statusBadge(d.status);
    case 'output':
      return d.content ? contentBlock(d.content, 'output') : h('span', { class: 'quiet' }, 'Run completed without output.');
    case 'failure':
      return h('div', { class: 'failure' }, h('strong', {}, d.failure?.kind || 'failed'), ': ', d.failure?.message || '',
        d.failure?.ref ? [' ', refLink(d.failure.ref.digest, d.failure.ref.mediaType)] : null);
    case 'cancel_requested':
      return h('div', {}, 'Cancel requested', d.reason ? `: ${d.reason}` : '.');
    case 'cancelled':
      return h('div', {}, 'Run cancelled.');
    case 'warning':
      return h('div', { class: 'failure' }, h('strong', {}, 'Warning'), ` (${d.source || 'session'}): `, d.message || '');
    case 'compaction_requested':
      return h('div', {}, `Compaction requested (${d.trigger || 'manual'}): ${fmtInt(d.count)} entries, ≈${fmtInt(d.estimatedTokens)} tokens.`);
    case 'compacted':
      return [h('div', {}, `Compacted ${fmtInt(d.count)} entries (${d.trigger || 'manual'}); replaced by:`), (d.entries || []).map(entryBlock)];
    case 'removed':
      return h('div', {}, `Removed ${fmtInt(d.count)}: `, h('span', { class: 'mono' }, (d.removedKeys || d.removedEntryIds || []).join(', ')));
    default:
      return h('span', { class: 'quiet' }, d.kind);
  }
}

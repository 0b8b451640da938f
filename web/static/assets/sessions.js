// The sessions page: newest first, keyset-paged with session/list's cursor;
// each session with its title (the start of its first message) and marks for
// history forks and sub-agents; a search by id or title.

import { call, callMany, isAbort } from './rpc.js';
import { h, clear, fmtInt, fmtBytes, fmtAgo, fmtTime, statusBadge, errorBox } from './dom.js';

const PAGE_SIZE = 25;
// A search filters each page of session/list; it reads at most this many
// pages of the largest size for one page of matches.
const SEARCH_PAGES = 5;

export function sessionsPage(ctx) {
  const before = ctx.query.get('before') || '';
  const q = (ctx.query.get('q') || '').trim();
  ctx.setCrumbs([{ label: 'Sessions' }]);
  const search = h('input', { type: 'search', id: 'session-search', name: 'q', value: q, placeholder: 'Search by id or first message', 'aria-label': 'Search sessions by id or first message' });
  const form = h('form', { class: 'session-search', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    const v = search.value.trim();
    ctx.navigate(v ? `/?q=${encodeURIComponent(v)}` : '/');
  } }, search, h('button', { type: 'submit', class: 'ghost' }, 'Search'));
  const body = h('tbody');
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const refresh = h('button', { type: 'button', class: 'ghost', onclick: () => load() }, 'Refresh');
  ctx.root.append(h('section', { class: 'page sessions-page' },
    h('div', { class: 'page-head' },
      h('h1', {}, 'Sessions'),
      h('p', { class: 'quiet' }, q ? `Sessions whose id or first message contains “${q}”, newest first.` : before ? 'Older sessions, newest first.' : 'Newest first. Open one to read its transcript, context, runs and prompt-cache report.'),
      h('div', { class: 'spacer' }), form, refresh),
    h('div', { class: 'table-wrap' },
      h('table', { class: 'table sessions', id: 'sessions' },
        h('thead', {}, h('tr', {},
          h('th', {}, 'Session'), h('th', {}, 'Status'), h('th', {}, 'Model'),
          h('th', {}, 'Last activity'), h('th', { class: 'num' }, 'Size'), h('th', {}, 'Last run'), h('th', {}, 'Created'))),
        body)),
    status, pager));

  async function load() {
    status.textContent = 'Loading…';
    try {
      render(q ? await find() : await call('session/list', { before: before || undefined, limit: PAGE_SIZE }, { signal: ctx.signal }));
      status.textContent = '';
    } catch (err) {
      if (isAbort(err)) return;
      clear(status).append(errorBox(err, 'Could not list sessions'));
    }
  }

  // find gathers a page of matches, reading pages until it has one.
  async function find() {
    const out = { sessions: [], cursor: before || undefined };
    for (let i = 0; i < SEARCH_PAGES && out.sessions.length < PAGE_SIZE; i++) {
      const res = await call('session/list', { before: out.cursor, limit: 1000, query: q }, { signal: ctx.signal });
      out.sessions.push(...res.sessions);
      out.cursor = res.cursor;
      if (!res.cursor) break;
    }
    return out;
  }

  function render(res) {
    clear(body);
    const now = Date.now();
    for (const s of res.sessions) {
      body.append(h('tr', { 'data-session': s.sessionId },
        h('td', { class: 'session-cell' },
          h('a', { class: 'mono', href: `/sessions/${encodeURIComponent(s.sessionId)}` }, s.sessionId),
          marks(s),
          s.title ? h('div', { class: 'session-title', title: s.title }, s.title) : h('div', { class: 'session-title quiet' }, 'no message yet')),
        h('td', { class: 'nowrap' }, statusBadge(s.status),
          s.activeRunId ? [' ', statusBadge('running')] : null,
          s.queuedRuns ? h('span', { class: 'quiet small' }, ` +${s.queuedRuns} queued`) : null,
          s.compactionPending ? h('span', { class: 'quiet small' }, ' compacting') : null),
        h('td', {}, h('span', { class: 'mono' }, s.model?.model || '—'), h('span', { class: 'quiet small' }, s.model?.providerId ? ` · ${s.model.providerId}` : '')),
        h('td', { class: 'nowrap', title: fmtTime(s.updatedAtMs) }, fmtAgo(s.updatedAtMs, now)),
        h('td', { class: 'num nowrap size' }, h('div', { class: 'events-count', title: `head: event ${fmtInt(s.head)}` }, `${fmtInt(s.head)} ${s.head === 1 ? 'event' : 'events'}`),
          h('div', { class: 'quiet small bytes' })),
        h('td', {}, s.lastRunStatus ? statusBadge(s.lastRunStatus) : h('span', { class: 'quiet' }, '—')),
        h('td', { class: 'nowrap quiet' }, fmtTime(s.createdAtMs))));
    }
    if (res.sessions.length === 0) {
      body.append(h('tr', {}, h('td', { colspan: 7, class: 'empty' },
        q ? `No session's id or first message contains “${q}”${res.cursor ? ' in the sessions read so far' : ''}.`
          : before ? 'No older sessions.' : h('span', {}, 'No sessions yet. Start one with ', h('code', {}, 'cairn chat "…"'), ' or session/create.'))));
    }
    sizes(res.sessions);
    clear(pager);
    const query = q ? `q=${encodeURIComponent(q)}&` : '';
    if (before) pager.append(h('a', { href: q ? `/?q=${encodeURIComponent(q)}` : '/', class: 'button ghost' }, '← Newest'));
    if (res.cursor) pager.append(h('a', { href: `/?${query}before=${encodeURIComponent(res.cursor)}`, class: 'button ghost', rel: 'next' }, q ? 'Older matches →' : 'Older →'));
  }

  // marks say where a session comes from: a history fork of another at a
  // seq, or a sub-agent's session started by another's run.
  function marks(s) {
    const out = [];
    const link = (id) => h('a', { class: 'mono', href: `/sessions/${encodeURIComponent(id)}` }, id);
    if (s.forkOf && s.forkOf.sessionId) out.push(h('span', { class: 'mark mark-fork', title: `history fork of ${s.forkOf.sessionId} after seq ${s.forkOf.atSeq}` }, 'fork of ', link(s.forkOf.sessionId), ` @ ${s.forkOf.atSeq}`));
    if (s.parent && s.parent.sessionId) out.push(h('span', { class: 'mark mark-child', title: `sub-agent session of ${s.parent.sessionId} (run ${s.parent.runId})` }, 'sub-agent of ', link(s.parent.sessionId)));
    return out.length ? h('div', { class: 'marks' }, ...out) : null;
  }

  // sizes adds each session's logical bytes from storage/report, in one
  // batch; a server without the method keeps the event counts alone.
  async function sizes(sessions) {
    let answers;
    try {
      answers = await callMany(sessions.map((s) => ['storage/report', { sessionId: s.sessionId }]), { signal: ctx.signal });
    } catch {
      return;
    }
    answers.forEach((a, i) => {
      const u = a.result?.sessions?.[0];
      const cell = body.querySelector(`tr[data-session="${CSS.escape(sessions[i].sessionId)}"] .bytes`);
      if (!u || !cell) return;
      cell.textContent = fmtBytes(u.logicalBytes);
      cell.title = `${fmtInt(u.logicalBytes)} bytes referenced (${fmtInt(u.roots)} blobs), ${fmtInt(u.logicalBytes - u.sharedBytes)} only by this session`;
    });
  }

  load();
}

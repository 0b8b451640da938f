// The sessions page: newest first, keyset-paged with session/list's cursor.

import { call, callMany, isAbort } from './rpc.js';
import { h, clear, fmtInt, fmtBytes, fmtAgo, fmtTime, statusBadge, errorBox } from './dom.js';

const PAGE_SIZE = 25;

export function sessionsPage(ctx) {
  const before = ctx.query.get('before') || '';
  ctx.setCrumbs([{ label: 'Sessions' }]);
  const body = h('tbody');
  const pager = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  const status = h('div', { class: 'status-line', 'aria-live': 'polite' });
  const refresh = h('button', { type: 'button', class: 'ghost', onclick: () => load() }, 'Refresh');
  ctx.root.append(h('section', { class: 'page sessions-page' },
    h('div', { class: 'page-head' },
      h('h1', {}, 'Sessions'),
      h('p', { class: 'quiet' }, before ? 'Older sessions, newest first.' : 'Newest first. Open one to read its transcript, context, runs and prompt-cache report.'),
      h('div', { class: 'spacer' }), refresh),
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
      const res = await call('session/list', { before: before || undefined, limit: PAGE_SIZE }, { signal: ctx.signal });
      render(res);
      status.textContent = '';
    } catch (err) {
      if (isAbort(err)) return;
      clear(status).append(errorBox(err, 'Could not list sessions'));
    }
  }

  function render(res) {
    clear(body);
    const now = Date.now();
    for (const s of res.sessions) {
      body.append(h('tr', { 'data-session': s.sessionId },
        h('td', {}, h('a', { class: 'mono', href: `/sessions/${encodeURIComponent(s.sessionId)}` }, s.sessionId)),
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
        before ? 'No older sessions.' : h('span', {}, 'No sessions yet. Start one with ', h('code', {}, 'cairn chat "…"'), ' or session/create.'))));
    }
    sizes(res.sessions);
    clear(pager);
    if (before) pager.append(h('a', { href: '/', class: 'button ghost' }, '← Newest'));
    if (res.cursor) pager.append(h('a', { href: `/?before=${encodeURIComponent(res.cursor)}`, class: 'button ghost', rel: 'next' }, 'Older →'));
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

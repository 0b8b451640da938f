// The session page: a header with the session's state, the transcript with
// its live follow on the left, the side panels (runs, context, cache,
// storage) on the right, and the composer: the page's only writes are
// session/runs/start, session/runs/steer, session/runs/cancel and, for a
// call that waits for approval, session/approvals/decide.

import { call, isAbort } from './rpc.js';
import { h, clear, append, fmtInt, statusBadge, errorBox, refLink, shortRef } from './dom.js';
import { createTranscript } from './transcript.js';
import { createPanels } from './panels.js';

export function sessionPage(ctx, id) {
  ctx.setCrumbs([{ label: 'Sessions', href: '/' }, { label: id, mono: true }]);
  const signal = ctx.signal;
  const listeners = new Set();
  const page = {
    id, signal, query: ctx.query, info: null,
    // onEvents subscribes to events the live follow appends.
    onEvents(fn) { listeners.add(fn); },
    emit(events) { for (const fn of listeners) fn(events); },
    refreshInfo: () => scheduleInfo(),
    showContextAt: (seq) => panels?.showContextAt(seq),
    jumpTo: (seq) => transcript.jumpTo(seq),
  };

  const chips = h('dl', { class: 'chips', id: 'session-chips' });
  const header = h('header', { class: 'session-head' },
    h('div', { class: 'session-title' }, h('h1', { class: 'mono', title: id }, id)),
    chips);
  const transcriptPane = h('section', { class: 'pane transcript-pane', 'aria-label': 'Transcript' });
  const side = h('aside', { class: 'pane side-pane', 'aria-label': 'Session details' });
  const composer = buildComposer(page);
  const left = h('div', { class: 'session-main' }, transcriptPane, composer.el);
  ctx.root.append(h('div', { class: 'session-page' }, header, h('div', { class: 'session-body' }, left, side)));

  // The transcript reads first: on a long session the other reads (state
  // from a checkpoint, runs) cost the server more, and the reader came for
  // the events. Everything else starts once its first page is on screen.
  const transcript = createTranscript(page, transcriptPane);
  let panels = null;
  transcript.ready.then(() => {
    if (signal.aborted) return;
    panels = createPanels(page, side);
    loadInfo();
  });

  let infoTimer = 0;
  function scheduleInfo() {
    clearTimeout(infoTimer);
    infoTimer = setTimeout(loadInfo, 120);
  }
  signal.addEventListener('abort', () => clearTimeout(infoTimer));

  async function loadInfo() {
    try {
      // Instructions come first in context: the first entries hold them.
      const [info, ctxPage] = await Promise.all([
        call('session/read', { sessionId: id }, { signal }),
        call('session/context/read', { sessionId: id, limit: 8 }, { signal }).catch((err) => { if (isAbort(err)) throw err; return null; }),
      ]);
      page.info = info;
      info.instructions = (ctxPage?.entries || []).filter((e) => e.kind === 'instructions');
      renderChips(info);
      composer.update(info);
    } catch (err) {
      if (isAbort(err)) return;
      clear(chips).append(errorBox(err, 'Could not read the session'));
    }
  }

  function chip(label, value, attrs = {}) {
    return h('div', { class: 'chip', ...attrs }, h('dt', {}, label), h('dd', {}, value));
  }

  function renderChips(info) {
    append(clear(chips), [
      chip('status', statusBadge(info.status), { 'data-chip': 'status' }),
      chip('model', h('span', { class: 'mono' }, info.model?.model || '—'), { title: `${info.model?.providerId || ''} · ${info.model?.apiKind || ''}` }),
      chip('events', h('span', { class: 'num' }, fmtInt(info.head)), { 'data-chip': 'head' }),
      chip('context revision', h('span', { class: 'num' }, fmtInt(info.contextRevision))),
      chip('active run', info.activeRun
        ? h('span', {}, h('span', { class: 'mono' }, info.activeRun.runId), ' ', statusBadge(info.activeRun.status))
        : h('span', { class: 'quiet' }, 'none'), { 'data-chip': 'active' }),
      chip('queued', h('span', { class: 'num' }, fmtInt(info.queuedRuns?.length || 0))),
      chip('tools', info.tools?.length
        ? h('span', { class: 'mono chip-list' }, info.tools.map((t) => (typeof t === 'string' ? t : t.name)).join(', '))
        : h('span', { class: 'quiet' }, 'none'), { 'data-chip': 'tools' }),
      info.links?.length ? chip('links', h('span', { class: 'chip-list' }, ...info.links.flatMap((l, i) => [
        i ? ', ' : '',
        h('span', { class: 'mono' }, l.mount), ' → ',
        l.workspace ? h('span', { class: 'mono', title: 'workspace (its current head)' }, l.workspace)
          : refLink(l.snapshot?.digest, l.snapshot?.mediaType, `snapshot ${shortRef(l.snapshot?.digest)}`),
      ])), { 'data-chip': 'links' }) : null,
      info.instructions?.length ? chip('instructions', h('span', { class: 'chip-instructions', title: info.instructions.map((e) => e.preview).join('\n\n') },
        info.instructions.map((e) => e.preview).join(' · ')), { 'data-chip': 'instructions' }) : null,
      info.source ? chip(info.source.atSeq ? 'forked from' : 'cloned from',
        h('span', {}, h('a', { class: 'mono', href: `/sessions/${encodeURIComponent(info.source.sessionId)}` }, info.source.sessionId),
          info.source.atSeq ? h('span', { class: 'quiet num' }, ` at ${fmtInt(info.source.atSeq)}`) : null)) : null,
      info.parent ? chip('sub-agent of',
        h('span', {}, h('a', { class: 'mono', href: `/sessions/${encodeURIComponent(info.parent.sessionId)}` }, info.parent.sessionId),
          h('span', { class: 'quiet mono' }, ` ${info.parent.callId}`))) : null]);
  }

  page.onEvents((events) => {
    if (events.some((e) => e.kind.startsWith('run.') || e.kind.startsWith('session.') || e.kind.startsWith('context.') || e.kind.startsWith('compaction.') || e.kind.startsWith('tools.approval_'))) scheduleInfo();
    else if (page.info) {
      // The head moves with every event; only it needs no round trip.
      page.info.head = Math.max(page.info.head, events[events.length - 1].seq);
      const head = chips.querySelector('[data-chip="head"] dd');
      if (head) head.textContent = fmtInt(page.info.head);
    }
  });

}

// newSubmissionId makes a double-clicked start idempotent on the server.
function newSubmissionId() {
  const b = crypto.getRandomValues(new Uint8Array(12));
  return 'web-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function buildComposer(page) {
  const text = h('textarea', { name: 'input', rows: 2, placeholder: 'Input for a new run, or steering for the active one.  Ctrl+Enter starts a run.', 'aria-label': 'Run input' });
  const start = h('button', { type: 'submit', class: 'primary', 'data-action': 'start' }, 'Start run');
  const steer = h('button', { type: 'button', 'data-action': 'steer', disabled: true }, 'Steer');
  const cancel = h('button', { type: 'button', class: 'danger', 'data-action': 'cancel', disabled: true }, 'Cancel run');
  const status = h('div', { class: 'status-line composer-status', 'aria-live': 'polite' });
  const approvals = h('div', { class: 'approvals', id: 'approvals' });
  const form = h('form', { class: 'composer', id: 'composer' },
    approvals, text, h('div', { class: 'composer-actions' }, start, steer, cancel), status);
  let info = null;
  let busy = false;

  const say = (msg, tone) => {
    status.className = `status-line composer-status ${tone || ''}`;
    status.textContent = msg;
  };

  async function act(label, fn) {
    if (busy) return;
    busy = true;
    form.classList.add('busy');
    try {
      say(`${label}…`);
      say(await fn(), 'ok');
    } catch (err) {
      if (isAbort(err)) return;
      say(`${label} failed: ${err.kind ? err.kind + ': ' : ''}${err.message}`, 'bad');
    } finally {
      busy = false;
      form.classList.remove('busy');
      page.refreshInfo();
    }
  }

  const input = () => [{ type: 'text', text: text.value }];

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!text.value.trim()) { say('Type the run’s input first.', 'bad'); text.focus(); return; }
    act('Starting a run', async () => {
      const r = await call('session/runs/start', { sessionId: page.id, input: input(), submissionId: newSubmissionId() }, { signal: page.signal });
      text.value = '';
      return `Run ${r.runId} ${r.status}.`;
    });
  });
  steer.addEventListener('click', () => {
    if (!text.value.trim()) { say('Type the steering text first.', 'bad'); text.focus(); return; }
    act('Steering', async () => {
      const r = await call('session/runs/steer', { sessionId: page.id, input: input() }, { signal: page.signal });
      text.value = '';
      return `Steering ${r.steeringId} accepted for ${r.runId}; it applies at the next turn boundary.`;
    });
  });
  cancel.addEventListener('click', () => {
    const run = info?.activeRun?.runId;
    if (!run) return;
    act(`Cancelling ${run}`, async () => {
      const r = await call('session/runs/cancel', { sessionId: page.id, runId: run }, { signal: page.signal });
      return `Run ${r.runId}: ${r.status}.`;
    });
  });
  // showApprovals lists the calls that wait for a decision, each with
  // Approve and Deny.
  async function showApprovals(waiting) {
    if (!waiting) { clear(approvals); return; }
    let pending;
    try {
      pending = await call('session/approvals/pending', { sessionId: page.id }, { signal: page.signal });
    } catch (err) {
      if (!isAbort(err)) say(`Reading the calls that wait failed: ${err.message}`, 'bad');
      return;
    }
    append(clear(approvals), (pending.calls || []).map((c) => {
      const decide = (approve) => act(`${approve ? 'Approving' : 'Denying'} ${c.name}`, async () => {
        const r = await call('session/approvals/decide', { sessionId: page.id, callId: c.callId, approve }, { signal: page.signal });
        clear(approvals);
        return `${approve ? 'Approved' : 'Denied'} ${c.name} (${c.callId}); run ${r.runId} ${r.status}.`;
      });
      const yes = h('button', { type: 'button', class: 'primary small', 'data-action': 'approve', 'data-call': c.callId }, 'Approve');
      const no = h('button', { type: 'button', class: 'danger small', 'data-action': 'deny', 'data-call': c.callId }, 'Deny');
      yes.addEventListener('click', () => decide(true));
      no.addEventListener('click', () => decide(false));
      return h('div', { class: 'approval' }, h('span', {}, 'Approve '), h('span', { class: 'tag mono' }, c.name), ' ',
        h('code', { class: 'mono quiet' }, c.arguments.length > 200 ? c.arguments.slice(0, 200) + '…' : c.arguments), ' ', yes, ' ', no);
    }));
  }

  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  return {
    el: form,
    update(next) {
      info = next;
      const closed = next.status === 'closed';
      const active = !!next.activeRun;
      text.disabled = closed;
      start.disabled = closed;
      steer.disabled = closed || !active;
      cancel.disabled = closed || !active;
      cancel.title = active ? `Cancel ${next.activeRun.runId}` : 'No active run';
      steer.title = active ? `Steer ${next.activeRun.runId}` : 'No active run';
      if (closed && !busy) say('This session is closed: it admits no new runs.', 'quiet');
      showApprovals(next.activeRun?.status === 'awaiting_approval');
    },
  };
}

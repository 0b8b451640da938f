// The inspector's entry point: client-side routing over history.pushState,
// the breadcrumb bar, and the API-key form of hosted servers.

import { h, clear } from './dom.js';
import { onKeyNeeded, provideKey, forgetKey, authState, onAuthChange } from './rpc.js';
import { sessionsPage } from './sessions.js';
import { sessionPage } from './session.js';
import { blobPage } from './blob.js';

const main = document.getElementById('main');
const crumbBar = document.getElementById('crumbs');
const authBar = document.getElementById('auth');

// A page is a function of a context; it renders into ctx.root and stops all
// its work (polls, timers, listeners) when ctx.signal aborts.
const routes = [
  [/^\/(sessions\/?)?$/, (ctx) => sessionsPage(ctx)],
  [/^\/sessions\/([^/]+)$/, (ctx, m) => sessionPage(ctx, decodeURIComponent(m[1]))],
  [/^\/blobs\/([^/]+)$/, (ctx, m) => blobPage(ctx, decodeURIComponent(m[1]))],
];

let current = null;

export function navigate(url, { replace = false } = {}) {
  history[replace ? 'replaceState' : 'pushState'](null, '', url);
  route();
}

function setCrumbs(items) {
  clear(crumbBar);
  items.forEach((it, i) => {
    if (i > 0) crumbBar.append(h('span', { class: 'crumb-sep', 'aria-hidden': 'true' }, '/'));
    const cls = ['crumb', it.mono && 'mono'];
    crumbBar.append(it.href ? h('a', { class: cls, href: it.href }, it.label) : h('span', { class: cls, 'aria-current': 'page' }, it.label));
  });
  document.title = items.length ? `${items[items.length - 1].label} · Cairn inspector` : 'Cairn inspector';
}

function route() {
  current?.abort();
  current = new AbortController();
  const url = new URL(location.href);
  clear(main);
  const ctx = { root: main, query: url.searchParams, signal: current.signal, setCrumbs, navigate };
  for (const [re, page] of routes) {
    const m = url.pathname.match(re);
    if (m) {
      page(ctx, m);
      return;
    }
  }
  setCrumbs([{ label: 'Sessions', href: '/' }, { label: 'Not found' }]);
  main.append(h('div', { class: 'pad' }, h('h1', {}, 'Nothing here'), h('p', { class: 'quiet' }, 'The inspector has pages for ', h('a', { href: '/' }, 'sessions'), ', a session and a blob.')));
}

// Same-origin links become client-side navigations; downloads, new tabs
// and modified clicks keep the browser's behaviour.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname === '/rpc' || url.pathname.startsWith('/assets/')) return;
  e.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) navigate(url.pathname + url.search);
});
window.addEventListener('popstate', route);
// Leaving the page must end its long poll: a browser keeps few connections
// per server, and a page kept in the back-forward cache would hold one.
window.addEventListener('pagehide', () => current?.abort());
window.addEventListener('pageshow', (e) => { if (e.persisted) route(); });

// The key form: one modal, shown the first time a call needs a key and
// again if the server refuses the key it was given.
let dialog = null;
function askForKey(reason) {
  if (!dialog) {
    const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-label': 'API key', placeholder: 'API key' });
    const note = h('p', { class: 'dialog-note' });
    const form = h('form', { method: 'dialog', class: 'key-form' },
      h('h2', {}, 'This server needs an API key'),
      note,
      h('div', { class: 'row' }, input, h('button', { type: 'submit', class: 'primary' }, 'Continue')),
      h('p', { class: 'quiet small' }, 'The key stays in this tab’s session storage and is sent only in the Authorization header.'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      input.value = '';
      dialog.close();
      provideKey(key);
    });
    dialog = h('dialog', { class: 'key-dialog', id: 'key-dialog' }, form);
    // Escape would leave every call waiting with no way back.
    dialog.addEventListener('cancel', (e) => e.preventDefault());
    document.body.append(dialog);
    dialog.note = note;
    dialog.input = input;
  }
  dialog.note.textContent = reason === 'refused'
    ? 'The server refused the key this tab had. Enter a valid key to continue.'
    : 'Enter an API key of the universe you want to inspect.';
  dialog.note.classList.toggle('bad', reason === 'refused');
  if (!dialog.open) dialog.showModal();
  dialog.input.focus();
}
onKeyNeeded(askForKey);

function renderAuth(state) {
  clear(authBar);
  if (!state.required) return;
  if (state.hasKey) {
    authBar.append(h('span', { class: 'quiet small' }, 'API key set'), ' ',
      h('button', { type: 'button', class: 'link small', onclick: () => { forgetKey(); location.reload(); } }, 'forget'));
  } else {
    authBar.append(h('span', { class: 'quiet small' }, 'API key needed'));
  }
}
onAuthChange(renderAuth);
renderAuth(authState());

route();

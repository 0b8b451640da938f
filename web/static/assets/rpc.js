// The JSON-RPC client. An embedded server needs no key. A hosted server
// answers 401 (kind "unauthorized") without one: from then on this tab sends
// nothing until the user has typed a key, which lives in sessionStorage
// (this tab only) and travels only in the Authorization header, never in a URL.

const KEY_ITEM = 'cairn.apiKey';
const REQUIRED_ITEM = 'cairn.keyRequired';

export class RpcError extends Error {
  constructor(code, kind, message, data) {
    super(message);
    this.name = 'RpcError';
    this.code = code;
    this.kind = kind;
    this.data = data;
  }
}

export const METHOD_NOT_FOUND = -32601;

let nextId = 1;
let waiters = [];
let keyPrompt = null;
const listeners = new Set();

// onKeyNeeded registers the UI that asks for a key; reason is "required"
// (none yet) or "refused" (the server rejected the one we had).
export function onKeyNeeded(fn) { keyPrompt = fn; }

// onAuthChange is told whenever the key or the need for one changes.
export function onAuthChange(fn) { listeners.add(fn); return () => listeners.delete(fn); }

function notify() { for (const fn of listeners) fn(authState()); }

export function authState() {
  return { required: sessionStorage.getItem(REQUIRED_ITEM) === '1', hasKey: !!sessionStorage.getItem(KEY_ITEM) };
}

export function provideKey(key) {
  sessionStorage.setItem(KEY_ITEM, key);
  sessionStorage.setItem(REQUIRED_ITEM, '1');
  const ready = waiters;
  waiters = [];
  for (const w of ready) w.resolve();
  notify();
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
  notify();
}

function waitForKey(reason, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(signal.reason); return; }
    const w = { resolve, reject };
    waiters.push(w);
    signal?.addEventListener('abort', () => {
      waiters = waiters.filter((x) => x !== w);
      reject(signal.reason);
    }, { once: true });
    if (keyPrompt) keyPrompt(reason);
  });
}

// post sends one JSON-RPC body (a request or a batch) and returns the
// parsed response, asking for a key and retrying as the server requires.
async function post(body, signal) {
  for (;;) {
    const key = sessionStorage.getItem(KEY_ITEM);
    if (!key && authState().required) {
      await waitForKey('required', signal);
      continue;
    }
    const headers = { 'Content-Type': 'application/json' };
    if (key) headers.Authorization = `Bearer ${key}`;
    const res = await fetch('/rpc', { method: 'POST', headers, signal, cache: 'no-store', credentials: 'omit', body: JSON.stringify(body) });
    if (res.status === 401) {
      sessionStorage.setItem(REQUIRED_ITEM, '1');
      // Only the key this request carried is stale; another call may have
      // stored a fresh one meanwhile.
      if (key && sessionStorage.getItem(KEY_ITEM) === key) sessionStorage.removeItem(KEY_ITEM);
      notify();
      if (!sessionStorage.getItem(KEY_ITEM)) await waitForKey(key ? 'refused' : 'required', signal);
      continue;
    }
    try {
      return await res.json();
    } catch {
      throw new RpcError(0, 'transport', `the server answered HTTP ${res.status} without a JSON-RPC response`);
    }
  }
}

function toError(e) {
  return new RpcError(e.code, (e.data && e.data.kind) || '', e.message, e.data);
}

// call invokes one method and resolves with its result, or rejects with an
// RpcError (domain and protocol errors) or the fetch's own error.
export async function call(method, params, { signal } = {}) {
  const res = await post({ jsonrpc: '2.0', id: nextId++, method, params: params || {} }, signal);
  if (res.error) throw toError(res.error);
  return res.result;
}

// callMany sends calls as one JSON-RPC batch; each answer is {result} or
// {error}, in the order of calls.
export async function callMany(calls, { signal } = {}) {
  if (!calls.length) return [];
  const reqs = calls.map(([method, params]) => ({ jsonrpc: '2.0', id: nextId++, method, params: params || {} }));
  const res = await post(reqs, signal);
  if (!Array.isArray(res)) return reqs.map(() => ({ error: toError(res.error || { code: 0, message: 'batch refused' }) }));
  const byId = new Map(res.map((r) => [r.id, r]));
  return reqs.map((q) => {
    const r = byId.get(q.id);
    if (!r) return { error: new RpcError(0, 'transport', 'no answer in the batch') };
    return r.error ? { error: toError(r.error) } : { result: r.result };
  });
}

// isAbort tells a cancelled call (the page was left) from a failure.
export function isAbort(err) {
  return !!err && err.name === 'AbortError';
}

// streamDeltas follows the pieces of answers being streamed in a session
// (the `delta` events of GET /sessions/{id}/stream) and calls onDelta with
// each, until signal aborts; committed events are the transcript's to read.
// after is the newest seq the caller has, so the stream starts there.
export async function streamDeltas(sessionId, after, onDelta, { signal } = {}) {
  const key = sessionStorage.getItem(KEY_ITEM);
  const headers = { Accept: 'text/event-stream' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(`/sessions/${encodeURIComponent(sessionId)}/stream?after=${after}`, { headers, signal, cache: 'no-store', credentials: 'omit' });
  if (!res.ok || !res.body) throw new RpcError(0, 'transport', `the stream answered HTTP ${res.status}`);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let kind = '', data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) kind = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (kind === 'delta' && data) onDelta(JSON.parse(data));
    }
  }
}

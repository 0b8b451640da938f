// The transport: JSON-RPC calls over fetch, typed errors, long-polled
// events and the session's Server-Sent Events stream. No dependencies
// beyond fetch.
import type { MethodName, Methods } from "./types.js";

/** An error the server answered; kind is its data.kind, the API's word for it. */
export class CairnError extends Error {
  constructor(
    readonly code: number,
    readonly kind: string,
    message: string,
    readonly data: Record<string, unknown> = {},
  ) {
    super(`${kind}: ${message}`);
    this.name = "CairnError";
  }
}

/** A committed event, as session/events/read gives it. */
export interface EventView {
  seq: number;
  kind: string;
  observedAtMs: number;
  joins?: string[];
  payload: unknown;
}

/** A piece of an answer being streamed: never stored. */
export interface Delta {
  runId: string;
  turn: number;
  kind: "text" | "reasoning" | "tool_arguments";
  text: string;
  callId?: string;
  name?: string;
}

export type StreamEvent = { event: "committed"; data: EventView } | { event: "delta"; data: Delta };

export interface ClientOptions {
  /** A hosted server's universe key, sent as Authorization: Bearer. */
  apiKey?: string;
}

/** A Cairn server at url (http://127.0.0.1:8420 by default). */
export class CairnClient {
  private readonly base: string;
  private id = 0;

  constructor(url = "http://127.0.0.1:8420", private readonly options: ClientOptions = {}) {
    this.base = url.replace(/\/+$/, "").replace(/\/rpc$/, "");
  }

  private headers(json: boolean): Record<string, string> {
    const h: Record<string, string> = {};
    if (json) h["Content-Type"] = "application/json";
    if (this.options.apiKey) h["Authorization"] = `Bearer ${this.options.apiKey}`;
    return h;
  }

  /** Calls method with params and returns its result, or throws CairnError. */
  async call<M extends MethodName>(method: M, params: Methods[M]["params"], signal?: AbortSignal): Promise<Methods[M]["result"]> {
    const res = await fetch(`${this.base}/rpc`, {
      method: "POST",
      headers: this.headers(true),
      body: JSON.stringify({ jsonrpc: "2.0", id: ++this.id, method, params }),
      signal,
    });
    let answer: { result?: unknown; error?: { code: number; message: string; data?: Record<string, unknown> } };
    try {
      answer = await res.json();
    } catch {
      throw new CairnError(res.status, "http_error", `HTTP ${res.status}`);
    }
    if (answer.error) {
      const data = answer.error.data ?? {};
      throw new CairnError(answer.error.code, String(data.kind ?? ""), answer.error.message, data);
    }
    return answer.result as Methods[M]["result"];
  }

  /** The session's committed events after seq after, as they commit (long-polling session/events/read). */
  async *events(sessionId: string, after = 0, signal?: AbortSignal): AsyncGenerator<EventView> {
    for (;;) {
      const page = (await this.call("session/events/read", { sessionId, after, waitMs: 10_000 } as Methods["session/events/read"]["params"], signal)) as {
        events?: EventView[] | null;
      };
      for (const ev of page.events ?? []) {
        after = ev.seq;
        yield ev;
      }
    }
  }

  /** GET /sessions/{id}/stream: each committed event after seq after, and each piece of an answer being streamed. */
  async *stream(sessionId: string, after = 0, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    const res = await fetch(`${this.base}/sessions/${encodeURIComponent(sessionId)}/stream?after=${after}`, { headers: this.headers(false), signal });
    if (!res.ok || !res.body) {
      const answer = await res.json().catch(() => ({}));
      const err = answer.error ?? { code: res.status, message: `HTTP ${res.status}`, data: {} };
      throw new CairnError(err.code, String(err.data?.kind ?? "http_error"), err.message, err.data ?? {});
    }
    const decoder = new TextDecoder();
    let buffer = "";
    let event = "message";
    let data: string[] = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        if (line === "") {
          if (data.length) {
            const payload = JSON.parse(data.join("\n"));
            if (event === "error") throw new CairnError(payload.code, String(payload.data?.kind ?? ""), payload.message, payload.data ?? {});
            if (event === "committed" || event === "delta") yield { event, data: payload } as StreamEvent;
          }
          event = "message";
          data = [];
        } else if (line.startsWith("event:")) {
          event = line.slice(6).trim();
        } else if (line.startsWith("data:")) {
          data.push(line.slice(5).replace(/^ /, ""));
        }
      }
    }
  }
}

// The transport: JSON-RPC calls over fetch, typed errors, long-polled
// events, the session's Server-Sent Events stream, and archives (export
// and import). No dependencies beyond fetch.
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

/** What an export holds: the sessions named, with the workspaces they link, and the workspaces named; neither: the whole universe. */
export interface ExportParams {
  sessions?: string[];
  workspaces?: string[];
}

/** What an import did (docs/archive.md). */
export interface ImportResult {
  sessions: { from: string; to: string }[];
  workspaces: { name: string; head: string; reused?: boolean }[];
  blobs: number;
  bytes: number;
  skipped: number;
}

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

  private async refused(res: Response): Promise<CairnError> {
    const answer = await res.json().catch(() => ({}));
    const err = answer.error ?? { code: res.status, message: `HTTP ${res.status}`, data: {} };
    return new CairnError(err.code, String(err.data?.kind ?? "http_error"), err.message, err.data ?? {});
  }

  /**
   * POST /export: an archive (docs/archive.md) of what params name, or of the whole universe, as a stream.
   * A stream the server cut off ends in an error while it is read: discard what was read.
   */
  async exportArchive(params: ExportParams = {}, signal?: AbortSignal): Promise<ReadableStream<Uint8Array>> {
    const res = await fetch(`${this.base}/export`, { method: "POST", headers: this.headers(true), body: JSON.stringify(params), signal });
    if (!res.ok || !res.body) throw await this.refused(res);
    return res.body;
  }

  /**
   * POST /import: reads an archive into the server's universe. It sends every blob the archive holds;
   * `cairn import` sends only those the server lacks.
   */
  async importArchive(archive: Uint8Array | ReadableStream<Uint8Array>, options: { newIds?: boolean } = {}, signal?: AbortSignal): Promise<ImportResult> {
    const res = await fetch(`${this.base}/import${options.newIds ? "?newIds=true" : ""}`, {
      method: "POST",
      headers: { ...this.headers(false), "Content-Type": "application/vnd.cairn.archive+zstd" },
      body: archive,
      signal,
      duplex: "half", // a stream body goes out as it is read
    } as RequestInit);
    const answer = await res.json().catch(() => ({}));
    if (answer.error || !res.ok) {
      const err = answer.error ?? { code: res.status, message: `HTTP ${res.status}`, data: {} };
      throw new CairnError(err.code, String(err.data?.kind ?? "http_error"), err.message, err.data ?? {});
    }
    return answer.result as ImportResult;
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
    if (!res.ok || !res.body) throw await this.refused(res);
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

// The TypeScript client (built to dist/) against a real `cairn serve`
// (CAIRN_BIN) and a fake Chat Completions provider that streams.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { CairnClient, CairnError } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const answer = ["Hello ", "from ", "TypeScript."];
const model = { providerId: "fake", apiKind: "chat_completions", model: "m" };
let fake, server, dir, client;

before(async () => {
  const bin = process.env.CAIRN_BIN;
  if (!bin) throw new Error("CAIRN_BIN is not set: scripts/test builds cairn and sets it");
  fake = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const r = JSON.parse(body);
      const base = { id: "chatcmpl-ts", object: "chat.completion.chunk", created: 1, model: r.model };
      if (!r.stream) {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: answer.join("") }, finish_reason: "stop" }] }));
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      answer.forEach((piece, i) => {
        const delta = i ? { content: piece } : { role: "assistant", content: piece };
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
      });
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((ok) => fake.listen(0, "127.0.0.1", ok));
  dir = mkdtempSync(join(tmpdir(), "cairn-ts-"));
  const config = join(dir, "providers.json");
  writeFileSync(config, JSON.stringify({ providers: { fake: { baseUrl: `http://127.0.0.1:${fake.address().port}/v1` } } }));
  server = spawn(bin, ["serve", "--listen", "127.0.0.1:0", "--data", join(dir, "data"), "--config", config], { stdio: ["ignore", "pipe", "ignore"] });
  const line = await new Promise((ok, fail) => {
    const rl = createInterface({ input: server.stdout });
    rl.once("line", ok);
    server.once("exit", () => fail(new Error("cairn serve exited")));
  });
  assert.match(line, /^listening on /);
  client = new CairnClient(`http://${line.split(" ").pop()}`);
});

after(() => {
  server?.kill();
  fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the generated types are what the document gives", () => {
  const r = spawnSync(process.execPath, [join(here, "..", "scripts", "generate.mjs"), "--check"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
});

test("a run, followed through its events, and its answer", async () => {
  const { sessionId } = await client.call("session/create", { sessionId: "ts-run", model });
  const { runId } = await client.call("session/runs/start", { sessionId, input: [{ type: "text", text: "Hi." }] });
  let ended;
  for await (const ev of client.events(sessionId)) {
    if (["run.completed", "run.failed", "run.cancelled"].includes(ev.kind)) {
      ended = ev.kind;
      break;
    }
  }
  assert.equal(ended, "run.completed");
  const run = await client.call("session/runs/read", { sessionId, runId });
  assert.equal(run.status, "completed");
  assert.equal(run.output.text, "Hello from TypeScript.");
});

test("errors are typed by the API's kind", async () => {
  await assert.rejects(client.call("session/read", { sessionId: "no-such-session" }), (e) => e instanceof CairnError && e.kind === "not_found");
  await assert.rejects(client.call("session/create", { model, bogus: 1 }), (e) => e instanceof CairnError && e.kind === "invalid_params");
});

test("the stream carries the answer as it is written", async () => {
  const { sessionId } = await client.call("session/create", { model });
  const stop = new AbortController();
  const deltas = [];
  let opened;
  const open = new Promise((ok) => (opened = ok));
  const done = (async () => {
    for await (const ev of client.stream(sessionId, 0, stop.signal)) {
      if (ev.event === "delta") deltas.push(ev.data.text);
      else {
        opened(); // the server sends its first events once it watches the deltas
        if (ev.data.kind === "run.completed") break;
      }
    }
  })();
  await open;
  await client.call("session/runs/start", { sessionId, input: [{ type: "text", text: "Stream it." }] });
  await done;
  stop.abort();
  assert.equal(deltas.join(""), "Hello from TypeScript.");
});

test("an archive moves a session", async () => {
  const { sessionId } = await client.call("session/create", { model });
  await client.call("session/runs/start", { sessionId, input: [{ type: "text", text: "Keep it." }] });
  for await (const ev of client.events(sessionId)) if (ev.kind === "run.completed") break;
  const archive = new Uint8Array(await new Response(await client.exportArchive({ sessions: [sessionId] })).arrayBuffer());
  const moved = await client.importArchive(archive, { newIds: true });
  assert.equal(moved.sessions.length, 1);
  assert.equal(moved.sessions[0].from, sessionId);
  assert.equal(moved.skipped, moved.blobs); // all of them were here already
  const before = await client.call("session/read", { sessionId });
  const after = await client.call("session/read", { sessionId: moved.sessions[0].to });
  assert.deepEqual([after.head, after.contextRevision], [before.head, before.contextRevision]);
  await assert.rejects(client.importArchive(new TextEncoder().encode("not an archive")), (e) => e instanceof CairnError && e.kind === "archive_invalid");
});

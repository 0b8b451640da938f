"""The Python client against a real `cairn serve` (CAIRN_BIN) and a fake
Chat Completions provider that streams its answers."""

import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from cairn_client import CairnError, Client, types  # noqa: E402

ANSWER = ["Hello ", "from ", "Python."]


class FakeChat(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        base = {"id": "chatcmpl-py", "object": "chat.completion.chunk", "created": 1, "model": req["model"]}
        if not req.get("stream"):
            body = json.dumps(dict(base, object="chat.completion", choices=[{"index": 0, "message": {
                "role": "assistant", "content": "".join(ANSWER)}, "finish_reason": "stop"}])).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, piece in enumerate(ANSWER):
            delta = {"content": piece} if i else {"role": "assistant", "content": piece}
            self.wfile.write(b"data: " + json.dumps(dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}])).encode() + b"\n\n")
        self.wfile.write(b"data: " + json.dumps(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = os.environ.get("CAIRN_BIN")
        if not binary:
            raise unittest.SkipTest("CAIRN_BIN is not set (scripts/test builds cairn and sets it)") if not os.environ.get("CI") \
                else RuntimeError("CAIRN_BIN is not set: scripts/test builds cairn and sets it")
        cls.fake = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
        threading.Thread(target=cls.fake.serve_forever, daemon=True).start()
        cls.dir = tempfile.TemporaryDirectory()
        config = os.path.join(cls.dir.name, "providers.json")
        with open(config, "w") as f:
            json.dump({"providers": {"fake": {"baseUrl": f"http://127.0.0.1:{cls.fake.server_port}/v1"}}}, f)
        cls.server = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--data", os.path.join(cls.dir.name, "data"),
                                       "--config", config], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = cls.server.stdout.readline()  # "listening on ADDR"
        if not line.startswith("listening on "):
            cls.server.kill()
            raise RuntimeError(f"cairn serve did not start: {line!r}")
        cls.client = Client("http://" + line.split()[-1])

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.terminate()
        cls.server.wait(timeout=10)
        cls.fake.shutdown()
        cls.dir.cleanup()

    def test_generated_types_match_the_document(self):
        result = subprocess.run([sys.executable, os.path.join(HERE, "..", "generate.py"), "--check"], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_a_run_and_its_answer(self):
        c = self.client
        created = c.session_create(types.SessionCreateParams(
            model={"providerId": "fake", "apiKind": "chat_completions", "model": "m"}, session_id="py-run"))
        self.assertIsInstance(created, types.SessionCreateResult)
        run = c.session_runs_start(types.SessionRunsStartParams(session_id=created.session_id, input=[{"type": "text", "text": "Hi."}]))
        ended = None
        for ev in c.events(created.session_id):
            if ev["kind"] in ("run.completed", "run.failed", "run.cancelled"):
                ended = ev["kind"]
                break
        self.assertEqual(ended, "run.completed")
        read = c.session_runs_read(types.SessionRunsReadParams(session_id=created.session_id, run_id=run.run_id))
        self.assertEqual(read.status, "completed")
        self.assertEqual(read.output["text"], "Hello from Python.")

    def test_typed_errors(self):
        with self.assertRaises(CairnError) as e:
            self.client.session_read(types.SessionReadParams(session_id="no-such-session"))
        self.assertEqual(e.exception.kind, "not_found")
        with self.assertRaises(CairnError) as e:
            self.client.call("session/create", {"model": {"providerId": "fake", "apiKind": "chat_completions", "model": "m"}, "bogus": 1})
        self.assertEqual(e.exception.kind, "invalid_params")

    def test_the_stream_carries_the_answer_as_it_is_written(self):
        c = self.client
        created = c.session_create(types.SessionCreateParams(model={"providerId": "fake", "apiKind": "chat_completions", "model": "m"}))
        deltas, committed = [], []
        opened = threading.Event()  # the server sends its first events once it watches the deltas

        def follow():
            for kind, data in c.stream(created.session_id):
                if kind == "delta":
                    deltas.append(data["text"])
                elif kind == "committed":
                    opened.set()
                    committed.append(data["kind"])
                    if data["kind"] == "run.completed":
                        return

        t = threading.Thread(target=follow, daemon=True)
        t.start()
        self.assertTrue(opened.wait(timeout=30), "the stream never opened")
        c.session_runs_start(types.SessionRunsStartParams(session_id=created.session_id, input=[{"type": "text", "text": "Stream it."}]))
        t.join(timeout=30)
        self.assertIn("run.completed", committed)
        self.assertEqual("".join(deltas), "Hello from Python.")

    def test_an_archive_moves_a_session(self):
        c = self.client
        created = c.session_create(types.SessionCreateParams(model={"providerId": "fake", "apiKind": "chat_completions", "model": "m"}))
        c.session_runs_start(types.SessionRunsStartParams(session_id=created.session_id, input=[{"type": "text", "text": "Keep it."}]))
        for ev in c.events(created.session_id):
            if ev["kind"] == "run.completed":
                break
        archive = io.BytesIO()
        size = c.export(archive, sessions=[created.session_id])
        self.assertEqual(size, len(archive.getvalue()))
        archive.seek(0)
        moved = c.import_archive(archive, new_ids=True)
        self.assertEqual(len(moved["sessions"]), 1)
        self.assertEqual(moved["sessions"][0]["from"], created.session_id)
        self.assertEqual(moved["skipped"], moved["blobs"])  # all of them were here already
        before = c.session_read(types.SessionReadParams(session_id=created.session_id))
        after = c.session_read(types.SessionReadParams(session_id=moved["sessions"][0]["to"]))
        self.assertEqual((after.head, after.context_revision), (before.head, before.context_revision))
        with self.assertRaises(CairnError) as e:
            c.import_archive(io.BytesIO(b"not an archive"))
        self.assertEqual(e.exception.kind, "archive_invalid")


if __name__ == "__main__":
    unittest.main()

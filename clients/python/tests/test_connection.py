"""The client keeps its connection to the server between calls, and
replaces one the server closed while it was idle."""

import json
import os
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from cairn_client import Client  # noqa: E402


class Answer(BaseHTTPRequestHandler):
    """Answers every JSON-RPC call with the number of connections the
    server has accepted so far."""

    protocol_version = "HTTP/1.1"  # keeps the connection open between requests

    def setup(self):
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def log_message(self, *args):
        pass

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": {"connections": self.server.connections}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        # As a server's idle timeout does: the connection ends after the
        # answer, without a "Connection: close" to warn the client.
        self.close_connection = self.server.close_each


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, close_each: bool):
        super().__init__(("127.0.0.1", 0), Answer)
        self.lock, self.connections, self.close_each = threading.Lock(), 0, close_each
        self.closed = threading.Semaphore(0)

    def shutdown_request(self, request):
        super().shutdown_request(request)
        self.closed.release()  # the socket is closed: the client's end can read its end of file


class KeptConnectionTest(unittest.TestCase):
    def serve(self, close_each: bool) -> Server:
        server = Server(close_each)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return server

    def test_calls_share_one_connection(self):
        server = self.serve(close_each=False)
        client = Client(f"http://127.0.0.1:{server.server_port}")
        self.addCleanup(client.close)
        for _ in range(5):
            self.assertEqual(client.call("session/read", {"sessionId": "s"}), {"connections": 1})

    def test_a_connection_the_server_closed_is_replaced(self):
        server = self.serve(close_each=True)
        client = Client(f"http://127.0.0.1:{server.server_port}")
        self.addCleanup(client.close)
        for n in range(1, 4):
            self.assertEqual(client.call("session/read", {"sessionId": "s"}), {"connections": n})
            self.assertTrue(server.closed.acquire(timeout=10))

    def test_each_thread_has_its_own(self):
        # http.client's connections are not for two threads at once.
        server = self.serve(close_each=False)
        client = Client(f"http://127.0.0.1:{server.server_port}")
        self.addCleanup(client.close)
        got = []

        def call_and_keep():
            got.append(client.call("session/read", {"sessionId": "s"})["connections"])
            self.addCleanup(client._local.conn.close)  # kept open while the others call

        for _ in range(2):
            t = threading.Thread(target=call_and_keep)
            t.start()
            t.join()
        got.append(client.call("session/read", {"sessionId": "s"})["connections"])
        self.assertEqual(got, [1, 2, 3])


if __name__ == "__main__":
    unittest.main()

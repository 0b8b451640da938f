"""The transport: JSON-RPC calls, typed errors, events, the stream, and
archives (export and import)."""

import http.client
import json
import os
import select
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Tuple

from .types import Methods


class CairnError(Exception):
    """An error the server answered: kind is its data.kind (not_found,
    revision_conflict, ...), the words the API uses."""

    def __init__(self, code: int, kind: str, message: str, data: Optional[Dict[str, Any]] = None):
        super().__init__(f"{kind}: {message}")
        self.code, self.kind, self.message, self.data = code, kind, message, data or {}


class Client(Methods):
    """A Cairn server at url (http://127.0.0.1:8420 by default); api_key is
    a hosted server's universe key."""

    def __init__(self, url: str = "http://127.0.0.1:8420", api_key: Optional[str] = None, timeout: float = 60):
        self.url = url.rstrip("/")
        if self.url.endswith("/rpc"):
            self.url = self.url[: -len("/rpc")]
        self.api_key, self.timeout = api_key, timeout
        self._id = 0
        self._local = threading.local()  # each thread's kept connection (http.client's are not shared)

    def _headers(self) -> Dict[str, str]:
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        return h

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Calls method and returns its result as JSON data, or raises CairnError."""
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params or {}}).encode()
        conn, path = self._connection(timeout or self.timeout)
        try:
            conn.request("POST", path, body=body, headers=self._headers())
            resp = conn.getresponse()
            raw = resp.read()
        except BaseException:
            conn.close()
            self._local.conn = None
            raise
        if resp.will_close:
            conn.close()
            self._local.conn = None
        try:
            answer = json.loads(raw)
        except ValueError:  # 401, 413, ...: the body is a JSON-RPC answer, unless something else answered
            raise CairnError(resp.status, "http_error", f"HTTP {resp.status}") from None
        if answer.get("error"):
            err = answer["error"]
            data = err.get("data") or {}
            raise CairnError(err.get("code", 0), data.get("kind", ""), err.get("message", ""), data)
        return answer.get("result")

    def _connection(self, timeout: float) -> Tuple[http.client.HTTPConnection, str]:
        """This thread's connection to the server, kept between calls (a
        new one each call would cost a handshake, over TLS two round trips
        more), and the path of /rpc. A kept connection the server has
        closed while it was idle is readable (its end of file): it is
        dropped for a new one before anything is sent on it."""
        u = urllib.parse.urlsplit(self.url)
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and select.select([conn.sock], [], [], 0)[0]:
            conn.close()
            conn = None
        if conn is None:
            if u.scheme == "https":
                conn = http.client.HTTPSConnection(u.netloc, timeout=timeout, context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(u.netloc, timeout=timeout)
            self._local.conn = conn
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, u.path + "/rpc"

    def close(self) -> None:
        """Closes this thread's kept connection; the next call opens one."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _refused(self, e: urllib.error.HTTPError) -> CairnError:
        try:
            answer = json.load(e)
        except ValueError:
            return CairnError(e.code, "http_error", f"HTTP {e.code}")
        err = answer.get("error") or {}
        data = err.get("data") or {}
        return CairnError(err.get("code", 0), data.get("kind", ""), err.get("message", ""), data)

    def export(self, out: BinaryIO, sessions: Optional[List[str]] = None, workspaces: Optional[List[str]] = None) -> int:
        """POST /export: writes an archive (docs/archive.md) of the sessions
        named, with the workspaces they link, and of the workspaces named,
        or of the whole universe, to out, and returns its size. A stream the
        server cut off raises CairnError with kind export_cut: discard what
        was written."""
        params = {k: v for k, v in (("sessions", sessions), ("workspaces", workspaces)) if v}
        req = urllib.request.Request(self.url + "/export", data=json.dumps(params).encode(), headers=self._headers(), method="POST")
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            raise self._refused(e) from None
        size = 0
        with resp:
            try:
                while chunk := resp.read(1 << 20):
                    out.write(chunk)
                    size += len(chunk)
            except http.client.IncompleteRead:
                raise CairnError(0, "export_cut", "the export was cut off before its end") from None
        return size

    def import_archive(self, archive: BinaryIO, new_ids: bool = False) -> Dict[str, Any]:
        """POST /import: reads an archive into the server's universe and
        returns {sessions: [{from, to}], workspaces, blobs, bytes, skipped}.
        It sends every blob the archive holds; `cairn import` sends only
        those the server lacks."""
        headers = dict(self._headers(), **{"Content-Type": "application/vnd.cairn.archive+zstd"})
        try:
            headers["Content-Length"] = str(os.fstat(archive.fileno()).st_size - archive.tell())
        except (AttributeError, OSError, ValueError):
            archive = _Chunked(archive)
            headers["Transfer-Encoding"] = "chunked"
        req = urllib.request.Request(self.url + "/import" + ("?newIds=true" if new_ids else ""), data=archive, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.load(resp).get("result")
        except urllib.error.HTTPError as e:
            raise self._refused(e) from None

    def events(self, session_id: str, after: int = 0, wait_ms: int = 10000) -> Iterator[Dict[str, Any]]:
        """The session's committed events after seq after, as they commit
        (long-polling session/events/read); stop iterating to stop."""
        while True:
            page = self.call("session/events/read", {"sessionId": session_id, "after": after, "waitMs": wait_ms},
                             timeout=self.timeout + wait_ms / 1000)
            for ev in page.get("events") or []:
                after = ev["seq"]
                yield ev

    def stream(self, session_id: str, after: int = 0) -> Iterator[Tuple[str, Dict[str, Any]]]:
        """GET /sessions/{id}/stream: ("committed", event) for each committed
        event after seq after, and ("delta", {runId, turn, kind, text}) for
        each piece of an answer being streamed."""
        req = urllib.request.Request(f"{self.url}/sessions/{session_id}/stream?after={after}",
                                     headers={k: v for k, v in self._headers().items() if k != "Content-Type"})
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            answer = json.load(e)
            err = answer.get("error") or {}
            raise CairnError(err.get("code", 0), (err.get("data") or {}).get("kind", ""), err.get("message", "")) from None
        with resp:
            event, data = "message", []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if data:
                        payload = json.loads("\n".join(data))
                        if event == "error":
                            d = payload.get("data") or {}
                            raise CairnError(payload.get("code", 0), d.get("kind", ""), payload.get("message", ""), d)
                        yield event, payload
                    event, data = "message", []
                elif line.startswith("event:"):
                    event = line[len("event:"):].strip()
                elif line.startswith("data:"):
                    data.append(line[len("data:"):].lstrip(" "))


class _Chunked:
    """An archive without a known size (a pipe, a BytesIO), sent in chunks."""

    def __init__(self, f: BinaryIO):
        self.f = f

    def __iter__(self):
        while chunk := self.f.read(1 << 20):
            yield chunk

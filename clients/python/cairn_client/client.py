"""The transport: JSON-RPC calls, typed errors, events and the stream."""

import json
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, Optional, Tuple

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

    def _headers(self) -> Dict[str, str]:
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = "Bearer " + self.api_key
        return h

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Calls method and returns its result as JSON data, or raises CairnError."""
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params or {}}).encode()
        req = urllib.request.Request(self.url + "/rpc", data=body, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as resp:
                answer = json.load(resp)
        except urllib.error.HTTPError as e:  # 401, 413, ...: the body is still a JSON-RPC answer
            try:
                answer = json.load(e)
            except ValueError:
                raise CairnError(e.code, "http_error", f"HTTP {e.code}") from None
        if answer.get("error"):
            err = answer["error"]
            data = err.get("data") or {}
            raise CairnError(err.get("code", 0), data.get("kind", ""), err.get("message", ""), data)
        return answer.get("result")

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

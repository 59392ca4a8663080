"""A tiny HTTP server on 127.0.0.1 that replays recorded-shape model API responses.

It stands in for a hosted or local model server: the real SDK client talks to it over a real
socket, and every request body is kept for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(kw_only=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    """Header names in lower case."""
    body: dict[str, Any]


@dataclass(kw_only=True)
class ReplayServer:
    """Serves ``responses`` in order to POST requests; records each request."""

    responses: list[dict[str, Any]]
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def replay(responses: list[dict[str, Any]]) -> Iterator[ReplayServer]:
    """Run a :class:`ReplayServer` for the duration of the block."""
    state = ReplayServer(responses=list(responses))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                state.requests.append(
                    Recorded(
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                    )
                )
                reply = state.responses.pop(0) if state.responses else None
            if reply is None:
                self._send(500, {"error": {"message": "no more recorded responses"}})
            else:
                self._send(200, reply)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

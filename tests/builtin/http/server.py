"""A real HTTP server on a loopback address that records every request it receives."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True, kw_only=True, slots=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass(kw_only=True, slots=True)
class Reply:
    """What the server answers; ``chunks`` are written one by one with ``delay`` between."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Iterable[bytes] | None = None
    delay: float = 0.0


Route = Callable[[Received], Reply]


class RecordingServer:
    """Serves ``routes`` (path → handler) and keeps every request in ``received``."""

    def __init__(self, host: str = "127.0.0.1", *, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.received: list[Received] = []
        self.stopping = threading.Event()
        server_class = _Server6 if ":" in host else _Server
        self._httpd = server_class((host, 0), _handler_for(self))
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self.host = host
        self.port = self._httpd.server_address[1]

    def url(self, path: str = "/", *, scheme: str = "http", host: str | None = None) -> str:
        """The URL of ``path`` on this server, optionally under another host name."""
        name = host or (f"[{self.host}]" if ":" in self.host else self.host)
        return f"{scheme}://{name}:{self.port}{path}"

    def route(self, path: str, reply: Reply | Route) -> None:
        """Answer ``path`` with a fixed reply or a handler."""
        if isinstance(reply, Reply):
            fixed = reply
            self.routes[path] = lambda _received: fixed
        else:
            self.routes[path] = reply

    @contextmanager
    def running(self) -> Iterator[RecordingServer]:
        thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.stopping.set()
            self._httpd.shutdown()
            self._httpd.server_close()
            thread.join(timeout=5)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: object, client_address: object) -> None:
        """Clients that hang up mid-body (the size cap) are expected, not errors."""


class _Server6(_Server):
    address_family = socket.AF_INET6


def _handler_for(server: RecordingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            received = Received(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length) if length else b"",
            )
            server.received.append(received)
            handler = server.routes.get(parts.path)
            reply = handler(received) if handler else Reply(status=404, body=b"not found")
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.chunks is None:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self._pause(reply.delay)
                if self.command != "HEAD":
                    self.wfile.write(reply.body)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in reply.chunks:
                if server.stopping.is_set() or not self._pause(reply.delay):
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")

        def _pause(self, seconds: float) -> bool:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                if server.stopping.wait(0.01):
                    return False
            return True

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _serve

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the test output is not the place for an access log."""

    return Handler

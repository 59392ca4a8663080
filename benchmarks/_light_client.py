"""Light MCP clients over streamable HTTP and stdio, for load that costs its generator little.

The SDK's client spends about as much CPU a call as the servers under test, so one process
driving 8 or 32 SDK sessions saturates its core and the ratio measures the client. This one
speaks the same protocol with asyncio streams and plain HTTP/1.1 keep-alive: ``initialize``,
``notifications/initialized``, then ``tools/call`` requests carrying the ``Mcp-Session-Id``
and ``MCP-Protocol-Version`` headers (and the server's token, kept in the URL's query). It
reads both answers the transport may give, a JSON body or an SSE stream, and returns the
JSON-RPC response whose id is the request's. :class:`LightStdio` does the same over a server
process's pipes, one JSON-RPC message a line (notifications it receives are skipped).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

PROTOCOL_VERSION = "2025-11-25"


class LightSession:
    """One MCP session on one keep-alive HTTP connection; requests go one at a time."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._target = parts.path + (f"?{parts.query}" if parts.query else "")
        self._headers = {
            "Host": f"{self._host}:{self._port}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        self._next_id = 0
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> LightSession:
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-light", "version": "1"},
            },
        )
        self._headers["MCP-Protocol-Version"] = result["protocolVersion"]
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``: its result, raising if it is an error result."""
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"the call failed: {result}")
        return result

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        body = await self._post({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        for message in body:
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return dict(message["result"])
        raise RuntimeError(f"no response to {method} in {body!r}")

    async def _post(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        """POST one message; the JSON-RPC messages of the answer (none for a 202)."""
        assert self._reader is not None and self._writer is not None
        data = json.dumps(payload).encode()
        head = "".join(f"{k}: {v}\r\n" for k, v in self._headers.items())
        self._writer.write(
            f"POST {self._target} HTTP/1.1\r\n{head}Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        status, headers, body = await self._response()
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {body[:500]!r}")
        session = headers.get("mcp-session-id")
        if session is not None:
            self._headers["Mcp-Session-Id"] = session
        if not body:
            return []
        if headers.get("content-type", "").startswith("text/event-stream"):
            return _sse_messages(body)
        return [json.loads(body)]

    async def _response(self) -> tuple[int, dict[str, str], bytes]:
        assert self._reader is not None
        lines = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            return status, headers, await self._reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() != "chunked":
            raise RuntimeError(f"an answer this client cannot delimit: {headers}")
        chunks: list[bytes] = []
        while True:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";")[0], 16)
            chunk = await self._reader.readexactly(size + 2)
            if size == 0:
                return status, headers, b"".join(chunks)
            chunks.append(chunk[:-2])


def _sse_messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON of every SSE event's ``data`` (comments and keep-alives skipped)."""
    messages = []
    for event in body.decode().replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
        if data and any(data):
            messages.append(json.loads("\n".join(data)))
    return messages


class LightStdio:
    """One MCP session with a server process it starts, over its stdin and stdout."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: str) -> None:
        self._argv, self._env, self._cwd = argv, env, cwd
        self._next_id = 0
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> LightStdio:
        self._process = await asyncio.create_subprocess_exec(
            *self._argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=self._env,
            cwd=self._cwd,
            limit=64 * 1024 * 1024,
        )
        await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench-light", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *_: object) -> None:
        process = self._process
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call``: its result, raising if it is an error result."""
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"the call failed: {result}")
        return result

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self._process is not None and self._process.stdout is not None
        self._next_id += 1
        ident = self._next_id
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        while True:
            line = await self._process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed its output before answering {method}")
            message = json.loads(line)
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return dict(message["result"])

    def _send(self, payload: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(payload).encode() + b"\n")

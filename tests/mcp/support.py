"""Starting the test app (tests/mcp/app.py) as a real subprocess and connecting the SDK client."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession, ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_client_server_memory_streams

APP = Path(__file__).with_name("app.py")
SRC = Path(__file__).resolve().parents[2] / "src"
INIT_REQUEST = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}
"""An ``initialize`` request, for sessions opened by hand over HTTP."""
RAW_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers of every POST to the streamable HTTP endpoint."""


def app_env(marker_dir: Path, **extra: str) -> dict[str, str]:
    """The environment for the app: this checkout importable, markers in ``marker_dir``,
    and ``extra`` (``PAGE_SIZE``, ``SPILL_CHARS``)."""
    env = dict(os.environ)
    env.update(extra)
    env["MARKER_DIR"] = str(marker_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@asynccontextmanager
async def memory_session(server: Any, **client: Any) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``server`` (a ``build_server`` result) running in
    this process over memory streams; ``client`` goes to ``ClientSession`` (callbacks)."""
    async with (
        create_client_server_memory_streams() as (client_side, server_side),
        anyio.create_task_group() as group,
    ):
        group.start_soon(
            server.run, server_side[0], server_side[1], server.create_initialization_options()
        )
        async with ClientSession(client_side[0], client_side[1], **client) as session:
            await session.initialize()
            yield session
        group.cancel_scope.cancel()


@asynccontextmanager
async def stdio_session(
    tmp: Path, *, elicitation: ElicitationFnT | None = None, **env: str
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with the app running over stdio."""
    params = app_params(tmp, **env)
    with (tmp / "server-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, elicitation_callback=elicitation) as session,
        ):
            await session.initialize()
            yield session


def app_params(tmp: Path, **env: str) -> StdioServerParameters:
    """How to start the app over stdio (for ``mcp.Client`` as for ``stdio_client``)."""
    return StdioServerParameters(
        command=sys.executable,
        args=[str(APP), "stdio", str(tmp / "approvals.sqlite3")],
        env=app_env(tmp, **env),
    )


@contextmanager
def http_app(tmp: Path, **env: str) -> Iterator[str]:
    """The app serving streamable HTTP on a free loopback port; yields its URL. Once it has
    stopped, what it wrote to stderr after ``READY`` is in ``tmp/server-stderr.log``."""
    process = subprocess.Popen(
        [sys.executable, str(APP), "http", str(tmp / "approvals.sqlite3"), "0"],
        env=app_env(tmp, **env),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield await_ready(process)
    finally:
        process.terminate()
        try:
            _, rest = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            _, rest = process.communicate()
        (tmp / "server-stderr.log").write_text(rest)


def await_ready(process: subprocess.Popen[str], timeout: float = 20.0) -> str:
    """The URL a server subprocess prints to stderr as ``READY <url>`` once it listens."""
    assert process.stderr is not None
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 0.2)
        if ready:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            seen.append(line)
            if line.startswith("READY "):
                return line.split(" ", 1)[1].strip()
        elif process.poll() is not None:
            break
    raise AssertionError("the app did not start: " + "".join(seen))


async def open_raw_session(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """Initialize a session by hand; the headers its later requests carry."""
    opened = await client.post(url, json=INIT_REQUEST, headers=RAW_HEADERS)
    assert opened.status_code == 200
    headers = {
        **RAW_HEADERS,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    done = await client.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert done.status_code == 202
    return headers


def call_request(ident: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``tools/call`` request."""
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


@asynccontextmanager
async def http_session(
    url: str, *, elicitation: ElicitationFnT | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with a server over streamable HTTP.

    Leaving it while a call is still in flight (its task cancelled: the client gives up) is
    the SDK client's own race: the call's late answer can reach the read stream the session
    already closed, and the transport raises ``BrokenResourceError`` as it closes. That is the
    client leaving, not something the server did, so it is not raised; an error the body
    raised is, whatever its type, and so is every other error of the transport."""
    raised = False
    try:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, elicitation_callback=elicitation) as session,
        ):
            await session.initialize()
            try:
                yield session
            except BaseException:
                raised = True
                raise
    except* (anyio.BrokenResourceError, anyio.ClosedResourceError):
        if raised:
            raise


class Asker:
    """An elicitation callback whose answer each test sets, recording every question."""

    def __init__(self) -> None:
        self.action: str = "cancel"
        self.content: dict[str, Any] | None = None
        self.questions: list[str] = []

    def answer(self, action: str, content: dict[str, Any] | None = None) -> None:
        self.action, self.content = action, content
        self.questions.clear()

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.questions.append(params.message)
        action: Any = self.action
        return types.ElicitResult(action=action, content=self.content)


def text_of(result: Any) -> str:
    """The text blocks of a CallToolResult, joined."""
    return "\n".join(block.text for block in result.content if block.type == "text")


def error_meta(result: Any) -> dict[str, Any]:
    """The invokit error details a result carries in ``_meta``."""
    meta = result.meta or {}
    info = meta.get("invokit/error")
    assert isinstance(info, dict), meta
    return info

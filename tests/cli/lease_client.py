"""A real SDK client that asks ``invokit serve`` for a write and waits for the answer; the
lease tests kill it with SIGKILL while its question waits.

``python -m tests.cli.lease_client http URL PATH [progress|timeout|slow|stateless|dismiss]`` or
``... stdio - PATH`` (it launches ``invokit serve --stdio`` in the current directory, as a desktop
client would). It prints ``calling`` once connected, just before the call. With ``progress`` it
asks for progress notifications (so the server's heartbeats answer it on an SSE stream); with
``timeout`` it gives up on the call after 2 seconds, as a client's request timeout does, and then
stays connected; with ``slow`` it calls the tool ``slow`` (which the test serves) instead of
``fs.write``. With ``stateless`` it speaks the stateless protocol (2026-07-28) and cannot ask a
person; with ``dismiss`` it speaks it and can, and its person dismisses the question (printing
``dismissed``), so its retry waits for a decision made elsewhere; with ``stateless-slow`` it
speaks it and calls ``slow``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult

from mcp import Client


async def _heard(progress: float, total: float | None, message: str | None) -> None:
    print("progress", message, flush=True)


async def _call(session: ClientSession, path: str, mode: str = "") -> None:
    await session.initialize()
    print("calling", flush=True)
    try:
        result = await session.call_tool(
            "slow" if mode == "slow" else "fs.write",
            {"path": path, "content": "written"},
            read_timeout_seconds=2.0 if mode == "timeout" else None,
            progress_callback=_heard if mode == "progress" else None,
        )
    except Exception as exc:  # the request timed out: the session stays open
        print("gave up", repr(exc), flush=True)
        await anyio.sleep_forever()
    print("answered", result.is_error, flush=True)


async def _dismissed(context: Any, params: Any) -> ElicitResult:
    """The person dismisses the question in the client: no answer either way."""
    print("dismissed", flush=True)
    return ElicitResult(action="cancel")


async def _stateless(url: str, headers: dict[str, str], path: str, mode: str) -> None:
    """The call in the stateless protocol (2026-07-28): one POST, no session. With
    ``dismiss`` the client can ask its person, who dismisses the question."""
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode="2026-07-28",
            cache=None,
            elicitation_callback=_dismissed if mode == "dismiss" else None,
        ) as session,
    ):
        print("calling", flush=True)
        result = await session.call_tool(
            "slow" if mode == "stateless-slow" else "fs.write", {"path": path, "content": "written"}
        )
        print("answered", result.is_error, result, flush=True)


async def main(kind: str, url: str, path: str, mode: str = "") -> None:
    if kind == "stdio":
        command = str(Path(sys.executable).with_name("invokit"))
        # The SDK hands the server a bare environment unless told: this one carries the
        # state directory and the checkout's import path.
        params = StdioServerParameters(
            command=command, args=["serve", "--stdio"], env=dict(os.environ), cwd=os.getcwd()
        )
        streams: Any = stdio_client(params, errlog=sys.stderr)
        async with streams as (read, write), ClientSession(read, write) as session:
            await _call(session, path)
        return
    parts = urlsplit(url)
    headers = {"Authorization": f"Bearer {parse_qs(parts.query)['token'][0]}"}
    if mode in ("stateless", "dismiss", "stateless-slow"):
        await _stateless(parts._replace(query="").geturl(), headers, path, mode)
        return
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(parts._replace(query="").geturl(), http_client=http) as (
            read,
            write,
        ),
        ClientSession(read, write) as session,
    ):
        await _call(session, path, mode)


if __name__ == "__main__":
    kind, url, path = sys.argv[1:4]
    anyio.run(main, kind, url, path, "".join(sys.argv[4:5]))

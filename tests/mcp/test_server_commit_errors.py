"""Answers the SDK builds itself (a cancelled call's "Request cancelled", the error a raised
exception becomes) leave only once the call's records are written, as the server's own answers
do, with an executor that leaves the commit to its caller (as ``invokit serve`` builds it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.server.streamable_http import REQUEST_CANCELLED

from invokit.execution._audit_jsonl import read_jsonl
from tests.mcp.support import app_env, await_ready, call_request, open_raw_session

pytestmark = pytest.mark.anyio

SERVER = textwrap.dedent(
    """
    import os, sys
    from functools import partial
    import anyio
    from invokit import Executor, Policy, tool
    from invokit.approvals import MemoryApprovalStore
    from invokit.execution import JsonlAuditSink
    from invokit.mcp import serve
    from invokit.registry import ToolRegistry

    state = sys.argv[1]

    @tool(read_only=True)
    async def hold() -> str:
        '''Wait until cancelled.'''
        open(state + "/held", "w").close()
        await anyio.sleep_forever()
        return "never"

    @tool(read_only=False)
    def guarded() -> str:
        '''Asks for approval.'''
        return "ran"

    class Unreadable(MemoryApprovalStore):
        '''Keeps approval requests but fails to read them back.'''

        async def get(self, approval_id):
            raise RuntimeError("the approval store cannot be read")

    def ready(url):
        print("READY " + url, file=sys.stderr, flush=True)

    registry = ToolRegistry([hold, guarded])
    # As the CLI's serve builds it: the executor does not wait for the audit; an hour between
    # background writes, and no type written at once (approvals are, by default), so only a
    # commit puts records on disk.
    sink = JsonlAuditSink(state + "/audit.jsonl", flush_interval=3600, durable=())
    executor = Executor(
        registry,
        policy=Policy(),
        approvals=Unreadable(),
        events=[sink],
        commit_on_return=False,
    )
    with open(state + "/pid", "w") as file:
        file.write(str(os.getpid()))
    anyio.run(partial(serve, registry, executor, transport="http", port=0, ready=ready))
    """
)


@contextmanager
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The server above on a free loopback port: its URL and its state directory."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    state = tmp_path / "state"
    state.mkdir()
    process = subprocess.Popen(
        [sys.executable, str(script), str(state)],
        env=app_env(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield await_ready(process), state
    finally:
        process.kill()
        process.communicate()


def kill_9(state: Path) -> None:
    """Kill the server with SIGKILL: no flush, no atexit."""
    os.kill(int((state / "pid").read_text()), signal.SIGKILL)


def records_of(state: Path) -> list[dict[str, Any]]:
    """The audit records on disk, in order."""
    log = state / "audit.jsonl"
    return list(read_jsonl(log)) if log.exists() else []


async def test_a_cancelled_call_is_on_disk_when_the_client_is_told(tmp_path: Path) -> None:
    """A call the client cancels has its records, the cancellation included, written before
    the "Request cancelled" answer reaches the client."""
    answers: list[httpx.Response] = []
    with server(tmp_path) as (url, state):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await open_raw_session(client, url)

            async def call() -> None:
                answers.append(
                    await client.post(url, json=call_request(2, "hold", {}), headers=headers)
                )
                kill_9(state)

            with anyio.fail_after(20):
                async with anyio.create_task_group() as group:
                    group.start_soon(call)
                    while not (state / "held").exists():  # noqa: ASYNC110
                        await anyio.sleep(0.02)
                    cancel: dict[str, Any] = {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": 2},
                    }
                    await client.post(url, json=cancel, headers=headers)
    (answer,) = answers
    assert answer.json()["error"]["code"] == REQUEST_CANCELLED
    records = records_of(state)
    assert [r["type"] for r in records] == ["received", "validated", "decided", "started", "failed"]
    assert records[-1]["data"]["kind"] == "cancelled"


async def test_a_call_whose_handler_raises_is_on_disk_when_the_client_is_told(
    tmp_path: Path,
) -> None:
    """A call whose handler raises (the approval store fails) has its records written before
    the error the SDK makes of it reaches the client."""
    with server(tmp_path) as (url, state):
        async with httpx.AsyncClient(timeout=30) as client:
            headers = await open_raw_session(client, url)
            with anyio.fail_after(20):
                answer = await client.post(
                    url, json=call_request(2, "guarded", {}), headers=headers
                )
            kill_9(state)
    assert answer.json()["id"] == 2
    assert "error" in answer.json()
    kinds = [r["type"] for r in records_of(state)]
    assert kinds == ["received", "validated", "decided", "approval_requested", "interrupted"]

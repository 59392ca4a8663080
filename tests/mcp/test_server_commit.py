"""The MCP server answers only once the records of what it answers are written, also with an
executor that leaves the commit to its caller (as ``invokit serve`` builds it)."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from invokit.execution._audit_jsonl import read_jsonl
from tests.mcp.support import app_env

pytestmark = pytest.mark.anyio

SERVER = textwrap.dedent(
    """
    import os, sys
    import anyio
    from invokit import Executor, Policy, tool
    from invokit.execution import JsonlAuditSink
    from invokit.mcp import serve
    from invokit.registry import ToolRegistry

    state, mode = sys.argv[1], sys.argv[2]

    @tool(read_only=True)
    async def echo(text: str) -> str:
        '''Echo.'''
        return text

    registry = ToolRegistry([echo])
    # As the CLI's serve builds it: the executor does not wait for the audit; an hour between
    # background writes, so only a commit puts records on disk.
    executor = Executor(
        registry,
        policy=Policy.allow_all(),
        events=[JsonlAuditSink(state + "/audit.jsonl", flush_interval=3600)],
        commit_on_return=False,
    )
    if mode == "no-barrier":  # the control: a server that answers without committing
        async def skip() -> None:
            pass
        executor.commit = skip
    with open(state + "/pid", "w") as file:
        file.write(str(os.getpid()))
    anyio.run(serve, registry, executor)
    """
)

STEPS = ["received", "validated", "decided", "started", "completed"]


async def answered_then_killed(tmp_path: Path, mode: str) -> tuple[int, list[dict[str, object]]]:
    """Call ``echo`` through a real SDK client session (sequential and concurrent calls),
    ``kill -9`` the server right after the last answer; the answers and the log's records."""
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    state = tmp_path / "state"
    state.mkdir()
    params = StdioServerParameters(
        command=sys.executable, args=[str(script), str(state), mode], env=app_env(tmp_path)
    )
    answers = 0
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(3):
                result = await session.call_tool("echo", {"text": "hi"})
                assert not result.is_error, result
                answers += 1

            async def one() -> None:
                nonlocal answers
                result = await session.call_tool("echo", {"text": "hi"})
                assert not result.is_error, result
                answers += 1

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(one)
            os.kill(int((state / "pid").read_text()), signal.SIGKILL)  # no flush, no atexit
    log = state / "audit.jsonl"
    return answers, list(read_jsonl(log)) if log.exists() else []


async def test_kill_9_after_the_answers_loses_no_record(tmp_path: Path) -> None:
    """Every call the client got an answer for has its five records on disk."""
    answers, records = await answered_then_killed(tmp_path, "barrier")
    assert answers == 15
    by_call: dict[object, list[object]] = {}
    for record in records:
        by_call.setdefault(record["call_id"], []).append(record["type"])
    assert len(by_call) == 15
    assert all(kinds == STEPS for kinds in by_call.values()), by_call


async def test_without_the_barrier_the_answered_records_are_lost(tmp_path: Path) -> None:
    """The same server answering without ``executor.commit()`` loses them: the test above can
    fail."""
    answers, records = await answered_then_killed(tmp_path, "no-barrier")
    assert answers == 15
    assert records == []

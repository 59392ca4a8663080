"""The person at the terminal and a client that goes away: the question on screen is
withdrawn, and a "y" typed afterwards runs nothing (the server in this process over real HTTP,
the SDK client in another, killed with SIGKILL; or over memory streams, the lease running out
under a stalled process). A call running a tool when its client goes runs on."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from io import StringIO
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from invokit import Executor, Policy, ToolRegistry, tool
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.cli._terminal import TerminalApprover
from invokit.exceptions import ApprovalAlreadyUsed
from invokit.mcp import serve
from tests.cli.test_terminal import PipeReader

pytestmark = pytest.mark.anyio

TOKEN = "lease-test-token"
CLIENT = (sys.executable, "-m", "tests.cli.lease_client")


async def _shown(out: StringIO, text: str) -> None:
    """Wait, up to thirty seconds, for ``text`` in the terminal's output."""
    with anyio.fail_after(30):
        while text not in out.getvalue():  # noqa: ASYNC110 - output, no event to wait on
            await anyio.sleep(0.05)


@asynccontextmanager
async def serving(executor: Executor, heartbeat: float) -> AsyncIterator[str]:
    """``serve`` over HTTP on a free loopback port, in this process; its URL with the token."""
    found: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        found.append(url)
        ready.set()

    async with anyio.create_task_group() as group:
        group.start_soon(
            partial(
                serve,
                executor.registry,
                executor,
                transport="http",
                port=0,
                ready=on_ready,
                token=TOKEN,
                heartbeat=heartbeat,
                approval_lease=2.0,
            )
        )
        with anyio.fail_after(30):
            await ready.wait()
        yield f"{found[0]}?token={TOKEN}"
        group.cancel_scope.cancel()


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("", id="json-answer"),
        pytest.param("progress", id="sse-stream"),
        pytest.param("stateless", id="stateless-protocol"),
    ],
)
async def test_a_killed_http_client_takes_the_terminal_question_with_it(
    tmp_path: Path, mode: str
) -> None:
    """The terminal asks about a write; its HTTP client (a handshake session, or the
    stateless protocol's single POST) is killed with SIGKILL. The question is withdrawn on
    screen, the person's later "y" runs nothing, and approving it from the CLI is refused as
    withdrawn."""
    progress = mode == "progress"
    root = tmp_path / "root"
    root.mkdir()
    state = tmp_path / "state"
    reader = PipeReader()
    out = StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    approver = TerminalApprover(console, reader=reader, root=root)
    executor = Executor(
        filesystem(root),
        policy=Policy(allow=["fs.read"], ask=["fs.write"], root=root),
        approvals=SqliteApprovalStore(state / "approvals.sqlite3", forbidden_roots=[root]),
        approver=approver,
    )
    approver.registry = executor.registry
    async with serving(executor, heartbeat=0.2 if progress else 5.0) as url:
        with (tmp_path / "client.log").open("w") as log:
            client = await anyio.open_process(
                [sys.executable, "-m", "tests.cli.lease_client", "http", url, "late.txt", mode],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            await _shown(out, "/n:")  # the question is on screen
            if progress:
                with anyio.fail_after(30):
                    while "progress" not in (tmp_path / "client.log").read_text():  # noqa: ASYNC110
                        await anyio.sleep(0.05)
        finally:
            client.send_signal(signal.SIGKILL)
            await client.wait()
        await _shown(out, "withdrawn: the caller went away")
        reader.type("y\n")  # the person answers after the caller went away
        (pending,) = [
            line.split()[1] for line in out.getvalue().splitlines() if line.startswith("? ")
        ][:1]
        # The panel goes first; the record follows (another task writes it).
        record = await executor.approvals.wait_decided(pending, 30)
        assert record.status == "denied" and record.decision is not None
        assert record.decision.by == "executor"
        with pytest.raises(ApprovalAlreadyUsed, match="withdrawn"):
            await executor.approvals.resolve(pending, ApprovalDecision.approve(by="cli"))
    assert not (root / "late.txt").exists()
    reader.close()
    await executor.aclose()


def _terminal(root: Path, store: object, **tools: object) -> tuple[Executor, PipeReader, StringIO]:
    """An executor asking at a terminal (its keys typed by the test, its output kept)."""
    reader = PipeReader()
    out = StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    approver = TerminalApprover(console, reader=reader, root=root)
    executor = Executor(
        filesystem(root),
        policy=Policy(allow=["fs.read", "slow"], ask=["fs.write"], root=root),
        approvals=store,  # type: ignore[arg-type]  # a store of the test's choosing
        approver=approver,
    )
    approver.registry = executor.registry
    return executor, reader, out


async def test_a_lease_that_runs_out_under_a_stalled_server_takes_the_question_down(
    tmp_path: Path,
) -> None:
    """The store's clock passes the question's lease (as if this process stalled longer than
    it): the next renewal finds it withdrawn, the terminal takes the question down, the client
    is told it was withdrawn because its caller went away, and a later "y" runs nothing."""
    from invokit.approvals import MemoryApprovalStore
    from invokit.mcp import build_server
    from tests.approvals.helpers import Clock
    from tests.mcp.support import error_meta, memory_session

    root = tmp_path / "root"
    root.mkdir()
    clock = Clock(time.time())
    store = MemoryApprovalStore(clock=clock)
    executor, reader, out = _terminal(root, store)
    server = build_server(executor.registry, executor, approval_lease=0.6)
    answers: list[Any] = []
    async with memory_session(server) as session, anyio.create_task_group() as group:

        async def call() -> None:
            answers.append(
                await session.call_tool("fs.write", {"path": "late.txt", "content": "x"})
            )

        group.start_soon(call)
        await _shown(out, "/n:")
        clock.now += 3600 * 0.5  # far past the lease, not past the approval's lifetime
        await _shown(out, "withdrawn: the caller went away")
    reader.type("y\n")  # the person answers after the question was withdrawn
    (answer,) = answers
    assert answer.is_error and error_meta(answer)["kind"] == "approval_denied"
    (record,) = [r for r in store._records.values() if r.request.tool == "fs.write"]
    assert record.status == "denied" and record.decision is not None
    assert "went away" in (record.decision.reason or "")
    assert not (root / "late.txt").exists()
    reader.close()
    await executor.aclose()


async def test_a_tool_running_when_its_client_is_killed_runs_on(tmp_path: Path) -> None:
    """Only a wait for a person ends with the client: a tool already running when its HTTP
    client is killed with SIGKILL finishes its work."""
    root = tmp_path / "root"
    root.mkdir()
    started = anyio.Event()
    release = anyio.Event()

    @tool
    async def slow(path: str, content: str) -> str:
        """Write ``content`` to ``path`` once the test lets it."""
        started.set()
        await release.wait()
        (root / path).write_text(content)
        return "written"

    executor = Executor(
        ToolRegistry([slow]),
        policy=Policy(allow=["slow"], root=root),
        approvals=SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3"),
    )
    async with serving(executor, heartbeat=5.0) as url:
        with (tmp_path / "client.log").open("w") as log:
            client = await anyio.open_process(
                [sys.executable, "-m", "tests.cli.lease_client", "http", url, "ran.txt", "slow"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            with anyio.fail_after(30):
                await started.wait()
        finally:
            client.send_signal(signal.SIGKILL)
            await client.wait()
        release.set()
        with anyio.fail_after(30):
            while not (root / "ran.txt").exists():  # noqa: ASYNC110 - a file, no event
                await anyio.sleep(0.05)
    assert (root / "ran.txt").read_text() == "written"
    await executor.aclose()


async def test_over_the_stateless_protocol_a_closed_connection_cancels_the_tool(
    tmp_path: Path,
) -> None:
    """Over the stateless protocol closing a request's connection is how a client cancels it
    (there is no session to send a cancel on): a tool running when its client is killed with
    SIGKILL is cancelled, and writes nothing."""
    root = tmp_path / "root"
    root.mkdir()
    started = anyio.Event()
    cancelled = anyio.Event()

    @tool
    async def slow(path: str, content: str) -> str:
        """Write ``content`` to ``path`` once the test lets it (it never does)."""
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        (root / path).write_text(content)
        return "written"

    executor = Executor(
        ToolRegistry([slow]),
        policy=Policy(allow=["slow"], root=root),
        approvals=SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3"),
    )
    async with serving(executor, heartbeat=5.0) as url:
        with (tmp_path / "client.log").open("w") as log:
            client = await anyio.open_process(
                [*CLIENT, "http", url, "ran.txt", "stateless-slow"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            with anyio.fail_after(30):
                await started.wait()
        finally:
            client.send_signal(signal.SIGKILL)
            await client.wait()
        with anyio.fail_after(30):
            await cancelled.wait()
    assert not (root / "ran.txt").exists()
    await executor.aclose()

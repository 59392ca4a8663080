"""The person at the terminal and a client killed with SIGKILL: the question on screen is
withdrawn, and a "y" typed afterwards runs nothing (the server in this process over real HTTP,
the SDK client in another)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from io import StringIO
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from invokit import Executor, Policy
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.cli._terminal import TerminalApprover
from invokit.exceptions import ApprovalAlreadyUsed
from invokit.mcp import serve
from tests.cli.test_terminal import PipeReader

pytestmark = pytest.mark.anyio

TOKEN = "lease-test-token"


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
    "progress", [pytest.param(False, id="json-answer"), pytest.param(True, id="sse-stream")]
)
async def test_a_killed_http_client_takes_the_terminal_question_with_it(
    tmp_path: Path, progress: bool
) -> None:
    """The terminal asks about a write; its HTTP client is killed with SIGKILL. The question
    is withdrawn on screen, the person's later "y" runs nothing, and approving it from the CLI
    is refused as withdrawn."""
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
                [sys.executable, "-m", "tests.cli.lease_client", "http", url, "late.txt"]
                + (["progress"] if progress else []),
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
        record = await executor.approvals.get(pending)
        assert record.status == "denied" and record.decision is not None
        assert record.decision.by == "executor"
        with pytest.raises(ApprovalAlreadyUsed, match="withdrawn"):
            await executor.approvals.resolve(pending, ApprovalDecision.approve(by="cli"))
    assert not (root / "late.txt").exists()
    reader.close()
    await executor.aclose()

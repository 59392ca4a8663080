"""Approvals tied to a live caller, heartbeats while a person decides, and pending messages
that only say what can work: the real server and SDK client over memory streams."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.memory import create_client_server_memory_streams
from rich.console import Console

from invokit import Executor, Policy, ToolContext, tool
from invokit.approvals import (
    ApprovalDecision,
    ApprovalRequest,
    MemoryApprovalStore,
    SqliteApprovalStore,
)
from invokit.builtin import filesystem
from invokit.exceptions import ApprovalError
from invokit.execution import JsonlAuditSink
from invokit.mcp import build_server
from invokit.mcp._elicit import approval_reach, pending_message
from tests.cli.test_terminal import PipeReader
from tests.mcp.support import error_meta, memory_session, text_of

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def connected(
    executor: Executor, *, heartbeat: float = 5.0, elicitation: Any = None
) -> AsyncIterator[ClientSession]:
    """A real SDK client session to ``build_server`` over memory streams."""
    server = build_server(executor.registry, executor, heartbeat=heartbeat)
    async with memory_session(server, elicitation_callback=elicitation) as session:
        yield session


def _executor(tmp_path: Path, **kwargs: Any) -> tuple[Executor, Path, Path]:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    state = tmp_path / "state"
    executor = Executor(
        filesystem(root),
        policy=Policy(allow=["fs.read"], ask=["fs.write"], root=root),
        approvals=SqliteApprovalStore(state / "approvals.sqlite3", forbidden_roots=[root]),
        events=[JsonlAuditSink(state / "audit.jsonl", forbidden_roots=[root])],
        **kwargs,
    )
    return executor, root, state


def _resolved(state: Path) -> list[dict[str, Any]]:
    lines = (state / "audit.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["type"] == "approval_resolved"]


async def _wait_for(predicate: Any) -> None:
    """Poll ``predicate()`` (output written by another task) for up to ten seconds."""
    with anyio.fail_after(10):
        while not predicate():  # noqa: ASYNC110 - polls output, there is no event to wait on
            await anyio.sleep(0.02)


async def test_a_write_approved_after_the_client_cancelled_does_not_run(tmp_path: Path) -> None:
    """The client cancels a write while the terminal asks; the question is withdrawn and
    the request recorded as withdrawn. The person then answers "y", and approving it from
    the CLI fails: nothing is written."""
    from invokit.cli._terminal import TerminalApprover

    reader = PipeReader()
    out = StringIO()
    console = Console(file=out, width=200, force_terminal=False)
    executor, root, state = _executor(
        tmp_path, approver=TerminalApprover(console, reader=reader, root=tmp_path / "root")
    )
    async with connected(executor) as session, anyio.create_task_group() as group:
        group.start_soon(session.call_tool, "fs.write", {"path": "late.txt", "content": "x"})
        await _wait_for(lambda: "/n:" in out.getvalue())
        group.cancel_scope.cancel()  # the client gives up: notifications/cancelled
    await _wait_for(lambda: "withdrawn: the caller went away" in out.getvalue())
    reader.type("y\n")  # the person answers after the caller went away
    await anyio.sleep(0.3)
    assert not (root / "late.txt").exists()
    (record,) = [r for r in _resolved(state) if r["tool"] == "fs.write"]
    approval_id = record["data"]["id"]
    stored = await executor.approvals.get(approval_id)
    assert stored.status == "denied" and stored.decision is not None
    assert stored.decision.channel == "executor"
    assert record["data"]["verdict"] == "withdrawn" and record["data"]["channel"] == "executor"
    with pytest.raises(ApprovalError):  # `invokit approvals approve ID` cannot revive it
        await executor.approvals.resolve(approval_id, ApprovalDecision.approve(by="cli"))
    assert not (root / "late.txt").exists()
    reader.close()
    await executor.aclose()


async def test_a_cancelled_call_withdraws_its_elicitation(tmp_path: Path) -> None:
    """A client that cancels a call while its own approval form is open: the form's later
    "approve" cannot run the write, and the request is recorded as withdrawn."""
    executor, root, state = _executor(tmp_path)
    (root / "here.txt").write_text("still here")
    opened = anyio.Event()
    release = anyio.Event()

    async def slow_person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        opened.set()
        await release.wait()
        return types.ElicitResult(action="accept", content={"approve": True})

    async with connected(executor, elicitation=slow_person) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "fs.write", {"path": "late.txt", "content": "x"})
            with anyio.fail_after(10):
                await opened.wait()
            group.cancel_scope.cancel()
        await _wait_for(lambda: (state / "audit.jsonl").exists() and bool(_resolved(state)))
        release.set()
        await anyio.sleep(0.3)
        result = await session.call_tool("fs.read", {"path": "here.txt"})
        assert not result.is_error  # the session goes on; only that call was withdrawn
    assert not (root / "late.txt").exists()
    (record,) = _resolved(state)
    assert record["data"]["verdict"] == "withdrawn"
    assert (await executor.approvals.list_pending()) == []
    await executor.aclose()


async def test_heartbeats_reach_a_client_with_a_progress_token(tmp_path: Path) -> None:
    """While a person takes their time, a client that sent a progress token receives
    progress notifications that say the call waits for approval; the values only grow."""
    decided = anyio.Event()

    async def person(request: ApprovalRequest) -> ApprovalDecision:
        await anyio.sleep(1.2)
        decided.set()
        return ApprovalDecision.approve(by="a slow person")

    executor, root, _ = _executor(tmp_path, approver=person)
    beats: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        beats.append((progress, message))

    async with connected(executor, heartbeat=0.2) as session:
        result = await session.call_tool(
            "fs.write", {"path": "slow.txt", "content": "ok"}, progress_callback=on_progress
        )
        quiet: list[tuple[float, str | None]] = []

        async def count(progress: float, total: float | None, message: str | None) -> None:
            quiet.append((progress, message))

        await session.call_tool("fs.read", {"path": "slow.txt"}, progress_callback=count)
    assert not result.is_error and decided.is_set()
    assert (root / "slow.txt").read_text() == "ok"
    assert len(beats) >= 3, beats
    assert all("waiting for a person to approve fs.write" in (m or "") for _, m in beats)
    values = [v for v, _ in beats]
    assert values == sorted(set(values))
    assert quiet == []  # a call nobody has to approve gets no heartbeats
    await executor.aclose()


@tool(destructive=True)
async def migrate(steps: int, ctx: ToolContext) -> str:
    """A change that needs approval and reports its own progress, ``i of steps``."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    await ctx.report_progress(2, steps, "a tool that goes back")
    return "migrated"


async def test_progress_after_heartbeats_only_grows_and_stays_within_its_total() -> None:
    """Heartbeats while a person decides, then the tool's own ``1 of 4`` .. ``4 of 4``: every
    value the client receives is above the one before, never above the total sent with it,
    and the tool's steps keep their order and distance."""

    async def person(request: ApprovalRequest) -> ApprovalDecision:
        await anyio.sleep(0.7)
        return ApprovalDecision.approve(by="a slow person")

    executor = Executor([migrate], approver=person)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connected(executor, heartbeat=0.1) as session:
        result = await session.call_tool("migrate", {"steps": 4}, progress_callback=on_progress)
    assert not result.is_error, result
    beats = [v for v, _, m in seen if "waiting for a person" in (m or "")]
    steps = [(v, t) for v, t, m in seen if (m or "").startswith("step")]
    assert len(beats) >= 2 and len(steps) == 4, seen
    values = [v for v, _, _ in seen]
    assert all(b > a for a, b in itertools.pairwise(values)), seen
    assert all(t is None or v <= t for v, t, _ in seen), seen
    offset = steps[0][0] - 1
    assert steps == [(i + offset, 4 + offset) for i in range(1, 5)], seen
    assert not any("goes back" in (m or "") for _, _, m in seen)
    await executor.aclose()


async def test_heartbeats_after_a_finished_total_keep_it_a_bound() -> None:
    """A heartbeat after the tool reached its total raises the value and the total together:
    ``10 of 10`` then ``11 of 11``, never ``11`` above a total of ``10``."""
    from invokit.mcp._progress import ProgressReporter
    from invokit.tools import Progress

    sent: list[tuple[float, float | None, str | None]] = []

    class Session:
        async def report_progress(
            self, progress: float, total: float | None, message: str | None
        ) -> None:
            sent.append((progress, total, message))

    class Ctx:
        session = Session()

    async def run() -> None:
        reporter = ProgressReporter(Ctx())
        for _ in range(3):
            await reporter.beat("waiting for a person")
        await reporter(Progress(progress=1, total=10, message="step 1"))
        await reporter(Progress(progress=10, total=10, message="done"))
        await reporter.beat("waiting")
        await reporter(Progress(progress=12, total=10, message="past the total"))
        await reporter(Progress(message="a plain yield"))

    await run()
    assert [v for v, _, _ in sent] == [1, 2, 3, 4, 13, 14]
    assert [t for _, t, _ in sent] == [None, None, None, 13, 13, 14]


async def test_no_heartbeats_without_a_progress_token(tmp_path: Path) -> None:
    """A client that sent no progress token is sent no progress notifications."""
    seen: list[types.ServerNotification] = []

    async def person(request: ApprovalRequest) -> ApprovalDecision:
        await anyio.sleep(0.6)
        return ApprovalDecision.approve(by="a person")

    executor, _, _ = _executor(tmp_path, approver=person)
    server = build_server(executor.registry, executor, heartbeat=0.1)

    async def record(message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            seen.append(message)

    async with (
        create_client_server_memory_streams() as (client, server_side),
        anyio.create_task_group() as group,
    ):
        group.start_soon(
            server.run, server_side[0], server_side[1], server.create_initialization_options()
        )
        async with ClientSession(client[0], client[1], message_handler=record) as session:
            await session.initialize()
            result = await session.call_tool("fs.write", {"path": "a.txt", "content": "ok"})
        group.cancel_scope.cancel()
    assert not result.is_error and seen == []
    await executor.aclose()


async def test_the_pending_message_names_the_cli_only_when_it_can_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`invokit approvals approve ID` is suggested only for the SQLite store the CLI opens; a
    store elsewhere says to approve in the host application; an in-memory store says nobody
    outside can approve it. Each names the id and says a retry needs the same session."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "root"
    root.mkdir()
    stores: dict[str, Any] = {
        "cli": SqliteApprovalStore(forbidden_roots=[root]),
        "host": SqliteApprovalStore(tmp_path / "elsewhere" / "a.sqlite3"),
        "none": MemoryApprovalStore(),
    }
    for reach, store in stores.items():
        assert approval_reach(store) == reach
        executor = Executor(
            filesystem(root), policy=Policy(ask=["fs.write"], root=root), approvals=store
        )
        async with connected(executor) as session:
            result = await session.call_tool("fs.write", {"path": "a.txt", "content": "x"})
        assert error_meta(result)["kind"] == "approval_required"
        message = text_of(result)
        approval_id = error_meta(result)["data"]["approval_id"]
        assert approval_id in message and "Nothing ran" in message
        says_cli = f"invokit approvals approve {approval_id}" in message
        assert says_cli == (reach == "cli"), message
        if reach == "host":
            assert "application that runs this server" in message
            assert "same session" in message
        if reach == "none":
            assert "in memory" in message and "nobody can approve" in message
        await executor.aclose()
    assert not (root / "a.txt").exists()


def test_pending_message_quotes_a_reason_inert() -> None:
    """A policy reason with escapes is shown without them in the pending message."""
    from invokit import ToolCall
    from invokit.permissions import Decision

    fs = filesystem(".")
    spec = fs.get("fs.write")
    assert spec is not None
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="fs.write", arguments={}),
        spec=spec.spec,
        arguments={},
        decision=Decision.ask("why\x1b[2J\nnot"),
    )
    for reach in ("cli", "host", "none"):
        text = pending_message(request, reach)
        assert "\x1b" not in text and "\n" not in text


async def test_an_elicitation_answer_is_audited_as_elicitation(tmp_path: Path) -> None:
    """A person who approves in the client's form is recorded with channel `elicitation`;
    one who declines, likewise, with their reason."""
    executor, root, state = _executor(tmp_path)

    async def person(
        context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        approve = '"path": "yes.txt"' in params.message
        return types.ElicitResult(
            action="accept", content={"approve": approve, "reason": "not that one"}
        )

    async with connected(executor, elicitation=person) as session:
        ok = await session.call_tool("fs.write", {"path": "yes.txt", "content": "1"})
        no = await session.call_tool("fs.write", {"path": "no.txt", "content": "1"})
    assert not ok.is_error and no.is_error
    assert (root / "yes.txt").exists() and not (root / "no.txt").exists()
    await executor.aclose()
    verdicts = {r["data"]["verdict"]: r["data"] for r in _resolved(state)}
    assert set(verdicts) == {"approve", "deny"}
    assert all(d["channel"] == "elicitation" for d in verdicts.values())
    assert verdicts["deny"]["reason"] == "not that one"

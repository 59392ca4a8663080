"""A call executed again while its approval waits gets that approval back, not a new one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, ToolRegistry
from invokit.approvals import (
    ApprovalDecision,
    ApprovalStore,
    MemoryApprovalStore,
    SqliteApprovalStore,
)
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted

from .conftest import ListSink, Recorder

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    if request.param == "memory":
        yield MemoryApprovalStore()
    else:
        yield SqliteApprovalStore(tmp_path / "approvals.sqlite3")


def _call(call_id: str = "c1", session: str | None = "s1", **arguments: Any) -> ToolCall:
    return ToolCall(
        id=call_id, name="delete", arguments=arguments or {"path": "a.txt"}, session_id=session
    )


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def _kind(outcome: object) -> str | None:
    assert isinstance(outcome, Failed | Completed)
    return outcome.result.error.kind if outcome.result.error is not None else None


async def test_same_pending_approval_comes_back(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Executing a waiting call again returns the same approval; only one is pending."""
    sink = ListSink()
    executor = Executor(registry, approvals=store, events=[sink], project=PROJECT)
    first = _approval(await executor.execute(_call()))
    again = _approval(await executor.execute(_call()))
    assert again.id == first.id and again.request == first.request
    assert [r.id for r in await store.list_pending()] == [first.id]
    assert len(sink.of("approval_requested")) == 1
    assert len(sink.of("interrupted")) == 2
    assert recorder.calls == []
    await executor.aclose()


async def test_approved_meanwhile_runs_once(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Approved elsewhere, the call executed again runs once, using the approval; executed
    a third time it asks anew."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call()))
    await store.resolve(first.id, ApprovalDecision.approve(by="ana"))
    ran = await executor.execute(_call())
    assert isinstance(ran, Completed) and ran.result.text == "deleted a.txt"
    assert ran.result.metadata["approval_id"] == first.id
    assert (await store.get(first.id)).status == "consumed"
    assert recorder.count("delete") == 1
    third = _approval(await executor.execute(_call()))
    assert third.id != first.id
    assert recorder.count("delete") == 1
    await executor.aclose()


async def test_edited_approval_runs_the_edit(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """A person who approved edited arguments meanwhile gets those run by the retry."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call()))
    await store.resolve(first.id, ApprovalDecision.approve(arguments={"path": "safe.txt"}))
    ran = await executor.execute(_call())
    assert isinstance(ran, Completed) and ran.result.text == "deleted safe.txt"
    assert recorder.calls == [("delete", {"path": "safe.txt"})]
    await executor.aclose()


async def test_denied_meanwhile_is_the_denial(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Denied by a person, the call executed again is that denial; nothing runs."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call()))
    await store.resolve(first.id, ApprovalDecision.deny("no deleting", by="ana"))
    again = await executor.execute(_call())
    assert isinstance(again, Failed) and _kind(again) == "approval_denied"
    assert "no deleting" in again.result.text
    assert await store.list_pending() == [] and recorder.calls == []
    await executor.aclose()


async def test_withdrawn_by_the_executor_asks_again(
    registry: ToolRegistry, store: ApprovalStore
) -> None:
    """A request the executor withdrew (the caller went away) is no answer: the retry asks."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call()))
    await store.withdraw(first.id, ApprovalDecision.deny("gone", by="executor"))
    again = _approval(await executor.execute(_call()))
    assert again.id != first.id
    await executor.aclose()


async def test_other_arguments_withdraw_the_old_approval(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Other arguments under the same call id get a new approval; the old one is withdrawn."""
    sink = ListSink()
    executor = Executor(registry, approvals=store, events=[sink], project=PROJECT)
    first = _approval(await executor.execute(_call()))
    second = _approval(await executor.execute(_call(path="b.txt")))
    assert second.id != first.id
    old = await store.get(first.id)
    assert old.status == "denied"
    assert old.decision is not None and old.decision.by == "executor"
    assert [r.id for r in await store.list_pending()] == [second.id]
    back = _approval(await executor.execute(_call(path="b.txt")))
    assert back.id == second.id
    late = await executor.resume(first.id, approve=True)
    assert isinstance(late, Failed) and _kind(late) == "approval_denied"
    assert recorder.calls == []
    await executor.aclose()


async def test_other_session_or_project_gets_its_own(
    registry: ToolRegistry, store: ApprovalStore
) -> None:
    """The same call id in another session, or in another project, is another call."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    elsewhere = Executor(registry, approvals=store, project="/work/other")
    first = _approval(await executor.execute(_call()))
    other_session = _approval(await executor.execute(_call(session="s2")))
    no_session = _approval(await executor.execute(_call(session=None)))
    other_project = _approval(await elsewhere.execute(_call()))
    ids = {first.id, other_session.id, no_session.id, other_project.id}
    assert len(ids) == 4
    assert (await store.get(first.id)).status == "pending"
    assert _approval(await executor.execute(_call(session=None))).id == no_session.id
    await executor.aclose()


async def test_pending_finds_the_approval_by_call_id(
    registry: ToolRegistry, store: ApprovalStore
) -> None:
    """executor.pending finds a waiting approval by the framework's call id, and stops
    finding it once it is decided."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    assert await executor.pending("c1", session_id="s1") is None
    first = _approval(await executor.execute(_call()))
    found = await executor.pending("c1", session_id="s1")
    assert found is not None and found.id == first.id
    assert await executor.pending("c1") is None
    assert await executor.pending("c2", session_id="s1") is None
    await store.resolve(first.id, ApprovalDecision.deny(by="ana"))
    assert await executor.pending("c1", session_id="s1") is None
    await executor.aclose()


async def test_inline_approver_answers_the_waiting_request(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """An executor with an approver, given a call another executor left waiting, asks its
    approver about that same request and runs the call once."""
    waiting = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await waiting.execute(_call()))
    seen: list[str] = []

    async def approver(request: Any) -> bool:
        seen.append(request.id)
        return True

    answering = Executor(registry, approvals=store, approver=approver, project=PROJECT)
    ran = await answering.execute(_call())
    assert isinstance(ran, Completed) and seen == [first.id]
    assert (await store.get(first.id)).status == "consumed"
    assert recorder.count("delete") == 1


async def test_find_by_call_is_the_newest_any_status(store: ApprovalStore) -> None:
    """find_by_call returns the newest approval of a call id, session and project, whatever
    its status; nothing for another session or project."""
    from invokit import tool

    @tool(destructive=True)
    def wipe(name: str) -> str:
        """Wipe."""
        return name

    executor = Executor([wipe], approvals=store, project=PROJECT)

    def call(name: str) -> ToolCall:
        return ToolCall(id="x", name="wipe", arguments={"name": name}, session_id="s")

    first = _approval(await executor.execute(call("a")))
    second = _approval(await executor.execute(call("b")))
    found = await store.find_by_call("x", session_id="s", project=PROJECT)
    assert found is not None and found.request.id == second.id and found.status == "pending"
    await store.resolve(second.id, ApprovalDecision.deny(by="ana"))
    found = await store.find_by_call("x", session_id="s", project=PROJECT)
    assert found is not None and (found.request.id, found.status) == (second.id, "denied")
    assert (await store.get(first.id)).status == "denied"
    assert await store.find_by_call("x", session_id=None, project=PROJECT) is None
    assert await store.find_by_call("x", session_id="s", project="/elsewhere") is None
    assert await store.find_by_call("y", session_id="s", project=PROJECT) is None


def test_sqlite_lookup_uses_the_call_index(tmp_path: Path) -> None:
    """The SQLite store finds a call's approvals through an index, not a table scan."""
    import sqlite3

    SqliteApprovalStore(tmp_path / "a.sqlite3")
    conn = sqlite3.connect(tmp_path / "a.sqlite3")
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM approvals WHERE json_extract(request, '$.call.id') = ? "
        "AND session_id IS ? AND json_extract(request, '$.project') IS ? "
        "ORDER BY created_at DESC, rowid DESC LIMIT 1",
        ("c1", "s1", "/p"),
    ).fetchall()
    conn.close()
    assert any("approvals_call" in str(row[-1]) for row in plan), plan


SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    from invokit import ToolCall, tool
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import Executor, Interrupted

    work = Path(sys.argv[1])

    @tool(destructive=True)
    def wipe(name: str) -> str:
        "Write a marker file standing for a side effect."
        with (work / "ran.txt").open("a") as out:
            out.write(name + "\\n")
        return "wiped " + name

    async def main() -> None:
        store = SqliteApprovalStore(work / "approvals.sqlite3")
        executor = Executor([wipe], approvals=store, project="/work/project")
        call = ToolCall(id="call_7", name="wipe", arguments={"name": "db"}, session_id="run-1")
        outcome = await executor.execute(call)
        if isinstance(outcome, Interrupted):
            print(json.dumps({"type": "Interrupted", "id": outcome.interrupt.id}))
        else:
            print(json.dumps({"type": type(outcome).__name__, "text": outcome.result.text}))
        await executor.aclose()

    anyio.run(main)
    """
)


def _run(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "again.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def test_across_processes(tmp_path: Path) -> None:
    """A second process executing the waiting call gets the same approval; approved, a third
    process runs it once; a fourth asks anew."""
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first["type"] == second["type"] == "Interrupted"
    assert second["id"] == first["id"]
    store = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    assert [r.id for r in await store.list_pending()] == [first["id"]]
    await store.resolve(first["id"], ApprovalDecision.approve(by="ana"))
    await store.close()
    assert _run(tmp_path) == {"type": "Completed", "text": "wiped db"}
    fourth = _run(tmp_path)
    assert fourth["type"] == "Interrupted" and fourth["id"] != first["id"]
    assert (tmp_path / "ran.txt").read_text() == "db\n"

"""A call that runs without the approval still waiting for it withdraws that approval.

A framework runs a call again on resume. When the policy came to allow it meanwhile (or a
session grant covers it), the call runs; the approval it asked for earlier must not stay
pending (or approved), or a later resume of it would run the call a second time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from invokit import ToolCall, ToolRegistry
from invokit.approvals import ApprovalStore, MemoryApprovalStore, SqliteApprovalStore
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.permissions import Policy

from .conftest import Recorder

pytestmark = pytest.mark.anyio

PROJECT = "/work/project"


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    if request.param == "memory":
        yield MemoryApprovalStore()
    else:
        yield SqliteApprovalStore(tmp_path / "approvals.sqlite3")


def _call(call_id: str = "c1", path: str = "a.txt") -> ToolCall:
    return ToolCall(id=call_id, name="delete", arguments={"path": path}, session_id="s1")


def _approval(outcome: object) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


@pytest.mark.parametrize("allow", ["delete", "delete(path=a.txt)"])
async def test_policy_now_allows_withdraws_the_pending_approval(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder, allow: str
) -> None:
    """Asked under one policy, run again under one that allows it (the shortest path for a
    plain rule, the guarded one for an argument rule): it runs once; resuming the old
    approval afterwards runs nothing."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    asked = _approval(await executor.execute(_call()))
    executor.policy = Policy(allow=[allow], root=PROJECT)
    assert isinstance(await executor.execute(_call()), Completed)
    assert recorder.count("delete") == 1
    assert await executor.pending("c1", session_id="s1") is None
    late = await executor.resume(asked.id, approve=True, by="ana")
    assert isinstance(late, Failed)
    assert late.result.error is not None and late.result.error.kind == "approval_denied"
    assert recorder.count("delete") == 1
    await executor.aclose()


async def test_session_grant_withdraws_the_pending_approval(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Two calls wait; approving one for the session lets the other run when re-executed,
    and its own approval can then no longer run it a second time."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call("c1", "a.txt")))
    second = _approval(await executor.execute(_call("c2", "b.txt")))
    assert isinstance(await executor.resume(first.id, approve=True, scope="session"), Completed)
    assert isinstance(await executor.execute(_call("c2", "b.txt")), Completed)
    assert recorder.count("delete") == 2
    late = await executor.resume(second.id, approve=True, by="ana")
    assert isinstance(late, Failed)
    assert recorder.count("delete") == 2
    await executor.aclose()


async def test_approved_meanwhile_then_policy_allows_runs_once(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """Approved elsewhere (not yet used), then the policy allows the call: the framework's
    re-run runs it once, and a resume of the approval does not run it again."""
    from invokit.approvals import ApprovalDecision

    executor = Executor(registry, approvals=store, project=PROJECT)
    asked = _approval(await executor.execute(_call()))
    await store.resolve(asked.id, ApprovalDecision.approve(by="ana"))
    executor.policy = Policy(allow=["delete(path=a.txt)"], root=PROJECT)
    assert isinstance(await executor.execute(_call()), Completed)
    late = await executor.resume(asked.id)
    assert isinstance(late, Failed)
    assert recorder.count("delete") == 1
    await executor.aclose()


async def test_a_person_s_no_wins_over_a_session_grant(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """A person denies one waiting call and approves another of the same tool for the
    session; the framework runs the denied call again: it stays denied (as ``check`` says),
    it does not run under the session grant."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call("c1", "a.txt")))
    second = _approval(await executor.execute(_call("c2", "b.txt")))
    assert isinstance(await executor.resume(first.id, approve=False, by="ana"), Failed)
    assert isinstance(await executor.resume(second.id, approve=True, scope="session"), Completed)
    checked = await executor.check(_call("c1", "a.txt"))
    again = await executor.execute(_call("c1", "a.txt"))
    assert checked.action == "deny"
    assert isinstance(again, Failed)
    assert again.result.error is not None and again.result.error.kind == "approval_denied"
    assert recorder.calls == [("delete", {"path": "b.txt"})]
    await executor.aclose()


async def test_check_agrees_with_execute_on_a_waiting_call_under_a_session_grant(
    registry: ToolRegistry, store: ApprovalStore, recorder: Recorder
) -> None:
    """A call still waits when a session grant comes to cover it: ``check`` says what
    ``execute`` then does (it runs)."""
    executor = Executor(registry, approvals=store, project=PROJECT)
    first = _approval(await executor.execute(_call("c1", "a.txt")))
    _approval(await executor.execute(_call("c2", "b.txt")))
    assert isinstance(await executor.resume(first.id, approve=True, scope="session"), Completed)
    checked = await executor.check(_call("c2", "b.txt"))
    assert checked.action == "allow", checked
    assert isinstance(await executor.execute(_call("c2", "b.txt")), Completed)
    await executor.aclose()


async def test_a_store_assigned_later_is_the_one_asked(
    registry: ToolRegistry, recorder: Recorder, tmp_path: Path
) -> None:
    """``executor.approvals`` replaced after the executor was built: whether the call asked
    earlier is asked of the new store (the memory store it was built with never saw the call),
    so the pending approval is still withdrawn when the call runs without it."""
    executor = Executor(registry, approvals=MemoryApprovalStore(), project=PROJECT)
    executor.approvals = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    asked = _approval(await executor.execute(_call()))
    executor.policy = Policy(allow=["delete"], root=PROJECT)
    assert isinstance(await executor.execute(_call()), Completed)
    late = await executor.resume(asked.id, approve=True, by="ana")
    assert isinstance(late, Failed)
    assert recorder.count("delete") == 1
    await executor.aclose()

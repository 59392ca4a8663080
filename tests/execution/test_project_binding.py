"""Approvals belong to the project whose executor asked: a one-time approval, a session grant
and a resume never cross into another project that shares the approval file."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import ToolCall
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.builtin import filesystem
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted, Outcome
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted), outcome
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def _delete(call_id: str, session: str | None = "s1") -> ToolCall:
    return ToolCall(
        id=call_id,
        name="fs.delete",
        arguments={"path": "build", "recursive": True},
        session_id=session,
    )


def _two_projects(tmp_path: Path) -> tuple[Executor, Executor, Path, Path]:
    store_file = tmp_path / "state" / "approvals.sqlite3"
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        (root / "build").mkdir(parents=True)
        (root / "build" / "data").write_text("important")
    executors = tuple(
        Executor(
            filesystem(root), policy=Policy(root=root), approvals=SqliteApprovalStore(store_file)
        )
        for root in (one, two)
    )
    return executors[0], executors[1], one, two


async def test_one_time_approval_is_not_used_by_another_project(tmp_path: Path) -> None:
    """A request approved in the store (as `invokit approvals approve` does) for project one is
    not found by the identical call in project two; project one's retry runs it."""
    first, second, one, two = _two_projects(tmp_path)
    asked = _asked(await first.execute(_delete("1")))
    assert asked.request.project == first.project == str(one)
    await first.approvals.resolve(asked.id, ApprovalDecision.approve(by="cli"))

    _asked(await second.execute(_delete("2")))
    assert (two / "build" / "data").exists()
    assert isinstance(await first.execute(_delete("3")), Completed)
    assert not (one / "build").exists()
    await first.aclose()
    await second.aclose()


async def test_session_grant_is_not_used_by_another_project(tmp_path: Path) -> None:
    """A session grant given in project one does not cover the same session's call of the same
    tool in project two."""
    first, second, one, two = _two_projects(tmp_path)
    (one / "x").write_text("x")
    asked = _asked(await first.execute(_delete("1")))
    assert isinstance(await first.resume(asked.id, approve=True, scope="session"), Completed)
    again = ToolCall(id="2", name="fs.delete", arguments={"path": "x"}, session_id="s1")
    assert isinstance(await first.execute(again), Completed)

    _asked(await second.execute(_delete("3")))
    assert (two / "build" / "data").exists()
    await first.aclose()
    await second.aclose()


async def test_resume_from_another_project_is_refused(tmp_path: Path) -> None:
    """Project two's executor cannot resume project one's request, with a yes or a no: it fails
    approval_mismatch, records nothing, and project one can still decide it."""
    first, second, one, two = _two_projects(tmp_path)
    asked = _asked(await first.execute(_delete("1")))
    for approve in (True, False):
        refused = await second.resume(asked.id, approve=approve, scope="always")
        assert isinstance(refused, Failed)
        assert refused.result.error is not None
        assert refused.result.error.kind == "approval_mismatch"
    assert (await first.approvals.get(asked.id)).status == "pending"
    assert await second.approvals.always_rules() == []
    assert (two / "build" / "data").exists() and (one / "build" / "data").exists()
    assert isinstance(await first.resume(asked.id, approve=True), Completed)
    assert not (one / "build").exists()
    await first.aclose()
    await second.aclose()

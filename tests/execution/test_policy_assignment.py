"""``executor.policy = Policy(...)`` replaces the policy in force for every later decision: new
calls, the executor's shortest path, and a resume of a call asked about before."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import ToolCall, ToolRegistry, tool
from invokit.builtin import filesystem
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


def _kind(outcome: object) -> str | None:
    assert isinstance(outcome, Failed), outcome
    return outcome.result.error.kind if outcome.result.error is not None else None


async def test_a_tightened_policy_decides_a_resume_and_new_calls(tmp_path: Path) -> None:
    """A write asked about under ask=fs.write, then the host assigns deny=fs.write: approving the
    waiting call runs nothing, and a new write is denied."""
    executor = Executor(filesystem(tmp_path), policy=Policy(ask=["fs.write"], root=tmp_path))
    call = ToolCall(id="1", name="fs.write", arguments={"path": "a.txt", "content": "x"})
    outcome = await executor.execute(call)
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)

    tightened = Policy(deny=["fs.write"], root=tmp_path)
    executor.policy = tightened
    assert executor.policy is tightened
    assert _kind(await executor.resume(outcome.interrupt.id, approve=True)) == "denied"
    assert not (tmp_path / "a.txt").exists()
    new = ToolCall(id="2", name="fs.write", arguments={"path": "b.txt", "content": "x"})
    assert _kind(await executor.execute(new)) == "denied"
    assert not (tmp_path / "b.txt").exists()
    await executor.aclose()


@tool
async def ping() -> str:
    """Answer pong."""
    return "pong"


async def test_the_shortest_path_follows_the_new_policy() -> None:
    """A plain tool whose answer was computed once per tool is decided by the assigned policy
    from the next call on, both ways."""
    executor = Executor(ToolRegistry([ping]), policy=Policy(allow=["ping"]))
    assert isinstance(
        await executor.execute(ToolCall(id="1", name="ping", arguments={})), Completed
    )
    executor.policy = Policy(deny=["ping"])
    assert _kind(await executor.execute(ToolCall(id="2", name="ping", arguments={}))) == "denied"
    executor.policy = Policy(allow=["ping"])
    assert isinstance(
        await executor.execute(ToolCall(id="3", name="ping", arguments={})), Completed
    )

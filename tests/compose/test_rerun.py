"""A compose call made again under its id after it paused (a framework or client retrying it,
once the approval was given elsewhere) must not run the script from the start: the calls made
before the pause already ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from invokit import Completed, Executor, ToolCall, tool
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.compose import enable_compose
from invokit.execution import Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

CODE = """
note(text="before")
launch(n=1)
"done"
"""


def _executor(ran: list[str], store: Any = None) -> Executor:
    @tool
    def note(text: str) -> str:
        """Append a note."""
        ran.append(text)
        return text

    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(f"launch {n}")
        return n

    executor = Executor(
        [note, launch],
        policy=Policy(allow=["compose", "note"], ask=["launch"]),
        approvals=store,
    )
    enable_compose(executor)
    return executor


@pytest.mark.parametrize("sqlite", [False, True])
async def test_the_same_call_again_does_not_run_earlier_calls_twice(
    sqlite: bool, tmp_path: Path
) -> None:
    ran: list[str] = []
    executor = _executor(ran, SqliteApprovalStore(tmp_path / "a.db") if sqlite else None)
    call = ToolCall(id="r1", name="compose", arguments={"code": CODE}, session_id="s")
    first = await executor.execute(call)
    assert isinstance(first, Interrupted)
    assert ran == ["before"]
    await executor.approvals.resolve(first.interrupt.id, ApprovalDecision.approve(by="alice"))
    for _ in range(2):  # the same call, retried after the approval: refused, nothing runs
        again = await executor.execute(call)
        assert isinstance(again, Completed) and again.result.is_error
        assert again.result.error is not None and again.result.error.kind == "script_paused"
        assert ran == ["before"], ran
    assert first.interrupt.id in again.result.text or "paused" in again.result.text
    # the paused script is continued where it stopped, by its approval
    done = await executor.resume(first.interrupt.id)
    assert isinstance(done, Completed) and not done.result.is_error, done
    assert ran == ["before", "launch 1"]


async def test_a_retried_pause_names_its_approval_and_runs_nothing() -> None:
    ran: list[str] = []
    executor = _executor(ran)
    call = ToolCall(id="r2", name="compose", arguments={"code": CODE}, session_id="s")
    first = await executor.execute(call)
    assert isinstance(first, Interrupted)
    again = await executor.execute(call)
    assert ran == ["before"], ran
    assert isinstance(again, Completed) and again.result.is_error
    assert first.interrupt.id in again.result.text


async def test_the_same_call_id_in_another_session_runs() -> None:
    ran: list[str] = []
    executor = _executor(ran)
    first = await executor.execute(
        ToolCall(id="r3", name="compose", arguments={"code": CODE}, session_id="s")
    )
    assert isinstance(first, Interrupted)
    other = await executor.execute(
        ToolCall(id="r3", name="compose", arguments={"code": CODE}, session_id="t")
    )
    assert isinstance(other, Interrupted)
    assert ran == ["before", "before"]


async def test_another_script_under_a_reused_call_id_runs() -> None:
    ran: list[str] = []
    executor = _executor(ran)
    first = await executor.execute(
        ToolCall(id="r4", name="compose", arguments={"code": CODE}, session_id="s")
    )
    assert isinstance(first, Interrupted)
    other = await executor.execute(
        ToolCall(id="r4", name="compose", arguments={"code": "note(text='new')"}, session_id="s")
    )
    assert isinstance(other, Completed) and not other.result.is_error, other
    assert ran == ["before", "new"]


async def test_a_retry_after_the_second_pause_names_no_stale_approval() -> None:
    ran: list[str] = []
    executor = _executor(ran)
    code = "launch(n=1)\nlaunch(n=2)"
    call = ToolCall(id="r5", name="compose", arguments={"code": code}, session_id="s")
    first = await executor.execute(call)
    assert isinstance(first, Interrupted)
    second = await executor.resume(first.interrupt.id, approve=True)
    assert isinstance(second, Interrupted) and second.interrupt.id != first.interrupt.id
    again = await executor.execute(call)
    assert again.result.error is not None and again.result.error.kind == "script_paused"
    assert first.interrupt.id not in again.result.text
    assert ran == ["launch 1"]

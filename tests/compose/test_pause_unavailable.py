"""A script that cannot be paused (the python runtime keeps no state; the store refused the
state) leaves no approval waiting behind: the model was told the script failed, so a later
"yes" must not run its call (and the model, told to call the tool directly, asks anew)."""

from __future__ import annotations

from typing import Any

import pytest

from invokit import Executor, ToolCall, tool
from invokit.approvals import ApprovalDecision, MemoryApprovalStore
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import PythonSandbox, ScriptSandbox, enable_compose
from invokit.exceptions import ApprovalError
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

CODE = "launch(n=1)\n'done'"


class RefusingStore(MemoryApprovalStore):
    """A store that cannot keep a paused script's state (a full disk, a lost connection)."""

    async def put_interrupt(
        self, interrupt_id: str, data: dict[str, Any], expires_at: float
    ) -> None:
        raise OSError("disk full")


def _executor(ran: list[int], sandbox: ScriptSandbox | None, store: Any = None) -> Executor:
    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor([launch], policy=Policy(allow=["compose"], ask=["launch"]), approvals=store)
    enable_compose(executor, sandbox=sandbox)
    return executor


@pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap")
async def test_the_python_runtime_leaves_no_approval_waiting() -> None:
    ran: list[int] = []
    executor = _executor(ran, PythonSandbox())
    outcome = await executor.execute(ToolCall(id="u", name="compose", arguments={"code": CODE}))
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "approval_unavailable", outcome.result.text
    assert await executor.approvals.list_pending() == []
    await _no_later_yes_runs(executor, ran)
    await executor.aclose()


async def test_a_state_the_store_refused_leaves_no_approval_waiting() -> None:
    ran: list[int] = []
    executor = _executor(ran, None, RefusingStore())
    outcome = await executor.execute(ToolCall(id="u", name="compose", arguments={"code": CODE}))
    assert outcome.result.is_error, outcome
    assert await executor.approvals.list_pending() == []
    await _no_later_yes_runs(executor, ran)
    await executor.aclose()


async def _no_later_yes_runs(executor: Executor, ran: list[int]) -> None:
    (record,) = list(executor.approvals._records.values())  # type: ignore[attr-defined]
    with pytest.raises(ApprovalError):
        await executor.approvals.resolve(record.request.id, ApprovalDecision.approve(by="cli"))
    assert ran == []

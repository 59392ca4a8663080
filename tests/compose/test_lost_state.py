"""A child approval whose script state was never stored (the replica was killed between the
two writes): resuming it runs the approved call once and returns that call's outcome instead
of raising after it ran."""

from __future__ import annotations

import pytest

from invokit import Completed, Executor, ToolCall, tool
from invokit.compose import enable_compose
from invokit.execution import Interrupted
from invokit.execution._children import PARENT
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio


async def test_a_child_without_its_scripts_state_resumes_to_its_own_outcome() -> None:
    ran: list[int] = []

    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor([launch], policy=Policy(allow=["compose"], ask=["launch"]))
    enable_compose(executor)
    # what a killed replica leaves: the child's approval, and no script state beside it
    child = ToolCall(
        id="k:compose:1",
        name="launch",
        arguments={"n": 1},
        metadata={PARENT: {"id": "k", "tool": "compose"}},
    )
    paused = await executor.execute(child)
    assert isinstance(paused, Interrupted)
    outcome = await executor.resume(paused.interrupt.id, approve=True)
    assert ran == [1]
    assert isinstance(outcome, Completed)
    assert outcome.result.call_id == "k:compose:1"

"""A quota on the compose tool counts each script once: continuing a paused script is not a
new call of it (its child already ran when the continuation starts)."""

from __future__ import annotations

import pytest

from invokit import Completed, Executor, Quota, ToolCall, tool
from invokit.compose import enable_compose
from invokit.execution import Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

CODE = "first = launch(n=1)\nsecond = launch(n=2)\n[first, second]"


async def test_a_continued_script_is_not_counted_again() -> None:
    ran: list[int] = []

    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor(
        [launch],
        policy=Policy(
            allow=["compose"],
            ask=["launch"],
            quotas=[Quota(calls=1, per="session", tool="compose")],
        ),
    )
    enable_compose(executor)
    first = await executor.execute(
        ToolCall(id="q", name="compose", arguments={"code": CODE}, session_id="s")
    )
    assert isinstance(first, Interrupted)
    second = await executor.resume(first.interrupt.id, approve=True)
    assert ran == [1]
    assert isinstance(second, Interrupted), second  # the next call waits: still one script
    done = await executor.resume(second.interrupt.id, approve=True)
    assert isinstance(done, Completed) and not done.result.is_error, done
    assert done.result.structured["result"] == [1, 2]
    # a second script in the session is over the quota
    other = await executor.execute(
        ToolCall(id="q2", name="compose", arguments={"code": "1"}, session_id="s")
    )
    assert other.result.error is not None and other.result.error.kind == "quota_exceeded"

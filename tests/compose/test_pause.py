"""A child needing approval pauses the script; the answer continues it, in this process."""

from __future__ import annotations

import anyio
import pytest

from invokit import Completed, Executor, Failed, Limits, Quota, ToolCall, tool
from invokit.compose import enable_compose
from invokit.execution import Interrupted
from invokit.permissions import Policy

pytestmark = pytest.mark.anyio

CODE = """
done = []
try:
    done.append(launch(n=1))
except PermissionError as error:
    done.append("refused: " + str(error)[:20])
done.append(launch(n=2))
done
"""


def _executor(ran: list[int]) -> Executor:
    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor([launch], policy=Policy(allow=["compose"], ask=["launch"]))
    enable_compose(executor)
    return executor


async def test_a_no_is_an_exception_the_script_catches() -> None:
    """Denied on resume, the child raises PermissionError in the script, which goes on to its
    next call (which pauses again), and then ends."""
    ran: list[int] = []
    executor = _executor(ran)
    first = await executor.execute(ToolCall(id="j", name="compose", arguments={"code": CODE}))
    assert isinstance(first, Interrupted)
    assert first.interrupt.call.id == "j:compose:1"
    second = await executor.resume(first.interrupt.id, approve=False, reason="not today")
    assert isinstance(second, Interrupted)
    assert second.interrupt.call.id == "j:compose:2"
    done = await executor.resume(second.interrupt.id, approve=True)
    assert isinstance(done, Completed), done
    assert done.result.call_id == "j"
    value = done.result.structured["result"]
    assert value[0].startswith("refused: approval_denied")
    assert value[1] == 2
    assert ran == [2]


async def test_an_undecided_resume_leaves_the_script_paused() -> None:
    """Resuming before anyone decided returns the same pause, and the script can still go on."""
    ran: list[int] = []
    executor = _executor(ran)
    first = await executor.execute(ToolCall(id="k", name="compose", arguments={"code": CODE}))
    assert isinstance(first, Interrupted)
    again = await executor.resume(first.interrupt.id)
    assert isinstance(again, Interrupted) and again.interrupt.id == first.interrupt.id
    nxt = await executor.resume(first.interrupt.id, approve=True)
    assert isinstance(nxt, Interrupted) and nxt.interrupt.call.id == "k:compose:2"
    assert ran == [1]


async def test_a_child_over_its_quota_is_refused_in_the_script() -> None:
    """Quotas apply to a script's calls like to any: past it, the call raises PermissionError."""

    @tool(read_only=True, quota=Quota(calls=2, per="project"))
    def ping() -> str:
        """Ping."""
        return "pong"

    executor = Executor([ping], policy=Policy(allow=["*"]))
    enable_compose(executor)
    code = "out = []\nfor i in range(3):\n    try:\n        out.append(ping())\n    except PermissionError as e:\n        out.append(str(e)[:30])\nout"
    outcome = await executor.execute(ToolCall(id="q", name="compose", arguments={"code": code}))
    assert outcome.result.structured["result"] == ["pong", "pong", "quota_exceeded: Quota exceeded"]


async def test_a_paused_script_that_expired_is_one_failure_of_the_script() -> None:
    """When the child's approval expired, resuming fails the script's own call: nothing more
    of the script runs."""
    ran: list[int] = []

    @tool(destructive=True)
    def launch(n: int) -> int:
        """Launch."""
        ran.append(n)
        return n

    executor = Executor(
        [launch],
        policy=Policy(allow=["compose"], ask=["launch"]),
        limits=Limits(approval_ttl=0.2),
    )
    enable_compose(executor)
    paused = await executor.execute(ToolCall(id="e", name="compose", arguments={"code": CODE}))
    assert isinstance(paused, Interrupted)
    await anyio.sleep(0.3)
    late = await executor.resume(paused.interrupt.id, approve=True)
    assert isinstance(late, Failed)
    assert late.result.call_id == "e" and late.result.name == "compose"
    assert late.result.error is not None and late.result.error.kind == "approval_expired"
    assert ran == []

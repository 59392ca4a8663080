"""A compose script paused on its child's approval inside a real pydantic-ai agent: the
person's yes in pydantic-ai continues the script where it stopped; no call runs twice."""

from __future__ import annotations

import pytest
from pydantic_ai import DeferredToolRequests, DeferredToolResults

from invokit import Executor
from invokit.compose import enable_compose
from invokit.integrations.pydantic_ai import approval_results
from invokit.permissions import Policy
from tests.integrations.test_pydantic_ai import Notes, Script, _agent, _asked

pytestmark = pytest.mark.anyio

CODE = 'notes_write(name="b", text="beta")\nnotes_delete(name="a")\n"done"'


async def test_a_paused_script_goes_on_once_after_the_yes() -> None:
    notes = Notes()
    executor = Executor(
        notes.registry(),
        policy=Policy(allow=["compose", "notes.write"], ask=["notes.delete"]),
    )
    enable_compose(executor)
    script = Script([("compose", {"code": CODE})])
    agent = _agent(executor, script)
    first = await agent.run("tidy up")
    requests = _asked(first.output)
    assert [c.tool_call_id for c in requests.approvals] == ["call-0"]
    assert notes.runs == [("write", {"name": "b", "text": "beta"})]
    results = await approval_results(executor, requests, {"call-0": True}, by="ana")
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=results)
    assert not isinstance(second.output, DeferredToolRequests)
    assert notes.count("write") == 1, notes.runs
    assert notes.count("delete") == 1, notes.runs
    assert "done" in second.output


async def test_a_yes_naming_another_approval_continues_nothing() -> None:
    notes = Notes()
    executor = Executor(
        notes.registry(),
        policy=Policy(allow=["compose", "notes.write"], ask=["notes.delete"]),
    )
    enable_compose(executor)
    agent = _agent(executor, Script([("compose", {"code": CODE})]))
    first = await agent.run("tidy up")
    _asked(first.output)
    forged = DeferredToolResults(
        approvals={"call-0": True}, metadata={"call-0": {"invokit": {"approval_id": "apr_x"}}}
    )
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=forged)
    assert "script_paused" in str(second.output)
    assert notes.runs == [("write", {"name": "b", "text": "beta"})]
    assert len(await executor.approvals.list_pending()) == 1

"""A compose script paused on its child's approval inside a real Google ADK agent: the
person's confirmation continues the script where it stopped; no call runs twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import Executor
from invokit.approvals import SqliteApprovalStore
from invokit.compose import enable_compose
from invokit.integrations.google_adk import InvokitToolset
from invokit.permissions import Policy
from tests.integrations.adk_support import AgentRun, function_calls, function_responses, scripted
from tests.integrations.test_adk_agent import Notes

pytestmark = pytest.mark.anyio

CODE = 'write_note(name="plan", text="ship it")\ndelete_note(name="todo")\n"done"'


async def test_a_confirmed_script_goes_on_once(tmp_path: Path) -> None:
    notes = Notes()
    executor = Executor(
        notes.registry,
        policy=Policy(allow=["compose", "write_note"], ask=["delete_note"]),
        approvals=SqliteApprovalStore(tmp_path / "approvals.db"),
    )
    enable_compose(executor)
    run = AgentRun(scripted("compose", {"code": CODE}), InvokitToolset(executor))
    events = await run.ask("tidy up")
    (asked,) = function_calls(events, "adk_request_confirmation")
    assert asked.id is not None
    assert notes.writes == [("plan", "ship it")]
    events = await run.confirm(asked.id, {"confirmed": True})
    (response,) = function_responses(events, "compose")
    assert notes.writes == [("plan", "ship it")], notes.writes
    assert "todo" not in notes.notes
    assert response.response is not None and "done" in str(response.response)

"""A compose script paused on its child's approval inside a real LangGraph agent: resuming
the graph with the person's decision continues the script where it stopped; no call runs
twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.types import Command

from invokit import Executor
from invokit.approvals import SqliteApprovalStore
from invokit.compose import enable_compose
from invokit.permissions import Policy
from tests.integrations.lc_support import script
from tests.integrations.test_langchain_agent import CONFIG, Notes, agent, tool_message

pytestmark = pytest.mark.anyio

CODE = 'write_note(name="plan", text="ship it")\ndelete_note(name="todo")\n"done"'


def _executor(notes: Notes, tmp_path: Path) -> Executor:
    executor = Executor(
        notes.registry,
        policy=Policy(allow=["compose", "write_note"], ask=["delete_note"]),
        approvals=SqliteApprovalStore(tmp_path / "approvals.db"),
    )
    enable_compose(executor)
    return executor


async def test_an_approved_script_goes_on_once(tmp_path: Path) -> None:
    notes = Notes()
    executor = _executor(notes, tmp_path)
    graph = agent(script(("compose", {"code": CODE})), executor)
    state = await graph.ainvoke({"messages": [("user", "tidy up")]}, CONFIG)
    (paused,) = state["__interrupt__"]
    assert paused.value["action_requests"][0]["name"] == "delete_note"
    assert notes.writes == [("plan", "ship it")]
    state = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    message = tool_message(state)
    assert notes.writes == [("plan", "ship it")], notes.writes
    assert "todo" not in notes.notes
    assert message.status == "success", message.content
    assert "done" in str(message.content)


async def test_a_rejected_child_raises_in_the_script(tmp_path: Path) -> None:
    notes = Notes()
    executor = _executor(notes, tmp_path)
    graph = agent(script(("compose", {"code": CODE})), executor)
    await graph.ainvoke({"messages": [("user", "tidy up")]}, CONFIG)
    reject = {"type": "reject", "message": "keep it"}
    state = await graph.ainvoke(Command(resume={"decisions": [reject]}), CONFIG)
    message = tool_message(state)
    assert notes.writes == [("plan", "ship it")]
    assert "todo" in notes.notes
    assert "PermissionError" in str(message.content)


async def test_a_second_pause_is_not_answered_by_the_first_decision(tmp_path: Path) -> None:
    notes = Notes()
    notes.notes["old"] = "x"
    executor = _executor(notes, tmp_path)
    code = 'delete_note(name="todo")\ndelete_note(name="old")\n"done"'
    graph = agent(script(("compose", {"code": code})), executor)
    await graph.ainvoke({"messages": [("user", "tidy up")]}, CONFIG)
    await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    assert "todo" not in notes.notes
    assert "old" in notes.notes  # its own approval is still waiting, not taken from the first
    (waiting,) = await executor.approvals.list_pending()
    assert waiting.arguments == {"name": "old"}

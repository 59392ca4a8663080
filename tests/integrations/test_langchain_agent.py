"""invokit tools inside a real LangChain agent (create_agent, a checkpointer, a scripted model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain.agents import create_agent
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from invokit import Executor, Limits, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.integrations.langchain import langchain_tools
from invokit.permissions import Policy
from tests.integrations.lc_support import ScriptedChatModel, script

pytestmark = pytest.mark.anyio


class Notes:
    """A small notebook whose tools count how often their bodies ran."""

    def __init__(self) -> None:
        self.notes: dict[str, str] = {"todo": "buy milk"}
        self.writes: list[tuple[str, str]] = []

        @tool(read_only=True)
        async def read_note(name: str) -> str:
            """Read a note."""
            return self.notes.get(name, "")

        @tool
        async def write_note(name: str, text: str) -> str:
            """Write a note."""
            self.writes.append((name, text))
            self.notes[name] = text
            return f"wrote {name}"

        @tool
        async def delete_note(name: str) -> str:
            """Delete a note."""
            del self.notes[name]
            return f"deleted {name}"

        self.registry = ToolRegistry([read_note, write_note, delete_note])


@pytest.fixture
def notes() -> Notes:
    return Notes()


@pytest.fixture
def executor(notes: Notes, tmp_path: Path) -> Executor:
    policy = Policy(deny=["delete_note", "write_note(name=secret*)"])
    return Executor(
        notes.registry, policy=policy, approvals=SqliteApprovalStore(tmp_path / "approvals.db")
    )


def agent(model: ScriptedChatModel, executor: Executor) -> Any:
    return create_agent(model, langchain_tools(executor), checkpointer=InMemorySaver())


CONFIG: Any = {"configurable": {"thread_id": "thread-1"}}


def tool_message(state: dict[str, Any]) -> ToolMessage:
    found = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert len(found) == 1
    return found[0]


async def test_a_read_runs_and_the_model_reads_its_result(executor: Executor) -> None:
    """A read-only call runs at once; the model reads its text and the artifact is the result."""
    model = script(("read_note", {"name": "todo"}))
    state = await agent(model, executor).ainvoke({"messages": [("user", "todo?")]}, CONFIG)
    message = tool_message(state)
    assert message.status == "success"
    assert message.content == "buy milk"
    assert message.artifact["is_error"] is False
    assert message.artifact["call_id"] == "call_0"
    assert [m.content for m in model.tool_messages_read()] == ["buy milk"]
    assert state["messages"][-1].content == "done"


async def test_a_denied_call_is_a_tool_error_the_model_reads(
    executor: Executor, notes: Notes
) -> None:
    """A call a deny rule refuses never runs; the model reads an error ToolMessage saying why."""
    model = script(("delete_note", {"name": "todo"}))
    state = await agent(model, executor).ainvoke({"messages": [("user", "clean up")]}, CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert message.text.startswith("Error (denied):")
    assert "delete_note" in message.content
    assert model.tool_messages_read()[0].status == "error"
    assert notes.notes == {"todo": "buy milk"}


async def test_invalid_arguments_are_an_error_the_model_can_fix(executor: Executor) -> None:
    """Arguments that break the schema come back as an invalid_arguments error message."""
    model = script(("read_note", {"title": "todo"}))
    state = await agent(model, executor).ainvoke({"messages": [("user", "todo?")]}, CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert message.text.startswith("Error (invalid_arguments):")


async def ask_write(
    executor: Executor, args: dict[str, Any] | None = None
) -> tuple[Any, ScriptedChatModel, dict[str, Any]]:
    model = script(("write_note", args or {"name": "plan", "text": "ship it"}))
    graph = agent(model, executor)
    state = await graph.ainvoke({"messages": [("user", "write the plan")]}, CONFIG)
    return graph, model, state


async def test_an_approval_is_an_interrupt_in_the_hitl_middleware_shape(
    executor: Executor, notes: Notes
) -> None:
    """A call the policy asks about pauses the graph with an interrupt whose value has
    LangChain's HITL shape (action_requests, review_configs) and the invokit approval id."""
    _, _, state = await ask_write(executor)
    (paused,) = state["__interrupt__"]
    value = paused.value
    assert value["action_requests"] == [
        {
            "name": "write_note",
            "args": {"name": "plan", "text": "ship it"},
            "description": value["action_requests"][0]["description"],
        }
    ]
    assert "approval" in value["action_requests"][0]["description"]
    assert value["review_configs"] == [
        {"action_name": "write_note", "allowed_decisions": ["approve", "edit", "reject"]}
    ]
    pending = await executor.approvals.list_pending()
    assert [p.id for p in pending] == [value["invokit"]["approval_id"]]
    assert pending[0].call.id == "call_0"
    assert pending[0].session_id == "thread-1"
    assert notes.writes == []


async def test_an_approved_call_resumes_and_runs_exactly_once(
    executor: Executor, notes: Notes
) -> None:
    """Resuming with an approve decision resolves the same approval and runs the call once."""
    graph, model, state = await ask_write(executor)
    approval_id = state["__interrupt__"][0].value["invokit"]["approval_id"]
    state = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    message = tool_message(state)
    assert message.status == "success"
    assert message.content == "wrote plan"
    assert notes.writes == [("plan", "ship it")]
    assert await executor.approvals.list_pending() == []
    record = await executor.approvals.get(approval_id)
    assert record is not None
    assert record.status == "consumed"
    assert model.tool_messages_read()[0].content == "wrote plan"


async def test_a_rejected_call_never_runs_and_the_model_reads_the_reason(
    executor: Executor, notes: Notes
) -> None:
    """A reject decision denies the approval; the model reads the person's message as an error."""
    graph, _, _ = await ask_write(executor)
    decision = {"type": "reject", "message": "not today"}
    state = await graph.ainvoke(Command(resume={"decisions": [decision]}), CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert "not today" in message.content
    assert notes.writes == []


async def test_an_edit_runs_the_edited_arguments(executor: Executor, notes: Notes) -> None:
    """An edit decision runs the reviewer's arguments, once."""
    graph, _, _ = await ask_write(executor)
    edit = {
        "type": "edit",
        "edited_action": {"name": "write_note", "args": {"name": "plan", "text": "wait"}},
    }
    state = await graph.ainvoke(Command(resume=edit), CONFIG)
    assert tool_message(state).status == "success"
    assert notes.writes == [("plan", "wait")]


async def test_an_edit_is_decided_again_and_a_deny_rule_wins(
    executor: Executor, notes: Notes
) -> None:
    """Edited arguments go through invokit's decision again: a deny rule refuses them."""
    graph, _, _ = await ask_write(executor)
    args = {"name": "secret-plan", "text": "x"}
    edit = {"type": "edit", "edited_action": {"name": "write_note", "args": args}}
    state = await graph.ainvoke(Command(resume={"decisions": [edit]}), CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert message.text.startswith("Error (denied):")
    assert notes.writes == []


async def test_an_edit_that_names_another_tool_is_refused(executor: Executor, notes: Notes) -> None:
    """An edit may not switch the tool: it is treated as a refusal and nothing runs."""
    graph, _, _ = await ask_write(executor)
    edit = {"type": "edit", "edited_action": {"name": "delete_note", "args": {"name": "todo"}}}
    state = await graph.ainvoke(Command(resume={"decisions": [edit]}), CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert "may not change the tool" in message.content
    assert notes.writes == []
    assert notes.notes == {"todo": "buy milk"}


async def test_an_answer_that_is_not_a_decision_is_a_refusal(
    executor: Executor, notes: Notes
) -> None:
    """A resume value that is not a decision never runs the call."""
    graph, _, _ = await ask_write(executor)
    state = await graph.ainvoke(Command(resume="yes please"), CONFIG)
    assert tool_message(state).status == "error"
    assert notes.writes == []


async def test_parallel_approvals_are_separate_interrupts_resumed_by_id(
    executor: Executor, notes: Notes
) -> None:
    """Two asked calls in one turn pause with two interrupts; answers keyed by interrupt id
    reach the right call: one runs, the other is refused."""
    model = script(
        ("write_note", {"name": "a", "text": "1"}), ("write_note", {"name": "b", "text": "2"})
    )
    graph = agent(model, executor)
    state = await graph.ainvoke({"messages": [("user", "write both")]}, CONFIG)
    paused = {i.value["action_requests"][0]["args"]["name"]: i for i in state["__interrupt__"]}
    assert set(paused) == {"a", "b"}
    assert len(await executor.approvals.list_pending()) == 2
    answers = {
        paused["a"].id: {"decisions": [{"type": "approve"}]},
        paused["b"].id: {"decisions": [{"type": "reject", "message": "not b"}]},
    }
    state = await graph.ainvoke(Command(resume=answers), CONFIG)
    found = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert found["call_0"].status == "success"
    assert found["call_1"].status == "error"
    assert "not b" in found["call_1"].text
    assert notes.writes == [("a", "1")]
    assert await executor.approvals.list_pending() == []


async def test_a_session_scope_covers_later_calls_in_the_thread(
    executor: Executor, notes: Notes
) -> None:
    """Approved with scope "session", a later call of the tool in the same thread runs at once."""
    graph, _, _ = await ask_write(executor)
    approve = {"type": "approve", "scope": "session"}
    await graph.ainvoke(Command(resume={"decisions": [approve]}), CONFIG)
    model = script(("write_note", {"name": "later", "text": "x"}))
    state = await agent(model, executor).ainvoke({"messages": [("user", "again")]}, CONFIG)
    assert "__interrupt__" not in state
    assert notes.writes == [("plan", "ship it"), ("later", "x")]


async def test_an_answer_for_an_expired_approval_runs_nothing(notes: Notes, tmp_path: Path) -> None:
    """A decision arriving after its approval expired does not approve the call: nothing runs
    and the model reads an approval error."""
    executor = Executor(
        notes.registry,
        approvals=SqliteApprovalStore(tmp_path / "approvals.db"),
        limits=Limits(approval_ttl=0.2),
    )
    graph, _, _ = await ask_write(executor)
    await anyio.sleep(0.3)
    state = await graph.ainvoke(Command(resume={"decisions": [{"type": "approve"}]}), CONFIG)
    message = tool_message(state)
    assert message.status == "error"
    assert message.text.startswith("Error (approval_expired):")
    assert notes.writes == []
    assert await executor.approvals.list_pending() == []


async def test_a_reject_wins_over_a_yes_given_elsewhere_that_has_not_run(
    executor: Executor, notes: Notes
) -> None:
    """Approved in the CLI while the graph waits, then rejected by the graph's reviewer: a
    "no" wins over a "yes" that has not run yet, so nothing runs and the model reads the no."""
    from invokit.approvals import ApprovalDecision

    graph, _, state = await ask_write(executor)
    approval_id = state["__interrupt__"][0].value["invokit"]["approval_id"]
    await executor.approvals.resolve(approval_id, ApprovalDecision.approve(by="bob"))
    decision = {"type": "reject", "message": "not today"}
    state = await graph.ainvoke(Command(resume={"decisions": [decision]}), CONFIG)
    message = tool_message(state)
    assert notes.writes == []
    assert message.status == "error"
    assert "not today" in message.content
    assert (await executor.approvals.get(approval_id)).status == "denied"

"""invokit tools inside a real Google ADK agent (Runner, in-memory sessions, a scripted model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from google.genai import types

from invokit import Executor, Limits, ToolRegistry, tool
from invokit.approvals import SqliteApprovalStore
from invokit.integrations.google_adk import InvokitToolset
from invokit.permissions import Policy
from tests.integrations.adk_support import AgentRun, function_calls, function_responses, scripted

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


async def test_the_toolset_lists_every_tool_with_its_json_schema(executor: Executor) -> None:
    """Each invokit tool is an ADK tool whose declaration carries the raw JSON Schema."""
    tools = await InvokitToolset(executor).get_tools()
    assert [t.name for t in tools] == ["delete_note", "read_note", "write_note"]
    declaration = tools[1]._get_declaration()
    assert declaration is not None
    assert declaration.parameters_json_schema == executor.registry["read_note"].spec.input_schema


async def test_a_read_runs_and_the_model_reads_its_result(executor: Executor) -> None:
    """A read-only call runs at once and the model reads its result."""
    run = AgentRun(scripted("read_note", {"name": "todo"}), InvokitToolset(executor))
    events = await run.ask("todo?")
    (response,) = function_responses(events, "read_note")
    assert response.response == {"result": "buy milk"}
    assert [r.response for r in run.model.function_responses_read()] == [{"result": "buy milk"}]
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "done"


async def test_a_denied_call_is_an_error_the_model_reads(executor: Executor, notes: Notes) -> None:
    """A call a deny rule refuses never runs; the model reads an error with kind denied."""
    run = AgentRun(scripted("delete_note", {"name": "todo"}), InvokitToolset(executor))
    await run.ask("clean up")
    (read,) = run.model.function_responses_read()
    assert read.response is not None
    assert read.response["kind"] == "denied"
    assert "delete_note" in read.response["error"]
    assert notes.notes == {"todo": "buy milk"}


async def ask_write(
    executor: Executor, args: dict[str, Any] | None = None
) -> tuple[AgentRun, str, Any]:
    run = AgentRun(
        scripted("write_note", args or {"name": "plan", "text": "ship it"}),
        InvokitToolset(executor),
    )
    events = await run.ask("write the plan")
    (asked,) = function_calls(events, "adk_request_confirmation")
    assert asked.id is not None
    assert asked.args is not None
    return run, asked.id, asked.args


async def test_an_approval_is_an_adk_tool_confirmation(executor: Executor, notes: Notes) -> None:
    """A call the policy asks about becomes ADK's adk_request_confirmation, naming the approval;
    the invocation pauses without asking the model again and nothing runs."""
    run, _, args = await ask_write(executor)
    assert args["originalFunctionCall"]["id"] == "call_0"
    confirmation = args["toolConfirmation"]
    assert "approval" in confirmation["hint"]
    pending = await executor.approvals.list_pending()
    assert [p.id for p in pending] == [confirmation["payload"]["invokit_approval_id"]]
    assert pending[0].call.id == "call_0"
    assert pending[0].session_id == f"tests/ana/{run.session_id}"
    assert len(run.model.requests) == 1
    assert notes.writes == []


async def test_a_confirmed_call_resumes_and_runs_exactly_once(
    executor: Executor, notes: Notes
) -> None:
    """Confirming resolves the same invokit approval and runs the call once; the model reads it."""
    run, confirmation_id, args = await ask_write(executor)
    approval_id = args["toolConfirmation"]["payload"]["invokit_approval_id"]
    events = await run.confirm(confirmation_id, {"confirmed": True})
    (response,) = function_responses(events, "write_note")
    assert response.response == {"result": "wrote plan"}
    assert notes.writes == [("plan", "ship it")]
    assert await executor.approvals.list_pending() == []
    record = await executor.approvals.get(approval_id)
    assert record.status == "consumed"
    assert [r.response for r in run.model.function_responses_read()] == [{"result": "wrote plan"}]


async def test_a_refused_confirmation_never_runs_the_call(executor: Executor, notes: Notes) -> None:
    """Refusing denies the approval; the model reads an approval_denied error."""
    run, confirmation_id, _ = await ask_write(executor)
    await run.confirm(confirmation_id, {"confirmed": False, "payload": {"reason": "not today"}})
    (read,) = run.model.function_responses_read()
    assert read.response is not None
    assert read.response["kind"] == "approval_denied"
    assert "not today" in read.response["error"]
    assert notes.writes == []


async def test_edited_arguments_are_decided_again(executor: Executor, notes: Notes) -> None:
    """Arguments edited in the confirmation payload run, but a deny rule still refuses them."""
    run, confirmation_id, _ = await ask_write(executor)
    payload = {"arguments": {"name": "secret-plan", "text": "x"}}
    await run.confirm(confirmation_id, {"confirmed": True, "payload": payload})
    (read,) = run.model.function_responses_read()
    assert read.response is not None
    assert read.response["kind"] == "denied"
    assert notes.writes == []


async def test_a_session_scope_covers_later_calls_in_the_session(
    executor: Executor, notes: Notes
) -> None:
    """Confirmed with scope "session", a later call of the tool in the same ADK session runs."""
    run, confirmation_id, _ = await ask_write(executor)
    await run.confirm(confirmation_id, {"confirmed": True, "payload": {"scope": "session"}})
    call = types.Part(
        function_call=types.FunctionCall(
            id="call_9", name="write_note", args={"name": "b", "text": "2"}
        )
    )
    run.model.script += [
        types.Content(role="model", parts=[call]),
        types.Content(role="model", parts=[types.Part(text="again")]),
    ]
    events = await run.ask("and another")
    assert function_calls(events, "adk_request_confirmation") == []
    assert notes.writes == [("plan", "ship it"), ("b", "2")]


async def test_a_confirmation_for_an_expired_approval_runs_nothing(
    notes: Notes, tmp_path: Path
) -> None:
    """A confirmation arriving after its approval expired runs nothing; the model reads why."""
    executor = Executor(
        notes.registry,
        approvals=SqliteApprovalStore(tmp_path / "approvals.db"),
        limits=Limits(approval_ttl=0.2),
    )
    run, confirmation_id, _ = await ask_write(executor)
    await anyio.sleep(0.3)
    await run.confirm(confirmation_id, {"confirmed": True})
    (read,) = run.model.function_responses_read()
    assert read.response is not None
    assert read.response["kind"] == "approval_expired"
    assert notes.writes == []
    assert await executor.approvals.list_pending() == []


async def test_a_prefixed_tool_runs_the_invokit_tool_of_its_own_name(executor: Executor) -> None:
    """With ADK's tool_name_prefix the model sees prefixed names; calls still reach the tool."""
    toolset = InvokitToolset(executor, tool_name_prefix="notes", tool_filter=["read_note"])
    (listed,) = await toolset.get_tools_with_prefix()
    assert listed.name == "notes_read_note"
    run = AgentRun(scripted("notes_read_note", {"name": "todo"}), toolset)
    events = await run.ask("todo?")
    (response,) = function_responses(events, "notes_read_note")
    assert response.response == {"result": "buy milk"}


async def test_a_refusal_wins_over_a_yes_given_elsewhere_that_has_not_run(
    executor: Executor, notes: Notes
) -> None:
    """Approved in the CLI while ADK waits, then refused in ADK: a "no" wins over a "yes"
    that has not run yet; nothing runs and the model reads the refusal."""
    from invokit.approvals import ApprovalDecision

    run, confirmation_id, args = await ask_write(executor)
    approval_id = args["toolConfirmation"]["payload"]["invokit_approval_id"]
    await executor.approvals.resolve(approval_id, ApprovalDecision.approve(by="bob"))
    await run.confirm(confirmation_id, {"confirmed": False, "payload": {"reason": "not today"}})
    assert notes.writes == []
    (read,) = run.model.function_responses_read()
    assert read.response is not None
    assert read.response["kind"] == "approval_denied"
    assert (await executor.approvals.get(approval_id)).status == "denied"


async def test_a_session_grant_stays_with_its_user(executor: Executor, notes: Notes) -> None:
    """ADK sessions belong to a user: another user whose session has the same id (ADK lets a
    client choose it) does not get the first user's "approve for this session"."""
    ana = AgentRun(
        scripted("write_note", {"name": "plan", "text": "ship it"}),
        InvokitToolset(executor),
        user_id="ana",
        session_id="main",
    )
    events = await ana.ask("write the plan")
    (asked,) = function_calls(events, "adk_request_confirmation")
    assert asked.id is not None
    await ana.confirm(asked.id, {"confirmed": True, "payload": {"scope": "session"}})
    assert notes.writes == [("plan", "ship it")]
    bob = AgentRun(
        scripted("write_note", {"name": "plan", "text": "wiped"}),
        InvokitToolset(executor),
        user_id="bob",
        session_id="main",
    )
    events = await bob.ask("write the plan")
    assert len(function_calls(events, "adk_request_confirmation")) == 1
    assert notes.writes == [("plan", "ship it")]
